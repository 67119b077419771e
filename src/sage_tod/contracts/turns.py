"""Turn records (JSONL) and their validation against a spec.

`Turn` is everything the evaluator may read. The gold label lives beside it in
`TurnRecord`, never inside `Turn`, so no evaluator code can reach it by
accident: scoring joins verdicts to gold by (dialogue_id, turn_id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from sage_tod.contracts.criteria import ClassName
from sage_tod.contracts.errors import InputError, InputProblem
from sage_tod.contracts.safejson import iter_jsonl
from sage_tod.contracts.spec import SpecBundle
from sage_tod.text.normalize import is_unset

# The longest utterance sage-tod reads (characters). Rules-only evaluation is linear in
# the utterance (a 100 kB one takes well under 2 s, docs/results-trust.md); beyond this a
# turn is refused with a one-line error rather than truncated, because a verdict on half
# an utterance would be silently wrong (docs/guarantees.md).
MAX_TEXT_CHARS = 200_000
Text = Annotated[StrictStr, Field(max_length=MAX_TEXT_CHARS)]


class ToolCall(BaseModel):
    """One tool call the agent made, with what the tool returned.

    Tool-calling agents commit by calling tools, and what they may write comes
    from the results of earlier calls: both are evidence, so they are kept
    structured (name, arguments, result) rather than flattened into text.
    `result` is the tool's answer as logged: a JSON value when the log holds
    one (or a string that parses as JSON), else the text; `error` marks a call
    the tool refused (it changed nothing).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: StrictStr | None = None
    name: StrictStr = Field(min_length=1)
    arguments: dict[StrictStr, Any] = Field(default_factory=dict)
    result: Any = None
    error: StrictBool = False


class HistoryEntry(BaseModel):
    """One earlier exchange of the dialogue, with the agent's tool calls in it (and the
    user's own, in a dual-control log: `Turn.user_tool_calls`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user: Text = ""
    agent: Text = ""
    tool_calls: tuple[ToolCall, ...] = ()
    user_tool_calls: tuple[ToolCall, ...] = ()


class UserValue(BaseModel):
    """A value an upstream NLU extracted from u_t (optionally with its span)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    slot: StrictStr
    value: StrictStr
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


class AgentActs(BaseModel):
    """Dialogue acts the agent exposes for a_t; when present they replace text detection."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    request: tuple[StrictStr, ...] = ()
    confirm: StrictBool | None = None
    inform: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class Gold(BaseModel):
    """Reference label, read only by scoring."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    label: Literal["failure", "acceptable"]
    failure_class: ClassName | None = Field(default=None, alias="class")
    note: StrictStr | None = None
    injection: dict[str, Any] | None = None


