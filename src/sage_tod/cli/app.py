"""The `sage-tod` command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from sage_tod import demo as demo_data
from sage_tod.cli.audit import register as register_audit
from sage_tod.cli.conversations import register as register_conversations
from sage_tod.cli.data import slices_app, specs_export
from sage_tod.cli.errors import install_guards, one_line_errors
from sage_tod.cli.importers import register as register_import
from sage_tod.cli.importers import report as report_import
from sage_tod.cli.llm import llm_app
from sage_tod.cli.models import calibrate as nli_calibrate
from sage_tod.cli.models import models_app
from sage_tod.cli.speed import register as register_speed
from sage_tod.cli.tool_agents import bench_cmd as tool_agents_bench_cmd
from sage_tod.cli.tool_specs import specs_from_tools
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import load_turns, read_gold_labels
from sage_tod.contracts.verdicts import Verdict, iter_verdicts, read_verdicts
from sage_tod.evaluation.configs import config_names, get_config
from sage_tod.evaluation.evaluator import DEFAULT_BATCH_TURNS, Evaluator
from sage_tod.integrations.gate_cli import gate as gate_cmd
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import check_target, write_atomic
from sage_tod.outputs.render import Summary, score_table, summary_table, verdict_table
from sage_tod.outputs.render import explain as render_explain
from sage_tod.outputs.scoring import score as score_fn
from sage_tod.outputs.sink import VerdictSink, file_sha256

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="State-grounded, abstention-aware evaluation of task-oriented dialogue "
                       "agents (SAGE).")
specs_app = typer.Typer(no_args_is_help=True, help="Workflow spec utilities.")
app.add_typer(specs_app, name="specs")
app.add_typer(slices_app, name="slices", help="Build the benchmark slices from the data sets.")
specs_app.command("export")(specs_export)
specs_app.command("from-tools")(specs_from_tools)
app.add_typer(models_app, name="models", help="NLI models for S2: train, measure, benchmark.")
app.add_typer(llm_app, name="llm", help="LLM endpoints: local server, ping, baselines, router.")
app.command("calibrate")(nli_calibrate)
register_import(app)
app.command("gate")(gate_cmd)
register_speed(app)
register_audit(app)
register_conversations(app)

T = TypeVar("T")


def _guard(fn: Callable[[], T]) -> T:
    """Run `fn`; bad input becomes one readable line on stderr and exit status 2."""
    with one_line_errors():
        return fn()


def _note_missing(ev: Evaluator) -> None:
    for stage, why in ev.missing_stages.items():
        err.print(f"[yellow]note:[/] config {ev.config} includes {stage}, which is not "
                  f"available ({escape(why)}); criteria it would decide abstain.", highlight=False)


class _RateColumn(ProgressColumn):
    """Turns per second (rich's speed column counts bytes)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("   - turns/s" if speed is None else f"{speed:6.0f} turns/s")


class _Progress:
    """A progress bar with turns/s and ETA on long runs in a terminal; silent otherwise."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._prog: Progress | None = None
        self._task: Any = None

    def start(self, total: int) -> None:
        if self.quiet or total < 200 or not err.is_terminal:
            return
        self._prog = Progress(TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(),
                              _RateColumn(), TimeRemainingColumn(), console=err,
                              transient=True)
        self._prog.start()
        self._task = self._prog.add_task("turns", total=total)

    def advance(self) -> None:
        if self._prog is not None:
            self._prog.advance(self._task)

    def stop(self) -> None:
        if self._prog is not None:
            self._prog.stop()
            self._prog = None


ConfigOpt = Annotated[str, typer.Option("--config", "-c",
                                        help="core | llm | no_s1 | no_s2 | no_s3 | s1")]
NliModelOpt = Annotated[str | None, typer.Option(
    "--nli-model", help="S2 NLI model: a local directory or a hub id (default: "
                        "$SAGE_TOD_NLI_MODEL, then your trained model, then the packaged "
                        "SGD-adapted MiniLM; docs/nli.md)")]
TauOpt = Annotated[float | None, typer.Option(
    "--tau", help="S2 gate: decide when |p(ent) - p(contra)| >= tau (default 0.15)")]


def _stage_options(nli_model: str | None, tau: float | None, **more: Any) -> dict[str, Any]:
    opts: dict[str, Any] = dict(more)
    if nli_model is not None:
        opts["nli_model"] = nli_model
    if tau is not None:
        opts["tau"] = tau
    return opts


@app.command()
def evaluate(
    spec: Annotated[Path, typer.Option(help="workflow spec (YAML or JSON)")],
    turns: Annotated[Path, typer.Option(help="turns JSONL (with --format: the agent's log)")],
    out_path: Annotated[Path, typer.Option("--out", help="verdicts JSONL to write")],
    config: ConfigOpt = "core",
    log_format: Annotated[str | None, typer.Option(
        "--format", help="read --turns as an agent log of this format (openai-chat, "
                         "tau-bench, rasa, multiwoz, sgd, mwzeval; docs/logs.md)")] = None,
    skip_invalid: Annotated[bool, typer.Option(help="evaluate valid lines, report the rest")
                            ] = False,
    resume: Annotated[bool, typer.Option(help="keep verdicts already in --out, do the rest")
                      ] = False,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
    batch_size: Annotated[int, typer.Option(help="turns per cascade batch")] = DEFAULT_BATCH_TURNS,
    pc_state: Annotated[str, typer.Option(help="state the PC outcome predicate reads: "
                                               "after (s_t) | before (s_{t-1})")] = "after",
    wnf_state: Annotated[str, typer.Option(help="WNF legality: either (legal under s_{t-1} or "
                                                "s_t) | before (s_{t-1} only)")] = "either",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress or tables")] = False,
    reproducible: Annotated[bool, typer.Option(
        help="write latency_ms as 0 so reruns give byte-identical files")] = False,
    nli_model: NliModelOpt = None,
    tau: TauOpt = None,
    route: Annotated[str, typer.Option(
        help="workflow of each turn: oracle (the turn's `workflow` field) | mpnet "
             "(bi-encoder over workflow descriptions) | llm (LLM picks among the MPNet "
             "top 8)")] = "oracle",
    engine: Annotated[str, typer.Option(
        help="plain (this process) | ray (an actor pool on Ray: pip install "
             "'sage-tod[ray]'; docs/scale.md)")] = "plain",
    workers: Annotated[int, typer.Option(help="--engine ray: actors, each with its own "
                                              "models and score cache")] = 2,
    threads: Annotated[int | None, typer.Option(
        help="model threads (per worker under --engine ray, default 1 there); default "
             "$SAGE_TOD_THREADS, else the cores given to the process")] = None,
    ray_address: Annotated[str | None, typer.Option(
        help="--engine ray: an existing cluster (default $RAY_ADDRESS, else a local "
             "instance)")] = None,
    truncate_at_damage: Annotated[bool, typer.Option(
        help="with --resume: cut --out at its first damaged line (keeping the verdicts "
             "before it) and redo the turns from there")] = False,
) -> None:
    """Evaluate every turn; write one verdict per turn (JSONL, or Parquet when --out ends
    in .parquet), in input order, after the run header. --turns may be JSONL or Parquet."""
    from sage_tod.evaluation.run import RunSettings
    from sage_tod.pipeline import EvaluateRequest, FileRun, evaluate_files

    if pc_state not in {"after", "before"} or wnf_state not in {"either", "before"}:
        err.print("[bold red]error:[/] --pc-state must be after|before and --wnf-state "
                  "either|before")
        raise typer.Exit(2)
    if truncate_at_damage and not resume:
        err.print("[bold red]error:[/] --truncate-at-damage goes with --resume")
        raise typer.Exit(2)
    settings = _guard(lambda: RunSettings(
        config=config, options=_stage_options(nli_model, tau, pc_state=pc_state,
                                               wnf_state=wnf_state),
        batch_size=batch_size, engine=engine, workers=workers, threads=threads,
        ray_address=ray_address, reproducible=reproducible))
    req = EvaluateRequest(spec=spec, turns=turns, out=out_path, settings=settings,
                          log_format=log_format, skip_invalid=skip_invalid, resume=resume,
                          overwrite=overwrite, truncate_at_damage=truncate_at_damage,
                          route=route)
    summary = Summary()
    progress = _Progress(quiet)

    def started(run: FileRun) -> None:
        _note_missing(run.evaluator)
        if run.cut:
            err.print(f"[yellow]resume:[/] {run.cut}", highlight=False)
        if run.resumed:
            err.print(f"resuming: {run.resumed} turn(s) already in {out_path}")
            if not quiet:
                for old in iter_verdicts(out_path):
                    summary.add(old)
        progress.start(0 if quiet or not err.is_terminal
                       else max(0, _count_lines(turns) - run.resumed))

    def wrote(v: Verdict) -> None:
        summary.add(v)
        progress.advance()

    def on_skip(prob: Any) -> None:
        err.print(f"[yellow]skipped:[/] {prob}", highlight=False)

    try:
        run = _guard(lambda: evaluate_files(req, on_verdict=wrote, on_skip=on_skip,
                                            on_start=started))
    finally:
        progress.stop()
    if run.imported is not None:  # complete now: the log was read as it was evaluated
        report_import(run.imported)
    if run.skipped:
        err.print(f"[yellow]{len(run.skipped)} invalid line(s) skipped; "
                  f"{summary.n} turn(s) in {out_path}[/]")
    if not quiet:
        out.print(summary.table(title=f"{summary.n} verdicts -> {out_path}"))


@app.command()
def score(
    turns: Annotated[Path, typer.Option(help="turns JSONL with gold labels")],
    verdicts: Annotated[Path, typer.Option(help="verdicts JSONL")],
    spec: Annotated[Path | None, typer.Option(help="spec; only needed to validate states")
                    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Precision/recall/F1 of the failure class; undecided counts as acceptable. Exit 2
    when the turns carry no gold labels."""
    if spec is not None:
        _guard(lambda: load_turns(turns, load_spec(spec)))
    labels = _guard(lambda: read_gold_labels(turns))
    if not any(g is not None for _, g in labels):
        err.print(f"[bold red]error:[/] {turns}: no turn has a gold label (`gold` field, "
                  "docs/formats.md §2), so there is nothing to score against; `sage-tod "
                  "report` or `gate` summarise verdicts without gold", highlight=False)
        raise typer.Exit(2)
    vs = _guard(lambda: read_verdicts(verdicts))
    report = score_fn(labels, vs)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
        return
    out.print(score_table(report))
    if report.undecided:
        out.print(f"[yellow]undecided ({len(report.undecided)}):[/] "
                  + ", ".join(report.undecided), highlight=False)
    if report.errors:
        out.print("[red]disagreements with gold:[/] "
                  + ", ".join(f"{k} (gold {g}, got {p})" for k, g, p in report.errors),
                  highlight=False)
    if report.missing_verdicts:
        err.print(f"[yellow]warning:[/] {len(report.missing_verdicts)} labelled turn(s) have "
                  "no verdict: " + ", ".join(report.missing_verdicts[:10]))
    if report.unlabelled:
        err.print(f"note: {report.unlabelled} turn(s) without gold were not scored")
    for stage, n in report.stages_missing.items():
        err.print(f"[yellow]warning:[/] {n} verdict(s) were made without {stage}, which was "
                  "configured but could not run; their criteria abstained", highlight=False)


@app.command()
def explain(
    verdicts: Annotated[Path, typer.Argument(help="verdicts JSONL")],
    turn: Annotated[str | None, typer.Option("--turn", help="DIALOGUE:TURN (default: every "
                                                           "failure)")] = None,
    turns: Annotated[Path | None, typer.Option(help="turns JSONL, to show utterances with "
                                                    "the evidence highlighted")] = None,
    spec: Annotated[Path | None, typer.Option(help="spec for --turns")] = None,
) -> None:
    """Show the evidence trace of a verdict in readable form, after the run that made it."""
    from sage_tod.contracts.verdicts import read_header

    vs = _guard(lambda: list(iter_verdicts(verdicts)))
    head = _guard(lambda: read_header(verdicts))
    if head is not None:
        out.print(_describe_run(head), markup=False, highlight=False)
        out.print()
    by_turn = {}
    if turns is not None:
        if spec is None:
            err.print("[bold red]error:[/] --turns needs --spec")
            raise typer.Exit(2)
        tf = _guard(lambda: load_turns(turns, load_spec(spec), skip_invalid=True))
        by_turn = {r.turn.key: r.turn for r in tf.records}
    chosen = [v for v in vs if (v.key == turn if turn else v.verdict == "failure")]
    if turn and not chosen:
        err.print(f"[bold red]error:[/] no verdict for turn {turn!r} in {verdicts}")
        raise typer.Exit(2)
    for v in chosen:
        out.print(render_explain(v, by_turn.get(v.key)))
        out.print()


def _describe_run(head: Any) -> str:
    """The run header in a few lines: code, inputs, configuration, stage fingerprints."""
    code = head.sage_tod
    inputs = head.inputs
    lines = [f"run: sage-tod {code.get('version')}"
             + (f" (commit {code['commit']})" if code.get("commit") else "")
             + f", config {head.config}, stages {'+'.join(head.stages) or '-'}"
             + (f", missing {', '.join(head.missing)}" if head.missing else "")
             + (f", created {head.created}" if head.created else ""),
             "  inputs: " + ", ".join(f"{k} {str(v)[:12] if k.endswith('sha256') else v}"
                                      for k, v in inputs.items() if v is not None)]
    for stage, fp in head.fingerprints.items():
        items = ", ".join(f"{k}={v}" for k, v in (fp or {}).items())
        lines.append(f"  {stage}: {items or '-'}")
    return "\n".join(lines)


@app.command()
def demo(
    config: ConfigOpt = "core",
    out_path: Annotated[Path | None, typer.Option("--out", help="also write the verdicts")
                        ] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
    nli_model: NliModelOpt = None,
    tau: TauOpt = None,
) -> None:
    """Evaluate the embedded demo dialogues and show each failure with evidence and repair."""
    spec_p, turns_p = demo_data.spec_path(), demo_data.turns_path()
    bundle = _guard(lambda: load_spec(spec_p))
    tf = _guard(lambda: load_turns(turns_p, bundle))
    ev = _guard(lambda: Evaluator(bundle, config, options=_stage_options(nli_model, tau)))
    _note_missing(ev)
    vs = list(ev.evaluate(tf.records))
    if out_path is not None:  # the one writer: run header, lock, overwrite refusal
        from sage_tod.evaluation.run import RunSettings, run_header

        settings = RunSettings(config=config, options=_stage_options(nli_model, tau))
        head = run_header(ev, settings, {"spec_sha256": file_sha256(spec_p),
                                         "turns_sha256": file_sha256(turns_p),
                                         "format": None, "route": "oracle"})
        with _guard(lambda: VerdictSink(out_path, head, resume=False, overwrite=overwrite,
                                        flag="--overwrite")) as sink:
            for v in vs:
                sink.write(v)
    gold: dict[str, str] = {r.turn.key: (r.gold.failure_class or r.gold.label)
                            for r in tf.records if r.gold}
    out.print(f"[bold]sage-tod demo[/]: {len(tf.records)} turns from {turns_p.name}, "
              f"spec {spec_p.name}, config {config}")
    out.print(verdict_table(vs, gold))
    turns_by_key = {r.turn.key: r.turn for r in tf.records}
    failures = [v for v in vs if v.verdict == "failure"]
    out.print(f"\n[bold]{len(failures)} failure(s), with evidence and repair:[/]\n")
    for v in failures:
        out.print(render_explain(v, turns_by_key[v.key], only_fired=True))
        out.print()
    out.print(summary_table(vs))
    out.print(score_table(score_fn([(r.turn.key, r.gold) for r in tf.records], vs)))
    und = [v.key for v in vs if v.verdict == "undecided"]
    if und:
        out.print(f"[yellow]undecided ({len(und)}), left for S2/S3:[/] " + ", ".join(und),
                  highlight=False)


@app.command()
def report(
    verdicts: Annotated[Path, typer.Argument(help="verdicts JSONL")],
    out_path: Annotated[Path, typer.Option("--out", help="HTML file to write")],
    turns: Annotated[Path | None, typer.Option(help="turns JSONL: utterances, states, gold")
                     ] = None,
    spec: Annotated[Path | None, typer.Option(help="spec to validate --turns against")
                    ] = None,
    title: Annotated[str, typer.Option(help="page title")] = "sage-tod report",
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
) -> None:
    """Write a self-contained HTML report with filters and evidence traces."""
    from sage_tod.contracts.turns import TurnRecord, load_turns_unchecked
    from sage_tod.outputs.report_html import render_report

    vs = _guard(lambda: read_verdicts(verdicts))
    records: list[TurnRecord] = []
    if turns is not None:
        if spec is not None:
            records = _guard(lambda: load_turns(turns, load_spec(spec))).records
        else:
            records = _guard(lambda: load_turns_unchecked(turns))
    by_key = {r.turn.key: r.turn for r in records}
    gold = {r.turn.key: r.gold for r in records}
    _guard(lambda: check_target(out_path, overwrite=overwrite))  # before the work
    page = render_report(vs, by_key, gold if any(gold.values()) else None, title=title)
    _guard(lambda: write_atomic(out_path, page, overwrite=overwrite))
    out.print(f"wrote {out_path} ({len(vs)} turns, {len(page) // 1024} KiB)")


bench_app = typer.Typer(help="Benchmarks: configurations x slices, tables and plots.")
app.add_typer(bench_app, name="bench")


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    slices: Annotated[str, typer.Option(help="comma-separated: mw-mixed, uv-rich, sgd, sgd-x, "
                                             "dev, abcd-uv")] = "mw-mixed,uv-rich,sgd",
    configs: Annotated[str, typer.Option(help="comma-separated SAGE configs and baselines")
                       ] = "core,no_s1,no_s2",
    out_dir: Annotated[Path, typer.Option("--out", help="benchmark directory")] = Path(
        "bench-out"),
    slices_dir: Annotated[Path | None, typer.Option(help="built slices (default OUT/slices; "
                                                         "built when missing)")] = None,
    no_acts: Annotated[bool | None, typer.Option(
        "--no-acts/--acts", help="build text-only slices (default: as the slices directory "
                                 "was built, else with acts)")] = None,
    batch_size: Annotated[int, typer.Option(help="turns per cascade batch")] = 64,
    nli_model: NliModelOpt = None,
    tau: TauOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Run configurations over slices (resumable), then write results and the report."""
    if ctx.invoked_subcommand is not None:
        return
    from sage_tod.lab.bench import ensure_slices, expand_slices, run_one, write_results
    from sage_tod.lab.bench_report import write_report

    sdir = slices_dir or out_dir / "slices"
    names = expand_slices(slices.split(","))
    cfgs = [c.strip() for c in configs.split(",") if c.strip()]
    infos = _guard(lambda: ensure_slices(sdir, names,
                                         acts=None if no_acts is None else not no_acts))
    total = sum(sum(1 for line in infos[n].turns.open() if line.strip()) for n in names)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  _RateColumn(), TimeRemainingColumn(), console=err,
                  disable=quiet or not err.is_terminal) as prog:
        task = prog.add_task("bench", total=total * len(cfgs))
        for cfg in cfgs:
            for n in names:
                prog.update(task, description=f"{n} / {cfg}")
                before = _count_lines(out_dir / "runs" / n / f"{cfg}.jsonl")
                prog.advance(task, before)
                _guard(lambda n=n, cfg=cfg: run_one(  # type: ignore[misc]
                    infos[n], cfg, out_dir, batch_size=batch_size,
                    options=_stage_options(nli_model, tau), baseline=_baseline_runner(),
                    on_verdict=lambda: prog.advance(task)))
    res = write_results(out_dir, sdir)
    rep = write_report(res, out_dir, sdir)
    if not quiet:
        out.print((rep / "tables.md").read_text(encoding="utf-8"), markup=False,
                  highlight=False)
    err.print(f"verdicts in {out_dir / 'runs'}, results {out_dir / 'results.json'}, "
              f"report {rep}")


def _baseline_runner() -> Any:
    """LLM-judge baselines on the endpoint configured by SAGE_TOD_LLM_* (docs/llm.md)."""
    from sage_tod.lab.baselines.runner import BASELINES, run_baseline
    from sage_tod.llm.config import LLMNotConfigured, config_from_options

    def run(name: str, spec: Any, records: Any) -> Any:
        if name not in BASELINES:
            raise InputError("--configs", f"unknown configuration {name!r}; SAGE configs: "
                             f"{', '.join(config_names())}; baselines: {', '.join(BASELINES)}")
        try:
            cfg = config_from_options({})
        except LLMNotConfigured as exc:
            raise InputError("--configs", f"baseline {name} needs an LLM endpoint: {exc}"
                             ) from None
        return run_baseline(name, spec, records, cfg)

    return run


def _count_lines(path: Path) -> int:
    """Lines of a file; a verdicts file's run header is not counted (it is no turn)."""
    if not path.exists():
        return 0
    from sage_tod.contracts.run_record import HEADER_PREFIX

    with path.open("rb") as fh:
        first = fh.readline()
        return (0 if not first or first.startswith(HEADER_PREFIX) else 1) + sum(1 for _ in fh)


@bench_app.command("diff")
def bench_diff_cmd(
    before: Annotated[Path, typer.Argument(help="verdicts file, or bench/run directory")],
    after: Annotated[Path, typer.Argument(help="the same, from the other run")],
    show: Annotated[int, typer.Option(help="changed turns listed per file")] = 5,
) -> None:
    """Compare two runs verdict by verdict (latency_ms ignored); exit 0 when identical,
    1 when any verdict differs."""
    from sage_tod.lab.verdict_diff import diff_runs

    diffs = _guard(lambda: diff_runs(before, after))
    differ = [d for d in diffs if d.changed]
    for d in diffs:
        if d.header:
            out.print(f"{d.name}: run headers differ in " + "; ".join(d.header[:8])
                      + ("; ..." if len(d.header) > 8 else ""), markup=False,
                      highlight=False)
    for d in differ:
        out.print(f"{d.name}: {len(d.changed)} of {d.turns} turns differ, "
                  f"{d.redecided} in a decision, {d.relabelled} in the label",
                  markup=False, highlight=False)
        for c in d.changed[:max(0, show)]:
            what = (f"{c.before} -> {c.after}" if c.before != c.after
                    else f"{c.before}, differs in {c.field}"
                    + ("" if c.decided else " (wording/margins only)"))
            out.print(f"  {c.key}: {what}", markup=False, highlight=False)
    turns = sum(d.turns for d in diffs)
    changed = sum(len(d.changed) for d in diffs)
    out.print(f"{len(diffs)} file(s), {turns} turns compared: "
              + ("identical" if not differ else
                 f"{changed} differ in {len(differ)} file(s), "
                 f"{sum(d.redecided for d in diffs)} in a decision, "
                 f"{sum(d.relabelled for d in diffs)} in the label"),
              markup=False, highlight=False)
    raise typer.Exit(1 if differ else 0)


bench_app.command("tool-agents")(tool_agents_bench_cmd)


@bench_app.command("report")
def bench_report_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="benchmark directory")] = Path(
        "bench-out"),
    slices_dir: Annotated[Path | None, typer.Option(help="built slices (default OUT/slices)")
                          ] = None,
) -> None:
    """Recompute results and re-render the tables and plots from the saved verdicts."""
    from sage_tod.lab.bench import write_results
    from sage_tod.lab.bench_report import write_report

    sdir = slices_dir or out_dir / "slices"
    if not (out_dir / "runs").is_dir():
        err.print(f"[bold red]error:[/] no runs in {out_dir}; run `sage-tod bench` first")
        raise typer.Exit(2)
    res = write_results(out_dir, sdir)
    rep = write_report(res, out_dir, sdir)
    out.print(f"wrote {rep / 'tables.md'} and plots in {rep}")


