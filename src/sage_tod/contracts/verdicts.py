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
    stages: list[str]
    latency_ms: float
    cost_usd: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.dialogue_id}:{self.turn_id}"

    @property
    def repairs(self) -> list[str]:
        return [c.repair for c in self.criteria if c.repair]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

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
    """Read a verdicts file; a bad line raises `InputError` naming line and field."""
    p = Path(path)
    try:
        fh = p.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(p, "file not found") from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(p, f"malformed JSON: {exc.msg}", line=n) from None
            try:
                yield Verdict.model_validate(obj)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(x) for x in err["loc"])
                raise InputError(p, err["msg"], line=n, field=loc or None) from None


def read_verdicts(path: str | Path) -> list[Verdict]:
    return list(iter_verdicts(path))


def prepare_resume(path: str | Path) -> set[str]:
    """Keys of the verdicts already in `path`, for --resume.

    The file is cut back to its last complete, parseable line first, so a line
    half-written by an interrupted run is redone instead of corrupting the file.
    """
    keys: set[str] = set()
    p = Path(path)
    if not p.exists():
        return keys
    good = 0
    with p.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                obj = json.loads(raw)
                keys.add(f"{obj['dialogue_id']}:{obj['turn_id']}")
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
                break
            good += len(raw)
    if good != p.stat().st_size:
        with p.open("r+b") as fh:
            fh.truncate(good)
    return keys
