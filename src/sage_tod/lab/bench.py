"""Benchmark runner: configurations x slices -> per-turn verdict files -> results.

Every per-turn verdict is kept (`OUT/runs/<slice>/<config>.jsonl`), so any
table can be recomputed without rerunning, and an interrupted run resumes
without redoing finished turns. `compute_results` is a pure function of those
files and the slices' gold labels; `bench report` renders from it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import TurnRecord, load_turns, read_gold_labels
from sage_tod.contracts.verdicts import (
    Verdict,
    decided_by_counts,
    prepare_resume,
    read_header,
    read_verdicts,
    write_verdict,
)
from sage_tod.evaluation.configs import CONFIGS, config_names
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.lab import stats

SAGE_CONFIGS = tuple(config_names())
SGDX_VARIANTS = tuple(f"sgd-x-v{i}" for i in range(1, 6))
COVERAGES = (1.0, 0.9, 0.8)
CLASSES = CLASS_NAMES

# A baseline runner: (config name, spec, records) -> verdicts in input order.
BaselineRunner = Callable[[str, SpecBundle, Sequence[TurnRecord]], Iterator[Verdict]]


@dataclass(frozen=True)
class SliceInfo:
    name: str
    turns: Path
    spec: Path


def expand_slices(names: Iterable[str]) -> list[str]:
    """`sgd-x` stands for its five variants."""
    out: list[str] = []
    for n in names:
        n = n.strip()
        if not n:
            continue
        out.extend(SGDX_VARIANTS if n == "sgd-x" else [n])
    return list(dict.fromkeys(out))


def slice_infos(slices_dir: Path) -> dict[str, SliceInfo]:
    """Slices listed in a built slices directory's manifest."""
    manifest = slices_dir / "manifest.json"
    if not manifest.exists():
        return {}
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return {name: SliceInfo(name, slices_dir / m["file"], slices_dir / m["spec"])
            for name, m in data.get("slices", {}).items()}


def ensure_slices(slices_dir: Path, names: Sequence[str], *, acts: bool | None = None
                  ) -> dict[str, SliceInfo]:
    """Slices that exist, building the missing ones from the data directory.

    A directory keeps the acts setting it was built with (`--no-acts` or not);
    asking for the other one is an error rather than a silent mix.
    """
    have = slice_infos(slices_dir)
    manifest = slices_dir / "manifest.json"
    built_acts: bool | None = None
    if manifest.exists():
        built_acts = bool(json.loads(manifest.read_text(encoding="utf-8")).get("acts", True))
        if acts is not None and acts != built_acts:
            how = "with" if built_acts else "without"
            other = "--no-acts" if built_acts else "--acts"
            raise InputError(manifest, f"slices here were built {how} dataset acts; use "
                             f"another --slices-dir for {other}")
    missing = [n for n in names if n not in have]
    if missing:
        from sage_tod.lab.slices import BuildConfig, build

        def base(n: str) -> str:
            return "sgd-x" if n in SGDX_VARIANTS else n

        use_acts = built_acts if built_acts is not None else (True if acts is None else acts)
        # build() writes one manifest, so rebuild what is there too (seeded: same files)
        build(slices_dir, sorted({base(n) for n in [*have, *names]}),
              BuildConfig(acts=use_acts))
        have = slice_infos(slices_dir)
    unknown = [n for n in names if n not in have]
    if unknown:
        raise InputError(slices_dir / "manifest.json",
                         f"slice(s) {', '.join(unknown)} not built; available: "
                         f"{', '.join(sorted(have))}")
    return {n: have[n] for n in names}


def verdict_path(out: Path, slice_name: str, config: str) -> Path:
    return out / "runs" / slice_name / f"{config}.jsonl"


