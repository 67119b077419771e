"""Throughput and memory per stage for a turns file, to size a machine or a cluster.

Each measurement runs in a fresh process (spawned), so its peak RSS is its
own and "cold" really is cold:

- `s1`: rules only (`--config s1`), no model;
- `cold`: S1+S2 (`core`) with an empty score cache: every NLI pair and
  paraphrase embedding is computed;
- `warm`: `core` again in a new process over the cache file `cold` filled:
  what a rerun of the same turns (a changed spec, another report) costs.

Turns/s counts evaluation only (wall clock); loading the models (building the
`Evaluator`) and reading the file are reported beside it, and so are the CPU
seconds of evaluation (every thread of the process), which other load on the
machine does not inflate the way it inflates wall time. With `repeats` > 1 each stage
runs that many times and the medians are reported.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

STAGES = ("s1", "cold", "warm")


@dataclass(frozen=True)
class StageSpeed:
    """One stage's medians over `runs` runs."""

    stage: str
    config: str
    turns: int
    runs: int
    turns_per_s: float
    eval_s: float
    cpu_s: float  # CPU seconds of evaluation, all threads: what a busy machine cannot hide
    load_s: float
    read_s: float
    peak_rss_mb: float
    all_turns_per_s: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _one_run(spec: str, turns: str, config: str, cache: str, threads: int | None,
             batch_size: int) -> dict[str, float]:
    """In the child: read, build, evaluate; times and this process's peak RSS."""
    os.environ["SAGE_TOD_NLI_CACHE"] = cache
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.evaluation.evaluator import Evaluator

    t0 = time.perf_counter()
    bundle = load_spec(spec)
    records = load_turns(turns, bundle).records
    t1 = time.perf_counter()
    opts: dict[str, Any] = {} if threads is None else {"threads": threads}
    ev = Evaluator(bundle, config, options=opts, batch_size=batch_size)
    t2 = time.perf_counter()
    c2 = time.process_time()
    n = sum(1 for _ in ev.evaluate(records))
    t3 = time.perf_counter()
    c3 = time.process_time()
    return {"turns": n, "read_s": t1 - t0, "load_s": t2 - t1, "eval_s": t3 - t2,
            "cpu_s": c3 - c2, "rss_mb": peak_rss_kb() / 1024.0}


def peak_rss_kb() -> float:
    """This process's peak resident memory, KiB. Linux's `VmHWM` belongs to the process
    image and starts again at `exec`; `ru_maxrss` does not, so a run spawned from a large
    process (a test session of 2.5 GB) would report its parent's size. Elsewhere (no
    /proc), `ru_maxrss`."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def _spawned(*args: Any) -> dict[str, float]:
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_one_run, *args).result()


def measure(spec: str | Path, turns: str | Path, *, stages: tuple[str, ...] = STAGES,
            repeats: int = 1, threads: int | None = None, batch_size: int = 256
            ) -> list[StageSpeed]:
    """Measure each stage `repeats` times in fresh processes; medians per stage."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; choose from {', '.join(STAGES)}")
    out: list[StageSpeed] = []
    with tempfile.TemporaryDirectory(prefix="sage-tod-speed-") as tmp:
        runs: dict[str, list[dict[str, float]]] = {s: [] for s in stages}
        for r in range(max(1, repeats)):
            cache = str(Path(tmp) / f"scores-{r}.sqlite")  # emptied for every repeat
            for stage in STAGES:
                if stage not in stages and not (stage == "cold" and "warm" in stages):
                    continue
                config = "s1" if stage == "s1" else "core"
                got = _spawned(str(spec), str(turns), config,
                               "off" if stage == "s1" else cache, threads, batch_size)
                if stage in stages:
                    runs[stage].append(got)
        for stage in stages:
            rs = runs[stage]
            tps = tuple(round(x["turns"] / x["eval_s"], 1) if x["eval_s"] > 0 else 0.0
                        for x in rs)
            out.append(StageSpeed(
                stage=stage, config="s1" if stage == "s1" else "core",
                turns=int(rs[0]["turns"]), runs=len(rs),
                turns_per_s=round(statistics.median(tps), 1),
                eval_s=round(statistics.median(x["eval_s"] for x in rs), 3),
                cpu_s=round(statistics.median(x["cpu_s"] for x in rs), 3),
                load_s=round(statistics.median(x["load_s"] for x in rs), 3),
                read_s=round(statistics.median(x["read_s"] for x in rs), 3),
                peak_rss_mb=round(statistics.median(x["rss_mb"] for x in rs), 1),
                all_turns_per_s=tps))
    return out


def machine_note() -> str:
    """Cores given and the 1-minute load average, to print beside the numbers."""
    from sage_tod.nli.backend import cores_given

    try:
        load1 = f"{os.getloadavg()[0]:.2f}"
    except OSError:
        load1 = "?"
    return f"{cores_given()} core(s) given, load average (1 min) {load1}"
