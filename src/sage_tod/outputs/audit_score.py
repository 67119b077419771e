"""`audit score`: agreement between annotators, their consensus, and the tool against it.

Agreement is chance-corrected: Cohen's κ for two annotators, Fleiss' κ for
more, over the three answers (failure / acceptable / can't tell), again over
the items no one answered "can't tell", and per failure class one against the
rest (a failure marked without a class counts as not that class). The
consensus of an item is its adjudicated label when an adjudication file gives
one, else the annotators' label when they all agree on failure or acceptable
(and on the class, for the class scores); everything else is listed for
adjudication. The tool is then scored against the consensus as `sage-tod
score` scores it against gold: failure is positive, undecided counts as
acceptable; 95 % percentile bootstrap intervals over items (10,000 resamples,
seed 0, the convention of the benchmark statistics). Because the sample is
stratified by the tool's own answers, the plain numbers describe the sample;
the weighted ones weight each item by its stratum's population / sample size,
an estimate for the whole verdicts file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.errors import InputError
from sage_tod.outputs.audit_set import AuditKey, ItemLabel, LabelsFile

N_BOOT = 10_000
SEED = 0
_MAX_LISTED = 10


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's κ of two raters over the same items; None when chance agreement is 1.

    >>> round(cohen_kappa(["f", "f", "a", "a"], ["f", "a", "a", "a"]), 4)
    0.5
    """
    if len(a) != len(b):
        raise ValueError("raters labelled different numbers of items")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in ca) / (n * n)
    return None if pe >= 1 else (po - pe) / (1 - pe)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ of an items × categories count table (every item rated m times).

    >>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 4)
    0.3333
    """
    rows = [list(r) for r in table]
    if not rows:
        return None
    m = sum(rows[0])
    if m < 2 or any(sum(r) != m for r in rows):
        raise ValueError("every item needs the same number (>= 2) of ratings")
    n = len(rows)
    p_i = [(sum(c * c for c in r) - m) / (m * (m - 1)) for r in rows]
    p_bar = sum(p_i) / n
    p_j = [sum(r[j] for r in rows) / (n * m) for j in range(len(rows[0]))]
    p_e = sum(p * p for p in p_j)
    return None if p_e >= 1 else (p_bar - p_e) / (1 - p_e)


def kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Cohen's κ for two raters, Fleiss' κ for more; `ratings[r][i]` is rater r on item i."""
    if len(ratings) == 2:
        return cohen_kappa(ratings[0], ratings[1])
    cats = sorted({x for r in ratings for x in r})
    items = list(zip(*ratings, strict=True))
    return fleiss_kappa([[row.count(c) for c in cats] for row in items])


@dataclass(frozen=True)
class Interval:
    """A ratio with its interval; `point` None when undefined (nothing to find or found)."""

    point: float | None
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        if self.point is None:
            return {"value": None, "low": None, "high": None}
        return {"value": self.point, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class PRFCI:
    """Precision, recall, F1 with intervals, and the (possibly weighted) counts."""

    n: int
    tp: float
    fp: float
    fn: float
    tn: float
    precision: Interval
    recall: Interval
    f1: Interval

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
                "precision": self.precision.to_dict(), "recall": self.recall.to_dict(),
                "f1": self.f1.to_dict()}


def _ratios(tp: NDArray[np.float64], fp: NDArray[np.float64], fn: NDArray[np.float64]
            ) -> tuple[NDArray[np.float64], ...]:
    """P, R, F1 arrays; 0 where the denominator is 0 (as `outputs.scoring.PRF`)."""
    def div(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.where(b > 0, a / np.where(b > 0, b, 1), 0.0), dtype=np.float64)

    return div(tp, tp + fp), div(tp, tp + fn), div(2 * tp, 2 * tp + fp + fn)


