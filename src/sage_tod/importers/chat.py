"""Chat logs with tool calls -> turns: the core shared by `openai-chat` and `tau-bench`.

A turn is one user message and everything the assistant did until the next
user message: its text (a_t, the non-empty assistant contents joined by a
newline) and its tool calls. Assistant text before the first user message (a
greeting) becomes a history entry with an empty user side, so it is still seen.
System messages carry no turn content; they are counted, not read.

The workflow state is not in the log; it is in the arguments the agent passes
to its tools. The spec's `tools` mapping (docs/formats.md) says which
arguments fill which slots: s_t is s_{t-1} plus the mapped arguments of every
successful *writing* call of turn t (a read-only call fills nothing). A call
fails when its tool result says so (τ²-bench `error: true`, or a result text
that starts with "Error"); a failed call changed nothing in the backend, so it
writes nothing and confirms nothing. A successful call of a `confirms` tool in
turn t makes `agent_acts.confirm` true for that turn (the requests of a_t are
then the ones text detection finds, since declared acts replace detection).
Tools that no workflow of the spec maps are counted in `ignored_tools`.

In a dual-control log (τ²-bench telecom) the user calls tools too: a user
message with `tool_calls` (the user checks or changes their phone). Those calls
and their results are the user's side of the next turn (`user_tool_calls`), not
a turn of their own: they write no state and ground no argument (the agent sees
only what the user says about them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.compiler.detect import detect_requests
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import UnsafeDocument, parse_json
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.importers.base import ImportResult, Skipped, TurnDict

ROLES = ("user", "assistant", "tool", "system")
_ROLE_ALIASES = {"developer": "system"}


@dataclass(frozen=True)
class Call:
    """One tool call of the assistant, arguments parsed."""

    name: str
    args: Mapping[str, Any]
    id: str | None


@dataclass
class Message:
    """A chat message, normalised across the OpenAI and τ²-bench shapes."""

    role: str
    text: str
    index: int
    calls: list[Call] = field(default_factory=list)
    call_id: str | None = None  # tool messages: the call they answer
    error: bool | None = None  # tool messages: τ²-bench's explicit error flag


def _text(content: Any, path: str | Path, line: int | None, loc: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") not in (None, "text"):
                continue  # an image or audio part has no text to read
            else:
                raise InputError(path, "a content part must be a string or {type, text}",
                                 line=line, field=f"{loc}.content[{j}]")
        return "\n".join(p for p in parts if p)
    raise InputError(path, f"content must be a string, a list of parts or null, got "
                     f"{type(content).__name__}", line=line, field=f"{loc}.content")


# the fields a structured-output agent puts its words to the user in
_SAID = ("message", "response", "content", "text", "reply", "answer")


def prose(text: str) -> str:
    """An agent message that is a JSON object (a structured-output agent:
    `{"message": "...", "proposed_action": {...}}`) as the text a user reads: the field
    holding its words first, then every other string, number or flag as `key: value`
    lines (nested keys dotted, list items one per line). The readers of confirmations,
    refusals and quoted amounts read sentences and line breaks, which the JSON escapes
    hide ("\\n"); any other text is returned as it is."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return text
    try:
        doc = json.loads(stripped)
    except ValueError:
        return text
    if not isinstance(doc, dict) or not doc:
        return text
    lines: list[str] = []
    said = next((k for k in _SAID if isinstance(doc.get(k), str)), None)
    if said is not None:
        lines.append(doc[said])

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif value is not None:
            shown = value if isinstance(value, str) else json.dumps(value)
            lines.append(f"{key}: {shown}" if key else shown)

    walk({k: v for k, v in doc.items() if k != said}, "")
    return "\n".join(lines)


def _call(raw: Any, path: str | Path, line: int | None, loc: str) -> Call:
    if not isinstance(raw, dict):
        raise InputError(path, "a tool call must be an object", line=line, field=loc)
    fn = raw.get("function")
    if isinstance(fn, dict):  # OpenAI: {id, type, function: {name, arguments: "<json>"}}
        name, args, aloc = fn.get("name"), fn.get("arguments"), f"{loc}.function"
    else:  # τ²-bench: {id, name, arguments: {...}}
        name, args, aloc = raw.get("name"), raw.get("arguments"), loc
    if not isinstance(name, str) or not name:
        raise InputError(path, "missing tool name", line=line, field=f"{aloc}.name")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise InputError(path, f"arguments of tool {name!r} are not JSON: {exc.msg} "
                             f"(column {exc.colno})", line=line,
                             field=f"{aloc}.arguments") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise InputError(path, f"arguments of tool {name!r} must be a JSON object, got "
                         f"{type(args).__name__}", line=line, field=f"{aloc}.arguments")
    cid = raw.get("id")
    return Call(name, args, cid if isinstance(cid, str) else None)


