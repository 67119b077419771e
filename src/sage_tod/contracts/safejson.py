"""Bounded readers for the documents users give us (JSON lines, JSON and YAML files).

Python's parsers accept inputs that later blow up far from the file: a
nesting 100,000 deep (RecursionError), a 5,000-digit number (ValueError in
int conversion), `NaN` and `Infinity` (not JSON, and they poison averages), a
lone surrogate `"\\ud800"` (valid JSON escape, but no UTF-8 file can hold it,
so the run dies when it writes the verdict), or a YAML alias bomb that expands
to billions of values. Every reader goes through `parse_json` / `check_tree`,
which turn each of these into a `ValueError` with a plain message; the callers
wrap it in an `InputError` naming the file and line.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 100  # containers inside containers
MAX_NODES = 1_000_000  # values in one document, aliases counted each time they are used
MAX_INT_DIGITS = 30
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnsafeDocument(ValueError):
    """The document is valid syntax but outside what sage-tod reads; the message says why."""


def _no_constant(name: str) -> Any:
    raise UnsafeDocument(f"{name} is not a JSON number")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise UnsafeDocument(f"number with {len(text.lstrip('-'))} digits is too large "
                             f"(at most {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 400:
        raise UnsafeDocument(f"number written with {len(text)} characters is too long")
    v = float(text)
    if not math.isfinite(v):
        raise UnsafeDocument(f"number {text[:20]} is out of range")
    return v


def parse_json(text: str | bytes) -> Any:
    """`json.loads` with the limits above; raises `json.JSONDecodeError` for bad syntax
    and `UnsafeDocument` for the rest."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_int=_int,
                         parse_float=_float)
    except RecursionError:
        raise UnsafeDocument(f"nesting is too deep (at most {MAX_DEPTH} levels)") from None
    check_tree(obj)
    return obj


def check_tree(obj: Any) -> None:
    """Walk a parsed document without recursion: depth, size, numbers, strings."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise UnsafeDocument(f"document holds more than {MAX_NODES:,} values "
                                 "(a YAML alias bomb?)")
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise UnsafeDocument("text holds a lone surrogate (like \\ud800), which is "
                                     "not a character")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if abs(value) >= 10 ** MAX_INT_DIGITS:
                raise UnsafeDocument(f"number is too large (at most {MAX_INT_DIGITS} digits)")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise UnsafeDocument("number is NaN or infinite")
        elif isinstance(value, dict | list | tuple):
            if depth >= MAX_DEPTH:
                raise UnsafeDocument(f"nesting is too deep (at most {MAX_DEPTH} levels)")
            if isinstance(value, dict):
                for k, v in value.items():
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in value)
