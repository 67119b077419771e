"""Verdict records (JSONL), one per input turn: the public output contract.

A file of format 2 starts with its run header (`contracts.run_record`); the
verdict lines after it leave out what the header states and the reader puts it
back. A file of format 1 (no header, complete lines) reads as before.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from sage_tod.contracts.criteria import FailureClass, Outcome, Span, as_failure_class
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import (
    FORMAT_VERSION,
    HEADER_PREFIX,
    SHARED_FIELDS,
    RunHeader,
    is_header,
)
from sage_tod.contracts.safejson import iter_jsonl, parse_json, parse_line

# a built-in class (IUV, WNF, PC, UV) or a plugin's class name (docs/api.md)
ClassField = Annotated[FailureClass | str, BeforeValidator(as_failure_class)]


class StageAnswer(BaseModel):
    """One stage's answer to a criterion, in the order the cascade asked."""

    model_config = ConfigDict(frozen=True)
    stage: str
    decision: Outcome
    margin: float
    rationale: str


class CriterionVerdict(BaseModel):
    """A criterion with its final decision, the deciding stage and the repair signal."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    id: str
    failure_class: ClassField = Field(alias="class")
    args: dict[str, Any]
    question: str
    decision: Outcome
    decided_by: str | None
    margin: float
    rationale: str
    evidence: Span | None = None
    support: Span | None = Field(default=None,
                                 description="where the deciding stage found its support")
    repair: str | None = None
    trace: list[StageAnswer] = Field(default_factory=list)


class Verdict(BaseModel):
    """The evaluator's answer for one turn."""

    model_config = ConfigDict(frozen=True)
    format_version: int = FORMAT_VERSION
    dialogue_id: str
    turn_id: int | str
    workflow: str
    verdict: Literal["failure", "acceptable", "undecided"]
    confidence: float
    classes: list[ClassField] = Field(default_factory=list,
                                        description="classes of the criteria that fired")
    criteria: list[CriterionVerdict]
    config: str
    stages: list[str] = Field(description="the stages that ran (a configured stage that "
                                          "could not run is in `missing`, not here)")
    latency_ms: float
    cost_usd: float = 0.0
    missing: list[str] = Field(default_factory=list,
                               description="configured stages that could not run; written "
                                           "only when not empty (additive, format v1)")

    @property
    def key(self) -> str:
        return f"{self.dialogue_id}:{self.turn_id}"

    @property
    def repairs(self) -> list[str]:
        return [c.repair for c in self.criteria if c.repair]

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump(mode="json", by_alias=True)
        if not d["missing"]:
            del d["missing"]  # lines of a complete run stay byte-identical to before
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=False)

    def to_line(self, header: RunHeader | None) -> str:
        """The JSONL line under `header`: the fields the header states (format version,
        config, stages, missing) are left out when this verdict agrees with it."""
        d = self.to_dict()
        if header is not None:
            shared = header.shared()
            for k in SHARED_FIELDS:
                if k in d and d[k] == shared[k]:
                    del d[k]
                elif k == "missing" and k not in d and shared[k]:
                    d[k] = []  # this verdict had every stage though the header says not
        return json.dumps(d, ensure_ascii=False, sort_keys=False)


def decided_by_counts(verdicts: Iterable[Verdict]) -> Counter[str]:
    """How many criteria each stage decided ("abstained" when none did): the routing anatomy."""
    return Counter((c.decided_by or "abstained") for v in verdicts for c in v.criteria)


def write_header(header: RunHeader, fh: IO[str]) -> None:
    """The run header, the first line of a verdicts file."""
    fh.write(header.to_json() + "\n")
    fh.flush()


def write_verdict(v: Verdict, fh: IO[str], header: RunHeader | None = None) -> None:
    """One verdict line, flushed: a run killed mid-way keeps every finished turn (resume).
    Under a `header` the line leaves out what the header states."""
    fh.write(v.to_line(header) + "\n")
    fh.flush()


def write_verdicts(verdicts: Iterable[Verdict], fh: IO[str],
                   header: RunHeader | None = None) -> int:
    """The header (when given) and every verdict through `write_verdict`, the one writer
    of the format; the count of verdicts."""
    if header is not None:
        write_header(header, fh)
    n = 0
    for v in verdicts:
        write_verdict(v, fh, header)
        n += 1
    return n


def _header_of(p: Path, n: int, obj: Any) -> RunHeader:
    try:
        return RunHeader.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise InputError(p, f"run header: {err['msg']}", line=n, field=loc or None) from None