def parse_messages(raw: Any, path: str | Path, line: int | None, loc: str) -> list[Message]:
    """Validate and normalise a message list; errors name the message index."""
    if not isinstance(raw, list):
        raise InputError(path, "messages must be a list", line=line, field=loc)
    out: list[Message] = []
    for i, m in enumerate(raw):
        mloc = f"{loc}[{i}]"
        if not isinstance(m, dict):
            raise InputError(path, "a message must be an object", line=line, field=mloc)
        if "role" not in m:
            raise InputError(path, "missing field 'role'", line=line, field=f"{mloc}.role")
        if not isinstance(m["role"], str):
            raise InputError(path, f"role must be a string, got {type(m['role']).__name__}",
                             line=line, field=f"{mloc}.role")
        role = _ROLE_ALIASES.get(m["role"], m["role"])
        if role not in ROLES:
            raise InputError(path, f"unknown role {m['role']!r} (expected one of "
                             f"{', '.join(ROLES)})", line=line, field=f"{mloc}.role")
        text = _text(m.get("content"), path, line, mloc)
        msg = Message(role, prose(text) if role == "assistant" else text, i)
        if role in ("assistant", "user"):  # a dual-control user calls tools too
            calls = m.get("tool_calls") or []
            if not isinstance(calls, list):
                raise InputError(path, "tool_calls must be a list", line=line,
                                 field=f"{mloc}.tool_calls")
            msg.calls = [_call(c, path, line, f"{mloc}.tool_calls[{j}]")
                         for j, c in enumerate(calls)]
        elif role == "tool":
            cid = m.get("tool_call_id", m.get("id"))
            msg.call_id = cid if isinstance(cid, str) else None
            err = m.get("error")
            msg.error = err if isinstance(err, bool) else None
        out.append(msg)
    return out


# ---------------------------------------------------------------------------------------------
# tool arguments -> slot values


def extract(args: Any, dotted: str) -> list[Any]:
    """Values at a dotted path: `origin`, `flights.0.date`, `passengers.*.first_name`."""
    nodes: list[Any] = [args]
    for part in dotted.split("."):
        nxt: list[Any] = []
        for n in nodes:
            if part == "*" and isinstance(n, list):
                nxt.extend(n)
            elif isinstance(n, dict) and part in n:
                nxt.append(n[part])
            elif isinstance(n, list) and part.isdigit() and int(part) < len(n):
                nxt.append(n[int(part)])
        nodes = nxt
    return [n for n in nodes if n is not None]


def as_value(values: Sequence[Any]) -> str | None:
    """A slot value string: scalars as written, several joined with ', '."""
    parts: list[str] = []
    for v in values:
        if isinstance(v, bool):
            parts.append("true" if v else "false")
        elif isinstance(v, str | int | float):
            parts.append(str(v))
        else:
            parts.append(json.dumps(v, sort_keys=True, ensure_ascii=False,
                                    separators=(",", ":")))
    parts = [p for p in parts if p.strip()]
    return ", ".join(parts) if parts else None


def mapped_values(wf: Workflow, call: Call) -> dict[str, str]:
    """slot -> value for the arguments of `call` that the workflow's mapping names."""
    ts = wf.tools.get(call.name)
    out: dict[str, str] = {}
    if ts is None:
        return out
    for arg, slot in ts.args.items():
        v = as_value(extract(call.args, arg))
        if v is not None:
            out[slot] = v
    return out


def _failed(result: Message | None) -> bool:
    if result is None:
        return False  # no result logged: nothing says the call failed
    if result.error is not None:
        return result.error
    return result.text.lstrip().lower().startswith("error")


def _mapped_anywhere(spec: SpecBundle, tool: str) -> bool:
    return any(tool in wf.tools for wf in spec.workflows.values())


def choose_workflow(spec: SpecBundle, msgs: Sequence[Message], fixed: str | None
                    ) -> tuple[Workflow, str]:
    """The conversation's workflow and the rule that chose it.

    `fixed` (the --workflow option) wins; a one-workflow spec needs no choice;
    otherwise the workflow whose `confirms` tool the agent called first (the
    task it carried out), else the workflow that maps the first writing call,
    else the spec's first workflow. Failed calls count too: the agent tried.
    """
    if fixed is not None:
        return spec.workflows[fixed], "option"
    wfs = list(spec.workflows.values())
    if len(wfs) == 1:
        return wfs[0], "only_workflow"
    calls = [c for m in msgs for c in m.calls]
    for want, rule in (("confirms", "first_confirm"), ("writes", "first_write")):
        for c in calls:
            for wf in wfs:
                ts = wf.tools.get(c.name)
                if ts is not None and getattr(ts, want):
                    return wf, f"{rule}:{c.name}"
    return wfs[0], "first_in_spec"


