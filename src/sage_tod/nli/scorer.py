"""Backend + cache: the one entry point that turns claims into probabilities.

Pairs are de-duplicated, looked up in the cache, and every miss of the call
goes to the model in one length-sorted, dynamically padded batch run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sage_tod.nli.backend import DEFAULT_BATCH, NLIBackend, Pair, Probs
from sage_tod.nli.cache import ScoreCache


@dataclass
class ScorerStats:
    pairs: int = 0
    model_pairs: int = 0
    model_seconds: float = 0.0
    calls: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class NLIScorer:
    """Scores pairs with `backend`, remembering every score in `cache`."""

    def __init__(self, backend: NLIBackend, cache: ScoreCache | None = None,
                 batch_size: int = DEFAULT_BATCH) -> None:
        self.backend = backend
        self.cache = cache or ScoreCache(f"{backend.model_key}:{backend.name}")
        self.batch_size = max(1, batch_size)
        self.stats = ScorerStats()

    @property
    def model_key(self) -> str:
        return self.backend.model_key

    def score(self, pairs: Sequence[Pair]) -> list[Probs]:
        if not pairs:
            return []
        self.stats.pairs += len(pairs)
        found = self.cache.get_many(pairs)
        todo = list(dict.fromkeys(p for p in pairs if p not in found))
        if todo:
            t0 = time.perf_counter()
            probs = self.backend.score(todo, self.batch_size)
            self.stats.model_seconds += time.perf_counter() - t0
            self.stats.model_pairs += len(todo)
            self.stats.calls += 1
            self.stats.batch_sizes.append(len(todo))
            fresh = dict(zip(todo, probs, strict=True))
            self.cache.put_many(fresh)
            found.update(fresh)
        return [found[p] for p in pairs]


def margin(p: Probs) -> float:
    """m = p(ent) - p(contra), the paper's gate statistic."""
    return p[0] - p[2]
