"""An Inspect scorer that judges a sample's conversation turn by turn with sage-tod.

    from inspect_ai import Task
    from sage_tod.integrations.inspect import workflow_scorer

    Task(dataset=..., solver=..., scorer=workflow_scorer("spec.yaml", config="core"))

or re-score an existing log without re-running the model:

    inspect score logs/run.eval --scorer sage_tod/workflow_scorer -S spec_file=spec.yaml

(the name resolves through the `inspect_ai` entry point that sage-tod installs).
The sample's messages are the transcript: user and assistant text, with the
assistant's tool calls mapped to slots through `tool_slots`; each turn's state
comes from the message metadata (`state`), from the sample metadata
(`states`, one per turn, plus `workflow` and `initial_state`), or from that
tool mapping (`sage_tod.integrations.conversation`). The score's value is the
share of acceptable turns; its metadata holds every turn's verdict, fired
classes, evidence and repair hint. The messages become turns through the
importers' one conversion, so a closing user message is a turn and tool
results are history, as with `sage-tod evaluate --format`. A transcript that
cannot be mapped (no state, an unknown slot) is an unscored sample with the
reason; a setup problem every sample would meet (no workflow named and none
to infer from the tool calls, with a several-workflow spec) raises, so the
eval reports an error instead of succeeding with nothing scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    from inspect_ai.model import ChatMessage
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("sage_tod.integrations.inspect needs Inspect: "
                      "pip install 'sage-tod[inspect]'") from exc

from sage_tod.contracts.conversations import conversation_outcome
from sage_tod.contracts.errors import InputError
from sage_tod.integrations.conversation import (
    Conversation,
    ConversationJudge,
    Message,
    NoWorkflow,
    ToolCall,
    acceptable_share,
    reason,
    turn_summary,
)


def to_conversation(messages: list[ChatMessage], sample_id: str | int,
                    metadata: Mapping[str, Any] | None) -> Conversation:
    """Inspect chat messages -> the neutral transcript (tool calls and results kept)."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            out.append(Message("tool", m.text, call_id=m.tool_call_id,
                               error=m.error is not None, metadata=m.metadata))
            continue
        calls: tuple[ToolCall, ...] = ()
        if m.role == "assistant" and m.tool_calls:
            calls = tuple(ToolCall(c.function, dict(c.arguments), id=c.id)
                          for c in m.tool_calls)
        out.append(Message(role=m.role, content=m.text, tool_calls=calls,
                           metadata=m.metadata))
    return Conversation(str(sample_id), out, metadata)


@scorer(metrics=[mean(), stderr()])
def workflow_scorer(spec_file: str, config: str = "core", workflow: str | None = None,
                    tool_slots: dict[str, dict[str, str]] | None = None) -> Scorer:
    """Share of a sample's turns that sage-tod judges acceptable, with per-turn metadata.

    Args:
        spec_file: path of the workflow spec (YAML or JSON). (Not `spec`: Inspect's
            `inspect score` passes its own `spec` argument when it rebuilds a scorer.)
        config: sage-tod configuration (core, s1, llm, ...).
        workflow: the workflow id when neither the sample metadata nor a
            one-workflow spec gives it.
        tool_slots: tool name -> {argument: slot}, for state written by tool calls.
    """
    judge = ConversationJudge(Path(spec_file), config=config, workflow=workflow,
                              tool_slots=tool_slots)

    async def score(state: TaskState, target: Target) -> Score:
        conv = to_conversation(state.messages, state.sample_id, state.metadata)
        try:
            verdicts = judge.judge(conv, source="inspect sample")
        except NoWorkflow:
            raise  # the scorer's setup, not this sample: fail the eval, say why
        except InputError as exc:
            return Score.unscored(reason="scoring_failed", explanation=str(exc),
                                  metadata={"sage_tod": {"error": str(exc)}})
        failures = [v for v in verdicts if v.verdict == "failure"]
        return Score(
            value=acceptable_share(verdicts),
            answer=", ".join(f"{v.turn_id}:{v.verdict}" for v in verdicts),
            explanation=reason(verdicts),
            metadata={"sage_tod": {
                "config": judge.config, "turns": [turn_summary(v) for v in verdicts],
                "failures": len(failures),
                # the conversation's verdict (docs/formats.md §5): failure if a turn fails
                "conversation": conversation_outcome(v.verdict for v in verdicts),
                "undecided": sum(v.verdict == "undecided" for v in verdicts),
                "classes": sorted({str(c) for v in failures for c in v.classes}),
            }},
        )

    return score
