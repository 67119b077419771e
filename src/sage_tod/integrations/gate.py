"""The CI gate: thresholds over a verdicts file, and a Markdown summary for the pull request.

A gate reads what `sage-tod evaluate` wrote (and optionally the turns, for gold
labels and utterances, and a baseline verdicts file from the target branch),
checks each threshold the team set, and says pass or fail with the reason.
Scores come from `sage_tod.outputs.scoring`, verdicts from `sage_tod.contracts.verdicts`: the
gate adds no second definition of F1 or of a failure.

>>> from sage_tod.integrations.gate import Thresholds
>>> Thresholds(max_failure_rate=0.1, max_class={"PC": 0}).describe()
['failure rate <= 10.0%', 'PC turns <= 0']
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sage_tod.contracts.conversations import conversation_verdicts
from sage_tod.contracts.criteria import Span, as_failure_class
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.turns import Gold, Turn
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict
from sage_tod.outputs.scoring import CLASSES, ScoreReport, score

CheckStatus = Literal["pass", "fail", "skipped"]


@dataclass(frozen=True)
class Thresholds:
    """What a run must meet; a limit left as None is not checked.

    `max_regressions` only applies with a baseline, where it defaults to 0:
    a turn that was acceptable on the target branch and fails now blocks the
    merge unless the team allows some.
    """

    max_failure_rate: float | None = None
    max_class: Mapping[str, int] = field(default_factory=dict)
    max_undecided_rate: float | None = None
    min_f1: float | None = None
    max_regressions: int | None = None
    # the share of conversations whose verdict is failure (contracts.conversations): the
    # unit τ-bench scores, for agents judged per conversation
    max_conversation_failure_rate: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_failure_rate", "max_undecided_rate", "min_f1",
                     "max_conversation_failure_rate"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise InputError(f"--{name.replace('_', '-')}",
                                 f"must be between 0 and 1, got {value}")
        for cls, n in self.max_class.items():
            try:  # a built-in class, or a plugin's class name
                as_failure_class(cls)
            except ValueError:
                raise InputError("--max-class", f"{cls!r} is not a class name; built-in "
                                 f"classes: {', '.join(CLASSES)}") from None
            if n < 0:
                raise InputError("--max-class", f"{cls}: a count must be >= 0, got {n}")
        if self.max_regressions is not None and self.max_regressions < 0:
            raise InputError("--max-regressions", f"must be >= 0, got {self.max_regressions}")

    def describe(self) -> list[str]:
        """The limits in words, in the order they are checked."""
        out: list[str] = []
        if self.max_failure_rate is not None:
            out.append(f"failure rate <= {self.max_failure_rate:.1%}")
        if self.max_conversation_failure_rate is not None:
            out.append("conversation failure rate <= "
                       f"{self.max_conversation_failure_rate:.1%}")
        out.extend(f"{c} turns <= {n}" for c, n in self.max_class.items())
        if self.max_undecided_rate is not None:
            out.append(f"undecided rate <= {self.max_undecided_rate:.1%}")
        if self.min_f1 is not None:
            out.append(f"F1 against gold >= {self.min_f1:.3f}")
        if self.max_regressions is not None:
            out.append(f"regressions <= {self.max_regressions}")
        return out


@dataclass(frozen=True)
class Check:
    """One threshold's outcome; `value`/`limit` are what the summary prints."""

    name: str
    status: CheckStatus
    value: str
    limit: str
    note: str = ""


@dataclass
class GateResult:
    """Everything the summary, the exit code and the step outputs are made from."""

    verdicts: list[Verdict]
    checks: list[Check]
    counts: Counter[str]
    class_counts: Counter[str]
    score: ScoreReport | None = None
    regressions: list[Verdict] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    baseline_missing: list[str] = field(default_factory=list)
    # conversation verdicts: failure / undecided / acceptable -> how many conversations
    conversations: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    @property
    def n(self) -> int:
        return len(self.verdicts)

    def rate(self, verdict: str) -> float:
        return self.counts[verdict] / self.n if self.n else 0.0

    def conversation_rate(self, verdict: str) -> float:
        n = sum(self.conversations.values())
        return self.conversations[verdict] / n if n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed, "turns": self.n,
            "counts": {k: self.counts[k] for k in ("failure", "acceptable", "undecided")},
            "failure_rate": self.rate("failure"), "undecided_rate": self.rate("undecided"),
            "conversations": {k: self.conversations[k]
                              for k in ("failure", "acceptable", "undecided")},
            "conversation_failure_rate": self.conversation_rate("failure"),
            "classes": {c: self.class_counts[c]
                        for c in [*CLASSES, *sorted(set(self.class_counts) - set(CLASSES))]},
            "checks": [{"name": c.name, "status": c.status, "value": c.value,
                        "limit": c.limit, "note": c.note} for c in self.checks],
            "score": None if self.score is None else self.score.to_dict(),
            "regressions": [v.key for v in self.regressions], "fixed": self.fixed,
            "baseline_missing": self.baseline_missing,
        }


