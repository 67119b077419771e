"""One mapping from a chat transcript to sage-tod turns, shared by every integration.

DeepEval's `ConversationalTestCase`, an Inspect sample's messages and an MLflow
session of traces are all a list of user and assistant messages, sometimes
with tool calls and their results. Each becomes turns through the importers'
one conversion (`sage_tod.importers.chat.conversation_turns`, what `sage-tod
import openai-chat` / `evaluate --format` run): a turn is a user message and
everything the assistant did until the next one; its tool calls and their
results are kept structured (`tool_calls`, on the turn and in later turns'
history); assistant text before the first user message is history, not a
turn; a closing user message with no reply is a turn with an empty a_t, as in
the CLI; the user simulator's control messages (`###STOP###`, ...) are not
turns. So an adapter gives the CLI's verdicts on the same conversation.

Each turn's state comes from, in this order:

1. `state` in the metadata of a message of that turn (the full s_t, slot ->
   value), e.g. DeepEval `Turn(metadata={"state": {...}})`;
2. `states` in the conversation's metadata: one s_t per turn, in order;
3. a tool mapping `tool_slots`: tool name -> {argument: slot}; s_t is s_{t-1}
   updated with the mapped arguments of the assistant's successful tool calls;
4. else, when the spec maps the workflow's tools (`tools` in the spec,
   docs/formats.md), the importers' rules: writing calls fill slots, failed
   calls (an error result) write nothing, a `confirms` tool confirms.

s_{t-1} is the previous turn's s_t (`initial_state`, else empty, for the
first). The workflow is the `workflow` argument, else `workflow` in the
conversation metadata, else the spec's only workflow, else the one the tool
calls point to (the importers' rule: the first `confirms` tool called, else
the first writing call); a several-workflow spec with none of these is an
error. Any of these keys may also sit under a `sage_tod` key, for metadata
shared with other tools. Optional per-turn `agent_acts`, `user_values` and
`gold` are passed through.

>>> conv = Conversation("c1", [Message("user", "Two people, please."),
...     Message("assistant", "Booked for two.", metadata={"state": {"people": "2"}})],
...     metadata={"workflow": "rest"})
>>> [(t["user"], t["state_after"]) for t in turn_dicts(conv)]
[('Two people, please.', {'people': '2'})]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnRecord, parse_turn, with_history
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.evaluation.run import RunSettings, evaluate_records, make_evaluator

ToolSlots = Mapping[str, Mapping[str, str]]
"""Tool name -> {argument name: slot name}: which tool arguments write which slots."""

_PASS_THROUGH = ("agent_acts", "user_values", "gold")


@dataclass(frozen=True)
class ToolCall:
    """A tool the assistant called, with its arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    output: str | None = None  # the call's result, when the library keeps it inline
    error: bool | None = None  # the call failed (its result was an error)


@dataclass(frozen=True)
class Message:
    """One chat message in a library-neutral form."""

    role: str  # "user" | "assistant" | "system" | "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: Mapping[str, Any] | None = None
    call_id: str | None = None  # a tool message: the call it answers
    error: bool | None = None  # a tool message: the call failed


@dataclass(frozen=True)
class Conversation:
    """A transcript with an id (the sage-tod dialogue_id) and its metadata."""

    id: str
    messages: Sequence[Message]
    metadata: Mapping[str, Any] | None = None


