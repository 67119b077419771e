"""`sage-tod gate`: pass or fail a CI job on a verdicts file, and write the PR summary.

Exit status: 0 every threshold met, 1 a threshold failed, 2 bad input (a
missing or malformed file, an unknown class name, a limit out of range).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.turns import Gold, Turn, load_turns_unchecked
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.integrations.gate import GateResult, Thresholds, markdown_summary, run_gate
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import check_target, write_atomic
from sage_tod.outputs.scoring import CLASSES

EXIT_PASS, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


def known_classes() -> list[str]:
    """The built-in classes, then every registered criterion class (plugins included)."""
    from sage_tod.compiler.kinds import CRITERIA

    return [*CLASSES, *sorted(set(CRITERIA.names()) - set(CLASSES))]


def parse_class_limits(items: list[str], known: list[str] | None = None) -> dict[str, int]:
    """`["IUV=0", "PC=2"]` -> `{"IUV": 0, "PC": 2}`; a malformed item, or a class nobody
    registered (a typo would switch the check off), is an InputError naming the known ones.

    >>> parse_class_limits(["pc=2", "IUV=0"])
    {'PC': 2, 'IUV': 0}
    """
    known = known if known is not None else known_classes()
    limits: dict[str, int] = {}
    for item in items:
        name, sep, num = item.partition("=")
        if not sep or not num.strip().isdigit():
            raise InputError("--max-class", f"expected CLASS=N (e.g. PC=0), got {item!r}")
        name = name.strip()
        name = name.upper() if name.upper() in CLASSES else name
        if name not in known:
            raise InputError("--max-class", f"unknown class {name!r} in {item!r}; known "
                             f"classes: {', '.join(known)}")
        limits[name] = int(num)
    return limits


def _write_outputs(result: GateResult, summary: Path | None) -> None:
    """Step outputs for later steps of a GitHub Actions job ($GITHUB_OUTPUT)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    values = {"passed": str(result.passed).lower(), "turns": str(result.n),
              "failures": str(result.counts["failure"]),
              "failure-rate": f"{result.rate('failure'):.4f}",
              "undecided-rate": f"{result.rate('undecided'):.4f}",
              "conversation-failure-rate": f"{result.conversation_rate('failure'):.4f}",
              "regressions": str(len(result.regressions))}
    if summary is not None:
        values["summary"] = str(summary)
    with open(target, "a", encoding="utf-8") as fh:
        fh.writelines(f"{k}={v}\n" for k, v in values.items())


def _run(verdicts: Path, turns: Path | None, baseline: Path | None, thresholds: Thresholds,
         summary: Path | None, report_link: str | None, worst: int, title: str,
         as_json: bool, overwrite: bool = False) -> GateResult:
    if summary is not None:  # refuse before any work, as every sage-tod writer does
        check_target(summary, overwrite=overwrite)
    vs = read_verdicts(verdicts)
    if not vs:
        raise InputError(verdicts, "no verdicts in file")
    gold: list[tuple[str, Gold | None]] | None = None
    by_key: dict[str, Turn] = {}
    if turns is not None:
        records = load_turns_unchecked(turns)
        gold = [(r.turn.key, r.gold) for r in records]
        by_key = {r.turn.key: r.turn for r in records}
    base = read_verdicts(baseline) if baseline is not None else None
    result = run_gate(vs, thresholds, gold=gold, baseline=base)
    text = markdown_summary(result, turns=by_key, report_link=report_link, worst=worst,
                            title=title)
    if summary is not None:
        write_atomic(summary, text, overwrite=overwrite)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(text)
    _write_outputs(result, summary)
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        out.print(text, markup=False, highlight=False)
    return result


def gate(
    verdicts: Annotated[Path, typer.Argument(help="verdicts JSONL from `sage-tod evaluate`")],
    turns: Annotated[Path | None, typer.Option(
        help="turns JSONL: gold labels for --min-f1 and utterances for the summary")] = None,
    baseline: Annotated[Path | None, typer.Option(
        help="verdicts of the reference run (e.g. the target branch): turns acceptable "
             "there and failing now are regressions")] = None,
    max_failure_rate: Annotated[float | None, typer.Option(
        help="fail when more than this share of turns are failures (0-1)")] = None,
    max_conversation_failure_rate: Annotated[float | None, typer.Option(
        help="fail when more than this share of conversations fail (a conversation fails "
             "when any of its turns does; 0-1)")] = None,
    max_class: Annotated[list[str] | None, typer.Option(
        help="CLASS=N: fail when more than N turns fire CLASS (IUV, WNF, PC, UV); "
             "repeatable")] = None,
    max_undecided_rate: Annotated[float | None, typer.Option(
        help="fail when more than this share of turns are undecided (0-1)")] = None,
    min_f1: Annotated[float | None, typer.Option(
        help="fail when F1 of the failure class against gold is below this (needs --turns "
             "with gold; reported as skipped without labels)")] = None,
    max_regressions: Annotated[int | None, typer.Option(
        help="regressions allowed against --baseline (default 0)")] = None,
    summary: Annotated[Path | None, typer.Option(
        help="also write the Markdown summary here (for a PR comment)")] = None,
    report_link: Annotated[str | None, typer.Option(
        help="path or URL of the HTML report, linked from the summary")] = None,
    worst: Annotated[int, typer.Option(help="failing turns shown with evidence", min=0)] = 5,
    title: Annotated[str, typer.Option(help="summary heading")] = "sage-tod gate",
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    overwrite: Annotated[bool, typer.Option(
        help="replace an existing --summary file")] = False,
) -> None:
    """Gate a CI job on verdicts: exit 0 pass, 1 a threshold failed, 2 bad input.

    Writes the Markdown summary to $GITHUB_STEP_SUMMARY when set, to --summary
    when given, and the step outputs (passed, failure-rate, ...) to $GITHUB_OUTPUT.
    """
    try:
        thresholds = Thresholds(max_failure_rate=max_failure_rate,
                                max_class=parse_class_limits(max_class or []),
                                max_undecided_rate=max_undecided_rate, min_f1=min_f1,
                                max_regressions=max_regressions,
                                max_conversation_failure_rate=max_conversation_failure_rate)
        result = _run(verdicts, turns, baseline, thresholds, summary, report_link, worst,
                      title, as_json, overwrite)
    except InputError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    except OSError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_INPUT) from None
    if not result.passed:
        failed = [c.name for c in result.checks if c.status == "fail"]
        err.print(f"[bold red]gate failed:[/] {', '.join(failed)}", highlight=False)
        raise typer.Exit(EXIT_FAIL)
