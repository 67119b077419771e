"""A self-contained HTML report of a verdicts file (no network at view time).

Everything a user's dialogue contains is escaped on the server side with
`html.escape`; the page's small script only shows, hides and filters rows.
So a turn that contains `<script>` renders as text.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sage_tod.contracts.criteria import Span
from sage_tod.contracts.turns import Gold, ToolCall, Turn
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict, decided_by_counts
from sage_tod.outputs.scoring import CLASSES, score
from sage_tod.outputs.tool_view import CallRef, call_ref, compact

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1d2330;
background:#fafbfc}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px}
.sub{color:#667;margin-bottom:16px}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:22px}
.failure{color:#b42318}.acceptable{color:#067647}.undecided{color:#b54708}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e6e8ec;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f2f4f7;font-weight:600}
tr.row{cursor:pointer}tr.row:hover{background:#f5f8ff}
tr.detail>td{background:#fcfcfd;padding:12px 18px}
.filters{display:flex;gap:10px;align-items:center;margin:8px 0;flex-wrap:wrap}
.filters select,.filters input{padding:4px 6px}
mark.ev{background:#ffe08a;padding:0 1px;border-radius:2px}
mark.sup{background:#b7f0c8;padding:0 1px;border-radius:2px}
.utt{margin:2px 0}.who{display:inline-block;width:52px;color:#667;font-size:12px}
.hist{color:#556}
.diff td{font-family:ui-monospace,monospace;font-size:12px}
.chg{background:#fff4e5}
.crit{border-left:4px solid #d0d5dd;padding:4px 10px;margin:8px 0;background:#fff}
.crit.true{border-color:#d92d20}.crit.false{border-color:#17b26a}.crit.abstain{border-color:#f79009}
.repair{color:#6941c6;font-weight:600}
.muted{color:#889;font-size:12px}
.bars{display:flex;align-items:flex-end;gap:3px;height:80px}
.bars div{background:#84adff;width:26px;position:relative}
.bars span{position:absolute;bottom:-18px;left:0;font-size:10px;color:#667}
.hidden{display:none}
details.call{margin:3px 0 3px 52px;border:1px solid #e4e7ec;border-radius:6px;background:#f8f9fc}
details.call>summary{cursor:pointer;padding:3px 8px;font-size:13px;list-style-position:inside}
details.call.err{border-color:#fda29b;background:#fef3f2}
details.call code.name{font-weight:600;color:#3538cd}
details.call .argsum{font-family:ui-monospace,monospace;font-size:12px;color:#475467}
.badge{display:inline-block;font-size:11px;padding:0 6px;border-radius:8px;margin-left:6px}
.badge.err{background:#d92d20;color:#fff}.badge.cited{background:#ffe08a;color:#1d2330}
details.call pre{margin:2px 8px 6px;padding:6px 8px;background:#fff;border:1px solid #eaecf0;
border-radius:4px;font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap;
overflow-wrap:anywhere;max-height:260px;overflow:auto}
.calls-label{color:#667;font-size:12px;margin:4px 0 0 52px}
"""

