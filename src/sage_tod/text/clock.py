"""Clock times as people write them, in user text and in state values.

`textmatch.find_times` reads "6:30 pm", "18:30", "at 7", "half past seven in the
evening". Dialogue data also writes digits with day-part words — "half past 6
in the evening", "2 in the afternoon", "evening 4:30", "quarter to 12 in the
morning" — in the user's text and, verbatim, in the state. This module widens
`find_times` by the words around each time it finds, and reads a state value
the same way, so the extractor can tell whether s_t already holds the time the
user stated in any of these spellings.
"""

from __future__ import annotations

import re

from sage_tod.text.match import find_times
from sage_tod.text.normalize import fold, normalize_time

_PM_PARTS = frozenset({"afternoon", "evening", "night", "tonight", "pm"})
_AM_PARTS = frozenset({"morning", "am"})
_PART = r"(morning|afternoon|evening|night|tonight)"
_PREFIX_RE = re.compile(r"(?:(?P<q>half|quarter)\s+(?P<rel>past|to)\s+|(?:in\s+the\s+)?"
                        + _PART.replace("(", "(?P<part>", 1) + r"\s+(?:at\s+)?)$")
_SUFFIX_RE = re.compile(r"^\s*(?:o['\"]?\s?clock\s+)?(?:in\s+the\s+|at\s+|this\s+)?"
                        + _PART.replace("(", "(?P<part>", 1) + r"\b")
# words that may follow a bare hour ("at 7 please", "at 7 or 8", "at 7 on Friday")
_AFTER_BARE_HOUR = frozenset({"o", "oclock", "and", "or", "please", "then", "on", "in", "at",
                              "for", "tomorrow", "today", "tonight", "instead", "if", "is",
                              "would", "will", "works", "sounds", "should", "but", "so",
                              "thanks", "thank", "sharp", "ish", "latest", "the", "this",
                              "next", "with", "that", "it", "i", "we", "to", "hours", "hrs"})
_BARE_HOUR_RE = re.compile(r"\b(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\b")


def _hm(reading: str) -> tuple[int, int]:
    h, m = reading.split(":")
    return int(h), int(m)


def _apply(readings: frozenset[str], q: str | None, rel: str | None,
           part: str | None) -> frozenset[str]:
    out: set[str] = set()
    for r in readings:
        h, m = _hm(r)
        if q:
            if m != 0:
                return readings  # "half past 6:30" is no clock time
            m = 30 if q == "half" else 15
            if rel == "to":
                h, m = (h - 1) % 24, 60 - m
        if part in _PM_PARTS and h < 12:
            h += 12
        elif part in _AM_PARTS and h >= 12 and not (h == 12 and part == "morning"):
            h -= 12
        if part in _PM_PARTS and h == 24:
            h = 12
        out.add(f"{h % 24:02d}:{m:02d}")
    if part in _PM_PARTS:
        out = {r for r in out if _hm(r)[0] >= 12} or out
    elif part in _AM_PARTS:
        out = {r for r in out if _hm(r)[0] < 12} or out
    return frozenset(out)


def find_clock_times(text: str) -> list[tuple[int, int, frozenset[str]]]:
    """Times in `text` as (start, end, HH:MM readings), widened by the words around each."""
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    found = list(find_times(text))
    # digits after "half past" / "quarter to" / "evening" that find_times does not take
    # as a time without a preposition
    for m in _BARE_HOUR_RE.finditer(folded):
        if any(s <= m.start() < e for s, e, _ in found):
            continue
        before = folded[max(0, m.start() - 30):m.start()]
        if re.match(r"(?:st|nd|rd|th)\b|[/\d]", folded[m.end():]):
            continue
        # "8 in the evening" is a time, but "a table for 3 in the evening" counts people
        suffix_only = (_SUFFIX_RE.match(folded[m.end():]) is not None
                       and not before.rstrip().endswith(("for", "of", "with")))
        if _PREFIX_RE.search(before) or suffix_only:
            t = normalize_time(m.group())
            if t is not None:
                h, mm = _hm(t)
                both = {t} | ({f"{h + 12:02d}:{mm:02d}"} if 1 <= h < 12 else set())
                found.append((m.start(), m.end(), frozenset(both)))
    out: list[tuple[int, int, frozenset[str]]] = []
    for s, e, readings in sorted(found):
        if re.match(r"(?:st|nd|rd|th)\b", folded[e:]):
            continue  # "from 10th of this month": a day, not ten o'clock
        nxt = re.match(r"\s*([a-z]+)", folded[e:])
        if (len(readings) > 1 and ":" not in folded[s:e] and nxt
                and nxt.group(1) not in _AFTER_BARE_HOUR and not _SUFFIX_RE.match(folded[e:])):
            continue  # "at 11 Peas Hill", "around 6 different people": no clock time
        raw = folded[s:e]
        if re.search(r"[ap]\.?\s?m\b|noon|midnight|morning|afternoon|evening|night", raw):
            out.append((s, e, readings))  # the day part is already read
            continue
        pre = _PREFIX_RE.search(folded[max(0, s - 30):s].rstrip() + " ")
        suf = _SUFFIX_RE.match(folded[e:])
        q = rel = part = None
        start, end = s, e
        if pre:
            q, rel = pre.group("q"), pre.group("rel")
            part = pre.group("part")
            start = s - (len(folded[max(0, s - 30):s].rstrip() + " ") - pre.start())
        if suf:
            part = suf.group("part")
            end = e + suf.end()
        while end > start and folded[end - 1] == " ":
            end -= 1
        out.append((max(0, start), end, _apply(readings, q, rel, part)))
    return out


def time_readings(value: str) -> frozenset[str] | None:
    """Every HH:MM a written time value may mean ("2 in the afternoon" -> 14:00), or None
    when the value is no time this module reads."""
    t = normalize_time(value)
    if t is not None:
        return frozenset({t})
    found = find_clock_times(value)
    if not found:
        found = find_clock_times("at " + value)
        found = [(s - 3, e - 3, r) for s, e, r in found]
    if len(found) != 1:
        return None
    s, e, readings = found[0]
    rest = (value[:max(0, s)] + value[e:]).strip(" .,").lower()
    if rest and not re.fullmatch(r"(?:around|about|at|by|in the|the)?", rest):
        return None
    return readings
