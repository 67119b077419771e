"""Process-wide S2 resources: one backend, one scorer and one encoder per setting.

Evaluators, `calibrate` sweeps and benchmarks all build S2 stages; sharing
these here means the model is loaded once per process and the in-memory score
cache is shared by every stage that uses the same model and backend.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sage_tod.nli.backend import DEFAULT_BATCH, load_backend, threads_from_env
from sage_tod.nli.cache import ScoreCache, default_cache_path
from sage_tod.nli.paraphrase import ParaphraseEncoder
from sage_tod.nli.resolve import resolve_model
from sage_tod.nli.scorer import NLIScorer

ENV_CACHE = "SAGE_TOD_NLI_CACHE"
_OFF = {"", "none", "off", "memory", ":memory:", "0", "false"}
_SCORERS: dict[tuple[str, str, str, int, int], NLIScorer] = {}
_PARAS: dict[tuple[int, str, bool], ParaphraseEncoder] = {}
# S2's paraphrase encoder runs fp32 unless told otherwise. int8 (dynamic quantisation) is
# 2-3x faster and decided exactly what fp32 decides on every benchmark slice, but its
# activation scale is computed over the whole batch, so a text's vector (and a
# rationale's cosine) depends on what it was batched with: the same turn could read
# differently in a resumed run or on the Ray engine (docs/results-speed.md, round 4)
DEFAULT_PARAPHRASE_INT8 = False
_LOCK = threading.Lock()


def cache_location(cache_path: str | Path | None) -> Path | None:
    """None -> $SAGE_TOD_NLI_CACHE -> the default file; 'off'/'none'/'' -> memory only."""
    if cache_path is None:
        cache_path = os.environ.get(ENV_CACHE)
        if cache_path is None:
            return default_cache_path()
    if str(cache_path).strip().lower() in _OFF:
        return None
    return Path(cache_path).expanduser()


def get_scorer(model: str | None = None, backend: str = "auto",
               cache_path: str | Path | None = None, threads: int | str | None = None,
               batch_size: int = DEFAULT_BATCH) -> tuple[NLIScorer | None, str | None]:
    """(scorer, None), or (None, why) when no model is found or it cannot be loaded.

    A model the user named (`model`, `$SAGE_TOD_NLI_MODEL`) that is not there raises
    `resolve.ModelNotFound` instead: that is a mistake to report, not a reason to
    run without S2.
    """
    res = resolve_model(model)
    if res.model is None:
        return None, res.missing_message()
    n = int(threads) if threads not in (None, "") else None
    try:
        be = load_backend(res.model, backend, threads=n)
    except Exception as exc:  # corrupt weights raise the loader's own error types
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        return None, f"NLI model {res.model} could not be loaded ({type(exc).__name__}: {first})"
    loc = cache_location(cache_path)
    key = (be.model_key, be.name, str(loc), getattr(be, "threads", 0), batch_size)
    with _LOCK:
        sc = _SCORERS.get(key)
        if sc is None:
            # everything that determines a score besides the pair's text: the model's
            # content hash (weights, config, tokenizer, shipped graph), the backend and
            # its numerics, and the truncation length
            max_len = getattr(getattr(be, "tokenizer", None), "max_length", "?")
            cache = ScoreCache(f"{be.model_key}:{be.name}:len{max_len}", loc)
            sc = NLIScorer(be, cache, batch_size)
            _SCORERS[key] = sc
    return sc, None


def get_paraphrase(threads: int | str | None = None,
                   cache_path: str | Path | None = None,
                   int8: bool = DEFAULT_PARAPHRASE_INT8) -> ParaphraseEncoder:
    """The shared encoder for a thread count, cache file and precision; it loads its
    weights only when first asked to embed a text that is not cached."""
    n = threads_from_env(int(threads) if threads not in (None, "") else None)
    loc = cache_location(cache_path)
    key = (n, str(loc), int8)
    with _LOCK:
        enc = _PARAS.get(key)
        if enc is None:
            enc = _PARAS[key] = ParaphraseEncoder(threads=n, cache_path=loc, int8=int8)
        return enc