def run_one(info: SliceInfo, config: str, out: Path, *, options: Mapping[str, Any] | None = None,
            batch_size: int = 64, baseline: BaselineRunner | None = None,
            on_verdict: Callable[[], None] | None = None) -> Path:
    """Evaluate one slice with one configuration, resuming a partial file.

    The file is written as `evaluate` writes one (`outputs.sink.VerdictSink`): held
    under the lock, with its run header, and resumed only by the same run (code,
    slice files, configuration, options, stage fingerprints). A file of format 1
    (no header) from an earlier bench is continued as it was, under the lock.
    """
    from sage_tod.evaluation.run import RunSettings, make_evaluator, run_header
    from sage_tod.outputs.files import LineFile
    from sage_tod.outputs.sink import VerdictSink, file_sha256

    path = verdict_path(out, info.name, config)
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = load_spec(info.spec)
    records = load_turns(info.turns, spec).records
    inputs = {"spec_sha256": file_sha256(info.spec), "turns_sha256": file_sha256(info.turns),
              "format": None, "route": "oracle", "slice": info.name}
    if config in CONFIGS:
        settings = RunSettings(config=config, options=dict(options or {}),
                               batch_size=batch_size)
        ev = make_evaluator(spec, settings)
        header = run_header(ev, settings, inputs)
    elif baseline is not None:
        ev = None
        header = RunHeader(config=config, stages=[], inputs=inputs,
                           fingerprints={"baseline": {"name": config}})
    else:
        raise InputError("--configs", f"unknown configuration {config!r}; SAGE configs: "
                         f"{', '.join(SAGE_CONFIGS)}")

    def verdicts_of(todo: list[TurnRecord]) -> Iterator[Verdict]:
        if ev is not None:
            return ev.evaluate(todo)
        assert baseline is not None
        return baseline(config, spec, todo)

    legacy = path.is_file() and path.stat().st_size > 0 and read_header(path) is None
    if legacy:  # format 1: keep appending complete lines, as that file was written
        with LineFile(path, fresh=False) as lines:
            done = prepare_resume(path)
            todo = [r for r in records if r.turn.key not in done]
            for v in verdicts_of(todo) if todo else iter(()):
                lines.write(write_verdict, v)
                if on_verdict is not None:
                    on_verdict()
        return path
    with VerdictSink(path, header, resume=True, overwrite=False) as sink:
        todo = [r for r in records if r.turn.key not in sink.done]
        for v in verdicts_of(todo) if todo else iter(()):
            sink.write(v)
            if on_verdict is not None:
                on_verdict()
    return path
    if config in CONFIGS:
        verdicts: Iterator[Verdict] = Evaluator(spec, config, options=options,
                                                batch_size=batch_size).evaluate(todo)
    elif baseline is not None:
        verdicts = baseline(config, spec, todo)
    else:
        raise InputError("--configs", f"unknown configuration {config!r}; SAGE configs: "
                         f"{', '.join(SAGE_CONFIGS)}")
    with path.open("a", encoding="utf-8") as fh:
        for v in verdicts:
            write_verdict(v, fh)
            if on_verdict is not None:
                on_verdict()
    return path


# ---------------------------------------------------------------- results

def _gold(info: SliceInfo) -> dict[str, tuple[bool, str | None]]:
    """turn key -> (is a failure, failure class), from the slice's gold labels."""
    return {key: (g is not None and g.label == "failure", g.failure_class if g else None)
            for key, g in read_gold_labels(info.turns)}


def _aligned(gold: Mapping[str, tuple[bool, str | None]], verdicts: Sequence[Verdict]
             ) -> tuple[list[str], dict[str, Verdict]]:
    by_key = {v.key: v for v in verdicts}
    keys = [k for k in gold if k in by_key]
    return keys, by_key


def _calls(v: Verdict) -> int:
    return sum(1 for c in v.criteria for s in c.trace if s.stage == "S3")


def run_metrics(gold: Mapping[str, tuple[bool, str | None]], verdicts: Sequence[Verdict]
                ) -> dict[str, Any]:
    """Every number the tables need for one (slice, configuration)."""
    keys, by_key = _aligned(gold, verdicts)
    if not keys:
        return {"n": 0, "complete": False}
    g = np.array([gold[k][0] for k in keys])
    p = np.array([by_key[k].verdict == "failure" for k in keys])
    conf = np.array([by_key[k].confidence for k in keys])
    prec, rec, f1 = stats.precision_recall_f1(g, p)
    ci = stats.bootstrap_f1_ci(g, p)
    per_class: dict[str, dict[str, Any]] = {}
    for cls in CLASSES:
        idx = [i for i, k in enumerate(keys) if gold[k][0] and gold[k][1] == cls]
        if idx:
            caught = int(p[idx].sum())
            per_class[cls] = {"caught": caught, "total": len(idx), "recall": caught / len(idx)}
    clean = ~g
    vs = [by_key[k] for k in keys]
    stages = decided_by_counts(vs)
    n_crit = sum(stages.values())
    cost = sum(v.cost_usd for v in vs)
    lat = [v.latency_ms for v in vs]
    return {
        "n": len(keys), "complete": len(keys) == len(gold),
        "precision": prec, "recall": rec, "f1": f1, "f1_ci": [ci.low, ci.high],
        "class_recall": per_class,
        "clean_fp_rate": float(p[clean].mean()) if clean.any() else 0.0,
        "undecided_rate": float(np.mean([v.verdict == "undecided" for v in vs])),
        "selective": {f"f1@{int(c * 100)}": stats.f1_at_coverage(g, p, conf, c)
                      for c in COVERAGES},
        "criteria": n_crit,
        "routing": {s: n / n_crit for s, n in sorted(stages.items())} if n_crit else {},
        "s3_turn_share": float(np.mean([_calls(v) > 0 for v in vs])),
        "paid_calls_per_turn": float(np.mean([_calls(v) for v in vs])),
        "cost_usd": cost, "usd_per_1k": 1000 * cost / len(keys),
        "p50_latency_ms": float(statistics.median(lat)),
    }


