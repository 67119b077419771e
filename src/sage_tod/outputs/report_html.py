"""A self-contained HTML report of a verdicts file (no network at view time).

Everything a user's dialogue contains is escaped on the server side with
`html_parts.escape`; the page's small script only shows, hides and filters rows.
So a turn that contains `<script>` renders as text.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sage_tod.contracts.conversations import conversation_verdicts
from sage_tod.contracts.criteria import Span
from sage_tod.contracts.turns import Gold, ToolCall, Turn
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict, decided_by_counts
from sage_tod.outputs.html_parts import PAGE_CSS, escape
from sage_tod.outputs.scoring import CLASSES, score
from sage_tod.outputs.tool_view import CallRef, call_ref, compact

_JS = """
(function(){
  const sel = id => document.getElementById(id);
  function apply(){
    const v = sel('f-verdict').value, c = sel('f-class').value, w = sel('f-workflow').value,
          k = sel('f-conversation').value, q = sel('f-search').value.toLowerCase();
    let shown = 0;
    document.querySelectorAll('tr.row').forEach(r => {
      const ok = (!v || r.dataset.verdict === v) &&
                 (!c || r.dataset.classes.split(' ').includes(c)) &&
                 (!w || r.dataset.workflow === w) &&
                 (!k || r.dataset.conversation === k) &&
                 (!q || r.dataset.search.includes(q));
      r.classList.toggle('hidden', !ok);
      const d = document.getElementById('d-' + r.dataset.idx);
      if (!ok) d.classList.add('hidden');
      if (ok) shown++;
    });
    sel('f-count').textContent = shown + ' turn(s)';
  }
  // an uncited tool call's body is kept once per page in a <template> (a long dialogue
  // repeats every earlier call in each later turn's history) and copied in on first open;
  // its text was escaped when the page was written, so this adds no markup of the data
  document.addEventListener('click', e => {
    const s = e.target.closest && e.target.closest('details.call > summary');
    const d = s && s.parentElement;
    if (d && d.dataset.tpl && !d.dataset.filled) {
      d.appendChild(document.getElementById(d.dataset.tpl).content.cloneNode(true));
      d.dataset.filled = '1';
    }
  }, true);
  ['f-verdict','f-class','f-workflow','f-conversation'].forEach(
    id => sel(id).addEventListener('change', apply));
  sel('f-search').addEventListener('input', apply);
  document.querySelectorAll('tr.row').forEach(r => r.addEventListener('click', () => {
    document.getElementById('d-' + r.dataset.idx).classList.toggle('hidden');
  }));
  apply();
})();
"""


def _marked(text: str, spans: Sequence[tuple[Span, str]]) -> str:
    """`text` escaped, with each span wrapped in <mark class=...> (spans may not overlap)."""
    good = sorted(((s, cls) for s, cls in spans
                   if 0 <= s.start <= s.end <= len(text) and text[s.start:s.end] == s.text),
                  key=lambda x: x[0].start)
    out, pos = [], 0
    for s, cls in good:
        if s.start < pos:
            continue
        out.append(escape(text[pos:s.start]))
        out.append(f'<mark class="{cls}">{escape(text[s.start:s.end])}</mark>')
        pos = s.end
    out.append(escape(text[pos:]))
    return "".join(out)


def _spans_for(v: Verdict, source: str, index: int | None) -> list[tuple[Span, str]]:
    found: list[tuple[Span, str]] = []
    for c in v.criteria:
        for span, cls in ((c.evidence, "ev"), (c.support, "sup")):
            if span is not None and span.source == source and span.index == index:
                found.append((span, cls))
    return found


Marks = dict[tuple[str, ...], list[tuple[Any, str]]]


def _call_marks(v: Verdict, index: int | None) -> dict[tuple[int, str], Marks]:
    """(call position, "tool_call"/"tool_result") -> {path: [(span, css class)]} for the
    spans of `v` into the calls of history entry `index` (None: the turn's own calls)."""
    out: dict[tuple[int, str], Marks] = {}
    for c in v.criteria:
        for span, cls in ((c.evidence, "ev"), (c.support, "sup")):
            ref: CallRef | None = call_ref(span) if span is not None else None
            if ref is None or ref.index != index or ref.call is None:
                continue
            out.setdefault((ref.call, ref.source), {}).setdefault(ref.path, []).append(
                (span, cls))
    return out


def _leaf_html(value: Any, marks: list[tuple[Any, str]]) -> str:
    """A JSON scalar, with a cited part marked: the span's characters inside a string
    when they are there, else the whole value."""
    text = json.dumps(value, ensure_ascii=False)
    if not marks:
        return escape(text)
    span, cls = marks[0]
    if isinstance(value, str):
        st, en, sub = getattr(span, "start", None), getattr(span, "end", None), \
            getattr(span, "text", "")
        if isinstance(st, int) and isinstance(en, int) and sub and value[st:en] == sub \
                and (st, en) != (0, len(value)):
            inner = (escape(json.dumps(value[:st], ensure_ascii=False)[1:-1])
                     + f'<mark class="{cls}">{escape(json.dumps(sub, ensure_ascii=False)[1:-1])}'
                     "</mark>" + escape(json.dumps(value[en:], ensure_ascii=False)[1:-1]))
            return f'"{inner}"'
    return f'<mark class="{cls}">{escape(text)}</mark>'


def _json_html(value: Any, marks: Marks, path: tuple[str, ...] = (), depth: int = 0) -> str:
    """`value` pretty-printed as JSON (2-space indent), escaped, with the values at the
    cited paths wrapped in <mark>."""
    here = marks.get(path, [])
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict) and value:
        body = ",\n".join(f"{inner}{escape(json.dumps(str(k), ensure_ascii=False))}: "
                          f"{_json_html(x, marks, (*path, str(k)), depth + 1)}"
                          for k, x in value.items())
        text = "{\n" + body + "\n" + pad + "}"
    elif isinstance(value, list) and value:
        body = ",\n".join(f"{inner}{_json_html(x, marks, (*path, str(i)), depth + 1)}"
                          for i, x in enumerate(value))
        text = "[\n" + body + "\n" + pad + "]"
    else:
        return _leaf_html(value, here)
    return f'<mark class="{here[0][1]}">{text}</mark>' if here else text


