"""What every sage-tod HTML page shares: the stylesheet and the one escaping function.

The report (`report_html`) and the audit page (`audit_page`) are both self-contained
pages that show a user's dialogue text; they escape it the same way (`escape`, on the
server side, quotes included, so text never becomes markup or breaks out of an
attribute) and look alike because they use one stylesheet (`PAGE_CSS`). Keeping both
here gives each page a public thing to import instead of the other page's internals.
"""

from __future__ import annotations

import html

__all__ = ["PAGE_CSS", "escape"]

PAGE_CSS = """
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


def escape(text: object) -> str:
    """`text` as HTML text or attribute value: `str(text)` with `& < > " '` escaped."""
    return html.escape(str(text), quote=True)
