"""Memos for the readers: the same utterance and the same value are read again and again.

S1 looks for every value in every utterance of a history, and the extractor's
readers each cut the same user turn, so the readers remember what they found
per text. Two shapes recur:

- `memo_list`: a reader returning a list, remembered per argument as a tuple and
  handed out as a fresh list (a caller may change its copy);
- `remembered`: a dict used as a memo that is cleared when it reaches its bound,
  so a log of millions of distinct values cannot grow it without end.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")
_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def memo_list(maxsize: int) -> Callable[[Callable[_P, list[_T]]], Callable[_P, list[_T]]]:
    """Remember a list-returning reader per argument (least recently used, `maxsize`)."""
    def wrap(fn: Callable[_P, list[_T]]) -> Callable[_P, list[_T]]:
        def freeze(*args: Any, **kwargs: Any) -> tuple[_T, ...]:
            return tuple(fn(*args, **kwargs))

        frozen: Callable[..., tuple[_T, ...]] = lru_cache(maxsize=maxsize)(freeze)

        @wraps(fn)
        def call(*args: _P.args, **kwargs: _P.kwargs) -> list[_T]:
            return list(frozen(*args, **kwargs))

        return call
    return wrap


def remembered(memo: dict[_K, _V], key: _K, build: Callable[[_K], _V], bound: int) -> _V:
    """`memo[key]`, built by `build(key)` the first time; the memo is emptied when it
    holds `bound` entries."""
    got = memo.get(key)
    if got is None:
        if len(memo) >= bound:
            memo.clear()
        got = memo[key] = build(key)
    return got
