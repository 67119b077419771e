"""Shared pieces of the dataset loaders: the turn-dict shape, JSON I/O, value pools.

Loaders yield plain dicts in the public turn-JSONL shape (docs/formats.md) so
that a slice line is exactly what a loader produced plus `gold`; injectors
copy and edit those dicts. Everything written is deterministic: keys sorted,
no timestamps, no set iteration order leaking into output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sage_tod.importers.base import TurnDict
from sage_tod.importers.records import dedupe, read_json, token_char_spans

__all__ = ["SpecDoc", "TurnDict", "dedupe", "dumps_line", "read_json", "token_char_spans",
           "write_jsonl"]


SpecDoc = dict[str, Any]
"""A spec document in the public spec format (what `parse_spec` reads)."""


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
