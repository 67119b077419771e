"""One mapping from a chat transcript to sage-tod turns, shared by every integration.

DeepEval's `ConversationalTestCase`, an Inspect sample's messages and an MLflow
session of traces are all a list of user and assistant messages, sometimes
with tool calls. sage-tod judges a turn against the workflow state, which a
transcript does not carry, so each turn's state comes from one of:

1. `state` in the metadata of a message of that turn (the full s_t, slot ->
   value), e.g. DeepEval `Turn(metadata={"state": {...}})`;
2. `states` in the conversation's metadata: one s_t per turn, in order;
3. a tool mapping `tool_slots`: tool name -> {argument: slot}; s_t is s_{t-1}
   updated with the mapped arguments of the assistant's tool calls in that turn;
4. else, when the spec maps the workflow's tools (`tools` in the spec,
   docs/formats.md), the importers' chat reader (`sage_tod.importers.chat`,
   the same rules as `sage-tod import openai-chat`): writing calls fill slots,
   failed calls (an error result) write nothing, a `confirms` tool confirms.

s_{t-1} is the previous turn's s_t (`initial_state`, else empty, for the
first). The workflow is the `workflow` argument, else `workflow` in the
conversation metadata, else the spec's only workflow. Any of these keys may
also sit under a `sage_tod` key, for metadata shared with other tools. A turn
is the user message(s) and the assistant reply after them; assistant text
before the first user message is history, not a turn, and a closing user
message with no reply is not a turn (there is no a_t to judge). Optional
per-turn `agent_acts`, `user_values` and `gold` are passed through.

>>> conv = Conversation("c1", [Message("user", "Two people, please."),
...     Message("assistant", "Booked for two.", metadata={"state": {"people": "2"}})],
...     metadata={"workflow": "rest"})
>>> [(t["user"], t["state_after"]) for t in turn_dicts(conv)]
[('Two people, please.', {'people': '2'})]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnRecord, parse_turn, with_history
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict
from sage_tod.evaluation.evaluator import Evaluator

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


@dataclass
class _Group:
    user: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    metas: list[Mapping[str, Any]] = field(default_factory=list)
    messages: list[int] = field(default_factory=list)
    replied: bool = False


def _groups(messages: Sequence[Message]) -> list[_Group]:
    groups: list[_Group] = []
    cur = _Group()
    for i, m in enumerate(messages):
        if m.role == "user":
            if cur.replied:
                groups.append(cur)
                cur = _Group()
            cur.user.append(m.content)
        elif m.role == "assistant":
            cur.replied = True
            if m.content:
                cur.agent.append(m.content)
            cur.calls.extend(m.tool_calls)
        else:  # system prompts and tool results are not part of (u_t, a_t)
            continue
        cur.messages.append(i)
        mine = _ours(m.metadata)
        if mine:
            cur.metas.append(mine)
    if cur.replied:
        groups.append(cur)
    return groups


def _state(value: Any, where: str, line: int) -> dict[str, str | None]:
    if not isinstance(value, Mapping):
        raise InputError(where, f"a state must be an object of slot -> value, got "
                         f"{type(value).__name__}", line=line, field="state")
    return {str(k): (None if v is None else str(v)) for k, v in value.items()}


def _workflow(conv: Conversation, spec: SpecBundle, workflow: str | None, where: str) -> str:
    if workflow:
        return workflow
    named = _ours(conv.metadata).get("workflow")
    if isinstance(named, str) and named:
        return named
    if len(spec.workflows) == 1:
        return next(iter(spec.workflows))
    raise InputError(where, "no workflow: pass workflow=..., or set `workflow` in the "
                     f"conversation metadata (spec has: {', '.join(sorted(spec.workflows))})",
                     field="workflow")


def turn_dicts(conv: Conversation, *, workflow: str | None = None,
               tool_slots: ToolSlots | None = None, source: str = "conversation"
               ) -> list[dict[str, Any]]:
    """The turns of `conv` as turn-format dicts (not yet validated against a spec).

    `workflow` must be given here when the conversation metadata names none
    (the spec is not known yet); `to_turns` fills it from the spec instead.
    """
    where = f"<{source} {conv.id}>"
    conv_meta = _ours(conv.metadata)
    states = conv_meta.get("states")
    if states is not None and not isinstance(states, Sequence):
        raise InputError(where, "`states` must be a list with one state per turn",
                         field="states")
    prev = _state(conv_meta.get("initial_state") or {}, where, 0)
    wf = workflow or conv_meta.get("workflow") or ""
    groups = _groups(conv.messages)
    history: list[dict[str, str]] = []
    if groups and not groups[0].user:  # a greeting before the user spoke: history only
        lead = groups.pop(0)
        history.append({"user": "", "agent": " ".join(lead.agent)})
        given = next((m["state"] for m in reversed(lead.metas) if "state" in m), None)
        if given is not None:
            prev = _state(given, where, 0)
    out: list[dict[str, Any]] = []
    for t, g in enumerate(groups):
        given = next((m["state"] for m in reversed(g.metas) if "state" in m), None)
        if given is None and states is not None and t < len(states):
            given = states[t]
        if given is not None:
            after = _state(given, where, t)
        elif tool_slots is not None:
            after = dict(prev)
            for call in g.calls:
                if call.error:
                    continue  # a failed call changed nothing
                for arg, slot in (tool_slots.get(call.name) or {}).items():
                    if call.arguments.get(arg) is not None:
                        after[slot] = str(call.arguments[arg])
        else:
            raise InputError(where, f"turn {t} has no workflow state: put `state` in its "
                             "assistant message's metadata, `states` in the conversation "
                             "metadata, pass a tool mapping, or map the tools in the spec",
                             line=t, field="state")
        obj: dict[str, Any] = {
            "dialogue_id": conv.id, "turn_id": t, "workflow": wf,
            "user": " ".join(g.user), "agent": " ".join(g.agent),
            "state_before": prev, "state_after": after, "history": list(history),
            "meta": {"messages": g.messages, "tool_calls": [c.name for c in g.calls]},
        }
        for key in _PASS_THROUGH:
            val = next((m[key] for m in reversed(g.metas) if key in m), None)
            if val is not None:
                obj[key] = val
        out.append(obj)
        history.append({"user": obj["user"], "agent": obj["agent"]})
        prev = after
    if not out:
        raise InputError(where, "no turns: the conversation has no assistant reply")
    return out


def to_turns(conv: Conversation, spec: SpecBundle, *, workflow: str | None = None,
             tool_slots: ToolSlots | None = None, source: str = "conversation"
             ) -> list[TurnRecord]:
    """Validated turns (with history) of `conv`; a bad field raises `InputError`.

    The error names the conversation and the turn index in place of file and
    line, e.g. `<deepeval booking-1>:2: field 'state_after.color': slot 'color'
    is not in the schema`.
    """
    where = f"<{source} {conv.id}>"
    wf = _workflow(conv, spec, workflow, where)
    if tool_slots is None and not _has_states(conv) and spec.workflows[wf].tools:
        dicts = _via_importer(conv, spec, wf, where)
    else:
        dicts = turn_dicts(conv, workflow=wf, tool_slots=tool_slots, source=source)
    return with_history([parse_turn(d, spec, where, line=d["turn_id"]) for d in dicts])


def _has_states(conv: Conversation) -> bool:
    return "states" in _ours(conv.metadata) or any(
        "state" in _ours(m.metadata) for m in conv.messages)


def _via_importer(conv: Conversation, spec: SpecBundle, workflow: str, where: str
                  ) -> list[dict[str, Any]]:
    """State from the spec's tool mapping, by the importers' rules (one reader, not two)."""
    from sage_tod.importers.base import ImportResult
    from sage_tod.importers.chat import Call, conversation_turns
    from sage_tod.importers.chat import Message as ChatMessage

    last_reply = max((i for i, m in enumerate(conv.messages) if m.role == "assistant"),
                     default=-1)
    msgs: list[ChatMessage] = []
    for m in conv.messages[: last_reply + 1]:  # a closing user message is not a turn
        calls: list[Call] = []
        results: list[ChatMessage] = []
        for j, c in enumerate(m.tool_calls):
            inline = c.output is not None or c.error is not None
            cid = c.id if c.id is not None or not inline else f"call-{len(msgs)}-{j}"
            calls.append(Call(c.name, dict(c.arguments), cid))
            if inline:  # the library kept the call's result on the call itself
                results.append(ChatMessage("tool", c.output or "", 0, call_id=cid,
                                           error=c.error))
        msgs.append(ChatMessage(m.role, m.content, 0, calls=calls, call_id=m.call_id,
                                error=m.error))
        msgs.extend(results)
    for i, cm in enumerate(msgs):
        cm.index = i
    result = ImportResult(format="conversation", path=where)
    dicts = [dict(d) for d in conversation_turns(msgs, spec, conv.id, result,
                                                 workflow=workflow)]
    if not dicts:
        raise InputError(where, "no turns: the conversation has no assistant reply")
    for d, g in zip(dicts, [g for g in _groups(conv.messages) if g.user], strict=False):
        for key in _PASS_THROUGH:
            val = next((m[key] for m in reversed(g.metas) if key in m), None)
            if val is not None and key not in d:
                d[key] = val
    return dicts


def from_turns(records: Sequence[TurnRecord]) -> list[Conversation]:
    """sage-tod turns -> one transcript per dialogue, each assistant message carrying s_t.

    The inverse of `to_turns`: handy to turn a recorded turns file into DeepEval
    test cases or Inspect samples. `state_before` of a dialogue's first turn
    becomes `initial_state`; gold labels and acts ride along in the metadata.
    """
    by_id: dict[str, list[TurnRecord]] = {}
    for r in records:
        by_id.setdefault(r.turn.dialogue_id, []).append(r)
    convs: list[Conversation] = []
    for did, recs in by_id.items():
        msgs: list[Message] = []
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
            msgs.append(Message("assistant", t.agent, metadata=meta))
        first = recs[0].turn
        convs.append(Conversation(did, msgs, {"workflow": first.workflow,
                                              "initial_state": dict(first.state_before)}))
    return convs


class ConversationJudge:
    """An evaluator plus the mapping options, built once and reused per conversation.

    Every adapter (DeepEval metric, Inspect scorer, MLflow scorer) holds one,
    so the model of S2 loads once, not once per test case.
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
        self._options = options

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = Evaluator(self._spec, self.config, options=self._options)
        return self._evaluator

    def judge(self, conv: Conversation, source: str = "conversation") -> list[Verdict]:
        ev = self.evaluator
        records = to_turns(conv, ev.spec, workflow=self.workflow, tool_slots=self.tool_slots,
                           source=source)
        return list(ev.evaluate(records))


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
