"""What every importer returns, the registry of log formats, and `import_file`.

An importer turns an agent's own log (chat messages with tool calls, a
tracker-store event list, a corpus dialogue file) into turn records of the
public turns format (docs/formats.md), so the evaluator never needs to know
where a turn came from. Importers are plain functions
`read(path, spec, **opts) -> ImportResult`, found by format name in `FORMATS`
and imported only when asked for, so reading one format never loads the code
(or the dependencies) of another.

Nothing is dropped silently: whatever an importer does not turn into a turn is
either an error (`InputError`, naming file, record and message index) or a
`Skipped` item with its reason, and every tool call the spec does not map is
counted in `ignored_tools` so the command can report it once.

`stream_file` is `import_file` without holding the turns: the formats in
`STREAMS` hand out one conversation's turns at a time (a τ²-bench results
document is parsed one simulation at a time, JSONL one line at a time, a large
JSON list one item at a time), and the `ImportResult`'s counts are complete once
the turns are used up. `evaluate --format` reads logs that way, so its memory
does not grow with the log. `multiwoz` and `mwzeval` are read whole (see
`WHOLE`).
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from sage_tod.contracts.errors import InputError, InputProblem
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnFile, TurnRecord, iter_validated

TurnDict = dict[str, Any]
"""One turn in the public turns-JSONL shape (with `meta`)."""


@dataclass(frozen=True)
class Skipped:
    """An item of the log that did not become a turn, and why."""

    where: str  # "record 3", "dialogue PMUL0698 turn 7", ...
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class ImportResult:
    """Turns read from one log file, and an account of everything else in it."""

    format: str
    path: str
    turns: list[TurnDict] = field(default_factory=list)
    conversations: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    ignored_tools: Counter[str] = field(default_factory=Counter)
    ignored_slots: Counter[str] = field(default_factory=Counter)  # log slots not in the spec
    # counted items that carry no turn content by design (system prompts, Rasa
    # bookkeeping events): listed so the summary accounts for them
    notes: Counter[str] = field(default_factory=Counter)
    # tools the spec maps that no call in the log used, while the log does call tools: a
    # misspelt name in the spec's `tools` would otherwise re-route and un-map silently
    unused_tools: list[str] = field(default_factory=list)
    streamed: int = 0  # turns handed out by `iter_records` from a stream, not kept in `turns`

    @property
    def n_turns(self) -> int:
        return len(self.turns) + self.streamed

    def records(self, spec: SpecBundle, *, skip_invalid: bool = False) -> TurnFile:
        """The turns validated against `spec` exactly as `load_turns` validates a file.

        An error names the place in the log (its JSONL line, or its record) and
        the turn (dialogue and turn id, and its number among the imported turns,
        which is its line in `sage-tod import`'s output), never a line number the
        log does not have.
        """
        out = TurnFile(records=[])
        out.records = list(self.iter_records(spec, skip_invalid=skip_invalid,
                                             on_skip=out.skipped.append))
        return out

    def iter_records(self, spec: SpecBundle, turns: Iterable[TurnDict] | None = None, *,
                     skip_invalid: bool = False,
                     on_skip: Callable[[InputProblem], None] | None = None
                     ) -> Iterator[TurnRecord]:
        """`records`, one at a time: of `self.turns`, or of `turns` (a `stream_file`
        stream, counted in `streamed` and not kept). Errors and skipped problems are
        located in the log as `records` locates them; `unused_tools` and the summary are
        complete once the turns are used up (a log with no turn says so with them)."""
        source: Iterable[TurnDict] = self.turns if turns is None else turns
        counted = turns is not None
        called: set[Any] = set()
        current: list[TurnDict | None] = [None]  # the turn being validated

        def numbered() -> Iterator[tuple[int, TurnDict]]:
            it = iter(source)
            n = 0
            while True:
                try:
                    t = next(it)
                except StopIteration:
                    break
                except InputError as exc:  # the log's own error: already located
                    raise _LogError(exc) from None
                n += 1
                if counted:
                    self.streamed += 1
                called.update(c.get("name") for c in (t.get("tool_calls") or [])
                              if isinstance(c, dict))
                current[0] = t
                yield n, t
            self.unused_tools = self._unused_tools(spec, called)

        def skipped(p: InputProblem) -> None:
            if on_skip is not None:
                on_skip(InputProblem(**self._located(p, current[0])))

        records = iter_validated(
            numbered(), spec, self.path, skip_invalid=skip_invalid, on_skip=skipped,
            empty=lambda: f"no turns in this {self.format} log ({self.summary()})",
            dialogues_together=True)  # every importer emits a conversation at a time
        try:
            yield from records
        except _LogError as exc:
            raise exc.error from None
        except InputError as exc:
            raise InputError(**self._located(exc.problem, current[0])) from None

    def _unused_tools(self, spec: SpecBundle, called: set[Any]) -> list[str]:
        called = called | set(self.ignored_tools)
        if not called:
            return []  # a log without tool calls (MultiWOZ, SGD, Rasa): nothing to compare
        mapped = {name for wf in spec.workflows.values() for name in wf.tools}
        return sorted(mapped - called)

    def _located(self, p: InputProblem, t: TurnDict | None) -> dict[str, Any]:
        """`p` (numbered by imported turn; `t` is that turn) re-addressed to where the
        turn is in the log."""
        n = p.line
        if n is None or t is None:
            return {"path": p.path, "message": p.message, "line": None, "field": p.field}
        raw_meta = t.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        rec = str(meta.get("record") or "")
        line = int(rec[5:]) if rec.startswith("line ") and rec[5:].isdigit() else None
        turn = (f"dialogue {t.get('dialogue_id')!s} turn {t.get('turn_id')!s} "
                f"(imported turn {n})")
        if line is None:  # a JSON document: the record and turn take the line's place
            where = f"{p.path}: {rec + ', ' if rec else ''}{turn}"
            return {"path": where, "message": p.message, "line": None, "field": p.field}
        return {"path": p.path, "message": f"{turn}: {p.message}", "line": line,
                "field": p.field}

    def summary(self) -> str:
        """One line: conversations, turns, skipped items, ignored tools."""
        parts = [f"{self.conversations} conversation(s)", f"{self.n_turns} turn(s)",
                 f"{len(self.skipped)} skipped item(s)"]
        if self.ignored_tools:
            parts.append(f"{sum(self.ignored_tools.values())} call(s) of "
                         f"{len(self.ignored_tools)} unmapped tool(s) ignored")
        if self.ignored_slots:
            parts.append(f"{sum(self.ignored_slots.values())} value(s) of "
                         f"{len(self.ignored_slots)} slot(s) not in the spec ignored")
        if self.unused_tools:
            parts.append(f"{len(self.unused_tools)} spec tool(s) never called")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "path": self.path,
                "conversations": self.conversations, "turns": self.n_turns,
                "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
                "ignored_tools": dict(sorted(self.ignored_tools.items())),
                "ignored_slots": dict(sorted(self.ignored_slots.items())),
                "notes": dict(sorted(self.notes.items())),
                "unused_tools": list(self.unused_tools)}


class _LogError(Exception):
    """An importer's own `InputError`, carried past the turn validation that would
    otherwise re-address it as a problem of the turn being validated."""

    def __init__(self, error: InputError) -> None:
        super().__init__(str(error))
        self.error = error


Importer = Callable[..., ImportResult]
Streamer = Callable[..., Iterator[TurnDict]]
"""`stream(result, path, spec, **opts)`: a format's turns, one conversation at a time,
counting conversations, skipped items and ignored tools in `result` as it goes."""

FORMATS: Mapping[str, str] = {
    "openai-chat": "sage_tod.importers.openai_chat:read",
    "tau-bench": "sage_tod.importers.tau_bench:read",
    "rasa": "sage_tod.importers.rasa:read",
    "multiwoz": "sage_tod.importers.corpora:read_multiwoz",
    "sgd": "sage_tod.importers.corpora:read_sgd",
    # the MultiWOZ_Evaluation prediction format; its reader is a module of its own
    "mwzeval": "sage_tod.importers.mwzeval",
}
"""Format name -> `module:function` of its importer (`module` alone: see `_mwzeval`)."""

STREAMS: Mapping[str, str] = {
    "openai-chat": "sage_tod.importers.openai_chat:stream",
    "tau-bench": "sage_tod.importers.tau_bench:stream",
    "rasa": "sage_tod.importers.rasa:stream",
    "sgd": "sage_tod.importers.corpora:stream_sgd",
}
"""Format name -> `module:function` of its streaming reader (`Streamer`); each format's
`read` is that stream collected, so both give the same turns."""

WHOLE: Mapping[str, str] = {
    "multiwoz": "a MultiWOZ file is one JSON object keyed by dialogue id, and its "
                "dialogues become turns in sorted id order, which is known only once "
                "every key has been read",
    "mwzeval": "predictions are one JSON object keyed by dialogue id, joined with the "
               "MultiWOZ corpus dialogues (which are loaded whole) and read by the "
               "mwzeval module's own reader, which returns a list",
}
"""Formats `stream_file` reads whole, and why (docs/guarantees.md)."""


class UnknownFormat(KeyError):
    """A format name that is not in the registry; the message lists the known ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)

    def __str__(self) -> str:
        return (f"unknown log format {self.name!r}; available: "
                + ", ".join(sorted(FORMATS)))


