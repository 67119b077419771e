"""Shared pieces of the dataset loaders: the turn-dict shape, JSON I/O, value pools.

Loaders yield plain dicts in the public turn-JSONL shape (docs/formats.md) so
that a slice line is exactly what a loader produced plus `gold`; injectors
copy and edit those dicts. Everything written is deterministic: keys sorted,
no timestamps, no set iteration order leaking into output.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TurnDict = dict[str, Any]
"""One turn in the public turn-JSONL shape (plus `meta`, later `gold`)."""

SpecDoc = dict[str, Any]
"""A spec document in the public spec format (what `parse_spec` reads)."""


def read_json(path: Path) -> Any:
    """Read JSON or gzip-compressed JSON (`*.gz`)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def dumps_line(obj: Any) -> str:
    """One JSONL line, byte-stable across runs (sorted keys, no ASCII escaping)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(dumps_line(row) + "\n")
            n += 1
    return n


def token_char_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the space-separated tokens of `text` (ConvLab tokenisation)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for tok in text.split(" "):
        if tok:
            spans.append((pos, pos + len(tok)))
        pos += len(tok) + 1
    return spans


def dedupe(items: Iterable[str]) -> list[str]:
    """Unique items in first-seen order."""
    seen: dict[str, None] = {}
    for it in items:
        seen.setdefault(it, None)
    return list(seen)