_JS = """
(function(){
  const sel = id => document.getElementById(id);
  function apply(){
    const v = sel('f-verdict').value, c = sel('f-class').value, w = sel('f-workflow').value,
          q = sel('f-search').value.toLowerCase();
    let shown = 0;
    document.querySelectorAll('tr.row').forEach(r => {
      const ok = (!v || r.dataset.verdict === v) &&
                 (!c || r.dataset.classes.split(' ').includes(c)) &&
                 (!w || r.dataset.workflow === w) &&
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
  ['f-verdict','f-class','f-workflow'].forEach(id => sel(id).addEventListener('change', apply));
  sel('f-search').addEventListener('input', apply);
  document.querySelectorAll('tr.row').forEach(r => r.addEventListener('click', () => {
    document.getElementById('d-' + r.dataset.idx).classList.toggle('hidden');
  }));
  apply();
})();
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _marked(text: str, spans: Sequence[tuple[Span, str]]) -> str:
    """`text` escaped, with each span wrapped in <mark class=...> (spans may not overlap)."""
    good = sorted(((s, cls) for s, cls in spans
                   if 0 <= s.start <= s.end <= len(text) and text[s.start:s.end] == s.text),
                  key=lambda x: x[0].start)
    out, pos = [], 0
    for s, cls in good:
        if s.start < pos:
            continue
        out.append(_e(text[pos:s.start]))
        out.append(f'<mark class="{cls}">{_e(text[s.start:s.end])}</mark>')
        pos = s.end
    out.append(_e(text[pos:]))
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
        return _e(text)
    span, cls = marks[0]
    if isinstance(value, str):
        st, en, sub = getattr(span, "start", None), getattr(span, "end", None), \
            getattr(span, "text", "")
        if isinstance(st, int) and isinstance(en, int) and sub and value[st:en] == sub \
                and (st, en) != (0, len(value)):
            inner = (_e(json.dumps(value[:st], ensure_ascii=False)[1:-1])
                     + f'<mark class="{cls}">{_e(json.dumps(sub, ensure_ascii=False)[1:-1])}'
                     "</mark>" + _e(json.dumps(value[en:], ensure_ascii=False)[1:-1]))
            return f'"{inner}"'
    return f'<mark class="{cls}">{_e(text)}</mark>'


def _json_html(value: Any, marks: Marks, path: tuple[str, ...] = (), depth: int = 0) -> str:
    """`value` pretty-printed as JSON (2-space indent), escaped, with the values at the
    cited paths wrapped in <mark>."""
    here = marks.get(path, [])
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict) and value:
        body = ",\n".join(f"{inner}{_e(json.dumps(str(k), ensure_ascii=False))}: "
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
        return _marked(value, spans) if spans else _e(value)
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
    head = (f'<summary><span class="who">call</span><code class="name">{_e(c.name)}</code>'
            f' <span class="argsum">{_e(compact(c.arguments, 110))}</span>'
            + ('<span class="badge err">error</span>' if c.error else "")
            + ('<span class="badge cited">cited</span>' if cited else "")
            + (f' <span class="muted">{_e(c.id)}</span>' if c.id else "") + "</summary>")
    res_label = "error" if c.error else "result"
    body = (f'<div class="muted" style="margin-left:8px">arguments</div>'
            f'<pre class="args">{_value_html(c.arguments, arg_marks)}</pre>'
            f'<div class="muted" style="margin-left:8px">{res_label}</div>'
            f'<pre class="result">{_value_html(c.result, res_marks)}</pre>')
    cls = "call err" if c.error else "call"
    attrs = f'class="{cls}" data-tool="{_e(c.name)}" data-call="{pos}"'
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


def _criterion_html(c: CriterionVerdict) -> str:
    parts = [f'<div class="crit {c.decision.value}">',
             f"<b>{_e(str(c.failure_class))}</b> &middot; "
             f'<span class="{ "failure" if c.decision.value == "true" else "" }">'
             f"{_e(c.decision.value.upper())}</span> by {_e(c.decided_by or 'no stage')} "
             f"(margin {c.margin:.2f})<br>",
             f"<i>{_e(c.question)}</i><br>",
             f'<span class="muted">why:</span> {_e(c.rationale)}']
    for label, span in (("evidence", c.evidence), ("support", c.support)):
        if span is not None:
            ref = call_ref(span)
            where = ref.where() if ref is not None else (
                span.source if span.index is None else f"{span.source}[{span.index}]")
            cls = "ev" if label == "evidence" else "sup"
            parts.append(f'<br><span class="muted">{label}:</span> {_e(where)} '
                         f'[{span.start},{span.end}] <mark class="{cls}">{_e(span.text)}</mark>')
    if len(c.trace) > 1:
        trail = " &rarr; ".join(f"{_e(s.stage)}:{_e(s.decision.value)}" for s in c.trace)
        parts.append(f'<br><span class="muted">trace: {trail}</span>')
    if c.repair:
        parts.append(f'<br><span class="repair">repair: {_e(c.repair)}</span>')
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
                if h.user:
                    parts.append(f'<div class="utt"><span class="who">user</span>'
                                 f'{_marked(h.user, _spans_for(v, "history.user", i))}</div>')
                parts.append(_calls_html(v, h.tool_calls, i, templates))
                if h.agent:
                    parts.append(f'<div class="utt"><span class="who">agent</span>'
                                 f'{_marked(h.agent, _spans_for(v, "history.agent", i))}</div>')
                parts.append("</div>")
            parts.append("</div>")
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
                f"<td>{_e(s)}</td><td>{_e(before.get(s, ''))}</td><td>{_e(after.get(s, ''))}"
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
    cost = sum(v.cost_usd for v in verdicts)
    cards.append(f'<div class="card"><span class="muted">cost</span><b>${cost:.4f}</b></div>')
    missing = Counter(m for v in verdicts for m in v.missing)
    for stage, n in sorted(missing.items()):  # a stage that did not run is said, not hidden
        cards.append(f'<div class="card"><span class="muted">{_e(stage)} configured, not run'
                     f'</span><b class="undecided">{n} turns</b></div>')
    class_rows = "".join(f"<tr><td>{c}</td><td>{fired[c]}</td></tr>" for c in CLASSES)
    stage_rows = "".join(f"<tr><td>{_e(s)}</td><td>{n}</td><td>{n / n_crit:.0%}</td></tr>"
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
            f'data-classes="{_e(classes)}" data-workflow="{_e(v.workflow)}" '
            f'data-search="{_e(search)}">'
            f"<td>{_e(v.key)}</td><td>{_e(v.workflow)}</td>"
            f'<td class="{v.verdict}">{v.verdict}</td><td>{_e(classes or "-")}</td>'
            f"<td>{v.confidence:.2f}</td><td>{_e(gtxt)}</td></tr>"
            f'<tr class="detail hidden" id="d-{i}"><td colspan="6">'
            f"{_turn_html(v, t, templates)}</td></tr>")
    opts = "".join(f'<option value="{_e(w)}">{_e(w)}</option>' for w in workflows)
    cls_opts = "".join(f'<option value="{c}">{c}</option>' for c in CLASSES)
    configs = sorted({f"{v.config} ({'+'.join(v.stages)})" for v in verdicts})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head><body>
<h1>{_e(title)}</h1>
<div class="sub">config {_e(", ".join(configs))} &middot; click a turn for its evidence trace</div>
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