@specs_app.command("validate")
def specs_validate(spec: Annotated[Path, typer.Argument(help="spec file")]) -> None:
    """Validate a spec file and list its workflows."""
    bundle = _guard(lambda: load_spec(spec))
    for wf in bundle.workflows.values():
        order = wf.order_text() or "-"
        out.print(f"[bold]{wf.id}[/]: {len(wf.slots)} slots, {len(wf.required)} required; "
                  f"order {order}; outcome {wf.outcome_text}", highlight=False)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print the checks as JSON")] = False,
    no_load: Annotated[bool, typer.Option("--no-load", help="resolve and inspect only; do "
                                                            "not load the models")] = False,
) -> None:
    """Check this install: version, S2 model and runtimes, LLM endpoint, data, caches.

    Exit status 1 when the recommended configuration (core) cannot run here.
    """
    from sage_tod.outputs.doctor import render, run_checks

    rep = run_checks(load=not no_load)
    if as_json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        out.print(render(rep))
    if not rep.core_ok:
        raise typer.Exit(1)


@app.command("configs")
def configs() -> None:
    """List the named evaluator configurations."""
    for name in config_names():
        cfg = get_config(name)
        out.print(f"[bold]{name:6}[/] {'+'.join(cfg.stages):10} {cfg.help}")


install_guards(app)  # every command of every sub-app: one-line errors, never a traceback


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `sage-tod ... | head`
        sys.stderr.close()
    except InputError as exc:  # any command: bad input or missing data is one line, exit 2
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