class Turn(BaseModel):
    """The evaluator's input for one turn: (u_t, a_t, s_{t-1}, s_t, h_<t) and optional acts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dialogue_id: StrictStr = Field(min_length=1)
    turn_id: StrictInt | StrictStr  # `true` is not a turn id (it would read as 1)
    workflow: StrictStr
    user: Text
    agent: Text
    state_before: dict[StrictStr, StrictStr | None]
    state_after: dict[StrictStr, StrictStr | None]
    history: tuple[HistoryEntry, ...] | None = None
    user_values: tuple[UserValue, ...] | None = None
    agent_acts: AgentActs | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    # the user's own tool calls before u_t, in a dual-control log (τ²-bench telecom: the
    # user checks and changes their phone): what the user saw, which the agent did not;
    # the agent knows only what u_t says about it
    user_tool_calls: tuple[ToolCall, ...] = ()
    # the conversation's last turn (the tool-log importers set it): where the checks that
    # look back over the whole conversation run ("a request no call ever carried out")
    last: StrictBool | None = None

    @property
    def key(self) -> str:
        return f"{self.dialogue_id}:{self.turn_id}"

    def before(self) -> dict[str, str]:
        """s_{t-1} with unset values removed."""
        return {k: v for k, v in self.state_before.items() if v is not None and not is_unset(v)}

    def after(self) -> dict[str, str]:
        """s_t with unset values removed."""
        return {k: v for k, v in self.state_after.items() if v is not None and not is_unset(v)}


class _TurnLine(Turn):
    """A line of a turns file: the turn plus fields the evaluator must not read."""

    gold: Gold | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class TurnRecord:
    """A validated turn with its gold label, metadata and source line."""

    turn: Turn
    gold: Gold | None = None
    meta: Mapping[str, Any] | None = None
    line: int | None = None


@dataclass
class TurnFile:
    """The valid turns of a file and, under --skip-invalid, the problems skipped."""

    records: list[TurnRecord]
    skipped: list[InputProblem] = field(default_factory=list)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int) and out:
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_TYPE_NAMES = {int: "number", float: "number", bool: "boolean", list: "list", dict: "object"}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def check_turn(turn: Turn, spec: SpecBundle, path: str | Path = "<turn>",
               line: int | None = None) -> None:
    """The spec's checks on a turn: known workflow, slots in the schema, spans inside u_t.
    Turns built in Python (`Turn(...)`, `TurnRecord`) go through the same checks."""
    wf = spec.workflow(turn.workflow)
    if wf is None:
        known = ", ".join(sorted(spec.workflows))
        raise InputError(path, f"unknown workflow id {turn.workflow!r} (spec has: {known})",
                         line=line, field="workflow")
    for side in ("state_before", "state_after"):
        for slot in getattr(turn, side):
            if spec.slot(slot, wf) is None:
                raise InputError(path, f"slot {slot!r} is not in the schema", line=line,
                                 field=f"{side}.{slot}")
    for i, uv in enumerate(turn.user_values or ()):
        if spec.slot(uv.slot, wf) is None:
            raise InputError(path, f"slot {uv.slot!r} is not in the schema", line=line,
                             field=f"user_values[{i}].slot")
        if uv.start is not None and uv.end is not None and not (
                uv.start <= uv.end <= len(turn.user)):
            raise InputError(path, "span is outside the user utterance", line=line,
                             field=f"user_values[{i}]")
    if turn.agent_acts is not None:
        for i, slot in enumerate(turn.agent_acts.request):
            if spec.slot(slot, wf) is None:
                raise InputError(path, f"slot {slot!r} is not in the schema", line=line,
                                 field=f"agent_acts.request[{i}]")
        for slot in turn.agent_acts.inform:
            if spec.slot(slot, wf) is None:
                raise InputError(path, f"slot {slot!r} is not in the schema", line=line,
                                 field=f"agent_acts.inform.{slot}")


def parse_turn(obj: Any, spec: SpecBundle, path: str | Path = "<turns>",
               line: int | None = None) -> TurnRecord:
    """Validate one turn object against the format and the spec."""
    if not isinstance(obj, dict):
        raise InputError(path, f"a turn must be a JSON object, got {_describe(obj)}", line=line)
    try:
        tl = _TurnLine.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _loc(tuple(err["loc"]))
        # pydantic reports union members separately; keep the first, plain message
        loc = loc.replace(".str", "").replace(".int", "")
        if err["type"] == "missing":
            msg = "missing required field"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "string_too_long":
            msg = f"text longer than the limit: {err['msg'].lower()}"
        elif "string" in err["type"] or "str" in err["type"]:
            msg = f"expected a string, got {_describe(err.get('input'))}"
        else:
            msg = err["msg"]
        raise InputError(path, msg, line=line, field=loc or None) from None
    check_turn(tl, spec, path, line)
    turn = Turn.model_validate(tl.model_dump(exclude={"gold", "meta"}))
    return TurnRecord(turn=turn, gold=tl.gold, meta=tl.meta, line=line)


def as_turn(obj: Turn | TurnRecord | Mapping[str, Any], spec: SpecBundle,
            where: str | Path = "<turn>") -> Turn:
    """The one conversion from what callers hold (a `Turn`, a `TurnRecord`, a dict in the
    turns format) to a `Turn` checked against `spec`; anything else is an `InputError`.
    A `Turn` or a record's turn gets the same spec checks as a file's line."""
    if isinstance(obj, TurnRecord):
        obj = obj.turn
    if isinstance(obj, Turn):
        check_turn(obj, spec, where)
        return obj
    if isinstance(obj, Mapping):
        return parse_turn(dict(obj), spec, where).turn
    raise InputError(where, "a turn must be a Turn, a TurnRecord or a dict in the turns "
                     f"format, got {_describe(obj)}")


def iter_turn_lines(path: str | Path) -> Iterator[tuple[int, Any | InputError]]:
    """Yield (line number, parsed JSON or the error) for each non-blank line.

    Lines are decoded one at a time, so a line that is not UTF-8 is an error
    on that line (skippable with --skip-invalid), not on the whole file; the
    JSON reader is bounded (`contracts.safejson`: depth, number size, NaN,
    lone surrogates). A Parquet file (by its suffix) yields its rows the same way
    (contracts/parquet.py).
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(p, "is a directory, not a turns file")
    if p.suffix.lower() in (".parquet", ".pq"):
        from sage_tod.contracts.parquet import iter_parquet_rows

        yield from iter_parquet_rows(p)
        return
    yield from iter_jsonl(p)