def _limit_check(name: str, value: float, limit: float | None, *, upper: bool,
                 pct: bool) -> Check | None:
    if limit is None:
        return None
    ok = value <= limit if upper else value >= limit
    spec = ".1%" if pct else ".3f"
    return Check(name, "pass" if ok else "fail", format(value, spec),
                 f"{'<=' if upper else '>='} {format(limit, spec)}")


def run_gate(verdicts: Sequence[Verdict], thresholds: Thresholds, *,
             gold: Sequence[tuple[str, Gold | None]] | None = None,
             baseline: Sequence[Verdict] | None = None) -> GateResult:
    """Check `verdicts` against `thresholds`.

    `gold` is (turn key, label) as `sage_tod.contracts.turns.read_gold_labels` gives it;
    without any label the F1 check is reported as skipped, never as passed
    silently. `baseline` is the verdicts of the reference run (e.g. main).
    """
    if not verdicts:
        raise InputError("<verdicts>", "no verdicts to gate")
    vs = list(verdicts)
    counts: Counter[str] = Counter(v.verdict for v in vs)
    class_counts = Counter(str(c) for v in vs for c in v.classes)
    n = len(vs)
    checks: list[Check] = []
    convs: Counter[str] = Counter(c.verdict for c in conversation_verdicts(vs))
    for maybe in (_limit_check("failure rate", counts["failure"] / n,
                               thresholds.max_failure_rate, upper=True, pct=True),
                  _limit_check("conversation failure rate",
                               convs["failure"] / sum(convs.values()),
                               thresholds.max_conversation_failure_rate, upper=True,
                               pct=True)):
        if maybe:
            checks.append(maybe)
    for cls, limit in thresholds.max_class.items():
        got = class_counts[cls]
        checks.append(Check(f"{cls} turns", "pass" if got <= limit else "fail", str(got),
                            f"<= {limit}"))
    und = _limit_check("undecided rate", counts["undecided"] / n,
                       thresholds.max_undecided_rate, upper=True, pct=True)
    if und:
        checks.append(und)
    report: ScoreReport | None = None
    if gold is not None:
        report = score(gold, vs)
        if report.n == 0:
            report = None
    if thresholds.min_f1 is not None:
        if report is None:
            checks.append(Check("F1 against gold", "skipped", "-", f">= {thresholds.min_f1:.3f}",
                                "no gold labels (give --turns with `gold` fields)"))
        else:
            f1 = _limit_check("F1 against gold", report.full.f1, thresholds.min_f1,
                              upper=False, pct=False)
            assert f1 is not None
            note = (f"{len(report.missing_verdicts)} labelled turn(s) have no verdict"
                    if report.missing_verdicts else "")
            checks.append(Check(f1.name, f1.status, f1.value, f1.limit,
                                note or f"n={report.n}, undecided counted as acceptable"))
    result = GateResult(vs, checks, counts, class_counts, report, conversations=convs)
    if baseline is not None:
        before = {v.key: v.verdict for v in baseline}
        now = {v.key for v in vs}
        result.regressions = [v for v in vs
                              if v.verdict == "failure" and before.get(v.key) == "acceptable"]
        result.fixed = [v.key for v in vs
                        if v.verdict == "acceptable" and before.get(v.key) == "failure"]
        result.baseline_missing = [k for k in before if k not in now]
        limit = 0 if thresholds.max_regressions is None else thresholds.max_regressions
        got = len(result.regressions)
        checks.append(Check("regressions vs baseline", "pass" if got <= limit else "fail",
                            str(got), f"<= {limit}",
                            "acceptable in the baseline, failure now"))
    return result


# ---------------------------------------------------------------- Markdown summary