def iter_verdicts(path: str | Path) -> Iterator[Verdict]:
    """Read a verdicts file; a bad line raises `InputError` naming line and field.

    Lines are decoded one by one and parsed by the bounded JSON reader, so a
    non-UTF-8 byte, NaN, a huge number or deep nesting is a located error. A
    Parquet file (by its suffix) is read from its `json` column the same way.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(p, "is a directory, not a verdicts file")
    shared: dict[str, Any] = {}
    if p.suffix.lower() in (".parquet", ".pq"):
        from sage_tod.contracts.parquet import iter_verdict_json, parquet_header

        head = parquet_header(p)
        if head is not None:
            shared = head.shared()
        lines: Iterator[tuple[int, Any]] = (
            (n, parse_line(p, n, text)) for n, text in iter_verdict_json(p))
    else:
        lines = iter_jsonl(p)
    first = True
    for n, obj in lines:
        if isinstance(obj, InputError):
            raise obj
        if first and is_header(obj):
            shared = _header_of(p, n, obj).shared()
            first = False
            continue
        first = False
        if shared and isinstance(obj, dict):
            obj = {**shared, **obj}
        try:
            yield Verdict.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise InputError(p, err["msg"], line=n, field=loc or None) from None


def read_verdicts(path: str | Path) -> list[Verdict]:
    return list(iter_verdicts(path))


def read_header(path: str | Path) -> RunHeader | None:
    """The run header of a verdicts file (JSONL first line, Parquet metadata), or None
    for a file of format 1 (written before the header existed)."""
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq"):
        from sage_tod.contracts.parquet import parquet_header

        return parquet_header(p)
    for n, obj in iter_jsonl(p):
        if isinstance(obj, InputError):
            raise obj
        return _header_of(p, n, obj) if is_header(obj) else None
    return None


_VERDICT_PREFIXES = (b'{"format_version"', b'{"dialogue_id"')
_LABELS = frozenset({"failure", "acceptable", "undecided"})


def _is_verdict_line(raw: bytes) -> str | None:
    """The turn key of a verdict line, or None when the line is not a verdict."""
    try:
        obj = parse_json(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    did, tid = obj.get("dialogue_id"), obj.get("turn_id")
    if (not isinstance(did, str) or isinstance(tid, bool) or not isinstance(tid, int | str)
            or not isinstance(obj.get("verdict"), str) or obj["verdict"] not in _LABELS
            or not isinstance(obj.get("criteria"), list)
            or not isinstance(obj.get("format_version", 2), int)):
        return None
    return f"{did}:{tid}"


def _starts_like_verdict(raw: bytes) -> bool:
    return any(raw.startswith(p) or p.startswith(raw) for p in _VERDICT_PREFIXES)


class ScannedVerdicts:
    """What a resume needs to know about an existing verdicts file."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.good = 0  # bytes of the header and complete verdict lines before any damage
        self.header: RunHeader | None = None
        self.damaged_line: int | None = None  # first line that is not a verdict
        self.lines_after = 0  # lines from the damaged one to the end


def scan_verdicts(path: Path, *, cut_damage: bool = False) -> ScannedVerdicts:
    """The keys, header and good length of `path`, for --resume.

    Raises `InputError` (and touches nothing) when a line is not a verdict,
    except a last line without its newline that starts like one: that is what
    an interrupted write leaves, and it is the only thing a resume cuts on its
    own. A damaged line elsewhere is named, with how many verdicts come before
    it; with `cut_damage` (`--truncate-at-damage`) the scan stops there, so the
    caller can cut the file at that line and redo the rest.
    """
    found = ScannedVerdicts()
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            complete = raw.endswith(b"\n")
            if n == 1 and complete and raw.startswith(HEADER_PREFIX):
                try:
                    found.header = _header_of(path, n, parse_json(raw))
                except ValueError:
                    raise InputError(path, "has a damaged run header; not resuming, the file "
                                           "is left as it is (use --overwrite to start "
                                           "again)", line=1) from None
                found.good += len(raw)
                continue
            key = _is_verdict_line(raw) if complete else None
            if key is None:
                if not complete and _starts_like_verdict(raw):
                    break  # half a line from an interrupted run: redone
                if not found.keys and found.header is None:
                    raise InputError(path, "is not a verdicts file (this line is not a "
                                           "verdict); not resuming, the file is left as it is",
                                     line=n)
                found.damaged_line = n
                found.lines_after = 1 + sum(1 for _ in fh)
                if cut_damage:
                    break
                raise InputError(path, f"line {n} is damaged (not a verdict); not resuming, "
                                       "the file is left as it is. `--resume "
                                       "--truncate-at-damage` keeps the "
                                       f"{len(found.keys)} verdict(s) before it, cuts this "
                                       f"line and the {found.lines_after - 1} after it, and "
                                       "redoes those turns", line=n)
            found.keys.add(key)
            found.good += len(raw)
    return found


def prepare_resume(path: str | Path) -> set[str]:
    """Keys of the verdicts already in `path`, for --resume.

    A last line half-written by an interrupted run is cut off (and redone);
    a file with any other line that is not a verdict raises `InputError` and
    is left untouched (it is not ours to truncate). The CLI goes through
    `outputs.sink.VerdictSink`, which adds the lock and the sidecar check.
    """
    p = Path(path)
    if not p.exists():
        return set()
    found = scan_verdicts(p)
    if found.good != p.stat().st_size:
        with p.open("r+b") as fh:
            fh.truncate(found.good)
    return found.keys