def prf_ci(gold: Sequence[bool], pred: Sequence[bool], weights: Sequence[float] | None = None,
           *, n_boot: int = N_BOOT, seed: int = SEED, level: float = 0.95) -> PRFCI:
    """P/R/F1 of the failure class with percentile bootstrap intervals over items."""
    g = np.asarray(gold, dtype=bool)
    p = np.asarray(pred, dtype=bool)
    w = np.ones(g.size) if weights is None else np.asarray(weights, dtype=np.float64)

    def counts(idx: NDArray[np.int64] | None) -> tuple[NDArray[np.float64], ...]:
        gs, ps, ws = (g, p, w) if idx is None else (g[idx], p[idx], w[idx])
        axis = -1
        return (np.asarray(np.sum(ws * (gs & ps), axis=axis), dtype=np.float64),
                np.asarray(np.sum(ws * (~gs & ps), axis=axis), dtype=np.float64),
                np.asarray(np.sum(ws * (gs & ~ps), axis=axis), dtype=np.float64),
                np.asarray(np.sum(ws * (~gs & ~ps), axis=axis), dtype=np.float64))

    tp, fp, fn, tn = counts(None)
    point = _ratios(tp, fp, fn)
    if g.size:
        idx = np.random.default_rng(seed).integers(0, g.size, size=(n_boot, g.size))
        btp, bfp, bfn, _ = counts(idx)
        boots = _ratios(btp, bfp, bfn)
    else:
        boots = tuple(np.zeros(1) for _ in range(3))
    a = (1 - level) / 2
    defined = (tp + fp > 0, tp + fn > 0, tp + fp + fn > 0)
    ivs = [Interval(float(pt) if ok else None, float(np.quantile(b, a)),
                    float(np.quantile(b, 1 - a)))
           for pt, b, ok in zip(point, boots, defined, strict=True)]
    return PRFCI(int(g.size), float(tp), float(fp), float(fn), float(tn), *ivs)


@dataclass(frozen=True)
class Consensus:
    item: str
    label: str | None  # failure | acceptable | None (unresolved or agreed can't tell)
    failure_class: str | None
    source: str  # agreed | adjudicated | disagreement | cant_tell
    class_agreed: bool = True


@dataclass
class AuditScore:
    annotators: list[str]
    n_items: int
    agreement: dict[str, Any]
    consensus: list[Consensus]
    disagreements: list[dict[str, Any]]
    tool: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"annotators": self.annotators, "items": self.n_items,
                "agreement": self.agreement,
                "consensus": [{"item": c.item, "label": c.label, "class": c.failure_class,
                               "source": c.source} for c in self.consensus],
                "disagreements": self.disagreements, "tool": self.tool, "notes": self.notes}


def check_labels(files: Sequence[tuple[Path, LabelsFile]], audit_id: str,
                 items: Sequence[str], *, allow_missing: bool = False,
                 complete: bool = True) -> list[dict[str, ItemLabel]]:
    """Each file's labels by item; unknown ids, duplicates, another audit's labels and
    (unless allowed) missing items are one-line errors naming the file."""
    known = set(items)
    out: list[dict[str, ItemLabel]] = []
    names: dict[str, Path] = {}
    for path, lf in files:
        if lf.audit_id != audit_id:
            raise InputError(path, f"labels are for audit {lf.audit_id}, this audit set is "
                             f"{audit_id}", field="audit_id")
        if complete:
            if lf.annotator in names:
                raise InputError(path, f"annotator {lf.annotator!r} also made "
                                 f"{names[lf.annotator]}; one file per annotator",
                                 field="annotator")
            names[lf.annotator] = path
        got: dict[str, ItemLabel] = {}
        first: dict[str, int] = {}
        for i, lab in enumerate(lf.labels):
            if lab.item not in known:
                raise InputError(path, f"unknown item {lab.item!r} (not in this audit set)",
                                 field=f"labels[{i}].item")
            if lab.item in got:
                raise InputError(path, f"duplicate label for {lab.item} (first at "
                                 f"labels[{first[lab.item]}])", field=f"labels[{i}].item")
            if lab.failure_class is not None and lab.label != "failure":
                raise InputError(path, f"{lab.item}: a class is given but the label is "
                                 f"{lab.label}", field=f"labels[{i}].class")
            got[lab.item] = lab
            first[lab.item] = i
        lacking = [i for i in items if i not in got]
        if complete and lacking and not allow_missing:
            raise InputError(path, f"{len(lacking)} of {len(items)} items have no label "
                             f"({', '.join(lacking[:_MAX_LISTED])}"
                             f"{', ...' if len(lacking) > _MAX_LISTED else ''}); finish them "
                             "or pass --allow-missing to score the items every annotator "
                             "labelled")
        out.append(got)
    return out


