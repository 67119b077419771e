"""`sage-tod models bench-nli`: the S2 speed, memory and determinism numbers.

Each measurement runs in a fresh child process, so load time and peak RSS are
those of a cold `sage-tod` process, not of whatever the parent already loaded.
Pairs and turns come from SGD dev (devset.py), the same data used to choose
the claim, so the premise lengths are realistic.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sage_tod.lab.datasets.paths import data_root, require_all


def default_sgd_dev() -> Path:
    """SGD dev under $SAGE_TOD_DATA (read when a command needs it, never at import)."""
    require_all(["sgd/dev"])
    return data_root() / "sgd" / "dev"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs inside the child process."""
    if spec["mode"] == "nli":
        return _child_nli(spec)
    return _child_evaluate(spec)


def _child_nli(spec: dict[str, Any]) -> dict[str, Any]:
    from sage_tod.nli.backend import load_backend

    pairs = [(str(p[0]), str(p[1])) for p in json.loads(Path(spec["pairs"]).read_text())]
    t0 = time.perf_counter()
    be = load_backend(spec["model"], spec["backend"], threads=spec["threads"])
    load_s = time.perf_counter() - t0
    be.score(pairs[:64], 32)  # warm-up
    res: dict[str, Any] = {"backend": be.name, "load_s": load_s}
    t0, c0 = time.perf_counter(), time.process_time()
    probs32 = be.score(pairs, 32)
    res["pairs_per_s_b32"] = len(pairs) / (time.perf_counter() - t0)
    # CPU seconds used: on a loaded machine wall time overstates the cost
    res["pairs_per_cpu_s_b32"] = len(pairs) / (time.process_time() - c0)
    few = pairs[:128]
    t0 = time.perf_counter()
    probs1 = be.score(few, 1)
    res["pairs_per_s_b1"] = len(few) / (time.perf_counter() - t0)
    probs7 = be.score(few, 7)
    res["batch_invariant"] = probs1 == probs7 == probs32[:128]
    res["max_diff_b1_b32"] = max(abs(a - b) for p, q in zip(probs1, probs32, strict=False)
                                 for a, b in zip(p, q, strict=True))
    res["margins"] = [p[0] - p[2] for p in probs32]
    res["peak_rss_mb"] = _rss_mb()
    res["load_avg"] = os.getloadavg()[0]
    return res


def _child_evaluate(spec: dict[str, Any]) -> dict[str, Any]:
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.evaluation.evaluator import Evaluator

    bundle = load_spec(spec["spec"])
    records = load_turns(spec["turns"], bundle).records
    warm, timed = records[:spec["warmup"]], records[spec["warmup"]:]
    opts = {"nli_model": spec["model"], "backend": spec["backend"], "cache_path": "off",
            "threads": spec["threads"]}
    t0 = time.perf_counter()
    ev = Evaluator(bundle, spec["config"], options=opts, batch_size=spec["batch_size"])
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    list(ev.evaluate(warm))
    warm_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    vs = list(ev.evaluate(timed))
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    lines = []
    for v in vs:
        d = v.model_dump(mode="json")
        d.pop("latency_ms", None)
        lines.append(json.dumps(d, sort_keys=True))
    Path(spec["verdicts"]).write_text("\n".join(lines) + "\n", encoding="utf-8")
    decided = {"S1": 0, "S2": 0, None: 0}
    for v in vs:
        for c in v.criteria:
            decided[c.decided_by if c.decided_by in ("S1", "S2") else None] += 1
    return {"turns": len(vs), "seconds": secs, "turns_per_s": len(vs) / secs,
            "turns_per_cpu_s": len(vs) / cpu, "load_avg": os.getloadavg()[0],
            "build_s": build_s, "warmup_s": warm_s, "peak_rss_mb": _rss_mb(),
            "missing": ev.missing_stages,
            "criteria": {"S1": decided["S1"], "S2": decided["S2"], "abstain": decided[None]},
            "sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "sage_tod.lab.nli.bench", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def prepare(sgd_dev: Path, work: Path, n_pairs: int, n_turns: int, warmup: int
            ) -> tuple[Path, Path, Path]:
    """Pairs (default claim) and a turn slice from SGD dev, written under `work`."""
    from sage_tod.compiler.context import make_context
    from sage_tod.lab.nli.devset import build_devset
    from sage_tod.nli.backend import PairTokenizer
    from sage_tod.nli.claims import DEFAULT_TEMPLATE, DEFAULT_WINDOW, uv_pair
    from sage_tod.nli.resolve import resolve_model

    ds = build_devset(sgd_dev, dialogues=200)
    ds.turns = ds.turns[:warmup + n_turns]
    spec_p, turns_p = ds.write(work)
    bundle = ds.bundle()
    ctxs = {k: make_context(bundle, t) for k, t in ds.turn_objects().items()}
    model = resolve_model().model
    count = PairTokenizer(model).count if model else len
    pairs = [uv_pair(ctxs[c.turn_key], c.slot, c.value, template=DEFAULT_TEMPLATE,
                     window_name=DEFAULT_WINDOW, count=count)
             for c in ds.claims if c.turn_key in ctxs][:n_pairs]
    pairs_p = work / "pairs.json"
    pairs_p.write_text(json.dumps(pairs), encoding="utf-8")
    return spec_p, turns_p, pairs_p


