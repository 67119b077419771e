"""`sage-tod llm ...`: the local model server, endpoint check, baselines and router runs.

The main CLI mounts `llm_app` under `llm`. Nothing here prints or writes the
API key: `ping` shows the variable's name and whether it is set.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sage_tod.llm.config import LLMNotConfigured, config_from_options
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import open_lines

llm_app = typer.Typer(no_args_is_help=True, add_completion=False,
                      help="LLM endpoints (S3, LLM-judge baselines, router); docs/llm.md.")

OptionsArg = Annotated[list[str] | None, typer.Option(
    "--option", "-o", help="KEY=VALUE LLM/baseline option (e.g. llm_model=gpt-4.1); "
    "repeatable; env SAGE_TOD_LLM_* otherwise")]


def _options(pairs: list[str] | None) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for p in pairs or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            err.print(f"[bold red]error:[/] --option expects KEY=VALUE, got {p!r}")
            raise typer.Exit(2)
        opts[key.strip()] = value
    return opts


def _fail(msg: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(msg)}", highlight=False)
    return typer.Exit(2)


@llm_app.command("serve-local")
def serve_local(
    model: Annotated[str, typer.Option(help="smollm2 | qwen | path to a .gguf")] = "smollm2",
    port: Annotated[int, typer.Option(help="loopback port")] = 8080,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all)")] = None,
    ctx: Annotated[int, typer.Option(help="context window in tokens")] = 2048,
) -> None:
    """Serve a GGUF model with llama.cpp's OpenAI-compatible server on 127.0.0.1 (foreground)."""
    from sage_tod.lab.local_llm import LocalModelUnavailable, LocalServer

    server = LocalServer(model=model, port=port, n_ctx=ctx, threads=threads)
    try:
        server.start()
    except LocalModelUnavailable as exc:
        raise _fail(str(exc)) from None
    out.print(f"serving {server.gguf} as model [bold]{server.alias}[/] on {server.base_url}\n"
              f"  export SAGE_TOD_LLM_BASE_URL={server.base_url}\n"
              f"  export SAGE_TOD_LLM_MODEL={server.alias}\n"
              "(a small local model: it exercises S3 and the baselines offline; it is not "
              "GPT-4.1). Ctrl-C stops.", highlight=False)
    # SIGTERM (and SIGINT, which background jobs ignore) must unwind to `finally`,
    # or the llama.cpp child would outlive this command
    old_term = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)


@llm_app.command()
def ping(options: OptionsArg = None,
         prompt: Annotated[str, typer.Option(help="what to send")] = "Reply with: true") -> None:
    """Send one short chat to the configured endpoint; show the answer, usage and cost."""
    from sage_tod.llm.client import ChatRequest, LLMClient

    try:
        cfg = config_from_options(_options(options))
    except LLMNotConfigured as exc:
        raise _fail(str(exc)) from None
    with LLMClient(cfg, use_cache=False) as client:
        res = client.chat(ChatRequest.of(None, prompt, max_tokens=16))
    out.print_json(json.dumps({"config": cfg.describe(), "ok": res.ok, "answer": res.text,
                               "error": res.error, "prompt_tokens": res.prompt_tokens,
                               "completion_tokens": res.completion_tokens,
                               "cost_usd": res.cost_usd, "latency_ms": res.latency_ms}))
    if not res.ok:
        raise typer.Exit(1)


