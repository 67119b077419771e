"""Typed records that cross module boundaries: spans, criteria, decisions.

A `Criterion` is one atomic, independently verifiable question compiled from a
turn. A `Decision` is one stage's answer to it. Both serialise into the public
verdict format (docs/formats.md), so their field names are a contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SpanSource = Literal["user", "agent", "history.user", "history.agent", "state_before",
                     "state_after"]


class FailureClass(StrEnum):
    """The paper's taxonomy C of workflow failures."""

    IUV = "IUV"  # ignored user value
    WNF = "WNF"  # wrong next field
    PC = "PC"  # premature confirmation
    UV = "UV"  # unsupported value


class Outcome(StrEnum):
    """A stage's answer: TRUE means the failure fires."""

    TRUE = "true"
    FALSE = "false"
    ABSTAIN = "abstain"


class Span(BaseModel):
    """A minimal evidence span: which utterance, which characters, what they say."""

    model_config = ConfigDict(frozen=True)
    source: SpanSource
    index: int | None = Field(default=None, description="history position for history.*")
    start: int
    end: int
    text: str


class Criterion(BaseModel):
    """One compiled criterion k = (class, args, evidence) and the question it asks."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    id: str
    failure_class: FailureClass = Field(alias="class")
    args: dict[str, Any]
    question: str
    evidence: Span | None = None
    nlu: bool = Field(default=False, description="needs language understanding (S2 may decide)")
    open_class: bool = Field(default=False, description="eligible for the focused-LLM stage S3")


@dataclass(frozen=True)
class Decision:
    """One stage's answer to one criterion."""

    outcome: Outcome
    margin: float
    rationale: str
    evidence: Span | None = None
    cost_usd: float = 0.0

    @staticmethod
    def abstain(rationale: str, margin: float = 0.0) -> Decision:
        return Decision(Outcome.ABSTAIN, margin, rationale)