def bench(model: str | None = None, *, backends: tuple[str, ...] = ("onnx", "torch", "onnx-int8"),
          sgd_dev: Path | None = None, n_pairs: int = 512, n_turns: int = 250,
          threads: int = 2, tau: float = 0.20, log: Any = print) -> dict[str, Any]:
    from sage_tod.nli.resolve import resolve_model

    res = resolve_model(model)
    if res.model is None:
        raise RuntimeError(res.missing_message())
    report: dict[str, Any] = {"model": res.model, "threads": threads, "nli": {}, "evaluate": {}}
    with tempfile.TemporaryDirectory(prefix="sage-bench-") as tmp:
        work = Path(tmp)
        spec_p, turns_p, pairs_p = prepare(sgd_dev or default_sgd_dev(), work, n_pairs,
                                           n_turns, 16)
        base = {"model": res.model, "threads": threads}
        ref: list[float] | None = None
        for be in backends:
            log(f"scoring {n_pairs} SGD dev pairs with {be} ...")
            try:
                r = run_child({**base, "mode": "nli", "backend": be, "pairs": str(pairs_p)})
            except RuntimeError as exc:
                report["nli"][be] = {"error": str(exc)[-500:]}
                continue
            ms = r.pop("margins")
            if ref is None:
                ref = ms
            r["verdicts_equal_to_" + backends[0]] = sum(
                _gate(a, tau) == _gate(b, tau) for a, b in zip(ms, ref, strict=True)) / len(ms)
            r["max_margin_diff_vs_" + backends[0]] = max(
                abs(a - b) for a, b in zip(ms, ref, strict=True))
            report["nli"][be] = r
        shas = []
        for i, bs in enumerate((64, 7)):
            log(f"evaluate --config core on {n_turns} turns, batch {bs} (run {i + 1}) ...")
            r = run_child({**base, "mode": "evaluate", "backend": "auto", "config": "core",
                           "spec": str(spec_p), "turns": str(turns_p), "warmup": 16,
                           "batch_size": bs, "verdicts": str(work / f"v{i}.jsonl")})
            shas.append(r["sha256"])
            report["evaluate"][f"batch{bs}"] = r
        report["evaluate"]["identical_across_runs_and_batch_sizes"] = len(set(shas)) == 1
    return report


def _gate(m: float, tau: float) -> int:
    return 0 if abs(m) < tau else (1 if m > 0 else -1)


def format_report(r: dict[str, Any]) -> str:
    lines = [f"model {r['model']}, {r['threads']} threads", "",
             "| backend | load s | pairs/s b32 | pairs/CPU-s b32 | pairs/s b1 | batch-invariant | "
             "verdicts = first | max |dm| | peak RSS MB | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, x in r["nli"].items():
        if "error" in x:
            lines.append(f"| {name} | error: {x['error'].splitlines()[-1]} |||||||")
            continue
        eq = next(v for k, v in x.items() if k.startswith("verdicts_equal"))
        md = next(v for k, v in x.items() if k.startswith("max_margin_diff"))
        lines.append(f"| {name} | {x['load_s']:.2f} | {x['pairs_per_s_b32']:.0f} | "
                     f"{x['pairs_per_cpu_s_b32']:.0f} | "
                     f"{x['pairs_per_s_b1']:.0f} | {x['batch_invariant']} | {eq:.3f} | "
                     f"{md:.2e} | {x['peak_rss_mb']:.0f} | {x['load_avg']:.1f} |")
    lines += ["", "| evaluate core | turns | turns/s (warm) | turns/CPU-s | build s | warm-up s "
              "| peak RSS MB | S1 / S2 / abstain criteria | load avg |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, x in r["evaluate"].items():
        if not isinstance(x, dict):
            continue
        c = x["criteria"]
        lines.append(f"| {name} | {x['turns']} | {x['turns_per_s']:.1f} | "
                     f"{x['turns_per_cpu_s']:.1f} | {x['build_s']:.2f} | "
                     f"{x['warmup_s']:.2f} | {x['peak_rss_mb']:.0f} | "
                     f"{c['S1']} / {c['S2']} / {c['abstain']} | {x['load_avg']:.1f} |")
    lines.append(f"\nverdicts identical across runs and batch sizes: "
                 f"{r['evaluate'].get('identical_across_runs_and_batch_sizes')}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