def _ours(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Our keys: under `sage_tod` when present, else at the top level."""
    if not meta:
        return {}
    inner = meta.get("sage_tod")
    return inner if isinstance(inner, Mapping) else meta


def _state(value: Any, where: str, line: int) -> dict[str, str | None]:
    if not isinstance(value, Mapping):
        raise InputError(where, f"a state must be an object of slot -> value, got "
                         f"{type(value).__name__}", line=line, field="state")
    return {str(k): (None if v is None else str(v)) for k, v in value.items()}


class NoWorkflow(InputError):
    """No workflow could be chosen for a conversation: a setup problem of the whole run
    (every conversation would meet it), not of one transcript."""


def _named_workflow(conv: Conversation, workflow: str | None) -> str | None:
    if workflow:
        return workflow
    named = _ours(conv.metadata).get("workflow")
    return named if isinstance(named, str) and named else None


def _chat(conv: Conversation) -> tuple[list[Any], list[int]]:
    """The transcript as the importers' chat messages, and each one's message index.

    A result the library kept on the call itself (DeepEval's `ToolCall.output`)
    becomes the tool message the importers expect right after its call."""
    from sage_tod.importers.chat import Call
    from sage_tod.importers.chat import Message as ChatMessage

    msgs: list[ChatMessage] = []
    origin: list[int] = []
    for i, m in enumerate(conv.messages):
        calls: list[Call] = []
        results: list[ChatMessage] = []
        for j, c in enumerate(m.tool_calls):
            inline = c.output is not None or c.error is not None
            cid = c.id if c.id is not None or not inline else f"call-{i}-{j}"
            calls.append(Call(c.name, dict(c.arguments), cid))
            if inline:
                results.append(ChatMessage("tool", c.output or "", 0, call_id=cid,
                                           error=c.error))
        msgs.append(ChatMessage(m.role, m.content, 0, calls=calls, call_id=m.call_id,
                                error=m.error))
        origin.append(i)
        msgs.extend(results)
        origin.extend([i] * len(results))
    for k, cm in enumerate(msgs):
        cm.index = k
    return msgs, origin


def _given_state(metas: Sequence[Mapping[str, Any]]) -> Any:
    return next((m["state"] for m in reversed(metas) if "state" in m), None)


def conversation_dicts(conv: Conversation, spec: SpecBundle, *, workflow: str | None = None,
                       tool_slots: ToolSlots | None = None, source: str = "conversation"
                       ) -> list[dict[str, Any]]:
    """The turns of `conv` as turn-format dicts, by the importers' conversion (not yet
    validated against the spec; `to_turns` does that)."""
    from sage_tod.importers.base import ImportResult
    from sage_tod.importers.chat import conversation_turns

    where = f"<{source} {conv.id}>"
    if not any(m.role == "assistant" for m in conv.messages):
        raise InputError(where, "no turns: the conversation has no assistant reply")
    wf = _named_workflow(conv, workflow)
    if wf is not None and wf not in spec.workflows:
        raise InputError(where, f"unknown workflow {wf!r} (spec has: "
                         f"{', '.join(sorted(spec.workflows))})", field="workflow")
    msgs, origin = _chat(conv)
    if wf is None and len(spec.workflows) > 1 and not any(
            c.name in w.tools for m in msgs for c in m.calls for w in spec.workflows.values()):
        raise NoWorkflow(where, "no workflow: pass workflow=..., or set `workflow` in the "
                         "conversation metadata (spec has: "
                         f"{', '.join(sorted(spec.workflows))}; no tool call names one)",
                         field="workflow")
    dicts = [dict(d) for d in conversation_turns(msgs, spec, conv.id,
                                                 ImportResult("conversation", where),
                                                 workflow=wf)]
    # which transcript messages belong to each turn: from its user message to the next
    firsts = [int(d["meta"]["first_message"]) for d in dicts]
    lead = [conv.messages[i] for i in sorted(set(origin[:firsts[0]] if firsts else origin))]
    spans = [sorted({origin[k] for k in range(a, b)})
             for a, b in zip(firsts, [*firsts[1:], len(msgs)], strict=True)]
    conv_meta = _ours(conv.metadata)
    states = conv_meta.get("states")
    if states is not None and not isinstance(states, Sequence):
        raise InputError(where, "`states` must be a list with one state per turn",
                         field="states")
    metas = [[_ours(conv.messages[i].metadata) for i in span] for span in spans]
    explicit = (states is not None or tool_slots is not None
                or any(_given_state(m) is not None for m in metas))
    if dicts and not explicit and not spec.workflows[dicts[0]["workflow"]].tools:
        raise InputError(where, "turn 0 has no workflow state: put `state` in its "
                         "assistant message's metadata, `states` in the conversation "
                         "metadata, pass a tool mapping, or map the tools in the spec",
                         line=0, field="state")
    prev: dict[str, str | None] = _state(conv_meta.get("initial_state") or {}, where, 0)
    lead_state = _given_state([_ours(m.metadata) for m in lead])
    if lead_state is not None:
        prev = _state(lead_state, where, 0)
    for t, (d, mt) in enumerate(zip(dicts, metas, strict=True)):
        d["meta"] = {**d["meta"], "messages": spans[t]}
        for key in _PASS_THROUGH:
            val = next((m[key] for m in reversed(mt) if key in m), None)
            if val is not None:
                d[key] = val
        if not explicit:
            continue  # the spec's tools wrote the state, by the importers' rules
        given = _given_state(mt)
        if given is None and states is not None and t < len(states):
            given = states[t]
        replied = any(conv.messages[i].role == "assistant" for i in spans[t])
        if given is not None:
            after = _state(given, where, t)
        elif not replied:  # a closing user message: the agent did nothing, s_t = s_{t-1}
            after = dict(prev)
        elif tool_slots is not None:
            after = dict(prev)
            for call in d.get("tool_calls") or []:
                if call.get("error"):
                    continue  # a failed call changed nothing
                args = call.get("arguments") or {}
                for arg, slot in (tool_slots.get(call["name"]) or {}).items():
                    if args.get(arg) is not None:
                        after[slot] = str(args[arg])
        else:
            raise InputError(where, f"turn {t} has no workflow state: put `state` in its "
                             "assistant message's metadata, `states` in the conversation "
                             "metadata, pass a tool mapping, or map the tools in the spec",
                             line=t, field="state")
        d["state_before"], d["state_after"] = prev, after
        prev = after
    return dicts


def turn_dicts(conv: Conversation, *, workflow: str | None = None,
               tool_slots: ToolSlots | None = None, source: str = "conversation",
               spec: SpecBundle | None = None) -> list[dict[str, Any]]:
    """The turns of `conv` as turn-format dicts, by `conversation_dicts`.

    Without `spec` the conversion reads a stand-in spec of the one named workflow
    (no slots, no tools), so the states must come from the metadata or `tool_slots`;
    `to_turns` then validates them against the real spec."""
    if spec is not None:
        return conversation_dicts(conv, spec, workflow=workflow, tool_slots=tool_slots,
                                  source=source)
    from sage_tod.contracts.spec import parse_spec

    wf = _named_workflow(conv, workflow)
    if wf is None:
        raise NoWorkflow(f"<{source} {conv.id}>", "no workflow: pass workflow=... or set "
                         "`workflow` in the conversation metadata", field="workflow")
    stand_in = parse_spec({"version": 1, "workflows": [{"id": wf, "slots": [{"name": "_"}]}]})
    return conversation_dicts(conv, stand_in, workflow=wf, tool_slots=tool_slots,
                              source=source)


def to_turns(conv: Conversation, spec: SpecBundle, *, workflow: str | None = None,
             tool_slots: ToolSlots | None = None, source: str = "conversation"
             ) -> list[TurnRecord]:
    """Validated turns (with history) of `conv`; a bad field raises `InputError`.

    The error names the conversation and the turn index in place of file and
    line, e.g. `<deepeval booking-1>:2: field 'state_after.color': slot 'color'
    is not in the schema`.
    """
    where = f"<{source} {conv.id}>"
    dicts = conversation_dicts(conv, spec, workflow=workflow, tool_slots=tool_slots,
                               source=source)
    return with_history([parse_turn(d, spec, where, line=d["turn_id"]) for d in dicts])


def _tool_calls(t: Any) -> tuple[ToolCall, ...]:
    """A turn's structured tool calls as transcript calls carrying their results."""
    out = []
    for c in t.tool_calls or []:
        result = c.result
        text = None if result is None else (result if isinstance(result, str)
                                             else json.dumps(result, ensure_ascii=False))
        out.append(ToolCall(c.name, dict(c.arguments or {}), id=c.id, output=text,
                            error=c.error))
    return tuple(out)


def from_turns(records: Sequence[TurnRecord]) -> list[Conversation]:
    """sage-tod turns -> one transcript per dialogue, each assistant message carrying s_t
    and the turn's tool calls with their results.

    The inverse of `to_turns`: handy to turn a recorded turns file into DeepEval
    test cases or Inspect samples. `state_before` of a dialogue's first turn
    becomes `initial_state`; gold labels and acts ride along in the metadata; a
    turn's tool calls (and so the tool results later turns see in their history)
    are kept, so the transcript gives the turns file's verdicts.
    """
    by_id: dict[str, list[TurnRecord]] = {}
    for r in records:
        by_id.setdefault(r.turn.dialogue_id, []).append(r)
    convs: list[Conversation] = []
    for did, recs in by_id.items():
        msgs: list[Message] = []
        first = recs[0].turn
        lead = [h for h in (first.history or []) if not h.user]
        for h in lead[:1]:  # a greeting before the first user message
            msgs.append(Message("assistant", h.agent, tool_calls=_tool_calls(h)))
        for r in recs:
            t = r.turn
            meta: dict[str, Any] = {"state": dict(t.state_after)}
            if t.agent_acts is not None:
                meta["agent_acts"] = t.agent_acts.model_dump(mode="json")
            if t.user_values is not None:
                meta["user_values"] = [u.model_dump(mode="json") for u in t.user_values]
            if r.gold is not None:
                meta["gold"] = r.gold.model_dump(mode="json", by_alias=True)
            msgs.append(Message("user", t.user))
            msgs.append(Message("assistant", t.agent, tool_calls=_tool_calls(t),
                                metadata=meta))
        convs.append(Conversation(did, msgs, {"workflow": first.workflow,
                                              "initial_state": dict(first.state_before)}))
    return convs


class ConversationJudge:
    """An evaluator plus the mapping options, built once and reused per conversation.

    Every adapter (DeepEval metric, Inspect scorer, MLflow scorer) holds one,
    so the model of S2 loads once, not once per test case. Verdicts come from
    the one evaluation path (`sage_tod.evaluation.run`), as the CLI's do.
    """

    def __init__(self, spec: SpecBundle | str | Path, *, config: str = "core",
                 workflow: str | None = None, tool_slots: ToolSlots | None = None,
                 evaluator: Evaluator | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        self._spec = spec
        self.config = evaluator.config if evaluator is not None else config
        self.workflow = workflow
        self.tool_slots = tool_slots
        self._evaluator = evaluator
        self.settings = RunSettings(config=self.config, options=dict(options or {}))

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = make_evaluator(self._spec, self.settings)
        return self._evaluator

    def turns(self, conv: Conversation, source: str = "conversation") -> list[TurnRecord]:
        return to_turns(conv, self.evaluator.spec, workflow=self.workflow,
                        tool_slots=self.tool_slots, source=source)

    def judge(self, conv: Conversation, source: str = "conversation") -> list[Verdict]:
        return list(evaluate_records(self.evaluator, self.turns(conv, source), self.settings))


# ------------------------------------------------ what every adapter reports

def acceptable_share(verdicts: Sequence[Verdict]) -> float:
    """Score of a conversation: the share of its turns judged acceptable.

    >>> acceptable_share([])
    0.0
    """
    if not verdicts:
        return 0.0
    return sum(v.verdict == "acceptable" for v in verdicts) / len(verdicts)


def _span_text(c: CriterionVerdict) -> str:
    span = c.evidence or c.support
    if span is None:
        return ""
    where = span.source if span.index is None else f"{span.source}[{span.index}]"
    return f'{where}[{span.start}:{span.end}] "{span.text}"'


def fired(v: Verdict) -> list[dict[str, Any]]:
    """The criteria that fired on a turn: class, rationale, evidence, repair, stage."""
    return [{"class": str(c.failure_class), "rationale": c.rationale,
             "evidence": _span_text(c) or None, "repair": c.repair,
             "decided_by": c.decided_by}
            for c in v.criteria if c.decision.value == "true"]


def turn_summary(v: Verdict) -> dict[str, Any]:
    """A compact, JSON-ready record of one turn's verdict for a library's metadata."""
    return {"turn_id": v.turn_id, "key": v.key, "verdict": v.verdict,
            "confidence": v.confidence, "classes": [str(c) for c in v.classes],
            "fired": fired(v),
            "abstained": sum(c.decision.value == "abstain" for c in v.criteria)}


def turn_reason(v: Verdict) -> str:
    """One turn's reason: each fired criterion with its evidence and repair hint."""
    if v.verdict == "acceptable":
        return f"turn {v.turn_id}: acceptable ({len(v.criteria)} criteria decided false)"
    if v.verdict == "undecided":
        n = sum(c.decision.value == "abstain" for c in v.criteria)
        return f"turn {v.turn_id}: undecided ({n} criteria abstained, none fired)"
    parts = []
    for f in fired(v):
        text = f"{f['class']}: {f['rationale']}"
        if f["evidence"]:
            text += f"; evidence {f['evidence']}"
        if f["repair"]:
            text += f"; repair: {f['repair']}"
        parts.append(text)
    return f"turn {v.turn_id}: failure - " + " | ".join(parts)


def reason(verdicts: Sequence[Verdict]) -> str:
    """A conversation's reason: the counts, then every non-acceptable turn explained."""
    n = len(verdicts)
    ok = sum(v.verdict == "acceptable" for v in verdicts)
    bad = sum(v.verdict == "failure" for v in verdicts)
    head = (f"{ok} of {n} turn(s) acceptable, {bad} failure(s), {n - ok - bad} undecided "
            f"(sage-tod config {verdicts[0].config if verdicts else '-'})")
    rest = [turn_reason(v) for v in verdicts if v.verdict != "acceptable"]
    return "\n".join([head, *rest])
