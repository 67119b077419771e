"""Clock times, the one reader: in a state value and in what people say.

People write a time "18:30", "6:30 pm", "6.30pm", "6pm", "at 7", "noon",
"half past seven in the evening", "half past 6 in the evening", "2 in the
afternoon", "evening 4:30", "quarter to 12 in the morning", "after 5pm". The
state diff, the extractor, S1's support check and the predicates all read
times here, so two spellings are one time everywhere:

- `normalize_time(value)` is the comparison key of a value: one "HH:MM". A
  value without a day part is read as written, on the 24-hour clock ("7:30"
  and "half past 7" are 07:30), the convention of the datasets' states.
- `find_times(text)` finds the times a text states, each with every HH:MM it
  may mean ("at 7:30" is 07:30 or 19:30) and the word that relates it to the
  slot ("after", "by", ...).

A text states a value when the value's key is one of a mention's readings.
Numbers that only look like times are not read: ordinals ("the 21st"), years
("2030"), typos ("18;30"), counts ("for 7 people") and addresses ("at 11 Peas
Hill"). A value may also be written "1830" (a state's spelling); in a text
four digits are a year ("by 2030") unless "hrs" or "hours" follows ("1300hrs").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.text.memo import memo_list
from sage_tod.text.normalize import fold
from sage_tod.text.spans import Coverage

# ---------------------------------------------------------------- a value
_TIME_VALUE_RE = re.compile(
    r"^(?P<h>\d{1,2})(?:\s*[:.h]\s*(?P<m>\d{2}))?\s*(?P<mer>a\.?\s?m\.?|p\.?\s?m\.?)?$"
)
# what may stand around a time value ("around 7pm", "at 2 in the afternoon")
_VALUE_FILLER = re.compile(r"(?:around|about|at|by|in the|the)?")

# ---------------------------------------------------------------- a text
# Clock times with digits: "6:30 pm", "6.30pm", "18:30", "7 pm", "7 o'clock", "noon".
# A number running on into digits, an ordinal suffix or a ";30" is no time.
_NOT_AFTER = r"(?!\d|[:;.,]\d|(?:st|nd|rd|th)\b)"
# (The look-ahead is a necessary condition, there to be fast: every match starts with a
# digit or the "n"/"m" of noon, midday, midnight, and the engine rules a position out on
# that one character instead of trying the whole pattern there.)
_TIME_RE = re.compile(
    r"(?=[\dnm])\b(?:(?P<h>\d{1,2})(?:\s*[:.]\s*(?P<m>\d{2}))?" + _NOT_AFTER
    + r"\s*(?P<mer>a\.?\s?m\b\.?|p\.?\s?m\b\.?|o['\"]?\s?clock)?|(?P<word>noon|midday|midnight))",
)
# four digits are a time only as hours ("1200hrs", "1830 hours"); else a year ("2030")
_HOURS_RE = re.compile(r"\b(?P<h>[01]\d|2[0-3])(?P<m>[0-5]\d)\s?(?:hrs|hours|h)\b")
# hour and minutes written apart ("by 12 30"); a time only after a time word, and never
# before a count noun ("at 2 30 people" does not occur; "for 2 30 minute slots" might)
_SPACED_RE = re.compile(r"\b(?P<h>[01]?\d|2[0-3]) (?P<m>[0-5]\d)\b(?! ?(?:minutes?|mins?"
                        r"|people|persons?|nights?|days?|pounds|gbp|%))")
# the word before a bare number that makes it a time ("at 7", "after 5")
_TIME_CONTEXT = frozenset({"at", "by", "after", "before", "around", "about", "from", "until",
                           "till", "arrive", "leave", "past"})
# the word before a time that relates it to a slot ("after 5pm": leave at or after)
RELATIONS = frozenset({"at", "by", "after", "before", "around", "about", "from", "until",
                       "till", "past", "since"})
# a number directly followed by a count word is not a time
_COUNT_WORDS = frozenset({"people", "persons", "nights", "stars", "minutes", "hours", "days",
                          "guests"})
_HOUR_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_HOUR_ALT = "|".join(_HOUR_WORDS)  # "one|two|...|twelve", for the patterns below
_WORD_TIME_RE = re.compile(
    r"\b(?:(?P<q>half|quarter)\s+(?P<rel>past|to)\s+)?(?P<hw>" + _HOUR_ALT + r")"
    r"(?:\s+o'?\s?clock)?"
    r"(?:\s+(?:in\s+the\s+)?(?P<part>morning|afternoon|evening|night|tonight|"
    r"a\.?\s?m\b\.?|p\.?\s?m\b\.?))?\b"
)
# an hour in words after a time word, with its minutes in words ("at seven", "leave at
# eleven fifteen", "around six forty five"), as a bare digit hour after a time word is
_MINUTE_WORDS = {"o five": 5, "oh five": 5, "ten": 10, "fifteen": 15, "twenty": 20,
                 "twenty five": 25, "thirty": 30, "thirty five": 35, "forty": 40,
                 "forty five": 45, "fifty": 50, "fifty five": 55}
_WORD_HOUR_AFTER_CUE_RE = re.compile(
    r"(?=[abftu])"  # its first letters (test_round16_screens)
    r"\b(?:at|by|after|before|around|about|until|till|from)\s+(?P<hw>" + _HOUR_ALT + r")"
    r"(?:\s+(?P<mw>o\s?five|oh\s?five|"
    r"(?:twenty|thirty|forty|fifty)(?:[\s-]five)?|ten|fifteen))?\b"
    r"(?!\s+(?:people|persons?|nights?|stars?|minutes?|hours?|days?|guests?|tickets?|rooms?"
    r"|of|or more|different|more|other|places?|options?|hotels?|restaurants?|trains?"
    r"|adults?|children|kids|seats?|that|which|who|with|where|near|in|for|you|i|we|they"
    r"|is|are|was|were)\b)")
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
_ORDINAL_AFTER = re.compile(r"(?:st|nd|rd|th)\b")


@dataclass(frozen=True)
class TimeMention:
    """A time stated in a text: its span, every HH:MM it may mean, and its relation.

    `relation` is the word just before it when that word relates the time to a
    slot ("after" in "after 5pm", "by" in "arrive by 7"), else None.
    """

    start: int
    end: int
    readings: frozenset[str]
    relation: str | None = None


def _clock(hour: int, minute: int, mer: str) -> str | None:
    if mer == "pm" and hour < 12:
        hour += 12
    elif mer == "am" and hour == 12:
        hour = 0
    if hour > 24 or minute > 59:
        return None
    return f"{hour % 24:02d}:{minute:02d}"


def _strict_time(value: str) -> str | None:
    """"HH:MM" for a clock time written in 12- or 24-hour digits ("6:30 pm", "18:30")."""
    v = fold(value).strip()
    if v in {"noon", "midday", "12 noon"}:
        return "12:00"
    if v == "midnight":
        return "00:00"
    v = v.replace("o'clock", "").replace("oclock", "").strip()
    m = _TIME_VALUE_RE.match(v)
    if not m and re.fullmatch(r"\d{4}", v):  # a state's "1830"
        m = _TIME_VALUE_RE.match(f"{v[:2]}:{v[2:]}")
    if not m:
        return None
    hour = int(m.group("h"))
    mer = (m.group("mer") or "").replace(".", "").replace(" ", "")
    if mer and not 1 <= hour <= 12:
        return None
    return _clock(hour, int(m.group("m") or 0), mer)


def normalize_time(value: str) -> str | None:
    """The comparison key of a time value ("2 in the afternoon" -> "14:00"), or None
    when the value is no time this module reads.

    Digits are read directly; other spellings as the one time `find_times` reads
    in the value, with at most "at"/"around"/... around it. Of several readings
    the one as written (24-hour) is the key: "half past 7" is 07:30, as "7:30" is.
    """
    t = _strict_time(value)
    if t is not None:
        return t
    found = find_times(value)
    shift = 0
    if not found:
        found, shift = find_times("at " + value), 3
    if len(found) != 1:
        return None
    f = found[0]
    s, e = max(0, f.start - shift), max(0, f.end - shift)
    rest = (value[:s] + value[e:]).strip(" .,").lower()
    if rest and not _VALUE_FILLER.fullmatch(rest):
        return None
    return min(f.readings)


# ---------------------------------------------------------------- a text
def _digit_times(folded: str) -> list[tuple[int, int, frozenset[str]]]:
    """Times written with digits or "noon": "6:30 pm", "18:30", "at 7"."""
    out: list[tuple[int, int, frozenset[str]]] = []
    for m in _TIME_RE.finditer(folded):
        word, h, mm, mer = m.group("word", "h", "m", "mer")
        if word:
            t = _strict_time(word)
            if t:
                out.append((m.start(), m.end(), frozenset({t})))
            continue
        if h is None:
            continue
        mer = mer or ""
        if not mm and not mer:  # a bare number: a time only after a time word
            prev = _word_before(folded, m.start())
            if not (prev and prev[0] in _TIME_CONTEXT):
                continue
        if mer.startswith("o"):
            mer = ""
        tail = folded[m.end():m.end() + 12].split()[:1]
        if not mm and not mer and tail and tail[0] in _COUNT_WORDS:
            continue
        t = _strict_time(f"{h}:{mm or '00'} {mer}".strip())
        if t is None:
            continue
        readings = {t}
        hour = int(h)
        if not mer and 1 <= hour < 12:
            readings.add(f"{hour + 12:02d}:{int(mm or 0):02d}")
        said = m.group().rstrip()
        if said.endswith(".") and "." not in mer[:-1]:
            said = said[:-1]  # "11:45 am." ends a sentence; "a.m." keeps its dot
        out.append((m.start(), m.start() + len(said), frozenset(readings)))
    if _HOURS_SCREEN.search(folded) is not None:
        for m in _HOURS_RE.finditer(folded):
            out.append((m.start(), m.end(), frozenset({f"{m.group('h')}:{m.group('m')}"})))
    return out


def _spaced_times(folded: str) -> list[tuple[int, int, frozenset[str]]]:
    """"depart by 12 30" (MultiWOZ PMUL3239): hour and minutes apart, after a time word."""
    out: list[tuple[int, int, frozenset[str]]] = []
    if _SPACED_SCREEN.search(folded) is None:
        return out
    for m in _SPACED_RE.finditer(folded):
        prev = _word_before(folded, m.start())
        if not (prev and prev[0] in _TIME_CONTEXT):
            continue
        hour, minute = int(m.group("h")), int(m.group("m"))
        readings = {f"{hour:02d}:{minute:02d}"}
        if 1 <= hour < 12:
            readings.add(f"{hour + 12:02d}:{minute:02d}")
        out.append((m.start(), m.end(), frozenset(readings)))
    return out


def _word_times(folded: str) -> list[tuple[int, int, frozenset[str]]]:
    """Times written in words: "half past seven in the evening", "seven o'clock"."""
    out: list[tuple[int, int, frozenset[str]]] = []
    for m in _WORD_TIME_RE.finditer(folded):
        if not (m.group("q") or m.group("part") or "clock" in m.group(0)):
            continue
        hour = _HOUR_WORDS[m.group("hw")]
        minute = 0
        if m.group("q"):
            minute = 30 if m.group("q") == "half" else 15
            if m.group("rel") == "to":
                hour, minute = (hour - 1) % 12 or 12, 60 - minute
        part = (m.group("part") or "").replace(".", "").replace(" ", "")
        readings = set()
        if part in _PM_PARTS:
            readings.add(f"{(hour % 12) + 12:02d}:{minute:02d}")
        elif part in _AM_PARTS:
            readings.add(f"{hour % 12:02d}:{minute:02d}")
        else:
            readings |= {f"{hour % 12:02d}:{minute:02d}", f"{(hour % 12) + 12:02d}:{minute:02d}"}
            if hour == 12:
                readings.add("12:00" if minute == 0 else f"12:{minute:02d}")
        out.append((m.start(), m.end(), frozenset(readings)))
    for m in _WORD_HOUR_AFTER_CUE_RE.finditer(folded):
        start = m.start("hw")
        if any(a < m.end() and start < b for a, b, _ in out):
            continue  # "at seven o'clock", "at half past seven": read above
        if m.group("hw") == "one" and not m.group("mw"):
            continue  # "how about one that serves ...": the pronoun, far more often
        hour = _HOUR_WORDS[m.group("hw")]
        minute = _MINUTE_WORDS[re.sub(r"[\s-]+", " ", m.group("mw"))] if m.group("mw") else 0
        readings = {f"{hour:02d}:{minute:02d}"} if hour == 12 else {
            f"{hour:02d}:{minute:02d}", f"{hour + 12:02d}:{minute:02d}"}
        out.append((start, m.end(), frozenset(readings)))
    return out


# a number right after a time word: a time, unless the reader says why not
_CLOCKISH = re.compile(r"(?=[abut])\b(?:at|by|after|before|around|about|until|till)\s+(?:half\s+)?"
                       r"(?:\d{1,2}\b|" + _HOUR_ALT + r")\b", re.IGNORECASE)


def has_unread_clock(text: str) -> bool:
    """`text` has a number after a time word that no time `find_times` reads covers
    ("at 11 Peas Hill", "by half seven"): what it says about the clock is unknown."""
    mentions = find_times(text)
    for m in _CLOCKISH.finditer(text):
        start = m.end() - len(m.group().split()[-1])
        if not any(t.start <= start < t.end for t in mentions):
            return True
    return False


def _hm(reading: str) -> tuple[int, int]:
    h, m = reading.split(":")
    return int(h), int(m)


def _apply(readings: frozenset[str], q: str | None, rel: str | None,
           part: str | None) -> frozenset[str]:
    """Readings after "half past"/"quarter to" before and a day part around a time."""
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


def _bare_hours(folded: str, found: list[tuple[int, int, frozenset[str]]]
                ) -> list[tuple[int, int, frozenset[str]]]:
    """Digits after "half past" / "quarter to" / "evening", or before "in the evening",
    that are a time without a preposition ("half past 6", "2 in the afternoon")."""
    out: list[tuple[int, int, frozenset[str]]] = []
    timed = Coverage((s, e) for s, e, _ in found)
    for m in _BARE_HOUR_RE.finditer(folded):
        if timed.covers(m.start()):
            continue
        before = folded[max(0, m.start() - 30):m.start()]
        if re.match(r"(?:st|nd|rd|th)\b|[/\d]|[;.,:]\d", folded[m.end():m.end() + _AROUND]):
            continue
        # "8 in the evening" is a time, but "a table for 3 in the evening" counts people;
        # "for 4 o'clock in the evening" is a time again
        suf = _SUFFIX_RE.match(folded[m.end():m.end() + _AROUND])
        suffix_only = suf is not None and ("clock" in suf.group()
                                           or not before.rstrip().endswith(("for", "with")))
        if _PREFIX_RE.search(before) or suffix_only:
            t = _strict_time(m.group())
            if t is not None:
                h, mm = _hm(t)
                both = {t} | ({f"{h + 12:02d}:{mm:02d}"} if 1 <= h < 12 else set())
                out.append((m.start(), m.end(), frozenset(both)))
    return out


def _relation(folded: str, start: int) -> str | None:
    prev = _word_before(folded, start)
    return prev[0] if prev and prev[0] in RELATIONS else None


# Look-arounds read a bounded window: slicing the whole rest (or start) of the text for
# every match made long utterances quadratic. The patterns they feed are short.
_AROUND = 64


def _word_before(folded: str, start: int) -> list[str]:
    """The word just before `start` (as `folded[:start].split()[-1:]`, from a window: a
    word longer than the window is never one of the short cue words compared with)."""
    return folded[max(0, start - _AROUND):start].split()[-1:] if start else []


# Every pattern above that yields a time holds a digit, "noon"/"midday"/"midnight" or an
# hour word: a text with none of them states no time (most utterances of a history)
_MAYBE_TIME = re.compile(r"\d|noon|midday|midnight|" + _HOUR_ALT)
# The same test as two searches the regex engine runs fast: a pattern that starts with a
# character class, or with literal words only, skips to the characters that can start a
# match; one that starts with `\d|noon|...` or `\b` tries a match at every position.
# `_MAYBE_TIME` matches somewhere exactly when one of its alternatives does (and the
# look-ahead on `_TIME_RE` above is the same idea for a pattern that must stay whole).
_DIGIT = re.compile(r"\d")
_TIME_WORD = re.compile(r"noon|midday|midnight|" + _HOUR_ALT)


def _maybe_time(folded: str) -> bool:
    """`_MAYBE_TIME.search(folded) is not None`, in two fast searches."""
    return _DIGIT.search(folded) is not None or _TIME_WORD.search(folded) is not None


# Screens of the same kind for two readers whose patterns start with `\b` (necessary
# conditions, tests/test_round15_screens.py): a `_HOURS_RE` match is four digits, an optional
# space and "h" ("1830 hours"), and a `_SPACED_RE` match holds a digit, a space and two
# digits ("12 30"), so a text without those strings has no match.
_HOURS_SCREEN = re.compile(r"\d{4}\s?h")
_SPACED_SCREEN = re.compile(r"\d [0-5]\d")


# Screens for two readers (necessary conditions, tests/test_reading.py): both patterns
# of `_word_times` read an hour word at a word start; `_bare_hours` keeps a number only
# with `_PREFIX_RE` or `_SUFFIX_RE` around it, and each needs one of these words
_HOUR_WORD = re.compile(r"(?=[otfsen])\b(?:" + _HOUR_ALT + r")")
_BARE_HOUR_NEEDLES = ("half", "quarter", "morning", "afternoon", "evening", "night")
# one of them is in a text exactly when this finds one (literal words: a fast search)
_BARE_HOUR_SCREEN = re.compile("|".join(_BARE_HOUR_NEEDLES))
_DAY_PART_SAID = re.compile(r"[ap]\.?\s?m\b|noon|midnight|morning|afternoon|evening|night")
_NEXT_WORD = re.compile(r"\s*([a-z]+)")


@memo_list(maxsize=4096)
def find_times(text: str) -> list[TimeMention]:
    """The times `text` states, earliest first, each with every HH:MM it may mean.

    A time without am/pm or a day part ("at 7:30") has two readings; a bare
    number is a time only after a time word ("at 7") or with a day part
    around it ("2 in the afternoon", "half past 6"). Memoised per text: S1 reads
    the same history utterances for every time value of a dialogue.
    """
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    if not _maybe_time(folded):
        return []  # no digit, hour word or noon: none of the readers below can match
    spaced = _spaced_times(folded)
    words = _word_times(folded) if _HOUR_WORD.search(folded) else []
    found = [t for t in _digit_times(folded) + words
             if not any(a < t[1] and t[0] < b for a, b, _ in spaced)] + spaced
    if _BARE_HOUR_SCREEN.search(folded) is not None:
        found += _bare_hours(folded, found)
    out: list[TimeMention] = []
    for s, e, readings in sorted(found):
        if _ORDINAL_AFTER.match(folded[e:e + _AROUND]):
            continue  # "from 10th of this month": a day, not ten o'clock
        raw = folded[s:e]
        head = folded[max(0, s - 30):s].rstrip() + " "
        pre = _PREFIX_RE.search(head)
        if _DAY_PART_SAID.search(raw):
            # the day part is already read; "quarter to 2 pm" still moves the minutes
            if pre and pre.group("q"):
                start = s - (len(head) - pre.start())
                out.append(TimeMention(max(0, start), e, _apply(
                    readings, pre.group("q"), pre.group("rel"), None),
                    _relation(folded, max(0, start))))
                continue
            out.append(TimeMention(s, e, readings, _relation(folded, s)))
            continue
        suf = _SUFFIX_RE.match(folded[e:e + _AROUND])
        nxt = _NEXT_WORD.match(folded[e:e + _AROUND])
        if (len(readings) > 1 and raw.isdigit() and nxt and not pre and not suf
                and nxt.group(1) not in _AFTER_BARE_HOUR):
            continue  # "at 11 Peas Hill", "around 6 different people": no clock time
        q = rel = part = None
        start, end = s, e
        if pre:
            q, rel = pre.group("q"), pre.group("rel")
            part = pre.group("part")
            start = s - (len(head) - pre.start())
        if suf:
            part = suf.group("part")
            end = e + suf.end()
        while end > start and folded[end - 1] == " ":
            end -= 1
        start = max(0, start)
        out.append(TimeMention(start, end, _apply(readings, q, rel, part),
                               _relation(folded, start)))
    return out
