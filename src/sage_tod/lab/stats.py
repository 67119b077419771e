"""Statistics for benchmark results: numpy only, pure functions over label arrays.

Conventions (the paper's Metrics section): the positive class is *failure*;
predictions are full-coverage (undecided already mapped to acceptable by the
caller); bootstrap resamples are turn-level, 10,000 of them, seed 0,
percentile intervals; a paired bootstrap recomputes both evaluators on the
same resampled indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sage_tod.outputs.scoring import prf

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]

N_BOOT = 10_000
SEED = 0


def _bool(x: ArrayLike) -> BoolArray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError("expected a 1-d array of labels")
    return arr.astype(bool)


def _check(gold: BoolArray, *preds: BoolArray) -> None:
    for p in preds:
        if p.shape != gold.shape:
            raise ValueError(f"length mismatch: {p.shape[0]} predictions for "
                             f"{gold.shape[0]} gold labels")
    if gold.size == 0:
        raise ValueError("no turns")


def _f1_counts(tp: FloatArray, fp: FloatArray, fn: FloatArray) -> FloatArray:
    denom = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
    return np.asarray(out, dtype=np.float64)


def f1_score(gold: ArrayLike, pred: ArrayLike) -> float:
    """F1 of the failure class; 0.0 when there is nothing to find and nothing found.

    >>> f1_score([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    """
    g, p = _bool(gold), _bool(pred)
    _check(g, p)
    tp = float(np.sum(g & p))
    fp = float(np.sum(~g & p))
    fn = float(np.sum(g & ~p))
    return float(_f1_counts(np.array([tp]), np.array([fp]), np.array([fn]))[0])


def precision_recall_f1(gold: ArrayLike, pred: ArrayLike) -> tuple[float, float, float]:
    """Precision, recall and F1 of the failure class.

    >>> precision_recall_f1([1, 1, 0, 0], [1, 1, 1, 0])
    (0.6666666666666666, 1.0, 0.8)
    """
    g, p = _bool(gold), _bool(pred)
    _check(g, p)
    counts = prf(g.tolist(), p.tolist())
    return counts.precision, counts.recall, counts.f1


def resample_indices(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> NDArray[np.int64]:
    """The (n_boot, n) matrix of turn indices every bootstrap here shares."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n), dtype=np.int64)


def _boot_f1(g: BoolArray, p: BoolArray, idx: NDArray[np.int64]) -> FloatArray:
    gs, ps = g[idx], p[idx]
    tp = np.asarray(np.sum(gs & ps, axis=1), dtype=np.float64)
    fp = np.asarray(np.sum(~gs & ps, axis=1), dtype=np.float64)
    fn = np.asarray(np.sum(gs & ~ps, axis=1), dtype=np.float64)
    return _f1_counts(tp, fp, fn)


@dataclass(frozen=True)
class Interval:
    point: float
    low: float
    high: float


def bootstrap_f1_ci(gold: ArrayLike, pred: ArrayLike, *, n_boot: int = N_BOOT,
                    seed: int = SEED, level: float = 0.95) -> Interval:
    """Percentile bootstrap CI of F1 over turn-level resamples."""
    g, p = _bool(gold), _bool(pred)
    _check(g, p)
    boots = _boot_f1(g, p, resample_indices(g.size, n_boot, seed))
    a = (1 - level) / 2
    return Interval(f1_score(g, p), float(np.quantile(boots, a)),
                    float(np.quantile(boots, 1 - a)))


@dataclass(frozen=True)
class PairedResult:
    """ΔF1 = F1(a) − F1(b) with its percentile CI and two-sided bootstrap p."""

    delta: float
    low: float
    high: float
    p_value: float
    n_boot: int


def _paired(deltas: FloatArray, point: float, n_boot: int, level: float) -> PairedResult:
    a = (1 - level) / 2
    # two-sided p: twice the smaller tail probability that Δ* takes either sign
    lower = float(np.mean(deltas <= 0))
    upper = float(np.mean(deltas >= 0))
    p = min(1.0, 2 * min(lower, upper))
    return PairedResult(point, float(np.quantile(deltas, a)), float(np.quantile(deltas, 1 - a)),
                        p, n_boot)


def paired_bootstrap(gold: ArrayLike, pred_a: ArrayLike, pred_b: ArrayLike, *,
                     n_boot: int = N_BOOT, seed: int = SEED, level: float = 0.95
                     ) -> PairedResult:
    """Paired bootstrap of F1(a) − F1(b) on the same resampled turns.

    A p of 0.0 means no resample went the other way: report it as p < 1/n_boot.
    """
    g, a, b = _bool(gold), _bool(pred_a), _bool(pred_b)
    _check(g, a, b)
    idx = resample_indices(g.size, n_boot, seed)
    deltas = _boot_f1(g, a, idx) - _boot_f1(g, b, idx)
    return _paired(deltas, f1_score(g, a) - f1_score(g, b), n_boot, level)


def paired_bootstrap_vs_best(gold: ArrayLike, pred_a: ArrayLike,
                             baselines: Sequence[ArrayLike], *, n_boot: int = N_BOOT,
                             seed: int = SEED, level: float = 0.95) -> PairedResult:
    """Paired bootstrap against the strongest baseline, re-selected inside every resample.

    The point estimate compares with the baseline of maximum F1 on the full
    set; in each resample the maximum is taken again, so the CI and p carry
    the uncertainty of which baseline is strongest.
    """
    g, a = _bool(gold), _bool(pred_a)
    bs = [_bool(b) for b in baselines]
    if not bs:
        raise ValueError("need at least one baseline")
    _check(g, a, *bs)
    idx = resample_indices(g.size, n_boot, seed)
    best = np.max(np.stack([_boot_f1(g, b, idx) for b in bs]), axis=0)
    deltas = _boot_f1(g, a, idx) - best
    point = f1_score(g, a) - max(f1_score(g, b) for b in bs)
    return _paired(deltas, point, n_boot, level)


def holm_bonferroni(p_values: Sequence[float], alpha: float = 0.05
                    ) -> tuple[list[float], list[bool]]:
    """Holm's step-down adjusted p-values and rejections, in the input order.

    >>> holm_bonferroni([0.01, 0.04, 0.03])
    ([0.03, 0.06, 0.06], [True, False, False])
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = round(running, 12)
    return adjusted, [adj <= alpha for adj in adjusted]


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float:
    """Cohen's κ for two label vectors over any hashable labels.

    >>> cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"])
    0.5
    """
    if len(a) != len(b) or not a:
        raise ValueError("need two label vectors of equal, non-zero length")
    n = len(a)
    labels = sorted(set(a) | set(b), key=repr)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum((list(a).count(lab) / n) * (list(b).count(lab) / n) for lab in labels)
    return 1.0 if pe == 1 else (po - pe) / (1 - pe)


def coverage_order(confidence: ArrayLike) -> NDArray[np.int64]:
    """Turn indices from most to least confident; ties keep input order (stable)."""
    c = np.asarray(confidence, dtype=np.float64)
    return np.argsort(-c, kind="stable").astype(np.int64)


def f1_at_coverage(gold: ArrayLike, pred: ArrayLike, confidence: ArrayLike,
                   coverage: float) -> float:
    """F1 on the most confident `coverage` share of turns (the rest declined)."""
    g, p = _bool(gold), _bool(pred)
    _check(g, p)
    if not 0 < coverage <= 1:
        raise ValueError("coverage must be in (0, 1]")
    k = max(1, int(np.ceil(coverage * g.size - 1e-9)))
    keep = coverage_order(confidence)[:k]
    return f1_score(g[keep], p[keep])


def risk_coverage(gold: ArrayLike, pred: ArrayLike, confidence: ArrayLike
                  ) -> tuple[FloatArray, FloatArray]:
    """(coverage, risk) for keeping the k most confident turns, k = 1..n; risk = error rate."""
    g, p = _bool(gold), _bool(pred)
    _check(g, p)
    order = coverage_order(confidence)
    errors = np.cumsum((g != p)[order], dtype=np.float64)
    k = np.arange(1, g.size + 1, dtype=np.float64)
    return k / g.size, errors / k