def available_formats() -> list[str]:
    return sorted(FORMATS)


def get_importer(name: str) -> Importer:
    """The importer function of a format, imported on first use."""
    target = FORMATS.get(name)
    if target is None:
        raise UnknownFormat(name)
    if ":" not in target:
        return _module_adapter(name, target)
    mod_name, fn_name = target.split(":", 1)
    return cast(Importer, getattr(importlib.import_module(mod_name), fn_name))


def _module_adapter(name: str, module: str) -> Importer:
    """A format whose reader lives in a module this package does not own (mwzeval)."""

    def read(path: str | Path, spec: SpecBundle, **opts: Any) -> ImportResult:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            raise InputError(path, f"format {name!r} needs module {module}, which this "
                             "installation does not have") from None
        reader = getattr(mod, "read_mwzeval", None)
        if reader is None:
            raise InputError(path, f"format {name!r}: module {module} has no read_mwzeval()")
        turns, counts = reader(path, opts.get("corpus"), spec, unknown_slots="drop")
        res = ImportResult(format=name, path=str(path), turns=list(turns))
        res.conversations = int(getattr(counts, "dialogues", 0))
        outside = int(getattr(counts, "outside_workflows", 0))
        if outside:
            res.skipped.append(Skipped("system turns", f"{outside} turn(s) outside the "
                                       "spec's workflows"))
        for slot, n in sorted(getattr(counts, "dropped_slots", {}).items()):
            res.skipped.append(Skipped(f"slot {slot}", f"{n} value(s) of a slot the spec "
                                       "lacks"))
        return res

    return read


