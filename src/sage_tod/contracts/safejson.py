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
from collections.abc import Iterator
from pathlib import Path
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


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object or `InputError`) for each non-blank line of a JSONL file.

    The one JSON-lines reader (turns, verdicts, imported logs): lines are decoded
    one at a time, so a line that is not UTF-8 is an error on that line (and
    `--skip-invalid` can skip it), a byte-order mark on the first line is
    ignored, and every line goes through `parse_json`'s limits. Problems of a
    line are yielded, not raised, so the caller decides whether to skip; a file
    that cannot be opened or read raises.
    """
    from sage_tod.contracts.errors import InputError

    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    with fh:
        n = 0
        while True:
            try:
                raw = fh.readline()
            except OSError as exc:
                raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
            if not raw:
                break
            n += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield n, InputError(path, f"not UTF-8 text (byte {exc.start + 1} of the line)",
                                    line=n)
                continue
            if n == 1 and text.startswith("\ufeff"):
                text = text[1:]  # a byte-order mark some editors write
            if not text.strip():
                continue
            yield n, parse_line(path, n, text)


def parse_line(path: Path, n: int, text: str) -> Any:
    """One JSON line parsed with the limits, or the `InputError` that names its problem."""
    from sage_tod.contracts.errors import InputError

    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        return InputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", line=n)
    except UnsafeDocument as exc:
        return InputError(path, str(exc), line=n)
