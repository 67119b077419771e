"""A persistent response cache (SQLite) so a rerun makes zero calls.

Key: SHA-256 of the canonical JSON of (model, messages, parameters) - the
endpoint and the key are deliberately not part of it, so the same model
behind OpenAI or Azure shares answers, and nothing secret is ever hashed or
stored. Values: the answer texts, the token usage and the latency of the
original call, so cost and latency reports survive a cached rerun (a cached
answer still reports what it cost to obtain; `cached=True` says it was free now).

Only successful, well-formed responses are cached: an error or a timeout is
retried on the next run, not replayed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    texts TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_ms REAL NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(model: str, messages: Sequence[Mapping[str, str]],
              params: Mapping[str, Any]) -> str:
    """Stable across processes and dict orders."""
    blob = json.dumps({"model": model, "messages": list(messages), "params": dict(params)},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    texts: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


class ResponseCache:
    """Thread-safe (one connection, one lock); WAL so parallel processes can share a file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        with self._lock:
            # WAL fails on some network file systems; the plain journal works there
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = self._db.execute(
                "SELECT texts, prompt_tokens, completion_tokens, latency_ms FROM responses "
                "WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return CachedResponse(tuple(json.loads(row[0])), int(row[1]), int(row[2]), float(row[3]))

    def put(self, key: str, model: str, value: CachedResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, json.dumps(list(value.texts), ensure_ascii=False),
                 value.prompt_tokens, value.completion_tokens, value.latency_ms, time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