@llm_app.command()
def baseline(
    name: Annotated[str, typer.Argument(help="geval_st|geval_tr|frugal_st|frugal_tr|"
                                             "single_st|single_tr")],
    spec: Annotated[Path, typer.Option(help="workflow spec")],
    turns: Annotated[Path, typer.Option(help="turns JSONL")],
    output: Annotated[Path, typer.Option("--out", help="verdicts JSONL to write")],
    trace: Annotated[Path | None, typer.Option(help="also write per-turn scores/reasons")]
    = None,
    options: OptionsArg = None,
    overwrite: Annotated[bool, typer.Option(help="replace existing --out/--trace files")
                         ] = False,
) -> None:
    """Run an LLM-judge baseline; one verdict per turn, like `sage-tod evaluate`."""
    from sage_tod.contracts.errors import InputError
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.lab.baselines.runner import BASELINES, iter_judgements

    if name not in BASELINES:
        raise _fail(f"unknown baseline {name!r}; available: {', '.join(BASELINES)}")
    opts = _options(options)
    from sage_tod.contracts.run_record import RunHeader
    from sage_tod.outputs.sink import VerdictSink, file_sha256

    try:
        bundle = load_spec(spec)
        recs = load_turns(turns, bundle).records
        llm = config_from_options(opts)
    except (InputError, LLMNotConfigured) as exc:
        raise _fail(str(exc)) from None
    described = llm.describe()  # the key's variable name, never the key
    header = RunHeader(config=name, stages=[], inputs={
        "spec_sha256": file_sha256(spec), "turns_sha256": file_sha256(turns),
        "format": None, "route": "oracle"},
        fingerprints={"baseline": {"name": name, **{k: described.get(k) for k in (
            "base_url", "model", "temperature", "azure_deployment") if k in described}}})
    counts: dict[str, int] = {}
    cost = 0.0
    # both outputs are checked (and locked) before the first paid call
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(VerdictSink(output, header, resume=False,
                                             overwrite=overwrite, flag="--overwrite"))
        tfh = (stack.enter_context(open_lines(trace, overwrite=overwrite))
               if trace is not None else None)
        for j in iter_judgements(name, bundle, recs, opts):
            fh.write(j.verdict)
            if tfh is not None:
                tfh.write_line(json.dumps(j.to_dict(), ensure_ascii=False))
            counts[j.verdict.verdict] = counts.get(j.verdict.verdict, 0) + 1
            cost += j.verdict.cost_usd
    out.print(f"{name}: {sum(counts.values())} turns {counts}; cost ${cost:.4f} -> {output}",
              highlight=False)


@llm_app.command("calibrate-geval")
def calibrate_geval(
    trace: Annotated[Path, typer.Option(help="trace JSONL of a geval run on the dev split")],
    turns: Annotated[Path, typer.Option(help="the dev turns JSONL (with gold)")],
) -> None:
    """The G-Eval threshold that maximises failure-F1 on the dev split (option geval_threshold)."""
    from sage_tod.contracts.turns import read_gold_labels
    from sage_tod.lab.baselines.runner import calibrate_threshold

    gold = {k: g for k, g in read_gold_labels(turns)}
    means: list[float | None] = []
    labels: list[bool] = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        g = gold.get(row["key"])
        if g is None:
            continue
        means.append(row.get("mean_score"))
        labels.append(g.label == "failure")
    t = calibrate_threshold(means, labels)
    out.print(f"geval_threshold={t}  ({len(labels)} dev turns with gold)")


def _sgd_service_descriptions(schema: Path) -> Mapping[str, str]:
    data = json.loads(schema.read_text(encoding="utf-8"))
    return {s["service_name"]: s.get("description", "") for s in data}


@llm_app.command("route-eval")
def route_eval(
    spec: Annotated[Path, typer.Option(help="workflow spec")],
    turns: Annotated[Path, typer.Option(help="turns JSONL (their `workflow` is the gold)")],
    method: Annotated[str, typer.Option(help="mpnet | llm")] = "mpnet",
    encoder: Annotated[str | None, typer.Option(help="encoder path or hub id")] = None,
    sgd_schema: Annotated[Path | None, typer.Option(
        help="SGD schema.json: add service descriptions to the candidates")] = None,
    exchanges: Annotated[int | None, typer.Option(
        help="prefix window in exchanges (default: whole prefix)")] = None,
    options: OptionsArg = None,
) -> None:
    """Top-1 and top-8 routing accuracy against the turns' own workflow ids."""
    from sage_tod.contracts.errors import InputError
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import load_turns
    from sage_tod.routing.router import EncoderUnavailable, SentenceTransformerEncoder, accuracy
    from sage_tod.routing.router import route_detailed as run_route

    try:
        bundle = load_spec(spec)
        recs = load_turns(turns, bundle).records
        enc = SentenceTransformerEncoder(encoder)
        descs = _sgd_service_descriptions(sgd_schema) if sgd_schema else None
        routes = run_route(bundle, recs, method, encoder=enc, client_config=_options(options),
                           exchanges=exchanges, service_descriptions=descs)
    except (InputError, EncoderUnavailable, LLMNotConfigured, ValueError) as exc:
        raise _fail(str(exc)) from None
    acc = accuracy(routes, [r.turn.workflow for r in recs])
    cost = sum(r.cost_usd for r in routes)
    fallbacks = sum(1 for r in routes if r.reason)
    out.print_json(json.dumps({"method": method, **acc, "cost_usd": round(cost, 6),
                               "fallbacks": fallbacks}))
