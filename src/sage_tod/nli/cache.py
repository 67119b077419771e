"""Pair-score cache: in memory for the process, on disk (SQLite) across runs.

Keys hash the model fingerprint, the backend and both texts, so a cached
score is only ever reused for the exact same model, numerics and claim.
Floats are stored as SQLite REALs (IEEE doubles), so a cached score is
bit-identical to the computed one. A cache that cannot be opened or written
degrades to memory only: caching is an optimisation, never a reason to fail.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from sage_tod.locations import data_home
from sage_tod.nli.backend import Pair, Probs

# the one definition of the pair-score table (the worker-cache merge creates it too)
SCORES_TABLE = ("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, "
                "ent REAL NOT NULL, neu REAL NOT NULL, con REAL NOT NULL)")

log = logging.getLogger("sage_tod.nli")


def default_cache_path() -> Path:
    return data_home() / "nli-scores.sqlite"


def _valid_row(e: object, n: object, c: object) -> Probs | None:
    """A stored row as probabilities, or None when it cannot be one (a damaged or
    hand-edited cache): such a row is treated as a miss, recomputed and replaced."""
    try:
        probs = (float(e), float(n), float(c))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not all(0.0 <= p <= 1.0 for p in probs) or abs(sum(probs) - 1.0) > 1e-3:
        return None  # NaN fails the range test too
    return probs


class ScoreCache:
    """`get_many`/`put_many` over (premise, hypothesis) for one model namespace."""

    def __init__(self, namespace: str, path: str | Path | None = None) -> None:
        self.namespace = namespace
        self.path = Path(path) if path else None
        self._mem: dict[str, Probs] = {}
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.bad_rows = 0
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.path), timeout=10.0, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(SCORES_TABLE)
                db.commit()
                self._db = db
            except (OSError, sqlite3.Error) as exc:
                log.warning("NLI score cache %s unusable (%s); caching in memory only",
                            self.path, exc)
                self._db = None

    def key(self, pair: Pair) -> str:
        h = hashlib.sha256()
        for part in (self.namespace, pair[0], pair[1]):
            h.update(part.encode("utf-8") + b"\x00")
        return h.hexdigest()

    def get_many(self, pairs: Sequence[Pair]) -> dict[Pair, Probs]:
        found: dict[Pair, Probs] = {}
        todo: dict[str, Pair] = {}
        with self._lock:
            for pair in pairs:
                k = self.key(pair)
                if k in self._mem:
                    found[pair] = self._mem[k]
                else:
                    todo[k] = pair
            if todo and self._db is not None:
                keys = list(todo)
                try:
                    for i in range(0, len(keys), 500):
                        part = keys[i:i + 500]
                        q = ("SELECT key, ent, neu, con FROM scores WHERE key IN ("
                             + ",".join("?" * len(part)) + ")")
                        for k, e, n, c in self._db.execute(q, part):
                            probs = _valid_row(e, n, c)
                            if probs is None or k not in todo:
                                self.bad_rows += 1  # recomputed and written over
                                continue
                            self._mem[k] = probs
                            found[todo[k]] = probs
                except sqlite3.Error as exc:
                    log.warning("NLI score cache read failed (%s); recomputing", exc)
        self.hits += len(found)
        self.misses += len(set(pairs)) - len(found)
        return found

    def put_many(self, scored: Mapping[Pair, Probs] | Iterable[tuple[Pair, Probs]]) -> None:
        items = list(scored.items()) if isinstance(scored, Mapping) else list(scored)
        rows = [(self.key(p), *probs) for p, probs in items]
        with self._lock:
            for k, e, n, c in rows:
                self._mem[k] = (e, n, c)
            if self._db is not None and rows:
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO scores (key, ent, neu, con) VALUES (?,?,?,?)",
                        rows)
                    self._db.commit()
                except sqlite3.Error as exc:
                    log.warning("NLI score cache write failed (%s); keeping scores in memory",
                                exc)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
