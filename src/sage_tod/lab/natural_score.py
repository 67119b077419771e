"""Scores of an evaluator run on the natural-failure slice (docs/results-natural.md).

Given slice lines (`natural.jsonl` or `natural-audited.jsonl`, built by
`sage-tod slices natural`) and the verdicts of `sage-tod evaluate` on them, this
computes what phase A measured and phase B must beat: failure precision,
recall and F1 (undecided counted as acceptable, as `sage-tod score` does), the
clean-turn flag rate, recall on the failures squarely in scope (a value typed
in u_t that the system dropped, or a system value nothing supports), recall by
tag, and the IUV coverage table: for each gold value supplied in u_t (typed, a
don't-care, an accepted offer) that the system dropped, by value type,
how often the compiler produced an IUV criterion for that slot at all, and how
often one fired.

    python -m sage_tod.lab.natural_score SLICE.jsonl VERDICTS.jsonl [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sage_tod.contracts.run_record import RUN_RECORD
from sage_tod.lab.natural_values import VALUE_TYPES, same_value
from sage_tod.outputs.scoring import PRF, prf

# values the user supplies in u_t itself: what an IUV criterion is about
COVERAGE_HOWS = frozenset({"typed", "dontcare", "accepted_offer"})


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def in_scope(line: Mapping[str, Any]) -> bool:
    """A failure squarely in SAGE's scope: a typed value dropped, or a value nothing supports."""
    return any((e.get("side", "gold") == "gold" and e["how"] == "typed"
                and e["kind"] in ("dropped", "wrong", "deleted"))
               or (e.get("side") == "system" and e["how"] == "unsupported")
               for e in line["meta"]["errors"])


def _iuv_for(verdict: Mapping[str, Any], slot: str, value: str | None) -> tuple[bool, bool]:
    """(compiled, fired): an IUV criterion about `slot` (or reading `value`) exists / fired."""
    compiled = fired = False
    for c in verdict["criteria"]:
        if c["class"] != "IUV":
            continue
        args = c["args"]
        about = (args.get("slot") == slot or slot in (args.get("candidates") or [])
                 or (value is not None and isinstance(args.get("value"), str)
                     and args.get("slot", "").split("-")[-1] == slot.split("-")[-1]
                     and same_value(slot, args["value"], value)))
        if about:
            compiled = True
            fired = fired or c["decision"] == "true"
    return compiled, fired