def _pred(gold_keys: Sequence[str], verdicts: Sequence[Verdict]) -> np.ndarray[Any, Any] | None:
    by_key = {v.key: v for v in verdicts}
    if any(k not in by_key for k in gold_keys):
        return None
    return np.array([by_key[k].verdict == "failure" for k in gold_keys])


def is_baseline(config: str) -> bool:
    return config not in CONFIGS


def compute_results(out: Path, slices_dir: Path) -> dict[str, Any]:
    """All metrics from the saved verdict files (deterministic: seeded bootstrap)."""
    infos = slice_infos(slices_dir)
    runs_dir = out / "runs"
    results: dict[str, Any] = {"slices": {}, "sgdx": {}}
    verdicts_by: dict[str, dict[str, list[Verdict]]] = {}
    for slice_dir in sorted(p for p in runs_dir.glob("*") if p.is_dir()):
        name = slice_dir.name
        if name not in infos:
            continue
        gold = _gold(infos[name])
        entry: dict[str, Any] = {"n": len(gold), "configs": {}, "paired": {}}
        verdicts_by[name] = {}
        for vf in sorted(slice_dir.glob("*.jsonl")):
            vs = read_verdicts(vf)
            verdicts_by[name][vf.stem] = vs
            entry["configs"][vf.stem] = run_metrics(gold, vs)
        keys = list(gold)
        g = np.array([gold[k][0] for k in keys])
        preds = {c: _pred(keys, vs) for c, vs in verdicts_by[name].items()}
        full = {c: pr for c, pr in preds.items() if pr is not None}
        if "core" in full:
            for c, pr in sorted(full.items()):
                if c == "core":
                    continue
                r = stats.paired_bootstrap(g, full["core"], pr)
                entry["paired"][c] = {"delta_f1": r.delta, "ci": [r.low, r.high],
                                      "p": r.p_value}
            baselines = sorted(c for c in full if is_baseline(c))
            if baselines:
                r = stats.paired_bootstrap_vs_best(g, full["core"], [full[b] for b in baselines])
                best = max(baselines, key=lambda b: stats.f1_score(g, full[b]))
                entry["vs_best_baseline"] = {"baseline": best, "among": baselines,
                                             "delta_f1": r.delta, "ci": [r.low, r.high],
                                             "p": r.p_value}
        results["slices"][name] = entry
    # Holm over the headline comparisons that exist
    heads = [(n, e["vs_best_baseline"]["p"]) for n, e in results["slices"].items()
             if "vs_best_baseline" in e]
    if heads:
        adj, rej = stats.holm_bonferroni([p for _, p in heads])
        for (n, _), a, reject in zip(heads, adj, rej, strict=True):
            results["slices"][n]["vs_best_baseline"]["p_holm"] = a
            results["slices"][n]["vs_best_baseline"]["holm_reject"] = reject
    results["sgdx"] = _sgdx(results, verdicts_by, infos)
    return results


def _sgdx(results: Mapping[str, Any], verdicts_by: Mapping[str, Mapping[str, list[Verdict]]],
          infos: Mapping[str, SliceInfo]) -> dict[str, Any]:
    present = [v for v in SGDX_VARIANTS if v in verdicts_by]
    if len(present) < 2:
        return {}
    configs = sorted(set.intersection(*(set(verdicts_by[v]) for v in present)))
    out: dict[str, Any] = {"variants": present, "configs": {}}
    for c in configs:
        f1s = [results["slices"][v]["configs"][c]["f1"] for v in present]
        labels: dict[str, list[str]] = {}
        for v in present:
            for vd in verdicts_by[v][c]:
                labels.setdefault(vd.key, []).append(vd.verdict)
        complete = [ls for ls in labels.values() if len(ls) == len(present)]
        invariant = sum(len(set(ls)) == 1 for ls in complete) / len(complete) if complete else 0
        out["configs"][c] = {"mean_f1": float(np.mean(f1s)), "sigma_f1": float(np.std(f1s)),
                             "f1": dict(zip(present, f1s, strict=True)),
                             "invariant_verdict_share": invariant,
                             "canonical_f1": results["slices"].get("sgd", {}).get(
                                 "configs", {}).get(c, {}).get("f1")}
    return out


def write_results(out: Path, slices_dir: Path) -> dict[str, Any]:
    res = compute_results(out, slices_dir)
    (out / "results.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n",
                                      encoding="utf-8")
    return res