def _value_html(value: Any, marks: Marks) -> str:
    """A call's arguments or result: JSON pretty-printed; a text result as text."""
    if isinstance(value, str):
        spans = [(s, cls) for s, cls in marks.get((), []) if isinstance(s, Span)]
        return _marked(value, spans) if spans else escape(value)
    return _json_html(value, marks)


def _call_html(c: ToolCall, pos: int, marks: Mapping[tuple[int, str], Marks],
               templates: dict[str, str]) -> str:
    """One call: a collapsible block (open when a span cites it) with the name, the
    arguments in brief, an error badge, then the arguments and the result in full.

    The body of a call no span cites goes into `templates` (once per distinct call) and
    the block points to it: the page stays linear in the calls, not quadratic."""
    arg_marks, res_marks = marks.get((pos, "tool_call"), {}), marks.get((pos, "tool_result"),
                                                                         {})
    cited = bool(arg_marks or res_marks)
    head = (f'<summary><span class="who">call</span><code class="name">{escape(c.name)}</code>'
            f' <span class="argsum">{escape(compact(c.arguments, 110))}</span>'
            + ('<span class="badge err">error</span>' if c.error else "")
            + ('<span class="badge cited">cited</span>' if cited else "")
            + (f' <span class="muted">{escape(c.id)}</span>' if c.id else "") + "</summary>")
    res_label = "error" if c.error else "result"
    body = (f'<div class="muted" style="margin-left:8px">arguments</div>'
            f'<pre class="args">{_value_html(c.arguments, arg_marks)}</pre>'
            f'<div class="muted" style="margin-left:8px">{res_label}</div>'
            f'<pre class="result">{_value_html(c.result, res_marks)}</pre>')
    cls = "call err" if c.error else "call"
    attrs = f'class="{cls}" data-tool="{escape(c.name)}" data-call="{pos}"'
    if cited:
        return f"<details {attrs} open>{head}{body}</details>"
    key = "tpl-" + hashlib.sha256(json.dumps(
        [c.name, c.arguments, c.result, c.error], sort_keys=True, ensure_ascii=False,
        default=str).encode()).hexdigest()[:20]
    templates.setdefault(key, body)
    return f'<details {attrs} data-tpl="{key}">{head}</details>'


