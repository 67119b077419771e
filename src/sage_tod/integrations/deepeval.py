"""A DeepEval conversational metric backed by sage-tod: no LLM key, same score every run.

    from deepeval import assert_test
    from deepeval.test_case import ConversationalTestCase, Turn
    from sage_tod.integrations.deepeval import SageTodMetric

    metric = SageTodMetric("spec.yaml", threshold=1.0)
    case = ConversationalTestCase(name="booking-1", metadata={"workflow": "restaurant_booking"},
        turns=[Turn(role="user", content="A table for 4, please."),
               Turn(role="assistant", content="For how many?", metadata={"state": {}})])
    assert_test(case, [metric])      # fails: the agent ignored '4' (IUV), with the evidence

Score = the share of the conversation's turns that sage-tod judges acceptable;
`success` = score >= threshold, as in every DeepEval metric. `strict_mode`
sets the threshold to 1 and the score to 0 unless every turn is acceptable.
An undecided turn is not acceptable, so it lowers the score (count it as
passing with `undecided_passes=True`). Each turn's state comes from the
`Turn.metadata` / test case metadata or a tool mapping (see
`sage_tod.integrations.conversation`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    from deepeval.metrics import BaseConversationalMetric
    from deepeval.test_case import ConversationalTestCase
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("sage_tod.integrations.deepeval needs DeepEval: "
                      "pip install 'sage-tod[deepeval]'") from exc

from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnRecord
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.integrations.conversation import (
    Conversation,
    ConversationJudge,
    Message,
    ToolCall,
    ToolSlots,
    from_turns,
    reason,
    turn_summary,
)

TOOL_ERRORS = "tool_errors"
"""Turn metadata key: one flag per `tools_called` entry, true where the call failed
(DeepEval's `ToolCall` has no error field; a failed call writes no slot)."""


def _output(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)


def to_conversation(case: ConversationalTestCase) -> Conversation:
    """DeepEval turns -> the neutral transcript (tools_called become tool calls, their
    outputs the calls' results)."""
    msgs = []
    for t in case.turns:
        errors = ((t.metadata or {}).get(TOOL_ERRORS) or []) if isinstance(
            t.metadata, Mapping) else []
        calls = tuple(ToolCall(c.name, dict(c.input_parameters or {}),
                               output=_output(c.output),
                               error=bool(errors[j]) if j < len(errors) else None)
                      for j, c in enumerate(t.tools_called or []))
        msgs.append(Message(role=t.role, content=t.content, tool_calls=calls,
                            metadata=t.metadata))
    return Conversation(case.name or "conversation", msgs, case.metadata)


def to_test_cases(records: Sequence[TurnRecord]) -> list[ConversationalTestCase]:
    """A recorded sage-tod turns file -> one DeepEval test case per dialogue, tool calls
    and their results included (so the case gives the turns file's verdicts)."""
    from deepeval.test_case import ToolCall as DeepEvalToolCall
    from deepeval.test_case import Turn

    cases = []
    for c in from_turns(records):
        turns = []
        for m in c.messages:
            meta = dict(m.metadata) if m.metadata else {}
            if m.tool_calls:
                meta[TOOL_ERRORS] = [bool(tc.error) for tc in m.tool_calls]
            turns.append(Turn(
                role="user" if m.role == "user" else "assistant", content=m.content,
                metadata=meta or None,
                tools_called=[DeepEvalToolCall(name=tc.name,
                                               input_parameters=dict(tc.arguments),
                                               output=tc.output)
                              for tc in m.tool_calls] or None))
        cases.append(ConversationalTestCase(name=c.id, metadata=dict(c.metadata or {}),
                                            turns=turns))
    return cases


class SageTodMetric(BaseConversationalMetric):  # type: ignore[misc,no-untyped-call]
    """DeepEval metric: share of acceptable turns, reason = fired criteria with evidence."""

    def __init__(self, spec: SpecBundle | str | Path, *, threshold: float = 0.5,
                 strict_mode: bool = False, config: str = "core",
                 workflow: str | None = None, tool_slots: ToolSlots | None = None,
                 undecided_passes: bool = False, include_reason: bool = True,
                 verbose_mode: bool = False, evaluator: Evaluator | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        # DeepEval copies a metric per test case by calling __init__ again with the
        # attributes named like its parameters, so each parameter is kept as one;
        # the evaluator is built here once and handed to the copies.
        self.evaluator = evaluator or Evaluator(spec, config, options=options)
        self.spec = self.evaluator.spec
        self.config = self.evaluator.config
        self.options = options
        self.workflow = workflow
        self.tool_slots = tool_slots
        self.threshold = 1.0 if strict_mode else threshold
        self.strict_mode = strict_mode
        self.include_reason = include_reason
        self.verbose_mode = verbose_mode
        self.undecided_passes = undecided_passes
        self.async_mode = False  # nothing to await: S1/S2 run locally
        self.evaluation_model = None
        self.evaluation_cost = 0.0
        self.judge = ConversationJudge(self.spec, workflow=workflow, tool_slots=tool_slots,
                                       evaluator=self.evaluator)
        self.verdicts: list[Verdict] = []

    def measure(self, test_case: ConversationalTestCase, *args: Any, **kwargs: Any) -> float:
        self.error = None
        self.verdicts = self.judge.judge(to_conversation(test_case), source="deepeval")
        good = sum(v.verdict == "acceptable"
                   or (self.undecided_passes and v.verdict == "undecided")
                   for v in self.verdicts)
        score = good / len(self.verdicts)
        if self.strict_mode and score < 1.0:
            score = 0.0
        self.score = score
        self.score_breakdown = {f"turn {v.turn_id}": turn_summary(v) for v in self.verdicts}
        self.evaluation_cost = sum(v.cost_usd for v in self.verdicts)
        self.reason = reason(self.verdicts) if self.include_reason else None
        self.success = self.is_successful()
        if self.verbose_mode:
            self.verbose_logs = reason(self.verdicts)
        return score

    async def a_measure(self, test_case: ConversationalTestCase, *args: Any,
                        **kwargs: Any) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        if self.error is not None or self.score is None:
            self.success = False
        else:
            self.success = bool(self.score >= (self.threshold or 0.0))
        return bool(self.success)

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return "SAGE-TOD workflow"
