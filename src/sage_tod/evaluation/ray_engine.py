"""The same evaluation on a Ray cluster: Ray Data `map_batches` over an actor pool.

Each actor builds one `Evaluator` (models loaded once per actor, `threads`
model threads on `threads` reserved CPUs) and evaluates a batch of turns at a
time, exactly as the plain engine does, so verdicts are identical apart from
`latency_ms` (tests/test_ray_engine.py, docs/results-speed.md).

Three things make the sharded run equal to the sequential one:

- `history` is made explicit before sharding: a turn without it needs the
  earlier turns of its dialogue, which another actor may hold. The turns then
  go to Ray's object store as Arrow blocks (seq, key, the turn as JSON), one
  block at a time, so the driver never holds more than one block of them.
- every actor keeps its own S2 score cache (pair scores and paraphrase
  embeddings) in its own SQLite file, seeded from the main cache; SQLite
  serialises writers and one file each keeps actors from waiting on each other.
  After the run the worker files are merged into the main cache.
- results come back in input order (Ray Data's `preserve_order`) and are joined
  on `dialogue_id:turn_id` against the staged keys: a missing or reordered row
  is an error, never a silently shifted file.

Local Ray starts by itself; an existing cluster is used with `address`
(`--ray-address`) or `RAY_ADDRESS`. Worker caches live under `staging`
(a temporary directory by default); on a cluster of several machines make it
a directory every node can write and the driver can read, or the workers'
new scores stay on their nodes (verdicts are the same either way). Ray is the
optional extra `sage-tod[ray]`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sized
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import HistoryEntry, Turn, TurnRecord, as_turn, history_entry
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import Evaluator

STAGE_ROWS = 4096  # turns per staged file at most (the driver's memory bound)


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:
        raise InputError("--engine", "the ray engine needs Ray: pip install 'sage-tod[ray]'"
                         ) from None
    return ray


def init_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect to `address` / $RAY_ADDRESS, or start a local instance; the ray module.

    A local instance gets `num_cpus` logical CPUs: the actors reserve
    workers x threads, and Ray Data's file listing and reading tasks need one
    more, or they wait forever behind actors that wait for their input (on a
    cluster, leave a CPU free for them the same way). SAGE_TOD_* variables travel
    to the workers (model and data locations, caches)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    env = {k: v for k, v in os.environ.items() if k.startswith("SAGE_TOD_")}
    addr = address or os.environ.get("RAY_ADDRESS") or None
    kw: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False,
                          "runtime_env": {"env_vars": env}}
    if addr is None:
        kw.update(include_dashboard=False, num_cpus=num_cpus)
    ray.init(address=addr, logging_level=logging.WARNING, **kw)
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.WARNING)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    # results in input order; `evaluate_ray` still joins on (seq, key) and reorders
    ctx.execution_options.preserve_order = True
    return ray


def explicit_history(turns: Iterable[Turn | TurnRecord | Mapping[str, Any]],
                     spec: SpecBundle) -> Iterator[Turn]:
    """Each turn with its `history` filled from the earlier turns of its dialogue (the
    streaming form of `contracts.turns.with_history`); turns that carry one keep it."""
    so_far: dict[str, list[HistoryEntry]] = {}
    for t in turns:
        turn = as_turn(t, spec)
        past = so_far.setdefault(turn.dialogue_id, [])
        if turn.history is None:
            turn = turn.model_copy(update={"history": tuple(past)})
        past.append(history_entry(turn))
        yield turn


def stage_turns(turns: Iterable[Turn], rows_per_block: int = STAGE_ROWS
                ) -> Iterator[tuple[list[str], Any]]:
    """Turns as Arrow tables (seq, key, turn JSON) of `rows_per_block` rows, in order:
    (the block's keys, the table). One block at a time is built, so the driver holds
    one block's rows, not the whole input."""
    import pyarrow as pa

    schema = pa.schema([("seq", pa.int64()), ("key", pa.string()), ("turn", pa.string())])
    rows: dict[str, list[Any]] = {"seq": [], "key": [], "turn": []}
    for seq, t in enumerate(turns):
        rows["seq"].append(seq)
        rows["key"].append(t.key)
        rows["turn"].append(t.model_dump_json(exclude_none=True))
        if len(rows["seq"]) >= rows_per_block:
            yield list(rows["key"]), pa.table(rows, schema=schema)
            rows = {"seq": [], "key": [], "turn": []}
    if rows["seq"]:
        yield list(rows["key"]), pa.table(rows, schema=schema)


class EvaluatorActor:
    """A Ray Data callable class: one Evaluator per actor, built once."""

    def __init__(self, spec: SpecBundle, config: str, options: Mapping[str, Any],
                 threads: int, batch_size: int, cache_dir: str | None,
                 seed_cache: str | None) -> None:
        os.environ["SAGE_TOD_THREADS"] = str(threads)
        opts = dict(options)
        opts["threads"] = threads
        if cache_dir is None:
            opts["cache_path"] = "off"
        else:
            mine = Path(cache_dir) / f"worker-{os.getpid()}-{uuid.uuid4().hex[:8]}.sqlite"
            if seed_cache and Path(seed_cache).is_file():
                _copy_sqlite(Path(seed_cache), mine)
            opts["cache_path"] = str(mine)
        self.evaluator = Evaluator(spec, config, options=opts, batch_size=batch_size)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        turns = [Turn.model_validate_json(s) for s in batch["turn"]]
        verdicts = list(self.evaluator.evaluate(turns))
        return {"seq": batch["seq"], "key": [v.key for v in verdicts],
                "verdict": [v.to_json() for v in verdicts]}


def _copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy of a (possibly open, WAL-mode) SQLite file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    s = sqlite3.connect(str(src), timeout=30.0)
    d = sqlite3.connect(str(dst))
    try:
        s.backup(d)
    finally:
        d.close()
        s.close()


def evaluate_dataset(ds: Any, spec: SpecBundle, config: str = "core", *,
                     options: Mapping[str, Any] | None = None, workers: int = 2,
                     threads: int = 1, batch_size: int = 64, cache_dir: str | None = None,
                     seed_cache: str | None = None) -> Any:
    """A Ray Dataset of turns -> a Ray Dataset of verdicts (`seq`, `key`, `verdict` JSON).

    Input rows need a `turn` column holding each turn as JSON (with its history: see
    `explicit_history`) and a `seq` column; `dataset_from_turns` builds one from turn
    dicts or a turns Parquet file. Call `init_ray` first, or let Ray start itself.
    """
    ray = _ray()
    return ds.map_batches(
        EvaluatorActor, batch_size=batch_size, batch_format="numpy",
        fn_constructor_args=(spec, config, dict(options or {}), threads, batch_size,
                             cache_dir, seed_cache),
        compute=ray.data.ActorPoolStrategy(size=max(1, workers)), num_cpus=max(1, threads))


def dataset_from_turns(turns: Iterable[Turn | TurnRecord | Mapping[str, Any]],
                       spec: SpecBundle, *, workers: int = 2, batch_size: int = 64
                       ) -> tuple[Any, list[str]]:
    """Turns (history made explicit) as a Ray Dataset in blocks; (ds, keys in order).

    The blocks go to Ray's object store one at a time (it spills to disk when full),
    so this works the same on a local instance and on a cluster, with no shared
    directory. Blocks are sized so that every worker gets several (at least one
    batch each, at most STAGE_ROWS rows).
    """
    ray = _ray()
    n = len(turns) if isinstance(turns, Sized) else STAGE_ROWS * 4 * max(1, workers)
    per_block = max(batch_size, min(STAGE_ROWS, -(-n // (4 * max(1, workers)))))
    keys: list[str] = []
    refs: list[Any] = []
    for block_keys, table in stage_turns(explicit_history(turns, spec), per_block):
        keys += block_keys
        refs.append(ray.put(table))
    if not refs:
        raise InputError("<turns>", "no turns to evaluate")
    return ray.data.from_arrow_refs(refs), keys


def evaluate_ray(turns: Iterable[Turn | TurnRecord | Mapping[str, Any]], spec: SpecBundle,
                 config: str = "core", *, options: Mapping[str, Any] | None = None,
                 workers: int = 2, threads: int = 1, batch_size: int = 64,
                 address: str | None = None, staging: str | Path | None = None,
                 cache_path: str | Path | None = None) -> Iterator[Verdict]:
    """Verdicts of `turns`, in input order, computed by `workers` Ray actors.

    `cache_path`: the main S2 score cache (default as for the plain engine:
    $SAGE_TOD_NLI_CACHE, else the user cache; 'off' = memory only). Worker caches
    start as copies of it and are merged back into it when the run ends. A missing
    Ray is an `InputError` at the call, not at the first verdict.
    """
    _ray()
    return _run(turns, spec, config, options=options, workers=workers, threads=threads,
                batch_size=batch_size, address=address, staging=staging,
                cache_path=cache_path)


def _run(turns: Iterable[Turn | TurnRecord | Mapping[str, Any]], spec: SpecBundle,
         config: str, *, options: Mapping[str, Any] | None, workers: int, threads: int,
         batch_size: int, address: str | None, staging: str | Path | None,
         cache_path: str | Path | None) -> Iterator[Verdict]:
    from sage_tod.nli.backend import cores_given
    from sage_tod.nli.embcache import merge_cache_files
    from sage_tod.nli.runtime import cache_location

    opts = dict(options or {})
    main_cache = cache_location(cache_path if cache_path is not None
                                else opts.pop("cache_path", None))
    init_ray(address, num_cpus=max(cores_given(), max(1, workers) * max(1, threads) + 1))
    own_staging = staging is None
    sdir = Path(tempfile.mkdtemp(prefix="sage-tod-ray-")) if staging is None else Path(staging)
    cache_dir = None if main_cache is None else sdir / "caches"
    try:
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
        ds, keys = dataset_from_turns(turns, spec, workers=workers, batch_size=batch_size)
        out = evaluate_dataset(
            ds, spec, config, options=opts, workers=workers, threads=threads,
            batch_size=batch_size, cache_dir=None if cache_dir is None else str(cache_dir),
            seed_cache=None if main_cache is None else str(main_cache))
        i = 0
        pending: dict[int, str] = {}  # results that came early (empty when order holds)
        for batch in out.iter_batches(batch_format="numpy", batch_size=None):
            for seq, key, line in zip(batch["seq"], batch["key"], batch["verdict"],
                                      strict=True):
                n = int(seq)
                if not 0 <= n < len(keys) or str(key) != keys[n] or n in pending or n < i:
                    raise RuntimeError(f"ray engine: result {key} (seq {n}) does not join "
                                       "the input on dialogue_id:turn_id")
                pending[n] = str(line)
            while i in pending:
                yield Verdict.model_validate(json.loads(pending.pop(i)))
                i += 1
        if i != len(keys):
            raise RuntimeError(f"ray engine: {len(keys) - i} turn(s) got no verdict")
        if cache_dir is not None and main_cache is not None:
            merge_cache_files(main_cache, sorted(cache_dir.glob("worker-*.sqlite")))
    finally:
        if own_staging:
            shutil.rmtree(sdir, ignore_errors=True)
