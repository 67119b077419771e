"""`evaluate_files`: a spec and a turns file (or agent log) in, a verdicts file out.

This is `sage-tod evaluate` without the command line: the CLI only turns its
flags into an `EvaluateRequest` and prints what comes back. Resume, the run
header, routing, the engine and the output format are decided here, once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError, InputProblem
from sage_tod.contracts.parquet import VerdictParquetWriter, is_parquet
from sage_tod.contracts.run_record import RunHeader
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import TurnRecord, iter_turns, parse_turn, with_history
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.evaluation.run import RunSettings, evaluate_records, make_evaluator, run_header
from sage_tod.importers.base import (
    ImportResult,
    TurnDict,
    UnknownFormat,
    format_hint,
    import_file,
    sniff,
    stream_file,
)
from sage_tod.outputs.sink import VerdictSink, file_sha256

ROUTES = ("oracle", "mpnet", "llm")
ROUTE_CHUNK = 512
"""Turns routed together (one encoder call, one batch of LLM requests): routing holds
this many records, never the whole input, and verdicts are written chunk by chunk."""


@dataclass(frozen=True)
class EvaluateRequest:
    """One run: what to read, where to write, and how to evaluate."""

    spec: Path
    turns: Path
    out: Path
    settings: RunSettings = field(default_factory=RunSettings)
    log_format: str | None = None  # read `turns` as an agent log of this format
    skip_invalid: bool = False
    resume: bool = False
    overwrite: bool = False
    truncate_at_damage: bool = False  # with resume: cut the file at a damaged line
    route: str = "oracle"


@dataclass
class FileRun:
    """What a run did, for the caller to report."""

    header: RunHeader
    evaluator: Evaluator
    resumed: int = 0  # verdicts already in the file
    written: int = 0
    skipped: list[InputProblem] = field(default_factory=list)
    imported: ImportResult | None = None  # the agent log's import summary (--format)
    cut: str | None = None  # what --truncate-at-damage removed


def _router(spec: SpecBundle, method: str, options: Mapping[str, Any],
            chunk: int | None = None) -> Callable[[Iterable[Any]], Iterator[Any]] | None:
    """Replace each turn's workflow by the router's choice (the oracle field is not read).

    Records are routed `chunk` at a time by one router (its encoder and LLM client made
    once), each record's choice made from its own dialogue prefix only, and handed on
    as soon as their chunk is routed: memory holds one chunk, and the verdicts of a
    chunk are written before the next is read, so a killed run resumes as the plain
    path does.
    """
    if method == "oracle":
        return None
    if method not in ROUTES:
        raise InputError("--route", f"unknown router {method!r}; use oracle, mpnet or llm")
    from sage_tod.routing.router import route_chunks

    def routed(records: Iterable[Any]) -> Iterator[Any]:
        from sage_tod.llm.config import LLMNotConfigured
        from sage_tod.routing.encoder import EncoderUnavailable

        chunks = _chunks(records, chunk or ROUTE_CHUNK)
        pending: list[list[Any]] = []

        def turns() -> Iterator[list[Any]]:
            for part in chunks:
                pending.append(part)
                yield [r.turn for r in part]

        try:
            for ids in route_chunks(spec, turns(), method, client_config=options):
                part = pending.pop(0)
                yield from (TurnRecord(r.turn.model_copy(update={"workflow": w}), r.gold,
                                       r.meta, r.line)
                            for r, w in zip(part, ids, strict=True))
        except (EncoderUnavailable, LLMNotConfigured) as exc:  # a setup problem, exit 2
            raise InputError(f"--route {method}", str(exc)) from None

    return routed


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while part := list(itertools.islice(it, size)):
        yield part


def _with_hint(exc: InputError, path: Path, expected: str | None) -> InputError:
    """`exc`, plus what the file looks like when that is not what it was read as."""
    hint = format_hint(path, expected)
    if hint is None:
        return exc
    p = exc.problem
    return InputError(p.path, f"{p.message}; {hint}", line=p.line, field=p.field)


def _router_fingerprint(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from sage_tod.routing.encoder import MPNET_HUB_ID, MPNET_REVISION
    from sage_tod.routing.router import SHORTLIST

    fp: dict[str, Any] = {"encoder": MPNET_HUB_ID, "revision": MPNET_REVISION}
    if method == "llm":
        from sage_tod.llm.config import LLMNotConfigured, config_from_options

        try:
            cfg = config_from_options(dict(options)).describe()
        except LLMNotConfigured:
            cfg = {}
        fp.update({"shortlist": SHORTLIST, "endpoint": cfg.get("base_url"),
                   "model": cfg.get("model")})
    return fp


def read_agent_log(fmt: str, path: Path, spec: SpecBundle, **opts: Any) -> ImportResult:
    """`import_file`, with an unknown format reported as bad input (exit status 2), and a
    log read as the wrong format told what it looks like."""
    try:
        return import_file(fmt, path, spec, **opts)
    except UnknownFormat as exc:
        raise InputError("--format", str(exc)) from None
    except InputError as exc:
        raise _with_hint(exc, path, fmt) from None


def stream_agent_log(fmt: str, path: Path, spec: SpecBundle, **opts: Any
                     ) -> tuple[ImportResult, Iterator[TurnDict]]:
    """`stream_file` with `read_agent_log`'s errors: the result (complete once the turns
    are used up) and the log's turns, read as they are asked for."""
    try:
        res, turns = stream_file(fmt, path, spec, **opts)
    except UnknownFormat as exc:
        raise InputError("--format", str(exc)) from None
    except InputError as exc:
        raise _with_hint(exc, path, fmt) from None

    def hinted() -> Iterator[TurnDict]:
        try:
            yield from turns
        except InputError as exc:
            raise _with_hint(exc, path, fmt) from None

    return res, hinted()