def import_file(format: str, path: str | Path, spec: SpecBundle, **opts: Any) -> ImportResult:
    """Read the log `path` of format `format` into turns for `spec`.

    Options are format-specific (docs/logs.md); `workflow=ID` fixes the
    workflow of every conversation where the format would otherwise infer it.
    Raises `UnknownFormat` for a format name not in `FORMATS` and `InputError`
    for bad input.
    """
    p = _checked(format, path, spec, opts)
    return get_importer(format)(p, spec, **opts)


def _checked(format: str, path: str | Path, spec: SpecBundle, opts: Mapping[str, Any]
             ) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError(p, "file not found")
    wf = opts.get("workflow")
    if wf is not None and spec.workflow(wf) is None:
        raise InputError("--workflow", f"unknown workflow id {wf!r} (spec has: "
                         + ", ".join(sorted(spec.workflows)) + ")")
    return p


def stream_file(format: str, path: str | Path, spec: SpecBundle, **opts: Any
                ) -> tuple[ImportResult, Iterator[TurnDict]]:
    """`import_file`, streamed: the result (counts complete once the turns are used up)
    and the turns, read as they are asked for; the same turns `import_file` gives.

    A format in `WHOLE` is imported whole when the first turn is asked for and its
    turns handed out from that list (counted as streamed, like the others). Nothing
    is read before the first turn is asked for, so a log's errors come from the
    iterator.
    """
    p = _checked(format, path, spec, opts)
    if format not in FORMATS:
        raise UnknownFormat(format)
    res = ImportResult(format=format, path=str(p))
    target = STREAMS.get(format)
    if target is None:
        return res, _whole(res, format, p, spec, opts)
    mod_name, fn_name = target.split(":", 1)
    streamer = cast(Streamer, getattr(importlib.import_module(mod_name), fn_name))
    return res, streamer(res, p, spec, **opts)


