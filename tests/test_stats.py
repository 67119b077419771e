"""Statistics against hand-computed cases and known values."""

from __future__ import annotations

import numpy as np
import pytest

from sage_tod.lab import stats


def test_prf_by_hand() -> None:
    # tp=2 fp=1 fn=1 -> P=2/3 R=2/3 F1=2/3
    gold = [1, 1, 1, 0, 0]
    pred = [1, 1, 0, 1, 0]
    p, r, f = stats.precision_recall_f1(gold, pred)
    assert (p, r) == pytest.approx((2 / 3, 2 / 3)) and f == pytest.approx(2 / 3)
    assert stats.f1_score([0, 0], [0, 0]) == 0.0
    with pytest.raises(ValueError):
        stats.f1_score([1, 0], [1])


def test_bootstrap_ci_brackets_the_point_and_is_seeded() -> None:
    rng = np.random.default_rng(7)
    gold = rng.random(200) < 0.5
    pred = np.where(rng.random(200) < 0.85, gold, ~gold)
    ci = stats.bootstrap_f1_ci(gold, pred, n_boot=2000)
    assert ci.low < ci.point < ci.high
    assert ci == stats.bootstrap_f1_ci(gold, pred, n_boot=2000)
    perfect = stats.bootstrap_f1_ci(gold, gold, n_boot=500)
    assert (perfect.low, perfect.point, perfect.high) == (1.0, 1.0, 1.0)


def test_paired_identical_evaluators_give_zero_and_p_one() -> None:
    gold = np.array([1, 0, 1, 1, 0, 0, 1, 0] * 10, dtype=bool)
    pred = np.array([1, 0, 0, 1, 1, 0, 1, 0] * 10, dtype=bool)
    res = stats.paired_bootstrap(gold, pred, pred, n_boot=2000)
    assert res.delta == 0.0 and res.low == 0.0 and res.high == 0.0 and res.p_value == 1.0


def test_paired_dominating_evaluator_p_below_0_001() -> None:
    gold = np.array([1, 0] * 60, dtype=bool)
    a = gold.copy()  # right on every turn
    b = ~gold  # wrong on every turn
    res = stats.paired_bootstrap(gold, a, b)  # 10,000 resamples, seed 0
    assert res.delta == 1.0 and res.p_value < 0.001 and res.low > 0


def test_paired_vs_best_reselects_inside_resamples() -> None:
    rng = np.random.default_rng(3)
    gold = rng.random(150) < 0.5
    a = np.where(rng.random(150) < 0.9, gold, ~gold)
    b1 = np.where(rng.random(150) < 0.8, gold, ~gold)
    b2 = np.where(rng.random(150) < 0.8, gold, ~gold)
    best = stats.paired_bootstrap_vs_best(gold, a, [b1, b2], n_boot=3000)
    one = stats.paired_bootstrap(gold, a, b1 if stats.f1_score(gold, b1) >=
                                 stats.f1_score(gold, b2) else b2, n_boot=3000)
    assert best.delta == pytest.approx(one.delta)
    # the max over two baselines is at least each one, so the delta shifts down
    assert best.low <= one.low + 1e-12
    same = stats.paired_bootstrap_vs_best(gold, a, [b1], n_boot=3000)
    assert same == stats.paired_bootstrap(gold, a, b1, n_boot=3000)


def test_holm_known_values() -> None:
    adj, rej = stats.holm_bonferroni([0.011, 0.022, 0.044, 0.89])
    assert adj == pytest.approx([0.044, 0.066, 0.088, 0.89])
    assert rej == [True, False, False, False]
    assert stats.holm_bonferroni([]) == ([], [])


def test_cohen_kappa_known_values() -> None:
    assert stats.cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]) == 1.0
    # po = 0.5, pe = 0.5 -> 0
    assert stats.cohen_kappa([1, 0, 1, 0], [1, 1, 0, 0]) == 0.0
    # classic table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa = 0.4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert stats.cohen_kappa(a, b) == pytest.approx(0.4)


def test_selective_evaluation() -> None:
    gold = [1, 1, 0, 0, 1]
    pred = [1, 1, 0, 1, 0]  # the two errors are the least confident
    conf = [1.0, 0.9, 0.8, 0.2, 0.1]
    assert stats.f1_at_coverage(gold, pred, conf, 1.0) == pytest.approx(
        stats.f1_score(gold, pred))
    assert stats.f1_at_coverage(gold, pred, conf, 0.6) == 1.0  # top 3 all right
    cov, risk = stats.risk_coverage(gold, pred, conf)
    assert list(cov) == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert list(risk) == pytest.approx([0, 0, 0, 0.25, 0.4])
