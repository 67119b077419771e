"""Choosing the claim by measurement: every (window, template) on the SGD dev pairs.

For each variant it reports the AUC of the margin (supported vs unsupported),
and at the gate tau: coverage (share of pairs with |m| >= tau), accuracy on
the decided pairs, and the precision of the "unsupported" side (the side that
fires a UV failure). `hard` restricts to the pairs S1 cannot settle (the value
is not found verbatim or as a schema synonym), which is what S2 actually sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sage_tod.compiler import make_context
from sage_tod.nli.claims import TEMPLATES, WINDOWS, uv_pair
from sage_tod.nli.devset import DevSet
from sage_tod.nli.scorer import NLIScorer, margin
from sage_tod.verifiers.symbolic import find_support


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Mann-Whitney AUC with ties counted half."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum = 0.0
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        avg = (i + j + 1) / 2.0
        rank_sum += avg * sum(1 for k in range(i, j) if ranked[k][1] == 1)
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg))


@dataclass
class VariantRow:
    window: str
    template: str
    subset: str
    n_pos: int
    n_neg: int
    auc: float
    mean_pos: float
    mean_neg: float
    coverage: float
    accuracy: float
    unsupported_precision: float
    unsupported_recall: float

    def as_markdown(self) -> str:
        return (f"| {self.window} | {self.template} | {self.subset} | {self.n_pos}/{self.n_neg} | "
                f"{self.auc:.3f} | {self.mean_pos:+.2f} / {self.mean_neg:+.2f} | "
                f"{self.coverage:.2f} | {self.accuracy:.3f} | {self.unsupported_precision:.3f} | "
                f"{self.unsupported_recall:.3f} |")


HEADER = ("| window | template | subset | pos/neg | AUC | mean m pos / neg | coverage@tau | "
          "acc@tau | P(unsupported)@tau | R(unsupported)@tau |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def _row(window: str, template: str, subset: str, ms: list[float], ys: list[bool],
         tau: float) -> VariantRow:
    dec = [(m, y) for m, y in zip(ms, ys, strict=True) if abs(m) >= tau]
    correct = sum(1 for m, y in dec if (m > 0) == y)
    fired = [y for m, y in dec if m < 0]
    n_neg = sum(1 for y in ys if not y)
    pos = [m for m, y in zip(ms, ys, strict=True) if y]
    neg = [m for m, y in zip(ms, ys, strict=True) if not y]
    return VariantRow(
        window, template, subset, len(pos), len(neg), auc(ms, ys),
        sum(pos) / max(1, len(pos)), sum(neg) / max(1, len(neg)),
        len(dec) / max(1, len(ms)), correct / len(dec) if dec else float("nan"),
        sum(1 for y in fired if not y) / len(fired) if fired else float("nan"),
        sum(1 for y in fired if not y) / max(1, n_neg))


def dev_table(ds: DevSet, scorer: NLIScorer, *, tau: float = 0.20,
              windows: Sequence[str] = WINDOWS, templates: Sequence[str] = tuple(TEMPLATES),
              ) -> list[VariantRow]:
    bundle = ds.bundle()
    turns = ds.turn_objects()
    ctxs = {k: make_context(bundle, t) for k, t in turns.items()}
    count = scorer.backend.tokenizer.count if hasattr(scorer.backend, "tokenizer") else len
    hard = [find_support(ctxs[c.turn_key], c.slot, c.value) is None for c in ds.claims]
    ys = [c.supported for c in ds.claims]
    rows: list[VariantRow] = []
    for w in windows:
        for t in templates:
            pairs = [uv_pair(ctxs[c.turn_key], c.slot, c.value, template=t, window_name=w,
                             count=count) for c in ds.claims]
            ms = [margin(p) for p in scorer.score(pairs)]
            rows.append(_row(w, t, "all", ms, ys, tau))
            hm = [m for m, h in zip(ms, hard, strict=True) if h]
            hy = [y for y, h in zip(ys, hard, strict=True) if h]
            rows.append(_row(w, t, "hard", hm, hy, tau))
    return rows