def load_turns_unchecked(path: str | Path) -> list[TurnRecord]:
    """Turns validated against the format only (no spec): for reports and viewers."""
    recs: list[TurnRecord] = []
    for n, obj in iter_turn_lines(path):
        if isinstance(obj, InputError):
            raise obj
        try:
            tl = _TurnLine.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(path, err["msg"], line=n,
                             field=_loc(tuple(err["loc"])) or None) from None
        turn = Turn.model_validate(tl.model_dump(exclude={"gold", "meta"}))
        recs.append(TurnRecord(turn=turn, gold=tl.gold, meta=tl.meta, line=n))
    if not recs:
        raise InputError(path, "file is empty: no turns")
    return with_history(recs)


def iter_turns(path: str | Path, spec: SpecBundle, *, skip_invalid: bool = False,
               on_skip: Callable[[InputProblem], None] | None = None) -> Iterator[TurnRecord]:
    """Stream the valid turns of a file, in file order, with `history` filled in.

    Memory stays bounded by what the dialogues' histories need, not by the file:
    records are yielded, not kept (`evaluate` runs 100k turns in < 500 MB).
    """
    return iter_validated(iter_turn_lines(path), spec, path, skip_invalid=skip_invalid,
                          on_skip=on_skip)


def load_turns(path: str | Path, spec: SpecBundle, *, skip_invalid: bool = False) -> TurnFile:
    """Read and validate a turns JSONL file; fills in `history` where absent.

    The first problem raises `InputError` unless `skip_invalid`, in which case
    invalid lines are collected in `TurnFile.skipped` and the rest are kept.
    (`iter_turns` streams the same records without holding them.)
    """
    return validate_turns(iter_turn_lines(path), spec, path, skip_invalid=skip_invalid)


def validate_turns(items: Iterable[tuple[int, Any | InputError]], spec: SpecBundle,
                   path: str | Path, *, skip_invalid: bool = False,
                   empty: str = "file is empty: no turns") -> TurnFile:
    """Numbered turn objects (a file's lines, an importer's turns) -> a `TurnFile`.

    The one place turns are checked against a spec and for duplicate ids, so a
    turns file and an imported log are held to the same rules (`iter_validated`).
    """
    out = TurnFile(records=[])
    out.records = list(iter_validated(items, spec, path, skip_invalid=skip_invalid,
                                      on_skip=out.skipped.append, empty=empty))
    return out