def half(lines: Sequence[dict[str, Any]], which: str) -> list[dict[str, Any]]:
    """The turns of the corpus dialogues whose id sorts into the `first` or `second` half.

    All six systems ran the same dialogues, so a half holds every system's run of
    its dialogues and none of the other half's.
    """
    ids = sorted({t["meta"]["corpus_id"] for t in lines})
    first = set(ids[:(len(ids) + 1) // 2])
    return [t for t in lines if (t["meta"]["corpus_id"] in first) == (which == "first")]


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def score_natural(lines: Sequence[Mapping[str, Any]], verdicts: Sequence[Mapping[str, Any]],
                  raw: bool = False) -> dict[str, Any]:
    """Every number of the natural-failure results, from slice lines and verdicts.

    `raw` scores against the builder's raw labels (`meta.raw_label`) instead of
    the gold, to set the audited subset's corrected labels beside its raw ones.
    """
    by_key = {f"{v['dialogue_id']}:{v['turn_id']}": v for v in verdicts}
    missing = [f"{t['dialogue_id']}:{t['turn_id']}" for t in lines
               if f"{t['dialogue_id']}:{t['turn_id']}" not in by_key]
    if missing:
        raise ValueError(f"{len(missing)} slice turns have no verdict (first: {missing[0]})")
    gold: list[bool] = []
    pred: list[bool] = []
    undecided = 0
    scope_n = scope_hit = 0
    how_n: Counter[str] = Counter()
    how_hit: Counter[str] = Counter()
    cov_n: Counter[str] = Counter()
    cov_compiled: Counter[str] = Counter()
    cov_fired: Counter[str] = Counter()
    cov_flagged: Counter[str] = Counter()
    fp_classes: Counter[str] = Counter()
    for t in lines:
        v = by_key[f"{t['dialogue_id']}:{t['turn_id']}"]
        g = (t["meta"]["raw_label"] if raw else t["gold"]["label"]) == "failure"
        p = v["verdict"] == "failure"
        undecided += v["verdict"] == "undecided"
        gold.append(g)
        pred.append(p)
        if not g:
            # labels cover state updates only: a fired PC/WNF on such a turn may be right
            if p:
                fp_classes.update(v.get("classes") or [])
            continue
        if in_scope(t):
            scope_n += 1
            scope_hit += p
        for how in sorted({e["how"] for e in t["meta"]["errors"]}):
            how_n[how] += 1
            how_hit[how] += p
        for e in t["meta"]["errors"]:
            if e.get("side", "gold") != "gold" or e["kind"] not in (
                    "dropped", "wrong", "deleted") or e["how"] not in COVERAGE_HOWS:
                continue
            vt = e["value_type"]
            compiled, fired = _iuv_for(v, e["slot"], e["gold"])
            cov_n[vt] += 1
            cov_compiled[vt] += compiled
            cov_fired[vt] += fired
            cov_flagged[vt] += p
    full: PRF = prf(gold, pred)
    flag_all: PRF = prf(gold, [True] * len(gold))
    n_clean = sum(not g for g in gold)
    coverage = {vt: {"n": cov_n[vt], "compiled": _rate(cov_compiled[vt], cov_n[vt]),
                     "fired": _rate(cov_fired[vt], cov_n[vt]),
                     "turn_flagged": _rate(cov_flagged[vt], cov_n[vt])}
                for vt in [*VALUE_TYPES, *sorted(set(cov_n) - set(VALUE_TYPES))] if cov_n[vt]}
    tot = sum(cov_n.values())
    coverage["all"] = {"n": tot, "compiled": _rate(sum(cov_compiled.values()), tot),
                       "fired": _rate(sum(cov_fired.values()), tot),
                       "turn_flagged": _rate(sum(cov_flagged.values()), tot)}
    return {
        "n": len(lines), "failures": sum(gold), "clean": n_clean,
        "precision": full.precision, "recall": full.recall, "f1": full.f1,
        "tp": full.tp, "fp": full.fp, "fn": full.fn, "tn": full.tn,
        "clean_flag_rate": _rate(full.fp, n_clean),
        "undecided_rate": _rate(undecided, len(lines)),
        "in_scope": {"n": scope_n, "recall": _rate(scope_hit, scope_n)},
        "recall_by_how": {h: {"n": how_n[h], "recall": _rate(how_hit[h], how_n[h])}
                          for h in sorted(how_n)},
        "flag_every_turn_f1": flag_all.f1,
        "false_positive_classes": dict(sorted(fp_classes.items())),
        "iuv_coverage": coverage,
    }


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def markdown(name: str, s: Mapping[str, Any]) -> str:
    """The score as the markdown rows docs/results-natural.md shows."""
    rows = [f"**{name}** — {s['n']} turns ({s['failures']} failures, {s['clean']} clean)", "",
            "| precision | recall | F1 | clean-turn flag rate | in-scope recall (n) | "
            "undecided | F1 of flagging every turn |",
            "|---|---|---|---|---|---|---|",
            f"| {_f(s['precision'])} | {_f(s['recall'])} | {_f(s['f1'])} | "
            f"{_f(s['clean_flag_rate'])} | {_f(s['in_scope']['recall'])} "
            f"({s['in_scope']['n']}) | {_f(s['undecided_rate'])} | "
            f"{_f(s['flag_every_turn_f1'])} |", "",
            "classes fired on flagged clean turns: " + (", ".join(
                f"{c} {n}" for c, n in s["false_positive_classes"].items()) or "none"), "",
            "| how the value appeared | failing turns | recall |", "|---|---|---|"]
    for h, r in s["recall_by_how"].items():
        rows.append(f"| {h} | {r['n']} | {_f(r['recall'])} |")
    rows += ["", "| dropped value type | n | IUV compiled | IUV fired | turn flagged |",
             "|---|---|---|---|---|"]
    for vt, r in s["iuv_coverage"].items():
        rows.append(f"| {vt} | {r['n']} | {_f(r['compiled'])} | {_f(r['fired'])} | "
                    f"{_f(r['turn_flagged'])} |")
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sage_tod.lab.natural_score",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("slice", type=Path, help="natural.jsonl or natural-audited.jsonl")
    ap.add_argument("verdicts", type=Path, help="verdicts of `sage-tod evaluate` on it")
    ap.add_argument("--markdown", action="store_true", help="markdown tables, not JSON")
    ap.add_argument("--raw", action="store_true", help="score against the raw labels "
                                                       "(meta.raw_label), not the gold")
    ap.add_argument("--system", help="only this system's turns (augpt, damd, ...)")
    ap.add_argument("--half", choices=("first", "second"),
                    help="only the corpus dialogues whose id sorts into this half (develop "
                         "on one, check on the other)")
    args = ap.parse_args(argv)
    lines = [t for t in read_jsonl(args.slice)
             if args.system is None or t["meta"]["system"] == args.system]
    if args.half:
        lines = half(lines, args.half)
    # the run header `sage-tod evaluate` writes first is no verdict
    verdicts = [v for v in read_jsonl(args.verdicts) if v.get("record") != RUN_RECORD]
    s = score_natural(lines, verdicts, raw=args.raw)
    name = args.slice.name + (" (raw labels)" if args.raw else "") + (
        f" [{args.system}]" if args.system else "") + (
        f" [{args.half} half]" if args.half else "")
    sys.stdout.write(markdown(name, s) if args.markdown
                     else json.dumps(s, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
