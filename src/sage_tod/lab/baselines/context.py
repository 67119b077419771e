"""The per-turn context blocks of the LLM-judge baselines.

The paper's two forms share model, prompt template, sampling and threshold
and differ *only* in this block: transcript-only (`tr`) shows the dialogue;
state-aware (`st`) shows the same dialogue plus the workflow schema and the
state pair (s_{t-1}, s_t) with its diff - exactly what SAGE's compiler reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.spec import Workflow
from sage_tod.contracts.turns import transcript_lines
from sage_tod.llm.prompts import load_prompt

Mode = Literal["tr", "st"]
DEFAULT_HISTORY = 6


def history_text(ctx: TurnContext, max_exchanges: int = DEFAULT_HISTORY) -> str:
    """The last `max_exchanges` exchanges before the turn (older ones are counted, not shown:
    long SGD dialogues would otherwise dominate cost and a small local model's context)."""
    hist = ctx.turn.history or ()
    hidden = len(hist) - min(len(hist), max(max_exchanges, 0))
    lines = [f"({hidden} earlier exchange(s) not shown)"] if hidden else []
    lines += transcript_lines(hist, max_exchanges)
    return "\n".join(lines) if lines else "(this is the first turn)"


def schema_text(wf: Workflow) -> str:
    lines = []
    for name, s in wf.slots.items():
        star = "*" if name in wf.required else ""
        kind: str = s.type
        if s.values:
            vals = ", ".join(s.values[:12]) + (", …" if len(s.values) > 12 else "")
            kind = f"{kind}: {vals}"
        desc = f": {s.description}" if s.description else ""
        lines.append(f"- {name}{star} ({kind}){desc}")
    return "\n".join(lines)


def order_text(wf: Workflow) -> str:
    if not wf.buckets:
        return "no ordering"
    return wf.order_text(" -> ", "[]")


def _state(state: Mapping[str, str]) -> str:
    return json.dumps(dict(state), ensure_ascii=False, sort_keys=True) if state else "{}"


def diff_text(ctx: TurnContext) -> str:
    if not ctx.diff:
        return "none"
    parts = []
    for ch in ctx.diff:
        old = "unset" if ch.old is None else repr(ch.old)
        new = "unset" if ch.new is None else repr(ch.new)
        parts.append(f"{ch.slot}: {old} -> {new}")
    return "; ".join(parts)


def workflow_text(wf: Workflow) -> str:
    return wf.id + (f" ({wf.description})" if wf.description else "")


def context_block(ctx: TurnContext, mode: Mode, max_exchanges: int = DEFAULT_HISTORY) -> str:
    """The `$context` of a baseline prompt for one turn."""
    common = {"history": history_text(ctx, max_exchanges), "user": ctx.turn.user,
              "agent": ctx.turn.agent}
    if mode == "tr":
        return load_prompt("context_transcript").render(**common)[1]
    wf = ctx.workflow
    return load_prompt("context_state").render(
        **common, schema=schema_text(wf), order=order_text(wf), outcome=wf.outcome_text,
        state_before=_state(ctx.before), state_after=_state(ctx.after), diff=diff_text(ctx))[1]
