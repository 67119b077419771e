"""A persistent response cache (SQLite) so a rerun makes zero calls.

Key: SHA-256 of the canonical JSON of (endpoint URL, model, messages,
parameters): two servers that call their models by one name ("gpt-4.1" on
OpenAI and on a local proxy) never share answers. The API key is never part
of it, and nothing secret is ever hashed or stored (answers are redacted
before they are cached, `llm.redact`). A cache file that is not a database
is moved aside (`<file>.corrupt`) and a fresh one started (`open_cache`); a
row that cannot be read is a miss and is overwritten. Values: the answer
texts, the token usage and the latency of the
original call, so cost and latency reports survive a cached rerun (a cached
answer still reports what it cost to obtain; `cached=True` says it was free now).

Only successful, well-formed responses are cached: an error or a timeout is
retried on the next run, not replayed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
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
              params: Mapping[str, Any], *, endpoint: str = "") -> str:
    """Stable across processes and dict orders."""
    blob = json.dumps({"endpoint": endpoint.rstrip("/"), "model": model,
                       "messages": list(messages), "params": dict(params)},
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
        try:
            texts = json.loads(row[0])
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                return None
            return CachedResponse(tuple(texts), int(row[1]), int(row[2]), float(row[3]))
        except (TypeError, ValueError, RecursionError):
            return None  # a damaged row: a miss, replaced by the fresh answer

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


log = logging.getLogger("sage_tod.llm")


def open_cache(path: str | Path) -> ResponseCache | None:
    """The cache at `path`; a file that is not an SQLite cache is moved aside and a new
    one started; a place where no cache can be made means no cache (with a warning)."""
    p = Path(path)
    try:
        return ResponseCache(p)
    except sqlite3.DatabaseError as exc:
        aside = p.with_name(p.name + ".corrupt")
        log.warning("LLM cache %s is damaged (%s); moved to %s, starting a new one",
                    p, exc, aside)
        try:
            os.replace(p, aside)
            return ResponseCache(p)
        except (OSError, sqlite3.Error) as exc2:
            log.warning("LLM cache unusable (%s); running without a cache", exc2)
            return None
    except (OSError, sqlite3.Error) as exc:
        log.warning("LLM cache %s unusable (%s); running without a cache", p, exc)
        return None
