"""Scoring verdicts against gold labels (the `score` command).

Full-coverage scoring maps undecided to acceptable, as the paper does; the
decided-only numbers show what the evaluator gets right when it commits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.turns import Gold
from sage_tod.contracts.verdicts import Verdict

CLASSES = CLASS_NAMES


@dataclass(frozen=True)
class PRF:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def prf(gold: Sequence[bool], pred: Sequence[bool]) -> PRF:
    """Counts for the failure class (True = failure).

    >>> prf([True, True, False, False], [True, False, True, False]).f1
    0.5
    """
    if len(gold) != len(pred):
        raise ValueError("gold and pred differ in length")
    tp = sum(g and p for g, p in zip(gold, pred, strict=True))
    fp = sum((not g) and p for g, p in zip(gold, pred, strict=True))
    fn = sum(g and not p for g, p in zip(gold, pred, strict=True))
    return PRF(tp, fp, fn, len(gold) - tp - fp - fn)


@dataclass
class ScoreReport:
    n: int
    full: PRF
    decided: PRF
    coverage: float
    undecided_rate: float
    clean_fp_rate: float
    class_recall: dict[str, tuple[int, int]]  # class -> (caught, total)
    undecided: list[str] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)  # key, gold, verdict
    unlabelled: int = 0
    missing_verdicts: list[str] = field(default_factory=list)
    # configured stages that did not run -> verdicts made without them (issue 14)
    stages_missing: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n, "precision": self.full.precision, "recall": self.full.recall,
            "f1": self.full.f1, "tp": self.full.tp, "fp": self.full.fp, "fn": self.full.fn,
            "tn": self.full.tn,
            "decided": {"precision": self.decided.precision, "recall": self.decided.recall,
                        "f1": self.decided.f1, "coverage": self.coverage},
            "undecided_rate": self.undecided_rate, "clean_fp_rate": self.clean_fp_rate,
            "class_recall": {k: {"caught": c, "total": t, "recall": c / t if t else None}
                             for k, (c, t) in self.class_recall.items()},
            "undecided": self.undecided, "errors": [list(e) for e in self.errors],
            "unlabelled": self.unlabelled, "missing_verdicts": self.missing_verdicts,
            **({"stages_missing": self.stages_missing} if self.stages_missing else {}),
        }


def score(labels: Sequence[tuple[str, Gold | None]], verdicts: Sequence[Verdict]) -> ScoreReport:
    """Score verdicts against (turn key, gold) pairs; keys are "dialogue_id:turn_id"."""
    by_key = {v.key: v for v in verdicts}
    gold: list[bool] = []
    pred: list[bool] = []
    decided_g: list[bool] = []
    decided_p: list[bool] = []
    undecided: list[str] = []
    errors: list[tuple[str, str, str]] = []
    missing: list[str] = []
    unlabelled = 0
    class_recall = {c: [0, 0] for c in CLASSES}
    clean = clean_fp = 0
    for key, gold_label in labels:
        if gold_label is None:
            unlabelled += 1
            continue
        v = by_key.get(key)
        if v is None:
            missing.append(key)
            continue
        g = gold_label.label == "failure"
        p = v.verdict == "failure"
        gold.append(g)
        pred.append(p)
        if v.verdict == "undecided":
            undecided.append(key)
        else:
            decided_g.append(g)
            decided_p.append(p)
        if g != p:
            errors.append((key, gold_label.failure_class or gold_label.label, v.verdict))
        if g and gold_label.failure_class:
            class_recall[gold_label.failure_class][1] += 1
            class_recall[gold_label.failure_class][0] += int(p)
        if not g:
            clean += 1
            clean_fp += int(p)
    n = len(gold)
    return ScoreReport(
        n=n, full=prf(gold, pred), decided=prf(decided_g, decided_p),
        coverage=len(decided_g) / n if n else 0.0,
        undecided_rate=len(undecided) / n if n else 0.0,
        clean_fp_rate=clean_fp / clean if clean else 0.0,
        class_recall={k: (c, t) for k, (c, t) in class_recall.items()},
        undecided=undecided, errors=errors, unlabelled=unlabelled, missing_verdicts=missing,
        stages_missing=dict(sorted(Counter(m for v in by_key.values() for m in v.missing
                                           ).items())),
    )
