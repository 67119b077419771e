"""Where an evidence span points inside a tool call, for the report and `explain`.

The per-call criteria of tool agents cite evidence in a call's arguments
(`source: "tool_call"`) or in its result (`"tool_result"`), located by the
history position (`index`, null for the turn itself), the call's position in
that entry (`call`) and a dotted path into the JSON (`path`). Verdicts written
before those fields existed, or by a plugin that omits them, must still render,
so every field is read defensively here, once, for both renderers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sage_tod.contracts.turns import ToolCall, Turn

TOOL_SOURCES = ("tool_call", "tool_result")
_INDEX = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class CallRef:
    """A span's place in a tool call: which entry (None = this turn), which call,
    arguments or result, and the path inside (() = the whole value)."""

    source: str
    index: int | None
    call: int | None
    path: tuple[str, ...]

    @property
    def part(self) -> str:
        return "arguments" if self.source == "tool_call" else "result"

    def where(self) -> str:
        entry = "this turn" if self.index is None else f"history[{self.index}]"
        call = "call ?" if self.call is None else f"call {self.call}"
        path = ".".join(self.path)
        return f"{self.source} ({entry}, {call}{', ' + path if path else ''})"


def split_path(path: Any) -> tuple[str, ...]:
    """`passengers.0.dob`, `passengers[0].dob` or a list of parts -> ("passengers", "0",
    "dob"); anything else -> () (the whole value)."""
    if isinstance(path, list | tuple):
        return tuple(str(p) for p in path)
    if not isinstance(path, str) or not path.strip():
        return ()
    text = _INDEX.sub(r".\1", path.strip()).strip(".")
    if text.startswith("$."):
        text = text[2:]
    return tuple(p for p in text.split(".") if p)


def call_ref(span: Any) -> CallRef | None:
    """The span's place in a tool call, or None when it points elsewhere."""
    source = getattr(span, "source", None)
    if source not in TOOL_SOURCES:
        return None
    index = getattr(span, "index", None)
    call = getattr(span, "call", None)
    return CallRef(str(source), index if isinstance(index, int) else None,
                   call if isinstance(call, int) else None,
                   split_path(getattr(span, "path", None)))


def calls_at(turn: Turn | None, index: int | None) -> Sequence[ToolCall]:
    """The tool calls of history entry `index`, or of the turn itself when None."""
    if turn is None:
        return ()
    if index is None:
        return turn.tool_calls or ()
    hist = turn.history or ()
    return hist[index].tool_calls if 0 <= index < len(hist) else ()


def value_at(obj: Any, path: Sequence[str]) -> tuple[bool, Any]:
    """(found, value) at `path` in a JSON value; a leading `arguments`/`result` that is
    not a key is skipped (some writers name the part in the path)."""
    parts = list(path)
    if parts and parts[0] in ("arguments", "result") and not (
            isinstance(obj, dict) and parts[0] in obj):
        parts = parts[1:]
    node = obj
    for p in parts:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        else:
            return False, None
    return True, node


def resolve(turn: Turn | None, ref: CallRef) -> tuple[ToolCall, Any] | None:
    """The call a span points into and the value at its path, when the turn has them."""
    calls = calls_at(turn, ref.index)
    if ref.call is None or not 0 <= ref.call < len(calls):
        return None
    c = calls[ref.call]
    found, value = value_at(c.arguments if ref.source == "tool_call" else c.result, ref.path)
    return (c, value) if found else None


def compact(value: Any, limit: int | None = None) -> str:
    """One-line JSON (a string result as itself), cut at `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           separators=(", ", ": "))
    if limit is not None and len(text) > limit:
        return text[: max(0, limit - 1)] + "…"
    return text