def _calls_html(v: Verdict, calls: Sequence[ToolCall], index: int | None,
                templates: dict[str, str]) -> str:
    marks = _call_marks(v, index)
    return "".join(_call_html(c, i, marks, templates) for i, c in enumerate(calls))


def _user_calls_html(calls: Sequence[ToolCall], templates: dict[str, str]) -> str:
    """The user's own tool calls (a dual-control log): shown before the words they led
    to, labelled as the user's; no verdict span points into them."""
    if not calls:
        return ""
    body = "".join(_call_html(c, i, {}, templates) for i, c in enumerate(calls))
    return (f'<div class="calls-label">the user\'s {len(calls)} tool call(s)</div>'
            f'<div class="user-calls">{body}</div>')


def _criterion_html(c: CriterionVerdict) -> str:
    parts = [f'<div class="crit {c.decision.value}">',
             f"<b>{escape(str(c.failure_class))}</b> &middot; "
             f'<span class="{ "failure" if c.decision.value == "true" else "" }">'
             f"{escape(c.decision.value.upper())}</span> by {escape(c.decided_by or 'no stage')} "
             f"(margin {c.margin:.2f})<br>",
             f"<i>{escape(c.question)}</i><br>",
             f'<span class="muted">why:</span> {escape(c.rationale)}']
    for label, span in (("evidence", c.evidence), ("support", c.support)):
        if span is not None:
            ref = call_ref(span)
            where = ref.where() if ref is not None else (
                span.source if span.index is None else f"{span.source}[{span.index}]")
            cls = "ev" if label == "evidence" else "sup"
            parts.append(f'<br><span class="muted">{label}:</span> {escape(where)} '
                         f'[{span.start},{span.end}] '
                         f'<mark class="{cls}">{escape(span.text)}</mark>')
    if len(c.trace) > 1:
        trail = " &rarr; ".join(f"{escape(s.stage)}:{escape(s.decision.value)}" for s in c.trace)
        parts.append(f'<br><span class="muted">trace: {trail}</span>')
    if c.repair:
        parts.append(f'<br><span class="repair">repair: {escape(c.repair)}</span>')
    parts.append("</div>")
    return "".join(parts)


