"""From criterion decisions to a turn verdict, its confidence and repair signals.

failure if any criterion is TRUE; acceptable only if every criterion is decided
FALSE; otherwise undecided. Confidence is the minimum decision margin over the
decided criteria (S1 decisions count 1.0). An undecided turn gets confidence
0.0: it is the least certain thing the evaluator outputs, so selective
evaluation declines it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from sage_tod.compiler.context import TurnContext
from sage_tod.compiler.kinds import CRITERIA
from sage_tod.contracts.criteria import Criterion, Outcome
from sage_tod.evaluation.cascade import CriterionResult

VerdictLabel = Literal["failure", "acceptable", "undecided"]


def turn_verdict(results: Sequence[CriterionResult]) -> tuple[VerdictLabel, float]:
    decided = [r for r in results if r.decision.outcome is not Outcome.ABSTAIN]
    if any(r.decision.outcome is Outcome.TRUE for r in results):
        label: VerdictLabel = "failure"
    elif len(decided) == len(results):
        label = "acceptable"
    else:
        return "undecided", 0.0
    confidence = min((r.decision.margin for r in decided), default=1.0)
    return label, round(float(confidence), 6)


def repair_signal(c: Criterion, ctx: TurnContext) -> str:
    """The concrete state edit or action that would resolve a fired criterion (its class says)."""
    return CRITERIA.get(str(c.failure_class)).repair(c, ctx)
