"""Assertions for a team's own test suite: `assert_turns_pass(spec, turns)`.

Kept free of pytest imports so it also works under unittest or in a script;
the pytest plugin (`sage_tod.outputs.pytest_plugin`) exposes it as a fixture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import Turn, TurnRecord, load_turns
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.evaluation.run import RunSettings, evaluate_records, make_evaluator

TurnsInput = str | Path | Iterable[Turn | TurnRecord | Mapping[str, Any]]


class TurnsFailedError(AssertionError):
    """Raised with a compact, readable list of the failing turns."""

    def __init__(self, message: str, verdicts: list[Verdict]) -> None:
        super().__init__(message)
        self.verdicts = verdicts


def _span_text(c: CriterionVerdict) -> str:
    ev = c.evidence or c.support
    if ev is None:
        return ""
    where = ev.source if ev.index is None else f"{ev.source}[{ev.index}]"
    return f' evidence {where}[{ev.start}:{ev.end}] "{ev.text}"'


def format_failures(bad: list[Verdict], total: int, config: str) -> str:
    """One header line, then per failing turn its fired (or abstained) criteria."""
    lines = [f"{len(bad)} of {total} turn(s) did not pass sage-tod checks (config {config}):"]
    for v in bad:
        lines.append(f"  {v.key} [{v.workflow}] {v.verdict.upper()}")
        wanted = "true" if v.verdict == "failure" else "abstain"
        for c in v.criteria:
            if c.decision.value != wanted:
                continue
            lines.append(f"    {c.failure_class!s:<3} {c.rationale}")
            detail = _span_text(c)
            if c.repair:
                detail += f" -> repair: {c.repair}"
            if detail:
                lines.append(f"       {detail.strip()}")
    return "\n".join(lines)


class StageMissingError(AssertionError):
    """A configured stage could not run, so "undecided passes" would pass unchecked turns."""


def assert_turns_pass(spec: SpecBundle | str | Path, turns: TurnsInput, *,
                      allow_undecided: bool = True, config: str = "core",
                      evaluator: Evaluator | None = None,
                      allow_missing_stages: bool = False) -> list[Verdict]:
    """Evaluate `turns` and fail with the evidence if any turn is a failure.

    `turns` is a JSONL path or turn objects/dicts (dicts need `history` when
    they are not first turns). Undecided turns pass unless `allow_undecided`
    is False. Returns the verdicts so a test can assert more.

    It fails loudly, rather than passing quietly, when there is nothing to
    check (no turns) and when a configured stage could not run (no S2 model,
    no S3 endpoint) while undecided turns are allowed: the turns that stage
    would have failed would otherwise pass. `allow_missing_stages=True`
    accepts that knowingly.
    """
    __tracebackhide__ = True  # pytest shows the message, not this function's source
    bundle = spec if isinstance(spec, SpecBundle) else load_spec(spec)
    settings = RunSettings(config=evaluator.config if evaluator is not None else config)
    ev = evaluator or make_evaluator(bundle, settings)  # the CLI's one evaluation path
    if ev.missing_stages and allow_undecided and not allow_missing_stages:
        why = "; ".join(f"{k}: {v}" for k, v in sorted(ev.missing_stages.items()))
        raise StageMissingError(
            f"config {ev.config} includes {', '.join(sorted(ev.missing_stages))}, which "
            f"cannot run here ({why}); with allow_undecided=True the turns it would fail "
            "would pass unchecked. Make the stage available, choose a config without it, or "
            "pass allow_missing_stages=True.")
    items: Iterable[Turn | TurnRecord | Mapping[str, Any]]
    items = load_turns(turns, bundle).records if isinstance(turns, str | Path) else turns
    verdicts = list(evaluate_records(ev, items, settings))
    if not verdicts:
        raise AssertionError("no turns to check: assert_turns_pass was given an empty list")
    bad = [v for v in verdicts
           if v.verdict == "failure" or (v.verdict == "undecided" and not allow_undecided)]
    if bad:
        raise TurnsFailedError(format_failures(bad, len(verdicts), ev.config), verdicts)
    return verdicts