def _md(text: str, limit: int = 240) -> str:
    """One line of untrusted text made safe for a Markdown table cell or list item."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    for ch in ("\\", "|", "<", ">", "*", "_", "`", "[", "]"):
        text = text.replace(ch, "\\" + ch)
    return text


def _key(key: str) -> str:
    """A turn key (or any id) as a Markdown code span that stays one: ids come from the
    user's files and may hold backticks, newlines, `|` or markup. Whitespace runs become
    one space; the fence is one backtick longer than the longest run inside, padded by
    spaces, so a backtick can neither close it nor open another. (Keys are never put in
    table cells, where a `|` would split the cell even inside a code span.)"""
    text = " ".join(key.split())
    if len(text) > 120:
        text = text[:119] + "…"
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {text} {fence}" if run or text[:1] == " " else f"{fence}{text}{fence}"


def _span(span: Span) -> str:
    where = span.source if span.index is None else f"{span.source}[{span.index}]"
    return f'{where}[{span.start}:{span.end}] "{_md(span.text, 80)}"'


def _criterion_lines(c: CriterionVerdict) -> list[str]:
    lines = [f"  - **{c.failure_class!s}** ({c.decided_by or 'no stage'}): "
             f"{_md(c.rationale)}"]
    for label, span in (("evidence", c.evidence), ("support", c.support)):
        if span is not None:
            lines.append(f"    - {label}: {_span(span)}")
    if c.repair:
        lines.append(f"    - repair: {_md(c.repair)}")
    return lines


def worst_turns(result: GateResult, limit: int) -> list[Verdict]:
    """Regressions first, then the failures with the most fired criteria (surest first)."""
    regressed = {v.key for v in result.regressions}

    def fired(v: Verdict) -> int:
        return sum(c.decision.value == "true" for c in v.criteria)

    failures = [v for v in result.verdicts if v.verdict == "failure"]
    failures.sort(key=lambda v: (v.key not in regressed, -fired(v), -v.confidence))
    return failures[:limit]


def _listed(keys: Sequence[str], limit: int) -> str:
    """The first `limit` keys, escaped, and how many more there are."""
    shown = ", ".join(_key(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


_ICON = {"pass": "✅", "fail": "❌", "skipped": "⚪"}


def markdown_summary(result: GateResult, *, turns: Mapping[str, Turn] | None = None,
                     report_link: str | None = None, worst: int = 5,
                     title: str = "sage-tod gate") -> str:
    """The pull-request comment / step summary: verdict, checks, worst turns, report link."""
    turns = turns or {}
    head = "✅ passed" if result.passed else "❌ failed"
    configs = sorted({f"{_md(v.config, 60)} ({_md('+'.join(v.stages), 60) or 'no stages'})"
                      for v in result.verdicts})
    lines = [f"## {title}: {head}", "",
             f"{result.n} turns · config {', '.join(configs)}", "",
             "| verdict | turns | share |", "|---|---:|---:|"]
    for label in ("failure", "acceptable", "undecided"):
        lines.append(f"| {label} | {result.counts[label]} | {result.rate(label):.1%} |")
    n_conv = sum(result.conversations.values())
    if n_conv:
        lines += ["", f"{n_conv} conversation(s): " + ", ".join(
            f"{result.conversations[k]} {k} ({result.conversation_rate(k):.1%})"
            for k in ("failure", "undecided", "acceptable"))
            + " (a conversation fails when a turn does)"]
    fired = [c for c in CLASSES if result.class_counts[c]]
    fired += sorted(c for c in result.class_counts if c not in CLASSES)  # plugin classes
    if fired:
        lines += ["", "| fired class | turns |", "|---|---:|"]
        lines += [f"| {_md(c, 60)} | {result.class_counts[c]} |" for c in fired]
    if result.score is not None:
        s = result.score
        lines += ["", f"Against gold (n={s.n}, undecided counted as acceptable): "
                      f"precision {s.full.precision:.3f}, recall {s.full.recall:.3f}, "
                      f"F1 {s.full.f1:.3f}; F1 on decided turns {s.decided.f1:.3f}"]
    if result.checks:
        lines += ["", "### Checks", "", "| check | value | limit | result |",
                  "|---|---:|---:|---|"]
        for c in result.checks:
            note = f" ({_md(c.note)})" if c.note else ""
            lines.append(f"| {c.name} | {c.value} | {c.limit} | {_ICON[c.status]} "
                         f"{c.status}{note} |")
    else:
        lines += ["", "No thresholds set: this run reports only."]
    if result.regressions:
        lines += ["", f"### Regressions ({len(result.regressions)}): acceptable in the "
                      "baseline, failure now", ""]
        lines.append(_listed([v.key for v in result.regressions], 30))
    if result.fixed:
        lines += ["", f"Fixed since the baseline ({len(result.fixed)}): "
                  + _listed(result.fixed, 30)]
    chosen = worst_turns(result, worst)
    if chosen:
        lines += ["", f"### Worst turns ({len(chosen)} of {result.counts['failure']} "
                      "failures)", ""]
        regressed = {v.key for v in result.regressions}
        for v in chosen:
            tag = " · **regression**" if v.key in regressed else ""
            lines.append(f"- **{_key(v.key)}** {_md(v.workflow, 80)} · "
                         f"{', '.join(_md(str(c), 40) for c in v.classes)} · "
                         f"confidence {v.confidence:.2f}{tag}")
            t = turns.get(v.key)
            if t is not None:
                lines.append(f"  - user: {_md(t.user)}")
                lines.append(f"  - agent: {_md(t.agent)}")
            for crit in v.criteria:
                if crit.decision.value == "true":
                    lines.extend(_criterion_lines(crit))
    undecided = [v.key for v in result.verdicts if v.verdict == "undecided"]
    if undecided:
        lines += ["", f"Undecided ({len(undecided)}): {_listed(undecided, 20)}"]
    if report_link:
        lines += ["", f"Full report with evidence traces: [{_md(report_link, 120)}]"
                      f"({report_link.replace(' ', '%20').replace(')', '%29')})"]
    return "\n".join(lines) + "\n"
