"""Paraphrase-encoder embeddings kept across runs, beside the NLI pair scores.

The encoder is the second model S2 runs; with the pair scores cached, it was
what a warm run still computed. Vectors are stored as the encoder's float32
bytes in an `embeddings` table of the score cache's SQLite file, so a cached
vector is bit-identical to the computed one, emptying the score cache empties
both, and a worker's file merges into the main one with the scores
(`merge_cache_files`). Keys hash the encoder's fingerprint, its backend and the
text. Like the score cache, a file that cannot be used degrades to memory only.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sage_tod.nli.cache import SCORES_TABLE

log = logging.getLogger("sage_tod.nli")

_TABLE = "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vec BLOB NOT NULL)"


class EmbeddingCache:
    """`get_many`/`put_many` of unit vectors by text, for one encoder namespace."""

    def __init__(self, namespace: str, path: str | Path | None = None) -> None:
        self.namespace = namespace
        self.path = Path(path) if path else None
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.path), timeout=10.0, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_TABLE)
                db.commit()
                self._db = db
            except (OSError, sqlite3.Error) as exc:
                log.warning("embedding cache %s unusable (%s); caching in memory only",
                            self.path, exc)

    def key(self, text: str) -> str:
        h = hashlib.sha256()
        for part in (self.namespace, text):
            h.update(part.encode("utf-8") + b"\x00")
        return h.hexdigest()

    def get_many(self, texts: Sequence[str]) -> dict[str, Any]:
        """The stored vectors of those texts that have one (float32 numpy arrays)."""
        if self._db is None or not texts:
            return {}
        import numpy as np

        by_key = {self.key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, Any] = {}
        with self._lock:
            try:
                for i in range(0, len(keys), 500):
                    part = keys[i:i + 500]
                    q = ("SELECT key, vec FROM embeddings WHERE key IN ("
                         + ",".join("?" * len(part)) + ")")
                    for k, blob in self._db.execute(q, part):
                        found[by_key[k]] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.Error as exc:
                log.warning("embedding cache read failed (%s); recomputing", exc)
        return found

    def put_many(self, vecs: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        if self._db is None:
            return
        import numpy as np

        items = list(vecs.items()) if isinstance(vecs, Mapping) else list(vecs)
        rows = [(self.key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in items]
        if not rows:
            return
        with self._lock:
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO embeddings (key, vec) VALUES (?, ?)", rows)
                self._db.commit()
            except sqlite3.Error as exc:
                log.warning("embedding cache write failed (%s); keeping vectors in memory",
                            exc)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def merge_cache_files(target: Path, sources: Iterable[Path]) -> int:
    """Copy the pair scores and embeddings of `sources` into `target`; rows added.

    Used after a parallel run, where each worker wrote its own file (SQLite
    serialises writers, and one file per worker keeps them from waiting on
    each other). Keys are content hashes, so merging is a plain union.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(target), timeout=60.0)
    added = 0
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(SCORES_TABLE)
        db.execute(_TABLE)
        for src in sources:
            if not src.is_file():
                continue
            before = db.total_changes
            db.execute("ATTACH DATABASE ? AS w", (str(src),))
            try:
                tables = {r[0] for r in db.execute(
                    "SELECT name FROM w.sqlite_master WHERE type='table'")}
                if "scores" in tables:
                    db.execute("INSERT OR IGNORE INTO main.scores SELECT key, ent, neu, con "
                               "FROM w.scores")
                if "embeddings" in tables:
                    db.execute("INSERT OR IGNORE INTO main.embeddings SELECT key, vec "
                               "FROM w.embeddings")
                db.commit()
            finally:
                db.execute("DETACH DATABASE w")
            added += db.total_changes - before
    finally:
        db.close()
    return added