def _class_of(lab: ItemLabel) -> str | None:
    return lab.failure_class if lab.label == "failure" else None


def agreement(names: Sequence[str], labels: Sequence[Mapping[str, ItemLabel]],
              items: Sequence[str]) -> dict[str, Any]:
    """κ (overall, decided items, per class) and raw agreement over `items`."""
    rat = [[lab[i].label for i in items] for lab in labels]
    decided = [i for i in items if all(lab[i].label != "cant_tell" for lab in labels)]
    rat_d = [[lab[i].label for i in decided] for lab in labels]
    raw = (sum(len({r[k] for r in rat}) == 1 for k in range(len(items))) / len(items)
           if items else None)
    per_class: dict[str, Any] = {}
    for c in CLASS_NAMES:
        marks = [["yes" if _class_of(lab[i]) == c else "no" for i in items] for lab in labels]
        per_class[c] = {"kappa": kappa(marks) if items else None,
                        "marked": {n: sum(x == "yes" for x in m)
                                   for n, m in zip(names, marks, strict=True)}}
    pairs = {f"{names[a]} / {names[b]}": cohen_kappa(rat[a], rat[b])
             for a, b in combinations(range(len(names)), 2)} if len(names) > 2 else {}
    return {"statistic": "Cohen's kappa" if len(names) == 2 else "Fleiss' kappa",
            "items": len(items), "kappa": kappa(rat) if items else None,
            "raw_agreement": raw, "decided_items": len(decided),
            "kappa_decided": kappa(rat_d) if decided else None,
            "per_class": per_class, "pairwise_cohen": pairs,
            "label_counts": {n: dict(Counter(r)) for n, r in zip(names, rat, strict=True)}}


def consensus(labels: Sequence[Mapping[str, ItemLabel]], items: Sequence[str],
              adjudicated: Mapping[str, ItemLabel] | None = None) -> list[Consensus]:
    out: list[Consensus] = []
    for i in items:
        labs = {lab[i].label for lab in labels}
        if adjudicated and i in adjudicated:
            a = adjudicated[i]
            same = labs == {a.label} and {_class_of(lab[i]) for lab in labels} == {
                _class_of(a)}
            out.append(Consensus(i, None if a.label == "cant_tell" else a.label,
                                 _class_of(a), "agreed" if same else "adjudicated"))
            continue
        if len(labs) > 1:
            out.append(Consensus(i, None, None, "disagreement"))
            continue
        (label,) = labs
        if label == "cant_tell":
            out.append(Consensus(i, None, None, "cant_tell"))
            continue
        classes = {_class_of(lab[i]) for lab in labels}
        agreed = len(classes) == 1
        out.append(Consensus(i, label, next(iter(classes)) if agreed else None, "agreed",
                             class_agreed=agreed))
    return out


def score_tool(cons: Sequence[Consensus], key: AuditKey) -> dict[str, Any]:
    """The tool against the consensus: overall, weighted, per class, confusion tables."""
    by_item = {e.item: e for e in key.items}
    w_of = {k: (s.population / s.sampled if s.sampled else 0.0) for k, s in key.strata.items()}
    usable = [c for c in cons if c.label is not None]
    gold = [c.label == "failure" for c in usable]
    pred = [by_item[c.item].verdict == "failure" for c in usable]
    weights = [w_of[by_item[c.item].stratum] for c in usable]
    overall = prf_ci(gold, pred)
    weighted = prf_ci(gold, pred, weights)
    per_class: dict[str, Any] = {}
    classed = [c for c in usable if c.label == "acceptable"
               or (c.failure_class is not None and c.class_agreed)]
    for cls in CLASS_NAMES:
        g = [c.label == "failure" and c.failure_class == cls for c in classed]
        p = [by_item[c.item].verdict == "failure" and cls in by_item[c.item].classes
             for c in classed]
        per_class[cls] = prf_ci(g, p).to_dict()
    verdicts = ("failure", "acceptable", "undecided")
    confusion = {lab: {v: sum(1 for c in usable if c.label == lab
                              and by_item[c.item].verdict == v) for v in verdicts}
                 for lab in ("failure", "acceptable")}
    rows = [*CLASS_NAMES, "failure (no class)", "acceptable"]
    cols = [*CLASS_NAMES, "none"]
    by_class: dict[str, dict[str, int]] = {r: dict.fromkeys(cols, 0) for r in rows}
    for c in usable:
        row = ("acceptable" if c.label == "acceptable"
               else c.failure_class or "failure (no class)")
        e = by_item[c.item]
        fired = [x for x in e.classes if x in CLASS_NAMES] if e.verdict == "failure" else []
        for x in fired or ["none"]:
            by_class[row][x] += 1
    misses = [{"item": c.item, "key": f"{by_item[c.item].dialogue_id}:"
               f"{by_item[c.item].turn_id}", "consensus": c.failure_class or c.label,
               "tool": by_item[c.item].verdict, "tool_classes": list(by_item[c.item].classes)}
              for c, g, p in zip(usable, gold, pred, strict=True) if g != p]
    return {"items": len(usable), "convention": "undecided counts as acceptable",
            "undecided": sum(1 for c in usable if by_item[c.item].verdict == "undecided"),
            "overall": overall.to_dict(), "weighted": weighted.to_dict(),
            "per_class": per_class, "per_class_items": len(classed),
            "confusion": confusion, "class_confusion": by_class, "errors": misses,
            "strata": {k: {"population": s.population, "sampled": s.sampled}
                       for k, s in key.strata.items()}}


