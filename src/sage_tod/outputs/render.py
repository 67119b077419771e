"""Terminal rendering (rich) of verdicts, evidence traces and scores."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sage_tod.contracts.criteria import Span
from sage_tod.contracts.turns import ToolCall, Turn
from sage_tod.contracts.verdicts import Verdict, decided_by_counts
from sage_tod.outputs.scoring import CLASSES, ScoreReport
from sage_tod.outputs.tool_view import CallRef, call_ref, compact, resolve

VERDICT_STYLE = {"failure": "bold red", "acceptable": "green", "undecided": "yellow"}
DECISION_STYLE = {"true": "bold red", "false": "green", "abstain": "yellow"}


class Summary:
    """The summary table's numbers, accumulated one verdict at a time, so a run of any
    length is summarised without holding its verdicts (only one float per turn)."""

    def __init__(self) -> None:
        self.n = 0
        self.counts: Counter[str] = Counter()
        self.classes: Counter[str] = Counter()
        self.stages: Counter[str] = Counter()
        self.missing: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.cost = 0.0

    def add(self, v: Verdict) -> None:
        self.n += 1
        self.counts[v.verdict] += 1
        self.classes.update(str(c) for c in v.classes)
        self.stages.update(decided_by_counts([v]))
        self.missing.update(v.missing)
        self.latencies.append(v.latency_ms)
        self.cost += v.cost_usd

    def table(self, title: str = "Summary") -> Table:
        """Verdict counts, fired classes, which stage decided the criteria, and any
        configured stage that did not run."""
        counts, classes, stages = self.counts, self.classes, self.stages
        n_crit = sum(stages.values())
        t = Table(title=title, show_header=True, header_style="bold")
        t.add_column("what")
        t.add_column("count", justify="right")
        t.add_column("share", justify="right")
        n = self.n or 1
        for label in ("failure", "acceptable", "undecided"):
            t.add_row(Text(label, style=VERDICT_STYLE[label]), str(counts[label]),
                      f"{counts[label] / n:.0%}")
        for cls in CLASSES:
            if classes[cls]:
                t.add_row(f"  fired {cls}", str(classes[cls]), "")
        for stage in sorted(stages):
            t.add_row(f"criteria decided by {stage}" if stage != "abstained"
                      else "criteria abstained", str(stages[stage]),
                      f"{stages[stage] / (n_crit or 1):.0%}")
        for stage in sorted(self.missing):
            t.add_row(Text(f"{stage} configured but not run", style="yellow"),
                      f"{self.missing[stage]} turns", "")
        lat = sorted(self.latencies)
        if lat:
            t.add_row("p50 latency per turn", f"{lat[len(lat) // 2]:.2f} ms", "")
        t.add_row("cost", f"${self.cost:.4f}", "")
        return t


def summary_table(verdicts: Iterable[Verdict], title: str = "Summary") -> Table:
    """Verdict counts, fired classes and which stage decided the criteria."""
    acc = Summary()
    for v in verdicts:
        acc.add(v)
    return acc.table(title)


def verdict_table(verdicts: Sequence[Verdict], gold: dict[str, str] | None = None) -> Table:
    t = Table(show_header=True, header_style="bold")
    t.add_column("turn")
    t.add_column("workflow")
    t.add_column("verdict")
    t.add_column("classes")
    t.add_column("conf.", justify="right")
    t.add_column("criteria (T/F/?)", justify="right")
    if gold is not None:
        t.add_column("gold")
    for v in verdicts:
        dec = Counter(c.decision.value for c in v.criteria)
        row: list[RenderableType] = [
            v.key, v.workflow, Text(v.verdict, style=VERDICT_STYLE[v.verdict]),
            ",".join(str(c) for c in v.classes) or "-", f"{v.confidence:.2f}",
            f"{dec['true']}/{dec['false']}/{dec['abstain']}",
        ]
        if gold is not None:
            row.append(gold.get(v.key, "-"))
        t.add_row(*row)
    return t


def _utterance(turn: Turn | None, span: Span) -> str | None:
    if turn is None:
        return None
    if span.source == "user":
        return turn.user
    if span.source == "agent":
        return turn.agent
    hist = turn.history or ()
    if span.index is not None and 0 <= span.index < len(hist):
        entry = hist[span.index]
        return entry.user if span.source == "history.user" else entry.agent
    return None


RESULT_CHARS = 160  # a tool result in `explain` is cut here; the report shows it whole


def _tool_highlighted(span: Span, ref: CallRef, turn: Turn | None) -> Text:
    """A span into a call's arguments or result: the call, the path, and the value there
    (the span's characters highlighted inside a string value)."""
    out = Text(f"{ref.where()} [{span.start},{span.end}]: ", style="dim")
    got = resolve(turn, ref)
    if got is None:
        out.append(repr(span.text), style="bold underline")
        return out
    call, value = got
    out.append(f"{call.name} {ref.part}", style="cyan")
    out.append(f"{'.' + '.'.join(ref.path) if ref.path else ''} = ")
    if isinstance(value, str) and value[span.start:span.end] == span.text and span.text:
        out.append(value[: span.start])
        out.append(value[span.start:span.end], style="bold reverse")
        out.append(value[span.end:])
    elif isinstance(value, dict | list) and span.text.startswith("{") and not ref.path:
        # a record's facts the verifier picked (`{"cabin": ..., "insurance": ...}`, the
        # fields a rule read): they, not the record's first characters, say why
        out.append(span.text, style="bold reverse")
    else:
        out.append(compact(value, RESULT_CHARS), style="bold reverse")
    return out


def highlighted(span: Span, turn: Turn | None) -> Text:
    """The utterance with the evidence span highlighted, or the span alone."""
    ref = call_ref(span)
    if ref is not None:
        return _tool_highlighted(span, ref, turn)
    where = span.source if span.index is None else f"{span.source}[{span.index}]"
    text = _utterance(turn, span)
    out = Text(f"{where} [{span.start},{span.end}]: ", style="dim")
    if text is None or text[span.start:span.end] != span.text:
        out.append(repr(span.text), style="bold underline")
        return out
    out.append(text[: span.start])
    out.append(text[span.start:span.end], style="bold reverse")
    out.append(text[span.end:])
    return out


def call_lines(calls: Sequence[ToolCall], prefix: str) -> list[Text]:
    """One line per tool call: name, arguments and result as one-line JSON (the result
    cut at RESULT_CHARS), a refused call marked ERROR."""
    lines: list[Text] = []
    for c in calls:
        line = Text(f"{prefix}call ")
        line.append(c.name, style="bold cyan")
        line.append(f" {compact(c.arguments)}")
        if c.error:
            line.append("  ERROR ", style="bold red")
        line.append(" -> " if not c.error else "")
        line.append(compact(c.result, RESULT_CHARS), style="dim")
        lines.append(line)
    return lines


def _is_tool_turn(turn: Turn) -> bool:
    return turn.tool_calls is not None or any(h.tool_calls for h in turn.history or ())


def explain(v: Verdict, turn: Turn | None = None, *, only_fired: bool = False) -> Group:
    """The evidence trace of one verdict in readable form."""
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{v.key}", style="bold")
    head.append(f"  workflow {v.workflow}  ")
    head.append(v.verdict.upper(), style=VERDICT_STYLE[v.verdict])
    head.append(f"  confidence {v.confidence:.2f}  config {v.config} "
                f"({'+'.join(v.stages) or 'no stages'})")
    parts.append(head)
    if turn is not None:
        if _is_tool_turn(turn):  # a tool agent's evidence is in earlier calls' results
            for i, h in enumerate(turn.history or ()):
                parts.extend(call_lines(h.user_tool_calls, f"  h[{i}] user "))
                if h.user:
                    parts.append(Text(f"  h[{i}] user:  {h.user}", style="dim"))
                parts.extend(call_lines(h.tool_calls, f"  h[{i}] "))
                if h.agent:
                    parts.append(Text(f"  h[{i}] agent: {h.agent}", style="dim"))
        parts.extend(call_lines(turn.user_tool_calls, "  user "))
        parts.append(Text(f"  user:  {turn.user}"))
        parts.extend(call_lines(turn.tool_calls or (), "  "))
        parts.append(Text(f"  agent: {turn.agent}"))
        changes = []
        before, after = turn.before(), turn.after()
        for slot in sorted(set(before) | set(after)):
            if before.get(slot) != after.get(slot):
                changes.append(f"{slot}: {before.get(slot)!r} -> {after.get(slot)!r}")
        parts.append(Text("  state diff: " + ("; ".join(changes) or "(none)"), style="cyan"))
    if not v.criteria:
        parts.append(Text("  no criteria compiled for this turn", style="dim"))
    for c in v.criteria:
        if only_fired and c.decision.value != "true":
            continue
        line = Text("  ")
        line.append(f"[{c.failure_class!s}] ", style="bold")
        line.append(c.decision.value.upper(), style=DECISION_STYLE[c.decision.value])
        line.append(f" by {c.decided_by or 'no stage'} (margin {c.margin:.2f})  ")
        line.append(c.question, style="italic")
        parts.append(line)
        parts.append(Text(f"      why: {c.rationale}"))
        if c.evidence is not None:
            parts.append(Text("      evidence: ").append(highlighted(c.evidence, turn)))
        if c.support is not None:
            parts.append(Text("      support: ").append(highlighted(c.support, turn)))
        if len(c.trace) > 1:
            trail = " -> ".join(f"{s.stage}:{s.decision.value}" for s in c.trace)
            parts.append(Text(f"      trace: {trail}", style="dim"))
        if c.repair:
            parts.append(Text(f"      repair: {c.repair}", style="bold magenta"))
    return Group(*parts)


def score_table(r: ScoreReport, title: str = "Score (failure class)") -> Table:
    t = Table(title=title, show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("turns scored", str(r.n))
    t.add_row("precision", f"{r.full.precision:.3f}")
    t.add_row("recall", f"{r.full.recall:.3f}")
    t.add_row("F1 (undecided = acceptable)", f"{r.full.f1:.3f}")
    t.add_row("F1 on decided turns", f"{r.decided.f1:.3f}")
    t.add_row("coverage (decided turns)", f"{r.coverage:.1%}")
    t.add_row("undecided rate", f"{r.undecided_rate:.1%}")
    t.add_row("clean-turn false-positive rate", f"{r.clean_fp_rate:.1%}")
    for cls, (caught, total) in r.class_recall.items():
        if total:
            t.add_row(f"recall {cls}", f"{caught}/{total} = {caught / total:.2f}")
    return t
