"""Interval look-ups over one utterance in O(log n), for the extractor's hot loops.

The extractor asks "is this offset inside an earlier span?" once per candidate
value; a linear scan over every earlier span made a long utterance quadratic.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable


class Coverage:
    """A fixed set of [start, end) spans: `covers(x)` says whether any contains x."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        ordered = sorted((s, e) for s, e in spans)
        self._starts = [s for s, _ in ordered]
        self._reach: list[int] = []  # the furthest end among spans starting at or before i
        far = -1
        for _, e in ordered:
            far = max(far, e)
            self._reach.append(far)

    def covers(self, x: int) -> bool:
        i = bisect_right(self._starts, x)
        return i > 0 and self._reach[i - 1] > x


class Taken:
    """Spans claimed so far: `overlaps(s, e)` is "some claimed [ts, te) has s < te and
    ts < e", kept as a sorted union of strictly overlapping spans (same answers)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, s: int, e: int) -> bool:
        i = bisect_right(self._starts, e - 1) if e > s else bisect_right(self._starts, s - 1)
        # the last merged span starting before e (before s for an empty query)
        return i > 0 and self._ends[i - 1] > s and self._starts[i - 1] < e

    def add(self, s: int, e: int) -> None:
        if e <= s:  # an empty span claims no character (extractions are never empty)
            return
        i = bisect_right(self._starts, s)
        lo, hi = i, i
        # absorb spans that strictly overlap [s, e)
        while lo > 0 and self._ends[lo - 1] > s and self._starts[lo - 1] < e:
            lo -= 1
        while hi < len(self._starts) and self._starts[hi] < e and self._ends[hi] > s:
            hi += 1
        if lo < hi:
            s, e = min(s, self._starts[lo]), max(e, max(self._ends[lo:hi]))
        self._starts[lo:hi] = [s]
        self._ends[lo:hi] = [e]

    def extend(self, spans: Iterable[tuple[int, int]]) -> None:
        for s, e in spans:
            self.add(s, e)
