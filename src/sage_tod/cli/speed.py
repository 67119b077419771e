"""`sage-tod bench-speed`: turns/s and peak RSS per stage for a turns file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sage_tod.contracts.errors import InputError
from sage_tod.outputs.console import err, out


def bench_speed(
    turns: Annotated[Path, typer.Argument(help="turns file (JSONL or Parquet)")],
    spec: Annotated[Path, typer.Option(help="workflow spec (YAML or JSON)")],
    stages: Annotated[str, typer.Option(help="comma-separated: s1 (rules only), cold "
                                             "(S1+S2, empty score cache), warm (S1+S2, "
                                             "the cache cold filled)")] = "s1,cold,warm",
    repeats: Annotated[int, typer.Option(help="runs per stage; medians are shown")] = 1,
    threads: Annotated[int | None, typer.Option(
        help="model threads (default $SAGE_TOD_THREADS, else the cores given)")] = None,
    batch_size: Annotated[int, typer.Option(help="turns per cascade batch")] = 256,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Measure each stage in a fresh process; print turns/s, load time and peak RSS."""
    from sage_tod.lab.speed import STAGES, machine_note, measure

    names = tuple(s.strip() for s in stages.split(",") if s.strip())
    bad = [s for s in names if s not in STAGES]
    if bad or not names:
        err.print(f"[bold red]error:[/] --stages: unknown {bad or names}; "
                  f"use {', '.join(STAGES)}", highlight=False)
        raise typer.Exit(2)
    for p in (turns, spec):
        if not p.is_file():
            err.print(f"[bold red]error:[/] {p}: file not found", highlight=False)
            raise typer.Exit(2)
    note = machine_note()
    try:
        res = measure(spec, turns, stages=names, repeats=repeats, threads=threads,
                      batch_size=batch_size)
    except InputError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps({"machine": note, "stages": [r.to_dict() for r in res]}, indent=2))
        return
    table = Table(title=f"{turns.name}: {res[0].turns} turns; {note}")
    for col in ("stage", "config", "turns/s", "eval s", "eval CPU s", "model load s",
                "read s", "peak RSS MB", "runs"):
        table.add_column(col, justify="left" if col in ("stage", "config") else "right")
    for r in res:
        table.add_row(r.stage, r.config, f"{r.turns_per_s:,.0f}", f"{r.eval_s:.2f}",
                      f"{r.cpu_s:.2f}", f"{r.load_s:.2f}", f"{r.read_s:.2f}",
                      f"{r.peak_rss_mb:,.0f}", str(r.runs))
    out.print(table)


def register(app: typer.Typer) -> None:
    """Add `sage-tod bench-speed` to the command line."""
    app.command("bench-speed")(bench_speed)