def iter_validated(items: Iterable[tuple[int, Any | InputError]], spec: SpecBundle,
                   path: str | Path, *, skip_invalid: bool = False,
                   on_skip: Callable[[InputProblem], None] | None = None,
                   empty: str | Callable[[], str] = "file is empty: no turns",
                   dialogues_together: bool = False) -> Iterator[TurnRecord]:
    """`validate_turns`, streamed: each valid record as soon as it is read.

    Invalid items raise `InputError` unless `skip_invalid`, when each problem
    goes to `on_skip`. Two turns whose keys (`dialogue:turn`) are equal are
    duplicates, also when the ids differ ("a:b" + 0 and "a" + "b:0"): verdicts
    are joined by that key. `empty` is the error when there is no item at all (a
    function when its words depend on what reading the items counted).
    `dialogues_together`: the items give each dialogue's turns one after another
    (`_History`), so only the current dialogue's past is kept.
    """
    seen: dict[str, int] = {}
    history = _History(together=dialogues_together)
    any_item = False
    for n, item in items:
        any_item = True
        try:
            if isinstance(item, InputError):
                raise item
            rec = parse_turn(item, spec, path, n)
            k = rec.turn.key
            if k in seen:
                raise InputError(path, f"duplicate turn {k} (first on line {seen[k]})",
                                 line=n, field="turn_id")
            seen[k] = n
        except InputError as exc:
            if not skip_invalid:
                raise
            if on_skip is not None:
                on_skip(exc.problem)
            continue
        yield history.fill(rec)
    if not any_item:
        raise InputError(path, empty if isinstance(empty, str) else empty())


def transcript_lines(history: Sequence[HistoryEntry], last: int | None = None) -> list[str]:
    """"User: ..." / "Agent: ..." lines of the last `last` exchanges (all when None).

    One rendering of a dialogue for every prompt and encoder that reads one
    (S3, the LLM judges, the router), so they all see the same text.
    """
    shown = list(history) if last is None else (list(history)[-last:] if last > 0 else [])
    lines: list[str] = []
    for h in shown:
        if h.user:
            lines.append(f"User: {h.user}")
        if h.agent:
            lines.append(f"Agent: {h.agent}")
    return lines


class _History:
    """The earlier exchanges of each dialogue seen so far (shared, never copied per turn
    beyond the tuple a turn needs).

    `together`: each dialogue's turns come one after another (an importer emits a
    conversation's turns together, each with its own `history`), so the past of a
    dialogue is dropped when the next one starts. A turns file may interleave its
    dialogues and keeps every past; for a tool-agent log that would hold every tool
    result of the whole log until the end.
    """

    def __init__(self, *, together: bool = False) -> None:
        self._past: dict[str, list[HistoryEntry]] = {}
        self._together = together

    def fill(self, rec: TurnRecord) -> TurnRecord:
        t = rec.turn
        if self._together and t.dialogue_id not in self._past:
            self._past.clear()
        past = self._past.setdefault(t.dialogue_id, [])
        if t.history is None:
            t = t.model_copy(update={"history": tuple(past)})
            rec = TurnRecord(turn=t, gold=rec.gold, meta=rec.meta, line=rec.line)
        past.append(history_entry(t))
        return rec


def history_entry(turn: Turn) -> HistoryEntry:
    """The turn as a later turn's history sees it: its messages and every call in it."""
    return HistoryEntry(user=turn.user, agent=turn.agent, tool_calls=turn.tool_calls or (),
                        user_tool_calls=turn.user_tool_calls)


def with_history(records: Iterable[TurnRecord]) -> list[TurnRecord]:
    """Give each turn without `history` the earlier turns of its dialogue, in file order."""
    h = _History()
    return [h.fill(rec) for rec in records]


def read_gold_labels(path: str | Path) -> list[tuple[str, Gold | None]]:
    """(turn key, gold) for every line; needs only ids and `gold`, not a spec."""
    out: list[tuple[str, Gold | None]] = []
    for n, obj in iter_turn_lines(path):
        if isinstance(obj, InputError):
            raise obj
        if not isinstance(obj, dict):
            raise InputError(path, "a turn must be a JSON object", line=n)
        for k in ("dialogue_id", "turn_id"):
            if k not in obj:
                raise InputError(path, "missing required field", line=n, field=k)
        gold = None
        if obj.get("gold") is not None:
            try:
                gold = Gold.model_validate(obj["gold"])
            except ValidationError as exc:
                err = exc.errors()[0]
                raise InputError(path, err["msg"], line=n,
                                 field="gold." + _loc(tuple(err["loc"]))) from None
        out.append((f"{obj['dialogue_id']}:{obj['turn_id']}", gold))
    if not out:
        raise InputError(path, "file is empty: no turns")
    return out