def score_audit(names: Sequence[str], labels: Sequence[Mapping[str, ItemLabel]],
                key: AuditKey, item_order: Sequence[str],
                adjudicated: Mapping[str, ItemLabel] | None = None) -> AuditScore:
    """Everything `audit score` reports, on the items every annotator labelled."""
    if not labels:
        raise InputError("labels", "give at least one labels file")
    items = [i for i in item_order if all(i in lab for lab in labels)]
    notes: list[str] = []
    if len(items) < len(item_order):
        notes.append(f"{len(item_order) - len(items)} item(s) not labelled by every "
                     "annotator are left out (--allow-missing)")
    agree = (agreement(names, labels, items) if len(labels) >= 2
             else {"note": "one annotator: no agreement to measure"})
    cons = consensus(labels, items, adjudicated)
    by_item = {e.item: e for e in key.items}
    dis: list[dict[str, Any]] = []
    for c in cons:
        labs = {lab[c.item].label for lab in labels}
        classes = {_class_of(lab[c.item]) for lab in labels}
        if len(labs) == 1 and len(classes) == 1:
            continue
        e = by_item[c.item]
        adj = adjudicated.get(c.item) if adjudicated else None
        dis.append({"item": c.item, "key": f"{e.dialogue_id}:{e.turn_id}",
                    "what": "label" if len(labs) > 1 else "class",
                    "labels": {n: {"label": lab[c.item].label,
                                   "class": lab[c.item].failure_class,
                                   "note": lab[c.item].note}
                               for n, lab in zip(names, labels, strict=True)},
                    "adjudicated": None if adj is None else {
                        "label": adj.label, "class": adj.failure_class, "note": adj.note}})
    if adjudicated:
        changed = sum(1 for c in cons if c.source == "adjudicated"
                      and len({lab[c.item].label for lab in labels}) == 1)
        if changed:
            notes.append(f"the adjudication changed {changed} item(s) the annotators agreed "
                         "on (its label is used)")
    return AuditScore(list(names), len(items), agree, cons, dis, score_tool(cons, key), notes)