def _turn_html(v: Verdict, turn: Turn | None, templates: dict[str, str]) -> str:
    parts: list[str] = []
    if turn is not None:
        hist = turn.history or ()
        if hist:
            parts.append('<div class="hist"><b>history</b>')
            for i, h in enumerate(hist):
                # an entry is what the user said, the agent's calls, then its reply; an
                # empty side (the agent's greeting has no user part) is not a row
                parts.append(f'<div class="entry" data-entry="{i}">')
                parts.append(_user_calls_html(h.user_tool_calls, templates))
                if h.user:
                    parts.append(f'<div class="utt"><span class="who">user</span>'
                                 f'{_marked(h.user, _spans_for(v, "history.user", i))}</div>')
                parts.append(_calls_html(v, h.tool_calls, i, templates))
                if h.agent:
                    parts.append(f'<div class="utt"><span class="who">agent</span>'
                                 f'{_marked(h.agent, _spans_for(v, "history.agent", i))}</div>')
                parts.append("</div>")
            parts.append("</div>")
        parts.append(_user_calls_html(turn.user_tool_calls, templates))
        parts.append(f'<div class="utt"><span class="who"><b>u_t</b></span>'
                     f'<span class="u-t">{_marked(turn.user, _spans_for(v, "user", None))}'
                     "</span></div>")
        if turn.tool_calls:
            parts.append(f'<div class="calls-label">the agent\'s {len(turn.tool_calls)} '
                         "tool call(s) of this turn</div>")
            own = _calls_html(v, turn.tool_calls, None, templates)
            parts.append(f'<div class="turn-calls">{own}</div>')
        parts.append(f'<div class="utt"><span class="who"><b>a_t</b></span>'
                     f'<span class="a-t">{_marked(turn.agent, _spans_for(v, "agent", None))}'
                     "</span></div>")
        before, after = turn.before(), turn.after()
        slots = sorted(set(before) | set(after))
        if slots:
            rows = "".join(
                f'<tr class="{"chg" if before.get(s) != after.get(s) else ""}">'
                f"<td>{escape(s)}</td><td>{escape(before.get(s, ''))}</td>"
                f"<td>{escape(after.get(s, ''))}"
                "</td></tr>" for s in slots)
            parts.append('<h2>state</h2><table class="diff"><tr><th>slot</th><th>s_{t-1}</th>'
                         f"<th>s_t</th></tr>{rows}</table>")
    parts.append("<h2>criteria</h2>")
    if not v.criteria:
        parts.append('<p class="muted">no criteria compiled for this turn</p>')
    parts.extend(_criterion_html(c) for c in v.criteria)
    return "".join(parts)


def _histogram(verdicts: Sequence[Verdict]) -> str:
    bins = Counter(min(int(v.confidence * 10), 9) for v in verdicts)
    top = max(bins.values(), default=1)
    bars = "".join(
        f'<div style="height:{max(2, int(70 * bins[b] / top))}px" '
        f'title="{b / 10:.1f}-{(b + 1) / 10:.1f}: {bins[b]}"><span>{b / 10:.1f}</span></div>'
        for b in range(10))
    return f'<div class="bars">{bars}</div>'


