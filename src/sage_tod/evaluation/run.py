"""The one evaluation path: settings -> evaluator -> verdicts, with the run's header.

Every way of evaluating (the CLI, `sage_tod.pipeline.evaluate_files`, the
pytest plugin, the gate's callers and the DeepEval, Inspect and MLflow
adapters) builds its `Evaluator` with `make_evaluator`, describes the run with
`run_header` and turns records into verdicts with `evaluate_records`, so the
same turns give the same verdicts whichever door they came in by. What is not
here is above this layer: reading files and agent logs (importers), routing
(routing), writing (outputs); `sage_tod.pipeline` joins them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnRecord
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import DEFAULT_BATCH_TURNS, Evaluator

ENGINES = ("plain", "ray")


@dataclass(frozen=True)
class RunSettings:
    """How to evaluate: everything besides the spec and the turns.

    `options` are the stages' options (`nli_model`, `tau`, `pc_state`,
    `wnf_state`, `threads`, ...; docs/api.md); `reproducible` writes
    `latency_ms` as 0 and leaves the creation time out of the header, so
    reruns give byte-identical files.
    """

    config: str = "core"
    options: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int = DEFAULT_BATCH_TURNS
    engine: str = "plain"
    workers: int = 2
    threads: int | None = None
    ray_address: str | None = None
    reproducible: bool = False

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InputError("--engine", f"must be plain or ray, got {self.engine!r}")

    def stage_options(self) -> dict[str, Any]:
        opts = dict(self.options)
        if self.threads is not None:
            opts.setdefault("threads", self.threads)
        return opts


def make_evaluator(spec: SpecBundle | Any, settings: RunSettings) -> Evaluator:
    """The evaluator of a run (under the Ray engine the driver's one only fingerprints)."""
    return Evaluator(spec, settings.config, batch_size=settings.batch_size,
                     options=settings.stage_options())


def run_header(evaluator: Evaluator, settings: RunSettings,
               inputs: Mapping[str, Any] | None = None) -> RunHeader:
    """The run record of evaluating with `evaluator` under `settings`."""
    return RunHeader.for_run(evaluator.fingerprint(), inputs=dict(inputs or {}),
                             options=_public(settings), stages=evaluator.cascade.stage_names,
                             reproducible=settings.reproducible)


def _public(settings: RunSettings) -> dict[str, Any]:
    """The options that can change verdicts (not threads, workers or addresses: those
    change speed only), as given; the stages' fingerprints hold the resolved values."""
    keep = {k: v for k, v in settings.stage_options().items()
            if k not in ("threads", "cache_path", "nli_batch_size")}
    return {k: keep[k] for k in sorted(keep)}


def evaluate_records(evaluator: Evaluator, records: Iterable[TurnRecord | Any],
                     settings: RunSettings, *, done: Collection[str] = (),
                     route: Callable[[Iterable[Any]], Iterable[Any]] | None = None
                     ) -> Iterator[Verdict]:
    """Verdicts of `records` in input order, leaving out the keys in `done` (a resume).

    `route` replaces each record's workflow (a router's choice) before it is
    evaluated; it is handed the records as a stream and gives them back as one, so
    routing holds what it routes together, not the input; the Ray engine spreads
    batches over actors with the same settings.
    """
    todo: Iterable[Any] = (r for r in records if _key(r) not in done) if done else records
    if route is not None:
        todo = route(todo)
    verdicts: Iterator[Verdict]
    if settings.engine == "ray":
        from sage_tod.evaluation.ray_engine import evaluate_ray

        verdicts = evaluate_ray(todo, evaluator.spec, settings.config,
                                options=settings.stage_options(), workers=settings.workers,
                                threads=settings.threads or 1,
                                batch_size=settings.batch_size, address=settings.ray_address)
    else:
        verdicts = evaluator.evaluate(todo)
    for v in verdicts:
        yield v.model_copy(update={"latency_ms": 0.0}) if settings.reproducible else v


def _key(record: Any) -> str:
    turn = getattr(record, "turn", record)
    if isinstance(turn, Mapping):
        return f"{turn.get('dialogue_id')}:{turn.get('turn_id')}"
    return str(turn.key)
