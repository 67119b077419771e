"""Verdict records (JSONL), one per input turn: the public output contract."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from sage_tod.contracts.criteria import FailureClass, Outcome, Span, as_failure_class
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import iter_jsonl, parse_json, parse_line

FORMAT_VERSION = 1
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


def decided_by_counts(verdicts: Iterable[Verdict]) -> Counter[str]:
    """How many criteria each stage decided ("abstained" when none did): the routing anatomy."""
    return Counter((c.decided_by or "abstained") for v in verdicts for c in v.criteria)


def write_verdict(v: Verdict, fh: IO[str]) -> None:
    """One verdict line, flushed: a run killed mid-way keeps every finished turn (resume)."""
    fh.write(v.to_json() + "\n")
    fh.flush()


def write_verdicts(verdicts: Iterable[Verdict], fh: IO[str]) -> int:
    """Every verdict through `write_verdict`, the one writer of the format; the count."""
    n = 0
    for v in verdicts:
        write_verdict(v, fh)
        n += 1
    return n


def iter_verdicts(path: str | Path) -> Iterator[Verdict]:
    """Read a verdicts file; a bad line raises `InputError` naming line and field.

    Lines are decoded one by one and parsed by the bounded JSON reader, so a
    non-UTF-8 byte, NaN, a huge number or deep nesting is a located error. A
    Parquet file (by its suffix) is read from its `json` column the same way.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(p, "is a directory, not a verdicts file")
    if p.suffix.lower() in (".parquet", ".pq"):
        from sage_tod.contracts.parquet import iter_verdict_json

        lines: Iterator[tuple[int, Any]] = (
            (n, parse_line(p, n, text)) for n, text in iter_verdict_json(p))
    else:
        lines = iter_jsonl(p)
    for n, obj in lines:
        if isinstance(obj, InputError):
            raise obj
        try:
            yield Verdict.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise InputError(p, err["msg"], line=n, field=loc or None) from None


def read_verdicts(path: str | Path) -> list[Verdict]:
    return list(iter_verdicts(path))


_VERDICT_PREFIX = b'{"format_version"'
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
            or not isinstance(obj.get("format_version"), int)):
        return None
    return f"{did}:{tid}"


def scan_verdicts(path: Path) -> tuple[set[str], int]:
    """(keys of the verdicts in `path`, bytes of its complete verdict lines).

    Raises `InputError` (and touches nothing) when a line is not a verdict,
    except a last line without its newline that starts like one: that is what
    an interrupted write leaves, and it is the only thing a resume cuts.
    """
    keys: set[str] = set()
    good = 0
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            complete = raw.endswith(b"\n")
            key = _is_verdict_line(raw) if complete else None
            if key is None:
                if not complete and (raw.startswith(_VERDICT_PREFIX)
                                     or _VERDICT_PREFIX.startswith(raw)):
                    break  # half a line from an interrupted run: redone
                raise InputError(path, "is not a verdicts file (this line is not a verdict); "
                                       "not resuming, the file is left as it is", line=n)
            keys.add(key)
            good += len(raw)
    return keys, good


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
    keys, good = scan_verdicts(p)
    if good != p.stat().st_size:
        with p.open("r+b") as fh:
            fh.truncate(good)
    return keys