def render_report(verdicts: Sequence[Verdict], turns: Mapping[str, Turn] | None = None,
                  gold: Mapping[str, Gold | None] | None = None,
                  title: str = "sage-tod report") -> str:
    """The whole page as one string."""
    turns = turns or {}
    counts = Counter(v.verdict for v in verdicts)
    fired = Counter(str(c) for v in verdicts for c in v.classes)
    stages = decided_by_counts(verdicts)
    n_crit = sum(stages.values()) or 1
    cards = [f'<div class="card"><span class="muted">turns</span><b>{len(verdicts)}</b></div>']
    for label in ("failure", "acceptable", "undecided"):
        cards.append(f'<div class="card"><span class="muted">{label}</span>'
                     f'<b class="{label}">{counts[label]}</b></div>')
    if gold:
        rep = score([(v.key, gold.get(v.key)) for v in verdicts], verdicts)
        if rep.n:
            cards.append(f'<div class="card"><span class="muted">P / R / F1 (n={rep.n})</span>'
                         f"<b>{rep.full.precision:.2f} / {rep.full.recall:.2f} / "
                         f"{rep.full.f1:.2f}</b></div>")
    # a conversation fails when a turn does (contracts.conversations): the unit τ-bench
    # scores; the filter below shows every turn of the failed (or undecided) ones
    conv = {c.dialogue_id: c.verdict for c in conversation_verdicts(verdicts)}
    conv_counts = Counter(conv.values())
    cards.append(f'<div class="card"><span class="muted">conversations</span><b>{len(conv)}'
                 f'</b> <span class="failure">{conv_counts["failure"]} failed</span> '
                 f'<span class="undecided">{conv_counts["undecided"]} undecided</span></div>')
    cost = sum(v.cost_usd for v in verdicts)
    cards.append(f'<div class="card"><span class="muted">cost</span><b>${cost:.4f}</b></div>')
    missing = Counter(m for v in verdicts for m in v.missing)
    for stage, n in sorted(missing.items()):  # a stage that did not run is said, not hidden
        cards.append(f'<div class="card"><span class="muted">{escape(stage)} configured, not run'
                     f'</span><b class="undecided">{n} turns</b></div>')
    class_rows = "".join(f"<tr><td>{c}</td><td>{fired[c]}</td></tr>" for c in CLASSES)
    stage_rows = "".join(f"<tr><td>{escape(s)}</td><td>{n}</td><td>{n / n_crit:.0%}</td></tr>"
                         for s, n in sorted(stages.items()))
    workflows = sorted({v.workflow for v in verdicts})
    rows: list[str] = []
    templates: dict[str, str] = {}  # call bodies, once each (`_call_html`)
    for i, v in enumerate(verdicts):
        t = turns.get(v.key)
        g = gold.get(v.key) if gold else None
        gtxt = "" if g is None else (g.failure_class or g.label)
        names = [c.name for c in (t.tool_calls or ())] if t else []
        search = " ".join([v.key, v.workflow, t.user if t else "", t.agent if t else "",
                           *names]).lower()
        classes = " ".join(str(c) for c in v.classes)
        rows.append(
            f'<tr class="row" data-idx="{i}" data-verdict="{v.verdict}" '
            f'data-classes="{escape(classes)}" data-workflow="{escape(v.workflow)}" '
            f'data-conversation="{conv[v.dialogue_id]}" '
            f'data-search="{escape(search)}">'
            f"<td>{escape(v.key)}</td><td>{escape(v.workflow)}</td>"
            f'<td class="{v.verdict}">{v.verdict}</td><td>{escape(classes or "-")}</td>'
            f"<td>{v.confidence:.2f}</td><td>{escape(gtxt)}</td></tr>"
            f'<tr class="detail hidden" id="d-{i}"><td colspan="6">'
            f"{_turn_html(v, t, templates)}</td></tr>")
    opts = "".join(f'<option value="{escape(w)}">{escape(w)}</option>' for w in workflows)
    cls_opts = "".join(f'<option value="{c}">{c}</option>' for c in CLASSES)
    configs = sorted({f"{v.config} ({'+'.join(v.stages)})" for v in verdicts})
    shown_configs = escape(", ".join(configs))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{PAGE_CSS}</style></head><body>
<h1>{escape(title)}</h1>
<div class="sub">config {shown_configs} &middot; click a turn for its evidence trace</div>
<div class="cards">{"".join(cards)}</div>
<div style="display:flex;gap:40px;flex-wrap:wrap">
<div><h2>fired classes</h2><table style="width:auto"><tr><th>class</th><th>turns</th></tr>
{class_rows}</table></div>
<div><h2>criteria decided by</h2><table style="width:auto"><tr><th>stage</th><th>criteria</th>
<th>share</th></tr>{stage_rows}</table></div>
<div><h2>turn confidence</h2>{_histogram(verdicts)}</div>
</div>
<h2>turns</h2>
<div class="filters">
<label>verdict <select id="f-verdict"><option value="">all</option>
<option value="failure">failure</option><option value="acceptable">acceptable</option>
<option value="undecided">undecided</option></select></label>
<label>class <select id="f-class"><option value="">all</option>{cls_opts}</select></label>
<label>workflow <select id="f-workflow"><option value="">all</option>{opts}</select></label>
<label>conversation <select id="f-conversation"><option value="">all</option>
<option value="failure">failed</option><option value="undecided">undecided</option>
<option value="acceptable">acceptable</option></select></label>
<label>search <input id="f-search" type="search" placeholder="text or id"></label>
<span id="f-count" class="muted"></span>
</div>
<table id="turns"><thead><tr><th>turn</th><th>workflow</th><th>verdict</th><th>classes</th>
<th>confidence</th><th>gold</th></tr></thead><tbody>
{"".join(rows)}
</tbody></table>
{"".join(f'<template id="{k}">{b}</template>' for k, b in templates.items())}
<script>{_JS}</script>
</body></html>
"""
