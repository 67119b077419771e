"""Choosing the claim by measurement: every (window, template) on the SGD dev pairs.

For each variant it reports the AUC of the margin (supported vs unsupported),
and at the gate tau: coverage (share of pairs with |m| >= tau), accuracy on
the decided pairs, and the precision of the "unsupported" side (the side that
fires a UV failure). `hard` restricts to the pairs S1 cannot settle (the value
is not found verbatim or as a schema synonym), which is what S2 actually sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.compiler.context import make_context
from sage_tod.contracts.criteria import IUVArgs, UVArgs
from sage_tod.lab.nli.devset import DevSet
from sage_tod.nli.backend import Pair
from sage_tod.nli.claims import (
    PC_TEMPLATES,
    PC_WINDOWS,
    TEMPLATES,
    UV_MARGINS,
    WINDOWS,
    hypothesis,
    iuv_pairs,
    pc_premise,
    uv_margin,
    uv_pair,
)
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


# ---------------------------------------------------------------------------------------------
# Per criterion class: UV, IUV, PC on the dev split and on SGD dev (issue #8)
#
# The table above asks "does the margin separate supported from unsupported values";
# the one below asks what S2 is for: per class, does the failure side fire on the
# criteria that really reach S2 (S1 abstained), at the gate tau, for each claim variant
# and each margin definition. The dev split is `slices build`'s 40-turn dev.jsonl,
# disjoint from every benchmark slice; nothing here may read a benchmark slice.

FORBIDDEN_TURN_FILES = ("mw_mixed", "uv_rich", "sgd.jsonl", "sgdx_", "test")


@dataclass(frozen=True)
class Probe:
    """One criterion (or SGD-dev claim) to measure: its class, whether the failure holds,
    and how to state it as pairs for a (window, template) variant (IUV: one pair per
    candidate slot, decided by the best)."""

    cls: str
    label: bool
    pairs: Callable[[str, str], list[Pair]]


@dataclass
class ClassRow:
    source: str
    cls: str
    window: str
    template: str
    margin: str
    n_pos: int
    n_neg: int
    auc: float
    precision: float
    recall: float
    f1: float
    abstention: float

    def as_markdown(self) -> str:
        return (f"| {self.source} | {self.cls} | {self.window} | {self.template} | {self.margin} "
                f"| {self.n_pos}/{self.n_neg} | {self.auc:.3f} | {self.precision:.3f} | "
                f"{self.recall:.3f} | {self.f1:.3f} | {self.abstention:.2f} |")


CLASS_HEADER = ("| data | class | window | template | margin | failures/clean | AUC | P@tau | "
                "R@tau | F1@tau | abstain@tau |\n|---|---|---|---|---|---|---|---|---|---|---|")


def _check_turn_file(path: Path) -> None:
    name = path.name.lower()
    if any(f in name for f in FORBIDDEN_TURN_FILES) or "test" in str(path.parent).lower():
        raise ValueError(f"{path}: claims are chosen on the dev split only, never on a "
                         "benchmark slice or a test split")


def variants(cls: str) -> list[tuple[str, str]]:
    """The (window, template) variants measured for a class (those S2 can run)."""
    if cls == "UV":
        return [(w, t) for w in WINDOWS for t in TEMPLATES]
    if cls == "IUV":
        return [("u_t", t) for t in TEMPLATES]
    return [(w, t) for w in PC_WINDOWS for t in PC_TEMPLATES]


def split_probes(spec_path: str | Path, turns_path: str | Path,
                 count: Callable[[str], int]) -> list[Probe]:
    """The dev split's criteria that reach S2 (S1 abstains, S2 accepts), labelled from gold:
    UV by the injected slot, IUV by the dropped value, PC by an injected confirmation."""
    from sage_tod.compiler.compile import compile_turn
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.verifiers.base import Item, build_stage

    tp = Path(turns_path)
    _check_turn_file(tp)
    bundle = load_spec(spec_path)
    s1 = build_stage("S1", {})
    out: list[Probe] = []
    for rec in load_turns(tp, bundle).records:
        ctx = make_context(bundle, rec.turn)
        gclass = rec.gold.failure_class if rec.gold is not None else None
        inj = (rec.gold.injection if rec.gold is not None else None) or {}
        crits = [c for c in compile_turn(ctx) if c.nlu and str(c.failure_class) in
                 ("UV", "IUV", "PC")]
        if not crits:
            continue
        decisions = s1.decide([Item(c, ctx) for c in crits])
        for c, d in zip(crits, decisions, strict=True):
            if d.outcome.value != "abstain":
                continue
            a = c.args
            if isinstance(a, UVArgs):
                label = gclass == "UV" and inj.get("slot") == a.slot
                out.append(Probe("UV", label, _uv_fn(ctx, a.slot, a.value, count)))
            elif isinstance(a, IUVArgs):
                label = gclass == "IUV" and inj.get("slot") in a.candidates
                out.append(Probe("IUV", label, _iuv_fn(ctx, list(a.candidates), a.value)))
            else:
                label = gclass == "PC"
                out.append(Probe("PC", label, _pc_fn(ctx.turn.user, ctx.turn.agent)))
    return out


def _uv_fn(ctx: Any, slot: str, value: str, count: Callable[[str], int]
           ) -> Callable[[str, str], list[Pair]]:
    def f(w: str, t: str) -> list[Pair]:
        return [uv_pair(ctx, slot, value, template=t, window_name=w, count=count)]
    return f


def _iuv_fn(ctx: Any, candidates: list[str], value: str) -> Callable[[str, str], list[Pair]]:
    def f(_w: str, t: str) -> list[Pair]:
        return iuv_pairs(ctx, candidates, value, template=t)
    return f


def _pc_fn(user: str, agent: str) -> Callable[[str, str], list[Pair]]:
    def f(w: str, t: str) -> list[Pair]:
        return [(pc_premise(user, agent, w), PC_TEMPLATES[t])]
    return f


def _fixed_fn(desc_value: tuple[str, str], premise: str) -> Callable[[str, str], list[Pair]]:
    def f(_w: str, t: str) -> list[Pair]:
        return [(premise, hypothesis(t, *desc_value))]
    return f


def sgd_probes(sgd_dev: str | Path, count: Callable[[str], int], *, dialogues: int = 60,
               seed: int = 0, pc_limit: int = 200) -> list[Probe]:
    """SGD-dev probes: UV from `build_devset` (the `hard` claims S1 cannot settle; the
    failure = the value is unsupported); IUV = a value the user INFORMs in u_t stated for
    its own slot (failure holds: the user supplied it) vs. for another slot of the service
    (slot confusion, which a slot-free template cannot see); PC = agent turns that report
    success (NOTIFY_SUCCESS) vs. turns that ask to confirm, offer or request."""
    import random as _random

    from sage_tod.lab.nli.adapt import _desc, _schema, iter_dev_dialogues, sgd_dev_dirs
    from sage_tod.lab.nli.devset import build_devset

    split = Path(sgd_dev)
    ds = build_devset(split, dialogues=dialogues, seed=seed)
    bundle = ds.bundle()
    ctxs = {k: make_context(bundle, t) for k, t in ds.turn_objects().items()}
    out: list[Probe] = []
    for c in ds.claims:
        ctx = ctxs[c.turn_key]
        if find_support(ctx, c.slot, c.value) is None:
            out.append(Probe("UV", not c.supported, _uv_fn(ctx, c.slot, c.value, count)))
    dirs = sgd_dev_dirs(split)
    schema = _schema(dirs)
    rng = _random.Random(seed)
    dlgs = sorted(iter_dev_dialogues(dirs), key=lambda d: d["dialogue_id"])
    rng.shuffle(dlgs)
    pcs: dict[bool, list[Probe]] = {True: [], False: []}
    for d in dlgs[:dialogues * 3]:
        turns = d["turns"]
        for i, t in enumerate(turns):
            if t["speaker"] == "USER":
                for fr in t["frames"]:
                    slots = [sl["name"] for sl in schema.get(fr["service"], {}).get("slots", [])]
                    for a in fr.get("actions", []):
                        if a.get("act") != "INFORM" or not a.get("values") or i // 2 >= dialogues:
                            continue
                        v = str(a["values"][0])
                        if v.lower() not in t["utterance"].lower() or v.lower() == "dontcare":
                            continue
                        svc = fr["service"]
                        out.append(Probe("IUV", True, _fixed_fn(
                            (_desc(schema, svc, a["slot"]), v), t["utterance"])))
                        others = [s for s in slots if s != a["slot"]]
                        if others:
                            out.append(Probe("IUV", False, _fixed_fn(
                                (_desc(schema, svc, rng.choice(others)), v), t["utterance"])))
            else:
                acts = {a["act"] for fr in t["frames"] for a in fr.get("actions", [])}
                user = turns[i - 1]["utterance"] if i > 0 else ""
                if "NOTIFY_SUCCESS" in acts:
                    pcs[True].append(Probe("PC", True, _pc_fn(user, t["utterance"])))
                elif acts & {"CONFIRM", "OFFER", "REQUEST", "INFORM"}:
                    pcs[False].append(Probe("PC", False, _pc_fn(user, t["utterance"])))
    n = min(len(pcs[True]), len(pcs[False]), pc_limit // 2)
    for lab in (True, False):
        rng.shuffle(pcs[lab])
        out += pcs[lab][:n]
    return out


def class_table(probes: Sequence[Probe], scorer: NLIScorer, *, source: str, tau: float = 0.15,
                margins: Sequence[str] = UV_MARGINS) -> list[ClassRow]:
    """Per class x variant x margin: AUC of the failure score, P/R/F1 of the firing side
    at tau (abstentions count as not fired) and the abstention rate."""
    rows: list[ClassRow] = []
    for cls in ("UV", "IUV", "PC"):
        ps = [p for p in probes if p.cls == cls]
        if not ps:
            continue
        for w, t in variants(cls):
            per = [p.pairs(w, t) for p in ps]
            flat = [x for xs in per for x in xs]
            probs = scorer.score(flat)
            for kind in margins:
                ms: list[float] = []
                k = 0
                for xs in per:
                    got = [uv_margin(probs[k + j], kind) for j in range(len(xs))]
                    k += len(xs)
                    ms.append(max(got))
                rows.append(_class_row(source, cls, w, t, kind, ms, [p.label for p in ps],
                                       tau))
    return rows


def _class_row(source: str, cls: str, w: str, t: str, kind: str, ms: list[float],
               ys: list[bool], tau: float) -> ClassRow:
    # UV fires on a low margin (unsupported); IUV and PC fire on a high one
    score = [-m for m in ms] if cls == "UV" else list(ms)
    fired = [s >= tau for s in score]
    tp = sum(1 for f, y in zip(fired, ys, strict=True) if f and y)
    fp = sum(1 for f, y in zip(fired, ys, strict=True) if f and not y)
    pos = sum(ys)
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / pos if pos else float("nan")
    f1 = 2 * tp / (2 * tp + fp + (pos - tp)) if pos or fp else float("nan")
    abst = sum(1 for m in ms if abs(m) < tau) / max(1, len(ms))
    return ClassRow(source, cls, w, t, kind, pos, len(ys) - pos, auc(score, ys), prec, rec, f1,
                    abst)


def best_rows(rows: Sequence[ClassRow]) -> list[ClassRow]:
    """Per (data, class): the variant with the best F1 at tau, ties broken by AUC."""
    best: dict[tuple[str, str], ClassRow] = {}
    for r in rows:
        key = (r.source, r.cls)
        f1 = -1.0 if r.f1 != r.f1 else r.f1
        cur = best.get(key)
        if cur is None or (f1, r.auc) > ((-1.0 if cur.f1 != cur.f1 else cur.f1), cur.auc):
            best[key] = r
    return list(best.values())
