"""Conversation verdicts: the turns' verdicts of one dialogue read as one answer.

Teams that run tool agents ask first which *conversations* went wrong (τ-bench
scores a conversation, not a turn). A conversation is a **failure** when any of
its turns is, **undecided** when none is but some turn is undecided (a check the
log could not settle: worth a reader's look before it is called clean), and
**acceptable** otherwise. The record keeps which turns decided that and the
first failing criterion with its evidence and repair, so a reader can go
straight to the turn. Derived from the verdicts alone, so it can be rebuilt
from any verdicts file (`sage-tod conversations`), resumed runs included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sage_tod.contracts.criteria import Span
from sage_tod.contracts.verdicts import Verdict

ConversationOutcome = Literal["failure", "undecided", "acceptable"]
# the order a reviewer reads conversations in: failures, then the undecided
OUTCOME_ORDER: dict[str, int] = {"failure": 2, "undecided": 1, "acceptable": 0}


def conversation_outcome(turn_verdicts: Iterable[str]) -> ConversationOutcome:
    """failure if any turn fails, else undecided if any turn is, else acceptable."""
    seen = set(turn_verdicts)
    if "failure" in seen:
        return "failure"
    return "undecided" if "undecided" in seen else "acceptable"


class FirstFailure(BaseModel):
    """The earliest failing turn's first failing criterion: where a reader starts."""

    model_config = ConfigDict(frozen=True)
    turn_id: int | str
    criterion: str
    question: str
    decided_by: str | None
    evidence: Span | None = None
    repair: str | None = None


class ConversationVerdict(BaseModel):
    """One dialogue's answer, from its turns' verdicts (docs/formats.md §4)."""

    model_config = ConfigDict(frozen=True)
    dialogue_id: str
    verdict: ConversationOutcome
    turns: int = Field(description="turns with a verdict")
    failing_turns: list[int | str] = Field(default_factory=list)
    undecided_turns: list[int | str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list,
                               description="classes of the criteria that fired, sorted")
    first_failure: FirstFailure | None = None
    reward: float | None = Field(default=None, description=(
        "the log's own outcome of the conversation (τ-bench's reward, the turns' "
        "`meta.reward`), when the turns were given and hold one"))


def _first_failure(v: Verdict) -> FirstFailure | None:
    for c in v.criteria:
        if c.decision == "true":
            return FirstFailure(turn_id=v.turn_id, criterion=c.id, question=c.question,
                                decided_by=c.decided_by, evidence=c.evidence,
                                repair=c.repair)
    return None


def conversation_verdicts(verdicts: Iterable[Verdict],
                          rewards: Mapping[str, float] | None = None
                          ) -> list[ConversationVerdict]:
    """One record per dialogue, in the order dialogues first appear; `rewards` (dialogue
    id -> the log's reward) is copied onto the records it names."""
    by: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by.setdefault(v.dialogue_id, []).append(v)
    out = []
    for did, vs in by.items():
        failing = [v for v in vs if v.verdict == "failure"]
        out.append(ConversationVerdict(
            dialogue_id=did, verdict=conversation_outcome(v.verdict for v in vs),
            turns=len(vs), failing_turns=[v.turn_id for v in failing],
            undecided_turns=[v.turn_id for v in vs if v.verdict == "undecided"],
            classes=sorted({str(c) for v in failing for c in v.classes}),
            first_failure=_first_failure(failing[0]) if failing else None,
            reward=(rewards or {}).get(did)))
    return out
