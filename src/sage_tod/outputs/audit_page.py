"""`audit page`: one self-contained labelling page per annotator (no network at view time).

The page is built from the audit set's manifest and items only; the key with
the tool's verdicts is never opened here, so nothing the tool said can reach
the page. As in the report (`outputs.report_html`, whose stylesheet and
escaping this reuses), every dialogue text is escaped on the server side; the
script only shows one item at a time, records the annotator's answers, keeps
them in the browser's localStorage (keyed by audit id and annotator, so a
reload or a crash loses nothing) and downloads them as a labels file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.outputs.audit_set import (
    LABELS_FORMAT,
    VERSION,
    AuditItem,
    Manifest,
    ToolCall,
    WorkflowInfo,
)
from sage_tod.outputs.html_parts import PAGE_CSS, escape

CLASS_HELP = {
    "IUV": "ignored user value: the user gave a value in this message that the new state "
           "does not record",
    "WNF": "wrong next field: the agent asks for a field whose earlier fields are still "
           "unfilled",
    "PC": "premature confirmation: the agent confirms or books while the required "
          "fields are not all there",
    "UV": "unsupported value: the state change writes a value nothing the user said "
          "(or a tool returned) supports",
}

_AUDIT_CSS = """
body{margin:0}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #dde1e7;padding:10px 24px;
z-index:2;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header h1{font-size:17px;margin:0}
#progress{width:220px;height:8px;background:#e6e8ec;border-radius:4px;overflow:hidden}
#progress div{height:100%;background:#17b26a;width:0}
main{display:flex;gap:20px;padding:16px 24px;align-items:flex-start}
#nav{display:flex;flex-wrap:wrap;gap:3px;width:190px;flex:none}
#nav button{width:34px;height:22px;font-size:10px;border:1px solid #d0d5dd;background:#fff;
border-radius:3px;cursor:pointer;padding:0}
#nav button.l-failure{background:#fee4e2}#nav button.l-acceptable{background:#d1fadf}
#nav button.l-cant_tell{background:#fef0c7}#nav button.cur{outline:2px solid #2e90fa}
.items{flex:1;min-width:0}
.box{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:10px 14px;
margin-bottom:12px}
.box h2{margin:0 0 6px}
.hist{max-height:260px;overflow:auto}
.now{border-left:4px solid #2e90fa}
.tool{background:#f5f3ff;border:1px solid #d9d6fe;border-radius:6px;margin:4px 0;padding:4px 8px}
.tool pre{margin:2px 0;max-height:180px;overflow:auto;font-size:12px;white-space:pre-wrap}
.tool.err{background:#fef3f2;border-color:#fecdca}
.req td.missing{color:#b42318}
#panel{position:sticky;top:70px;width:270px;flex:none}
#panel button.lab{display:block;width:100%;margin:4px 0;padding:7px;font-size:14px;
border:1px solid #d0d5dd;border-radius:6px;background:#fff;cursor:pointer;text-align:left}
#panel button.lab.on{border-width:2px}
#panel button.on[data-label=failure]{background:#fee4e2;border-color:#d92d20}
#panel button.on[data-label=acceptable]{background:#d1fadf;border-color:#17b26a}
#panel button.on[data-label=cant_tell]{background:#fef0c7;border-color:#f79009}
#panel .classes label{display:block;margin:2px 0}
#panel textarea{width:100%;height:70px;box-sizing:border-box}
kbd{border:1px solid #c4c9d2;border-bottom-width:2px;border-radius:3px;padding:0 4px;
font-size:11px;background:#f9fafb}
#help dt{font-weight:600}#help dd{margin:0 0 6px 12px}
"""

_JS = """
(function(){
  const cfg = JSON.parse(document.getElementById('audit-config').textContent);
  const store = 'sage-tod-audit/' + cfg.audit_id + '/' + cfg.annotator;
  let state = {labels: {}, pos: 0};
  try { const s = JSON.parse(localStorage.getItem(store) || 'null');
        if (s && s.labels) state = s; } catch (e) {}
  const $ = id => document.getElementById(id);
  const items = cfg.items;
  const sections = {};
  document.querySelectorAll('section.item').forEach(s => sections[s.dataset.item] = s);
  function save(){ localStorage.setItem(store, JSON.stringify(state)); }
  function cur(){ return items[state.pos]; }
  function lab(){ return state.labels[cur()] || {}; }
  function set(patch){
    const id = cur(), old = state.labels[id] || {label: null, 'class': null, note: ''};
    const next = Object.assign({}, old, patch);
    if (next.label !== 'failure') next['class'] = null;
    state.labels[id] = next; save(); show();
  }
  function done(){ return items.filter(i => (state.labels[i] || {}).label).length; }
  function show(){
    if (state.pos < 0 || state.pos >= items.length) state.pos = 0;
    items.forEach(i => sections[i].hidden = (i !== cur()));
    const h = sections[cur()].querySelector('.hist'); if (h) h.scrollTop = h.scrollHeight;
    const l = lab();
    document.querySelectorAll('#panel button.lab').forEach(b =>
      b.classList.toggle('on', b.dataset.label === l.label));
    document.querySelectorAll('#panel input[name=cls]').forEach(r => {
      r.checked = (r.value === l['class']); r.disabled = (l.label !== 'failure'); });
    const note = $('note'); if (document.activeElement !== note) note.value = l.note || '';
    document.querySelectorAll('#nav button').forEach((b, k) => {
      const x = (state.labels[items[k]] || {}).label;
      b.className = (x ? 'l-' + x : '') + (k === state.pos ? ' cur' : ''); });
    const n = done();
    $('count').textContent = n + ' / ' + items.length + ' labelled';
    $('progress').firstElementChild.style.width = (100 * n / items.length) + '%';
    $('where').textContent = 'item ' + (state.pos + 1) + ' of ' + items.length;
  }
  function go(k){ state.pos = Math.max(0, Math.min(items.length - 1, k)); save(); show();
                  window.scrollTo(0, 0); }
  function nextOpen(){
    for (let d = 1; d <= items.length; d++) {
      const k = (state.pos + d) % items.length;
      if (!(state.labels[items[k]] || {}).label) return go(k);
    }
  }
  function exportLabels(){
    const labels = items.filter(i => (state.labels[i] || {}).label).map(i => {
      const x = state.labels[i];
      return {item: i, label: x.label, 'class': x['class'] || null, note: x.note || ''}; });
    const doc = {format: cfg.format, version: cfg.version, audit_id: cfg.audit_id,
                 annotator: cfg.annotator, labels: labels};
    const text = JSON.stringify(doc, null, 1) + '\\n';
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], {type: 'application/json'}));
    a.download = 'labels-' + cfg.annotator.replace(/[^A-Za-z0-9_.-]+/g, '_') + '.json';
    document.body.appendChild(a); a.click(); a.remove();
    $('exported').textContent = 'exported ' + labels.length + ' label(s)';
    return text;
  }
  window.sageAudit = {exportLabels: exportLabels, state: () => state};
  document.querySelectorAll('#panel button.lab').forEach(b =>
    b.addEventListener('click', () => set({label: b.dataset.label})));
  document.querySelectorAll('#panel input[name=cls]').forEach(r =>
    r.addEventListener('change', () => set({label: 'failure', 'class': r.value})));
  $('note').addEventListener('input', e => set({note: e.target.value}));
  document.querySelectorAll('#nav button').forEach((b, k) =>
    b.addEventListener('click', () => go(k)));
  $('prev').addEventListener('click', () => go(state.pos - 1));
  $('next').addEventListener('click', () => go(state.pos + 1));
  $('export').addEventListener('click', exportLabels);
  $('help-toggle').addEventListener('click', () => $('help').hidden = !$('help').hidden);
  const classKeys = cfg.classes;
  document.addEventListener('keydown', e => {
    if (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT') {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (k === 'f') set({label: 'failure'});
    else if (k === 'a') set({label: 'acceptable'});
    else if (k === 'c') set({label: 'cant_tell'});
    else if (k >= '1' && k <= String(classKeys.length))
      set({label: 'failure', 'class': classKeys[Number(k) - 1]});
    else if (k === '0') set({'class': null});
    else if (k === 'ArrowRight' || k === 'j') go(state.pos + 1);
    else if (k === 'ArrowLeft' || k === 'k') go(state.pos - 1);
    else if (k === 'u') nextOpen();
    else if (k === 'n') { $('note').focus(); }
    else if (k === 'e') exportLabels();
    else if (k === '?') $('help').hidden = !$('help').hidden;
    else return;
    e.preventDefault();
  });
  show();
})();
"""


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element (no `</script>` can close it)."""
    return (json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


def _value(v: Any) -> str:
    """A tool argument or result for reading: JSON text pretty-printed, others as JSON."""
    if isinstance(v, str):
        try:
            parsed: Any = json.loads(v)
        except ValueError:
            return v
        if isinstance(parsed, str):
            return parsed
        v = parsed
    return json.dumps(v, ensure_ascii=False, indent=1)


def _tool_html(c: ToolCall) -> str:
    parts = [f'<div class="tool{" err" if c.error else ""}"><b>tool</b> '
             f'<code class="tool-name">{escape(c.name)}</code>'
             + (f' <span class="muted">id {escape(c.id)}</span>' if c.id else "")
             + (' <span class="failure">error</span>' if c.error else "")]
    if c.arguments is not None:
        parts.append(f'<div class="muted">arguments</div><pre>{escape(_value(c.arguments))}</pre>')
    if c.result is not None:
        parts.append(f'<div class="muted">result</div><pre>{escape(_value(c.result))}</pre>')
    parts.append("</div>")
    return "".join(parts)


def _utt(who: str, text: str, cls: str = "") -> str:
    return (f'<div class="utt"><span class="who">{who}</span>'
            f'<span class="{cls}">{escape(text)}</span></div>')


def _state_html(item: AuditItem) -> str:
    def clean(s: Mapping[str, str | None]) -> dict[str, str]:
        return {k: v for k, v in s.items() if v is not None and v.strip()}

    before, after = clean(item.state_before), clean(item.state_after)
    slots = sorted(set(before) | set(after))
    if not slots:
        return '<p class="muted">no slot filled before or after this turn</p>'
    rows = "".join(
        f'<tr class="{"chg" if before.get(s) != after.get(s) else ""}"><td>{escape(s)}</td>'
        f"<td>{escape(before.get(s, ''))}</td><td>{escape(after.get(s, ''))}</td></tr>"
        for s in slots)
    return ('<table class="diff"><tr><th>slot</th><th>before this turn</th>'
            f"<th>after this turn</th></tr>{rows}</table>"
            '<p class="muted">changed rows are highlighted</p>')


def _workflow_html(item: AuditItem, wf: WorkflowInfo | None) -> str:
    if wf is None:
        return (f'<div class="box"><h2>workflow {escape(item.workflow)}</h2>'
                '<p class="muted">no spec was given to `audit sample`: required fields not '
                "shown</p></div>")
    filled = {k: v for k, v in item.state_after.items() if v is not None and v.strip()}
    rows = "".join(
        f"<tr><td>{escape(r.slot)}</td><td>{escape(r.description)}</td>"
        + (f"<td>{escape(filled[r.slot])}</td>" if r.slot in filled
           else '<td class="missing">missing</td>') + "</tr>"
        for r in wf.required)
    return (f'<div class="box"><h2>workflow {escape(wf.id)}</h2>'
            + (f"<div>{escape(wf.description)}</div>" if wf.description else "")
            + '<table class="req"><tr><th>required field</th><th>meaning</th>'
              f"<th>after this turn</th></tr>{rows}</table>"
            + (f'<div class="muted">order: {escape(wf.order)}</div>' if wf.order else "")
            + (f'<div class="muted">confirm only when: {escape(wf.outcome)}</div>'
               if wf.outcome else "") + "</div>")


def _item_html(item: AuditItem, k: int, n: int, wf: WorkflowInfo | None) -> str:
    hist: list[str] = []
    for h in item.history:
        if h.user:
            hist.append(_utt("user", h.user))
        if h.agent:
            hist.append(_utt("agent", h.agent))
        hist.extend(_tool_html(c) for c in h.tool_calls)
    calls = "".join(_tool_html(c) for c in item.tool_calls)
    return (f'<section class="item" data-item="{escape(item.item)}" hidden>'
            f'<div class="sub"><b>{escape(item.item)}</b> ({k} of {n}) &middot; dialogue '
            f"{escape(item.dialogue_id)}, turn {escape(item.turn_id)}</div>"
            + '<div class="box"><h2>earlier in the dialogue</h2><div class="hist">'
            + ("".join(hist) or '<p class="muted">nothing: this is the first turn</p>')
            + "</div></div>"
            '<div class="box now"><h2>this turn</h2>'
            + _utt("<b>user</b>", item.user, "u-t")
            + (f'<div class="calls"><div class="muted">the agent called</div>{calls}</div>'
               if calls else "")
            + _utt("<b>agent</b>", item.agent, "a-t") + "</div>"
            + f'<div class="box"><h2>state</h2>{_state_html(item)}</div>'
            + _workflow_html(item, wf) + "</section>")


def _help_html() -> str:
    classes = "".join(f"<dt>{i + 1} &middot; {c}</dt><dd>{escape(CLASS_HELP.get(c, c))}</dd>"
                      for i, c in enumerate(CLASS_NAMES))
    return (
        '<div id="help" class="box" hidden><h2>how to label</h2>'
        "<p>Judge the agent's handling of <b>this turn</b>: the state it recorded after the "
        "user's message, and its reply. Mark <b>failure</b> when it made a mistake, "
        "<b>acceptable</b> when it did not, <b>can't tell</b> when the turn does not let you "
        "decide. A failure may name its class:</p>"
        f"<dl>{classes}</dl>"
        "<p>Keys: <kbd>f</kbd> failure, <kbd>a</kbd> acceptable, <kbd>c</kbd> can't tell, "
        f"<kbd>1</kbd>-<kbd>{len(CLASS_NAMES)}</kbd> class (implies failure), <kbd>0</kbd> "
        "no class, <kbd>n</kbd> note (<kbd>Esc</kbd> leaves it), <kbd>&rarr;</kbd>/"
        "<kbd>j</kbd> next, <kbd>&larr;</kbd>/<kbd>k</kbd> previous, <kbd>u</kbd> next "
        "unlabelled, <kbd>e</kbd> export, <kbd>?</kbd> this help. Answers are saved in this "
        "browser as you go; export downloads them as a file to send back.</p></div>")


def render_audit_page(manifest: Manifest, items: Sequence[AuditItem], annotator: str) -> str:
    """The whole page as one string (no verdict is an input, so none can be an output)."""
    cfg = {"format": LABELS_FORMAT, "version": VERSION, "audit_id": manifest.audit_id,
           "annotator": annotator, "items": [i.item for i in items],
           "classes": list(CLASS_NAMES)}
    sections = "".join(_item_html(it, k, len(items), manifest.workflows.get(it.workflow))
                       for k, it in enumerate(items, 1))
    nav = "".join(f'<button type="button" title="{escape(it.item)}">{k}</button>'
                  for k, it in enumerate(items, 1))
    classes = "".join(
        f'<label title="{escape(CLASS_HELP.get(c, c))}"><input type="radio" name="cls" '
        f'value="{c}"> <kbd>{i + 1}</kbd> {c}</label>' for i, c in enumerate(CLASS_NAMES))
    title = f"sage-tod audit {manifest.audit_id}: {annotator}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{PAGE_CSS}{_AUDIT_CSS}</style></head><body>
<header><h1>audit {escape(manifest.audit_id)} &middot; {escape(annotator)}</h1>
<div id="progress"><div></div></div><span id="count"></span><span id="where" class="muted">
</span><button type="button" id="help-toggle">help <kbd>?</kbd></button>
<button type="button" id="export">export labels <kbd>e</kbd></button>
<span id="exported" class="muted"></span></header>
{_help_html()}
<main><nav id="nav">{nav}</nav>
<div class="items">{sections}</div>
<aside id="panel" class="box"><h2>your answer</h2>
<button type="button" class="lab" data-label="failure"><kbd>f</kbd> failure</button>
<button type="button" class="lab" data-label="acceptable"><kbd>a</kbd> acceptable</button>
<button type="button" class="lab" data-label="cant_tell"><kbd>c</kbd> can't tell</button>
<div class="classes"><div class="muted">class (optional)</div>{classes}</div>
<div class="muted">note (optional, <kbd>n</kbd>)</div><textarea id="note"></textarea>
<div><button type="button" id="prev">&larr; previous</button>
<button type="button" id="next">next &rarr;</button></div>
<p class="muted">saved in this browser as you go</p></aside></main>
<script type="application/json" id="audit-config">{_script_json(cfg)}</script>
<script>{_JS}</script>
</body></html>
"""
