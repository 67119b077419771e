"""The tau sweep (Appendix J): F1, precision, recall and abstention per threshold.

Pair scores do not depend on tau, so the model runs once (first value) and
every other threshold re-decides from the shared score cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.contracts.criteria import Outcome

TAUS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40)


@dataclass
class CalRow:
    tau: float
    precision: float
    recall: float
    f1: float
    undecided_rate: float
    s2_seen: int
    s2_abstained: int

    @property
    def s2_abstention(self) -> float:
        return self.s2_abstained / self.s2_seen if self.s2_seen else 0.0


def sweep(spec: str | Path, turns: str | Path, *, taus: Sequence[float] = TAUS,
          config: str = "core", options: Mapping[str, Any] | None = None) -> list[CalRow]:
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.evaluation.evaluator import Evaluator
    from sage_tod.outputs.scoring import score

    bundle = load_spec(spec)
    tf = load_turns(turns, bundle)
    labels = [(r.turn.key, r.gold) for r in tf.records]
    if not any(g is not None for _, g in labels):
        raise ValueError(f"{turns}: no gold labels to calibrate against")
    rows: list[CalRow] = []
    for tau in taus:
        ev = Evaluator(bundle, config, options={**dict(options or {}), "tau": tau})
        vs = list(ev.evaluate(tf.records))
        rep = score(labels, vs)
        seen = abst = 0
        for v in vs:
            for c in v.criteria:
                for step in c.trace:
                    if step.stage == "S2":
                        seen += 1
                        abst += step.decision is Outcome.ABSTAIN
        rows.append(CalRow(tau, rep.full.precision, rep.full.recall, rep.full.f1,
                           rep.undecided_rate, seen, abst))
    return rows


def best(rows: Sequence[CalRow], default: float = 0.20) -> CalRow:
    """Highest F1; ties go to the threshold closest to the paper's 0.20 (the most conservative)."""
    return max(rows, key=lambda r: (round(r.f1, 9), -abs(r.tau - default)))