def _k(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def to_markdown(s: AuditScore) -> str:
    """The report a team reads (the JSON has the same numbers and the lists in full)."""
    lines = [f"# Audit: {len(s.annotators)} annotator(s) ({', '.join(s.annotators)}), "
             f"{s.n_items} items", ""]
    a = s.agreement
    if "kappa" in a:
        lines += ["## Agreement", "",
                  "| measure | value |", "|---|---|",
                  f"| {a['statistic']} (failure / acceptable / can't tell) | {_k(a['kappa'])} |",
                  f"| {a['statistic']}, items no one marked can't tell "
                  f"(n={a['decided_items']}) | {_k(a['kappa_decided'])} |",
                  f"| raw agreement | {_k(a['raw_agreement'])} |"]
        for c, d in a["per_class"].items():
            marked = ", ".join(f"{n} {m}" for n, m in d["marked"].items())
            lines.append(f"| {a['statistic']}, class {c} (marked: {marked}) | "
                         f"{_k(d['kappa'])} |")
        for pair, k in a["pairwise_cohen"].items():
            lines.append(f"| Cohen's kappa {pair} | {_k(k)} |")
        lines.append("")
    else:
        lines += [a["note"], ""]
    src = Counter(c.source for c in s.consensus)
    what = Counter(d["what"] for d in s.disagreements)
    open_ = sum(1 for d in s.disagreements if d["adjudicated"] is None)
    lines += ["## Consensus", "",
              f"{sum(1 for c in s.consensus if c.label)} items with a consensus label "
              f"({src['agreed']} agreed, {src['adjudicated']} adjudicated); "
              f"{what['label']} label and {what['class']} class disagreement(s), "
              f"{open_} of them still to adjudicate; {src['cant_tell']} item(s) all marked "
              "can't tell.", ""]

    def cell(x: Mapping[str, Any] | None) -> str:
        if x is None:
            return ""
        text = str(x["label"]) + (f" {x['class']}" if x["class"] else "") + (
            f" ({x['note']})" if x["note"] else "")
        return text.replace("|", "/").replace("\n", " ")

    if s.disagreements:
        lines += ["| item | turn | what | " + " | ".join(s.annotators) + " | adjudicated |",
                  "|---|---|---|" + "---|" * (len(s.annotators) + 1)]
        for d in s.disagreements:
            lines.append(f"| {d['item']} | {d['key']} | {d['what']} | "
                         + " | ".join(cell(d["labels"][n]) for n in s.annotators)
                         + f" | {cell(d['adjudicated'])} |")
        lines.append("")
    t = s.tool
    o, w = t["overall"], t["weighted"]

    def iv(d: Mapping[str, float | None]) -> str:
        if d["value"] is None:
            return "n/a"
        return f"{d['value']:.2f} [{d['low']:.2f}, {d['high']:.2f}]"

    lines += ["## The tool against the consensus", "",
              f"{t['items']} items with a consensus label; {t['convention']} "
              f"({t['undecided']} undecided); 95 % bootstrap intervals.", "",
              "| | n | precision | recall | F1 | tp | fp | fn | tn |",
              "|---|---|---|---|---|---|---|---|---|",
              f"| failure, this sample | {o['n']} | {iv(o['precision'])} | {iv(o['recall'])} | "
              f"{iv(o['f1'])} | {o['tp']:.0f} | {o['fp']:.0f} | {o['fn']:.0f} | {o['tn']:.0f} |",
              f"| failure, weighted to the verdicts file | {w['n']} | {iv(w['precision'])} | "
              f"{iv(w['recall'])} | {iv(w['f1'])} | {w['tp']:.1f} | {w['fp']:.1f} | "
              f"{w['fn']:.1f} | {w['tn']:.1f} |"]
    for c, d in t["per_class"].items():
        lines.append(f"| class {c} | {d['n']} | {iv(d['precision'])} | {iv(d['recall'])} | "
                     f"{iv(d['f1'])} | {d['tp']:.0f} | {d['fp']:.0f} | {d['fn']:.0f} | "
                     f"{d['tn']:.0f} |")
    lines += ["", f"(per class: the {t['per_class_items']} items whose consensus is "
                  "acceptable or a failure with an agreed class)", "",
              "| consensus \\ tool | failure | acceptable | undecided |", "|---|---|---|---|"]
    for lab, row in t["confusion"].items():
        lines.append(f"| {lab} | {row['failure']} | {row['acceptable']} | {row['undecided']} |")
    cols = list(next(iter(t["class_confusion"].values())))
    lines += ["", "| consensus class \\ tool fired | " + " | ".join(cols) + " |",
              "|---|" + "---|" * len(cols)]
    for r, row in t["class_confusion"].items():
        lines.append(f"| {r} | " + " | ".join(str(row[c]) for c in cols) + " |")
    lines += ["", "(a turn that fired several classes counts in each of their columns)"]
    if t["errors"]:
        lines += ["", "Where the tool and the consensus differ: " + ", ".join(
            f"{e['item']} ({e['key']}: consensus {e['consensus']}, tool {e['tool']})"
            for e in t["errors"][:30]) + (" ..." if len(t["errors"]) > 30 else "")]
    if s.notes:
        lines += ["", *(f"Note: {n}" for n in s.notes)]
    return "\n".join(lines) + "\n"

