"""`sage-tod slices tool-agents` and `sage-tod bench tool-agents` (docs/benchmarks.md).

The first builds the tool-agent development slices (per-turn labels from the
gold actions of τ/τ²-bench trajectories); the second scores the verdicts of
`sage-tod evaluate` on them. Bad input ends in one line on stderr, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from sage_tod.contracts.errors import InputError
from sage_tod.outputs.console import err, out


def _fail(msg: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {msg}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def _domain_specs(specs: list[str]) -> dict[str, Path]:
    from sage_tod.lab.tool_agents import DOMAINS

    outd: dict[str, Path] = {}
    for s in specs:
        dom, sep, path = s.partition("=")
        if not sep or dom not in DOMAINS or not path:
            raise InputError("--spec", f"expected DOMAIN=PATH with DOMAIN one of "
                             f"{', '.join(DOMAINS)}, got {s!r}")
        outd[dom] = Path(path)
    return outd


def slices_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="directory to write the slices to")],
    spec: Annotated[list[str], typer.Option(
        "--spec", help="DOMAIN=PATH, the spec to import that domain's files with "
                       "(airline, retail; telecom optional); repeat per domain")],
    data: Annotated[Path | None, typer.Option(
        help="the tool-agents data directory (default: $SAGE_TOD_DATA/tool-agents)")] = None,
) -> None:
    """Tool-agent slices: every trajectory turn labelled failure / clean / unlabelled from
    the task's gold actions (τ²-bench's matching rule), plus manifest.json."""
    from sage_tod.contracts.spec import load_spec
    from sage_tod.lab.datasets.paths import data_root
    from sage_tod.lab.tool_agents import build_tool_agents

    try:
        root = data if data is not None else data_root() / "tool-agents"
        specs = {d: (p, load_spec(p)) for d, p in _domain_specs(spec).items()}
        manifest = build_tool_agents(root, out_dir, specs)
    except (InputError, ValueError) as exc:
        raise _fail(str(exc)) from None
    for name, e in manifest["files"].items():
        lab = e["labels"]
        where = e.get("turns_file") or e.get("skipped")
        out.print(f"{name}: {e['turns']} turns, {lab['failure']} failure, {lab['clean']} clean, "
                  f"{lab['unlabelled']} unlabelled -> {where}", highlight=False,
                  markup=False, soft_wrap=True)
    out.print(f"wrote the slices and manifest.json to {out_dir}", highlight=False)


def bench_cmd(
    slices: Annotated[Path, typer.Option(help="slices built by `sage-tod slices tool-agents`")],
    verdicts: Annotated[Path, typer.Option(
        help="directory of verdicts, <file-stem>.jsonl per <file-stem>.turns.jsonl")],
    audit: Annotated[Path | None, typer.Option(
        help="label audit JSONL (default: the one shipped in sage_tod/lab/data)")] = None,
    conversation_audit: Annotated[Path | None, typer.Option(
        help="blind conversation audit JSONL (default: the one shipped in "
             "sage_tod/lab/data)")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the scores as JSON")
                        ] = None,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples (of tasks)")] = 10_000,
) -> None:
    """Score verdicts on the tool-agent slices: P/R/F1 on labelled turns, clean-turn flag
    rate, conversation AUCs, per file, domain and overall, and on the audited subset."""
    from sage_tod.lab.tool_agents_score import (
        AUDIT_FILE,
        CONVERSATION_AUDIT_FILE,
        load_scored,
        markdown,
        read_audit,
        read_conversation_audit,
        score_tool_agents,
    )

    try:
        turns = load_scored(slices, verdicts)
        apath = audit if audit is not None else AUDIT_FILE
        rows = read_audit(apath) if apath.exists() else []
        cpath = conversation_audit if conversation_audit is not None \
            else CONVERSATION_AUDIT_FILE
        convs = read_conversation_audit(cpath) if cpath.exists() else []
        res = score_tool_agents(turns, rows, n_boot=n_boot, conversations=convs)
    except (InputError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    if json_out is not None:
        json_out.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    out.print(markdown(res), markup=False, highlight=False, soft_wrap=True)