# ---------------------------------------------------------------------------------------------
# messages -> turns


@dataclass
class _Open:
    user: str
    agent: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # meta.tool_calls
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # the turn's tool_calls
    confirm: bool = False
    first: int = 0
    user_calls: list[dict[str, Any]] = field(default_factory=list)  # `user_tool_calls`


# What a τ-bench / τ²-bench user simulator sends to end the episode: a control token for the
# harness, not a message to the agent, so it opens no turn (docs/logs.md).
SIMULATOR_CONTROL = frozenset({"###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"})


def result_value(text: str) -> Any:
    """A tool result as logged: the JSON value when the text is a JSON object or list
    (τ²-bench and most agents log results that way), else the text itself."""
    t = text.strip()
    if t[:1] in ("{", "["):
        try:
            return parse_json(t)
        except (json.JSONDecodeError, UnsafeDocument):
            return text  # kept as text: still evidence, never a lost result
    return text


def tool_call_record(c: Call, result: Message | None) -> dict[str, Any]:
    """One call in the turns format's `tool_calls` shape (docs/formats.md)."""
    return {"id": c.id, "name": c.name, "arguments": dict(c.args),
            "result": None if result is None else result_value(result.text),
            "error": _failed(result)}


def conversation_turns(msgs: Sequence[Message], spec: SpecBundle, dialogue_id: str,
                       result: ImportResult, *, workflow: str | None = None,
                       meta: Mapping[str, Any] | None = None,
                       tool_results: bool = False) -> list[TurnDict]:
    """Turns of one conversation; tallies system messages and ignored tools in `result`.

    In a conversation where the agent calls tools, every turn carries its tool
    calls with their results (`tool_calls`, possibly empty) and every history
    entry the calls of its turn, so the verifiers always see what the agent read
    and judge each committing call; a conversation without any call gets no
    `tool_calls` and is judged by its state diff as before. `tool_results` is kept
    for old command lines: the results it used to add as text history entries are
    now always there, structured.
    """
    del tool_results  # always on (structured); the option is accepted for compatibility
    answers = pair_results(msgs)
    uses_tools = any(m.calls for m in msgs if m.role == "assistant")
    wf, rule = choose_workflow(spec, msgs, workflow)
    history: list[dict[str, Any]] = []
    state: dict[str, str] = {}
    turns: list[TurnDict] = []
    cur: _Open | None = None
    lead: list[str] = []  # assistant text before the first user message
    lead_calls: list[dict[str, Any]] = []

    def close(t: _Open, before: dict[str, str]) -> None:
        agent = "\n".join(a for a in t.agent if a.strip())
        turn: TurnDict = {
            "dialogue_id": dialogue_id, "turn_id": len(turns), "workflow": wf.id,
            "user": t.user, "agent": agent, "state_before": dict(sorted(before.items())),
            "state_after": dict(sorted(state.items())),
            "history": [dict(h) for h in history],
        }
        if uses_tools:  # a conversation without any call stays a plain (state-diff) one
            turn["tool_calls"] = list(t.tool_calls)
        if t.user_calls:
            turn["user_tool_calls"] = list(t.user_calls)
        if t.confirm:
            probe = Turn.model_validate({k: turn[k] for k in (
                "dialogue_id", "turn_id", "workflow", "user", "agent", "state_before",
                "state_after")})
            asked = [r.candidates[0] for r in detect_requests(probe, wf)
                     if len(r.candidates) == 1]
            turn["agent_acts"] = {"request": list(dict.fromkeys(asked)), "confirm": True,
                                  "inform": {}}
        turn["meta"] = {**(meta or {}), "workflow_rule": rule, "first_message": t.first,
                        "tool_calls": t.calls}
        turns.append(turn)
        entry: dict[str, Any] = {"user": t.user, "agent": agent}
        if t.tool_calls:
            entry["tool_calls"] = list(t.tool_calls)
        if t.user_calls:
            entry["user_tool_calls"] = list(t.user_calls)
        history.append(entry)

    def flush_lead() -> None:
        if lead or lead_calls:
            entry: dict[str, Any] = {"user": "", "agent": "\n".join(lead)}
            if lead_calls:
                entry["tool_calls"] = list(lead_calls)
            history.append(entry)
            lead.clear()
            lead_calls.clear()

    before: dict[str, str] = {}
    # the user's own calls waiting for the user message they lead to (dual control)
    user_calls: list[dict[str, Any]] = []
    first_call: int | None = None

    def open_turn(text: str, index: int) -> _Open:
        nonlocal before, first_call
        if cur is not None:
            close(cur, before)
        else:
            flush_lead()
        before = dict(state)
        t = _Open(text, first=index if first_call is None else first_call,
                  user_calls=list(user_calls))
        user_calls.clear()
        first_call = None
        return t

    for m in msgs:
        if m.role == "system":
            result.notes["system message (not part of a turn)"] += 1
            continue
        if m.role == "user":
            if m.calls:
                result.notes["user tool call (dual control)"] += len(m.calls)
                user_calls.extend(tool_call_record(c, answers.get(id(c))) for c in m.calls)
                first_call = m.index if first_call is None else first_call
                if not m.text.strip():
                    continue  # the user's words come next; the calls lead to them
            if m.text.strip() in SIMULATOR_CONTROL:
                result.notes["simulator control message (not a turn)"] += 1
                continue
            cur = open_turn(m.text, m.index)
            continue
        if m.role == "tool":
            continue  # read through `answers` when its call is processed
        # assistant
        if user_calls:  # the user acted and the agent answered without the user speaking
            cur = open_turn("", m.index)  # first: the user's first call (open_turn)
        if cur is None:
            if m.text.strip():
                lead.append(m.text)
            for c in m.calls:
                result.notes["tool call before the first user message"] += 1
                _apply(c, wf, spec, answers.get(id(c)), state, result, None)
                lead_calls.append(tool_call_record(c, answers.get(id(c))))
            continue
        if m.text.strip():
            cur.agent.append(m.text)
        for c in m.calls:
            rec = _apply(c, wf, spec, answers.get(id(c)), state, result, cur)
            cur.calls.append(rec)
            cur.tool_calls.append(tool_call_record(c, answers.get(id(c))))
    if user_calls and cur is not None:  # the user acted last: part of the last turn
        cur.user_calls.extend(user_calls)
    if cur is not None:
        close(cur, before)
    elif lead:
        result.notes["assistant message with no user message after it"] += len(lead)
    if uses_tools and turns:  # what the end-of-conversation checks read (`Turn.last`)
        turns[-1]["last"] = True
    return turns


