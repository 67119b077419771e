"""`sage-tod conversations`: one verdict per conversation, from a verdicts file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sage_tod.contracts.conversations import (
    OUTCOME_ORDER,
    ConversationVerdict,
    conversation_verdicts,
)
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.turns import load_turns_unchecked
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import write_atomic

_STYLE = {"failure": "bold red", "undecided": "yellow", "acceptable": "green"}


def rewards_of(turns: Path) -> dict[str, float]:
    """dialogue id -> `meta.reward` of its first turn that has one (τ-bench imports)."""
    out: dict[str, float] = {}
    for rec in load_turns_unchecked(turns):
        r = (rec.meta or {}).get("reward")
        did = rec.turn.dialogue_id
        if did in out or r is None:
            continue
        if isinstance(r, bool) or not isinstance(r, int | float):
            raise InputError(turns, f"meta.reward must be a number, not {r!r}",
                             line=rec.line, field="meta.reward")
        out[did] = float(r)
    return out


def _crosstab(rows: list[ConversationVerdict]) -> Table:
    """Conversation verdict against the log's reward: how far the two agree."""
    t = Table(title="verdict by the log's reward")
    t.add_column("verdict")
    for col in ("reward 0 (failed)", "reward > 0", "no reward"):
        t.add_column(col, justify="right")
    for k in OUTCOME_ORDER:
        mine = [r for r in rows if r.verdict == k]
        t.add_row(f"[{_STYLE[k]}]{k}[/]", str(sum(r.reward == 0 for r in mine)),
                  str(sum(r.reward is not None and r.reward > 0 for r in mine)),
                  str(sum(r.reward is None for r in mine)))
    return t


def _table(rows: list[ConversationVerdict], total: int) -> Table:
    t = Table(title=f"Conversations ({len(rows)} of {total} shown)", show_lines=False)
    rewarded = any(r.reward is not None for r in rows)
    cols = ["dialogue", "verdict", *(["reward"] if rewarded else []), "failing turns",
            "undecided", "first failure"]
    for col in cols:
        t.add_column(col, overflow="fold")
    for r in rows:
        ff = r.first_failure
        first = "" if ff is None else f"turn {ff.turn_id}: {ff.criterion}"
        if ff is not None and ff.repair:
            first += f" — {ff.repair}"
        reward = ([] if not rewarded else
                  ["–" if r.reward is None else f"{r.reward:g}"])
        t.add_row(r.dialogue_id, f"[{_STYLE[r.verdict]}]{r.verdict}[/]", *reward,
                  ", ".join(map(str, r.failing_turns)) or "–",
                  str(len(r.undecided_turns)) if r.undecided_turns else "–", first)
    return t


def conversations_cmd(
    verdicts: Annotated[Path, typer.Argument(help="verdicts file from `sage-tod evaluate` "
                                                  "(JSONL or Parquet)")],
    out_path: Annotated[Path | None, typer.Option(
        "--out", help="write one JSON record per conversation (docs/formats.md §4)")] = None,
    turns: Annotated[Path | None, typer.Option(
        help="the turns file evaluated: its `meta.reward` (τ-bench imports) is shown "
             "beside each conversation and against the verdicts")] = None,
    only: Annotated[str | None, typer.Option(
        help="show only conversations with this verdict: failure, undecided or "
             "acceptable")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the records as JSONL")
                       ] = False,
) -> None:
    """One verdict per conversation: failure if a turn fails, else undecided if a turn is,
    else acceptable; failures first, with the first failing criterion and its repair."""
    if only is not None and only not in OUTCOME_ORDER:
        err.print(f"[bold red]error:[/] --only {only!r}: use failure, undecided or "
                  "acceptable", highlight=False)
        raise typer.Exit(2)
    vs = read_verdicts(verdicts)
    if not vs:  # a run header alone: nothing was evaluated, so nothing is acceptable
        raise InputError(verdicts, "no verdicts in file")
    rows = conversation_verdicts(vs, None if turns is None else rewards_of(turns))
    if out_path is not None:
        write_atomic(out_path, "".join(r.model_dump_json(exclude_none=True) + "\n"
                                       for r in rows), overwrite=overwrite)
    shown = [r for r in rows if only is None or r.verdict == only]
    if as_json:
        for r in shown:
            print(r.model_dump_json(exclude_none=True))
        return
    shown.sort(key=lambda r: (-OUTCOME_ORDER[r.verdict], -len(r.failing_turns)))
    out.print(_table(shown, len(rows)))
    if any(r.reward is not None for r in rows):
        out.print(_crosstab(rows))
    counts = {k: sum(r.verdict == k for r in rows) for k in OUTCOME_ORDER}
    out.print(f"{len(rows)} conversation(s): {counts['failure']} failure, "
              f"{counts['undecided']} undecided, {counts['acceptable']} acceptable"
              + (f"; wrote {out_path}" if out_path is not None else ""), highlight=False)


def register(app: typer.Typer) -> None:
    """Add `conversations` to the top-level app."""
    app.command("conversations")(conversations_cmd)

