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
from sage_tod.contracts.criteria import Criterion, FailureClass, Outcome
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


def _fmt_set(items: Sequence[str]) -> str:
    return "{" + ", ".join(items) + "}"


def repair_signal(c: Criterion, ctx: TurnContext) -> str:
    """The concrete state edit or action that would resolve a fired criterion."""
    a = c.args
    if c.failure_class is FailureClass.IUV:
        where = f" (span [{c.evidence.start},{c.evidence.end}] of u_t)" if c.evidence else ""
        slot = a["slot"] if len(a["candidates"]) == 1 else " or ".join(a["candidates"])
        return f"record value {a['value']!r}{where} into slot {slot}"
    if c.failure_class is FailureClass.PC:
        unmet = sorted(ctx.workflow.outcome_unmet(ctx.after))
        return f"required slots {_fmt_set(unmet)} still empty, do not confirm"
    if c.failure_class is FailureClass.WNF:
        legal = list(ctx.workflow.next_fields(ctx.after))
        if legal:
            return f"ask for one of {_fmt_set(legal)} first"
        return "do not request this slot yet; no required field is legal next"
    return f"remove or justify value {a['value']!r} in slot {a['slot']}"