def pair_results(msgs: Sequence[Message]) -> dict[int, Message]:
    """The tool message answering each call (keyed by `id(call)`): the first tool message
    after the call that carries its id and answers no earlier call. Some logs reuse an id
    (τ-bench's gpt-4o trajectories answer a later write with a search's id); a plain
    id -> message map would hand the search the write's result."""
    out: dict[int, Message] = {}
    waiting: list[Call] = []
    answered: set[str | None] = set()  # ids of the calls answered so far
    for m in msgs:
        if m.role in ("assistant", "user"):
            waiting.extend(c for c in m.calls if c.id is not None)
        elif m.role == "tool" and m.call_id is not None:
            c = next((c for c in waiting if c.id == m.call_id), None)
            if c is None and waiting and m.call_id in answered:
                c = waiting[0]  # an id already answered: the oldest call still waiting
            if c is not None:
                answered.add(c.id)
                out[id(c)] = m
                waiting.remove(c)
    return out


def _apply(c: Call, wf: Workflow, spec: SpecBundle, answer: Message | None,
           state: dict[str, str], result: ImportResult, cur: _Open | None) -> dict[str, Any]:
    failed = c.id is not None and _failed(answer)
    rec: dict[str, Any] = {"name": c.name, "ok": not failed}
    ts = wf.tools.get(c.name)
    if ts is None:
        if not _mapped_anywhere(spec, c.name):
            result.ignored_tools[c.name] += 1
            rec["mapped"] = False
        else:
            rec["mapped"] = "other_workflow"
        return rec
    rec["mapped"] = True
    if failed:
        return rec
    if ts.writes:
        vals = mapped_values(wf, c)
        state.update(vals)
        if vals:
            rec["wrote"] = sorted(vals)
    if ts.confirms and cur is not None:
        cur.confirm = True
    return rec


def counted_conversation(result: ImportResult, msgs: Sequence[Message], spec: SpecBundle,
                         dialogue_id: str, where: str, *, workflow: str | None = None,
                         meta: Mapping[str, Any] | None = None,
                         tool_results: bool = False) -> list[TurnDict]:
    """One conversation of a log, counted in `result` (none is a skipped item); its turns
    are returned, not kept, so a streaming reader holds one conversation at a time."""
    turns = conversation_turns(msgs, spec, dialogue_id, result, workflow=workflow, meta=meta,
                               tool_results=tool_results)
    result.conversations += 1
    if not turns:
        result.skipped.append(Skipped(f"{where} ({dialogue_id})", "no user message"))
    return turns


def add_conversation(result: ImportResult, msgs: Sequence[Message], spec: SpecBundle,
                     dialogue_id: str, where: str, *, workflow: str | None = None,
                     meta: Mapping[str, Any] | None = None,
                     tool_results: bool = False) -> None:
    """One conversation of a log into `result`: its turns, counted; none is a skipped item."""
    result.turns.extend(counted_conversation(result, msgs, spec, dialogue_id, where,
                                             workflow=workflow, meta=meta,
                                             tool_results=tool_results))