def _whole(res: ImportResult, format: str, path: Path, spec: SpecBundle,
           opts: Mapping[str, Any]) -> Iterator[TurnDict]:
    """A `WHOLE` format as a stream: imported at once, its counts copied into `res`."""
    got = get_importer(format)(path, spec, **opts)
    for f in fields(ImportResult):
        setattr(res, f.name, getattr(got, f.name))
    turns, res.turns = res.turns, []
    yield from turns


# ------------------------------------------------------------------ what a file looks like

SNIFF_BYTES = 1 << 16
# (what the file looks like, the --format that reads it or None, a pattern on its start);
# the first that matches wins, so the more specific shapes come first
_LOOKS: tuple[tuple[str, str | None, re.Pattern[str]], ...] = (
    ("a verdicts file", None,
     re.compile(r'^\s*\{"record": "sage-tod run"|^\s*\{[^\n]*"verdict"[^\n]*"criteria"')),
    ("a sage-tod turns file", None,
     re.compile(r'^\s*\{[^\n]*"dialogue_id"[^\n]*"(state_after|state_before)"')),
    ("a workflow spec", None, re.compile(r'^\s*(\{\s*)?"?workflows"?\s*:', re.M)),
    ("a τ²-bench results file", "tau-bench",
     re.compile(r'^\s*\{.*"simulations"\s*:', re.S)),
    ("a τ-bench results file", "tau-bench", re.compile(r'^\s*\[\s*\{.*"traj"\s*:', re.S)),
    ("a τ²-bench simulation", "tau-bench",
     re.compile(r'"termination_reason"\s*:|"reward_info"\s*:')),
    ("a Rasa tracker", "rasa", re.compile(r'"(sender_id|events)"\s*:.*"event"\s*:', re.S)),
    ("an SGD dialogue file", "sgd", re.compile(r'"services"\s*:.*"frames"\s*:', re.S)),
    ("a MultiWOZ dialogue file", "multiwoz",
     re.compile(r'"log"\s*:\s*\[.*"metadata"\s*:', re.S)),
    ("an OpenAI chat log", "openai-chat", re.compile(r'"messages"\s*:\s*\[.*"role"\s*:', re.S)),
)


def sniff(path: str | Path) -> tuple[str, str | None] | None:
    """What the start of `path` looks like, and the `--format` that reads it (None when
    no importer does: a spec, a turns or a verdicts file); None when nothing matches.

    Read from the first 64 KiB only, so it costs nothing on a large log; used to say
    "this looks like X" when a file is read as something it is not.
    """
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    for what, fmt, pattern in _LOOKS:
        if pattern.search(head):
            return what, fmt
    return None


def format_hint(path: str | Path, expected: str | None) -> str | None:
    """A sentence saying what `path` looks like when that is not `expected` (a --format
    name, or None for a turns file); None when it looks right or like nothing known."""
    found = sniff(path)
    if found is None:
        return None
    what, fmt = found
    if expected is None and what == "a sage-tod turns file":
        return None
    if fmt is not None and fmt == expected:
        return None
    use = f"; read it with --format {fmt}" if fmt is not None else ""
    return f"it looks like {what}{use}"