def load_run_spec(spec: Path, turns: Path | None = None) -> SpecBundle:
    """The spec, or an error that says when --spec and --turns look swapped."""
    try:
        return load_spec(spec)
    except InputError as exc:
        looks = sniff(spec)
        if looks is None or looks[0] == "a workflow spec":
            raise
        swapped = turns is not None and (sniff(turns) or ("",))[0] == "a workflow spec"
        p = exc.problem
        raise InputError(p.path, f"{p.message}; this file looks like {looks[0]}, not a "
                         "workflow spec" + ("; were --spec and --turns swapped?" if swapped
                                            else ""), line=p.line, field=p.field) from None


def _hinted(records: Iterable[Any], path: Path) -> Iterator[Any]:
    """The records of a turns file; an error reading it says what the file looks like
    when that is not a turns file (an agent log needs --format)."""
    try:
        yield from records
    except InputError:
        hint = format_hint(path, None)
        if hint is None:
            raise
        # valid JSON of another shape is not "malformed": say what it is instead
        raise InputError(path, f"is not a sage-tod turns file (one turn object per line); "
                         f"{hint}") from None


def evaluate_files(req: EvaluateRequest, *,
                   on_verdict: Callable[[Verdict], None] | None = None,
                   on_skip: Callable[[InputProblem], None] | None = None,
                   on_start: Callable[[FileRun], None] | None = None) -> FileRun:
    """Evaluate every turn of `req.turns` into `req.out` (JSONL, or Parquet by suffix).

    Turns files and agent logs are streamed (records and verdicts are never all
    held; a log is converted one conversation at a time, except the formats
    `importers.base.WHOLE` names), and so is routing (`ROUTE_CHUNK` turns at a
    time). `on_start` is called once the output is open (after a resume's checks),
    `on_verdict` for each verdict written, `on_skip` for each invalid line skipped
    (`skip_invalid`). An agent log's import summary (`FileRun.imported`) is complete
    when this returns.
    """
    if req.resume and is_parquet(req.out):
        raise InputError(req.out, "--resume needs a JSONL --out (a Parquet file is written "
                                  "whole)")
    if req.route not in ROUTES:
        raise InputError("--route", f"unknown router {req.route!r}; use oracle, mpnet or llm")
    bundle = load_run_spec(req.spec, req.turns)
    settings = req.settings
    ev = make_evaluator(bundle, settings)
    inputs: dict[str, Any] = {
        "spec_sha256": file_sha256(req.spec), "turns_sha256": file_sha256(req.turns),
        "format": req.log_format, "route": req.route}
    if req.route != "oracle":  # the router's model decides each turn's workflow
        inputs["router"] = _router_fingerprint(req.route, settings.stage_options())
    header = run_header(ev, settings, inputs)
    run = FileRun(header=header, evaluator=ev)

    def skipped(prob: InputProblem) -> None:
        run.skipped.append(prob)
        if on_skip is not None:
            on_skip(prob)

    records: Iterable[Any]
    if req.log_format is None:
        records = _hinted(iter_turns(req.turns, bundle, skip_invalid=req.skip_invalid,
                                     on_skip=skipped), req.turns)
    else:
        res, turns = stream_agent_log(req.log_format, req.turns, bundle)
        run.imported = res
        recs = res.iter_records(bundle, turns, skip_invalid=req.skip_invalid,
                                on_skip=skipped)
        # the first turn is read and checked before the output is opened: a log of the
        # wrong format, with no turn, or with a bad first turn is refused without
        # creating or touching --out (the rest streams, as a turns file does)
        head = list(itertools.islice(recs, 1))
        records = itertools.chain(head, recs)
    if is_parquet(req.out) and req.out.exists() and not req.overwrite:
        raise InputError(req.out, "exists; pass --overwrite to replace it")
    sink_cls: Any = VerdictParquetWriter if is_parquet(req.out) else VerdictSink
    with sink_cls(req.out, header, resume=req.resume, overwrite=req.overwrite,
                  truncate_at_damage=req.truncate_at_damage) as sink:
        run.resumed = len(sink.done)
        run.cut = getattr(sink, "cut", None)
        if on_start is not None:
            on_start(run)
        route = _router(ev.spec, req.route, settings.stage_options())
        for v in evaluate_records(ev, records, settings, done=sink.done, route=route):
            sink.write(v)
            run.written += 1
            if on_verdict is not None:
                on_verdict(v)
    return run


def evaluate_turn_dicts(spec: SpecBundle | Evaluator, turns: Sequence[Mapping[str, Any]],
                        settings: RunSettings | None = None, *, source: str = "<turns>"
                        ) -> list[Verdict]:
    """Verdicts of turn-format dicts (one dialogue or many, in order), validated as a
    turns file would be: the integrations' door into the one path."""
    settings = settings or RunSettings()
    ev = spec if isinstance(spec, Evaluator) else make_evaluator(spec, settings)
    records = with_history([parse_turn(dict(d), ev.spec, source, line=n)
                            for n, d in enumerate(turns, start=1)])
    return list(evaluate_records(ev, records, settings))

