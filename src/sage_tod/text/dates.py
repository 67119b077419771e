"""Dates stated in free text, and whether two written dates may be the same day.

The value extractor needs the dates a user states for slots of type `date`:
month-name dates ("March 12th", "the 3rd of May"), days of the month ("the
11th", "7th of this month"), relative days ("today", "the day after tomorrow",
"this weekend") and weekdays ("Friday", "next Monday", "Monday next week"),
plus ISO and numeric dates. Only small closed word lists are used (months,
ordinals, weekdays), so the finder works on any schema.

Each mention carries a comparison key. Two keys of the same kind are the same
day or not ("March 12th" = "12th of march" = "2019-03-12"; "the 12th" matches
any month's 12th); keys of different kinds ("tomorrow" vs "March 2nd") cannot
be compared from text alone, and callers must treat that as "unknown".

This is the one date reader: the state diff, the predicates (through
`text.keys.normalize_typed`), S1's support check (`text.match.find_value`) and
the extractor all compare dates by `date_key`. A key drops the year
("2019-03-12" and "March 12th" are one day), as users rarely say one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.text.memo import memo_list
from sage_tod.text.normalize import fold
from sage_tod.text.spans import Taken

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
_MONTH_NUM = {m: i + 1 for i, m in enumerate(MONTHS)} | _MONTH_ABBR
_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}
for _w, _n in list(_ORDINAL_WORDS.items()):
    if _n < 10:
        _ORDINAL_WORDS[f"twenty {_w}"] = 20 + _n
        _ORDINAL_WORDS[f"twenty-{_w}"] = 20 + _n
_ORDINAL_WORDS |= {"thirty first": 31, "thirty-first": 31}
_WEEKDAY_ABBR = {d[:3]: d for d in WEEKDAYS} | {"tues": "tuesday", "thur": "thursday",
                                                 "thurs": "thursday", "weds": "wednesday"}
# every word that names a month or a weekday, abbreviations included
DATE_WORDS = frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(_MONTH_ABBR) | frozenset(
    _WEEKDAY_ABBR)

_MONTH_RE = (r"(?P<{g}>" + "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov"
             r"|dec)\.?")
_ORD_WORD_RE = "|".join(sorted((re.escape(w) for w in _ORDINAL_WORDS), key=len, reverse=True))
# a day of the month: "12", "12th", "1st", "twelfth"
_DAY_RE = r"(?:(?P<{g}>[0-3]?\d)(?P<{s}>st|nd|rd|th)?|(?P<{w}>" + _ORD_WORD_RE + r"))"
_WEEKDAY_RE = r"(?P<{g}>" + "|".join(WEEKDAYS) + r")"
_YEAR_TAIL = r"(?:,?\s+(?:20|19)\d\d)?"


def _fmt(template: str, **groups: str) -> str:
    return template.replace("{g}", groups.get("g", "g")).replace(
        "{s}", groups.get("s", "s")).replace("{w}", groups.get("w", "w"))


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "march 12th", "march the 12th", "march 12, 2019"
    ("md", re.compile(r"\b" + _fmt(_MONTH_RE, g="mon") + r"\s+(?:the\s+)?"
                      + _fmt(_DAY_RE, g="d", s="ds", w="dw") + r"\b" + _YEAR_TAIL)),
    # "12th of march", "the 12th of march", "12 march"
    ("dm", re.compile(r"\b(?:the\s+)?" + _fmt(_DAY_RE, g="d", s="ds", w="dw")
                      + r"\s+(?:of\s+)?" + _fmt(_MONTH_RE, g="mon") + r"\b" + _YEAR_TAIL)),
    # "the 11th of this month", "7th of next month"
    ("dom", re.compile(r"\b(?:the\s+)?" + _fmt(_DAY_RE, g="d", s="ds", w="dw")
                       + r"\s+of\s+(?:this|next|the)\s+month\b")),
    # "the 11th" (an ordinal after "the"; a noun after it makes it "the 2nd one")
    ("the", re.compile(r"\bthe\s+(?:(?P<d>[0-3]?\d)(?P<ds>st|nd|rd|th)|(?P<dw>"
                       + _ORD_WORD_RE + r"))\b")),
    ("iso", re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b")),
    ("num", re.compile(r"(?<![\d/.$])\b(?P<m>[01]?\d)/(?P<d>[0-3]?\d)(?:/(?P<y>\d{2}|\d{4}))?\b"
                       r"(?![/\d])")),
    ("rel", re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b|\b(?:later\s+)?today\b|"
                       r"\btomorrow\b|\b(?:this|next|coming)\s+weekend\b")),
    # "next monday", "monday next week", "this coming friday", "friday"
    ("wd", re.compile(r"\b(?:(?:this|next|coming|following)\s+(?:coming\s+)?)?"
                      + _fmt(_WEEKDAY_RE, g="wd")
                      + r"(?:\s+(?:of\s+)?(?:this|next)\s+week)?\b")),
]
# words after "the 2nd" that make it an ordinal of something else
_ALLOWED_AFTER_BARE_ORDINAL = frozenset({
    "of", "and", "or", "at", "for", "please", "instead", "then", "through", "until", "till",
    "to", "from", "in", "if", "is", "would", "works", "will", "but", "so", "thanks", "thank",
    "too", "as", "with", "on", "by",
})


@dataclass(frozen=True)
class DateMention:
    """A date in a text: span, the words as written, and a comparison key."""

    start: int
    end: int
    text: str
    key: str  # "md:03-12", "d:12", "wd:monday", "rel:today", ...
    form: str = ""  # how it was written: md, dm, dom, the, iso, num, rel, wd

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]


def _day(m: re.Match[str]) -> int | None:
    if m.groupdict().get("dw"):
        return _ORDINAL_WORDS.get(" ".join(m.group("dw").replace("-", " ").split()))
    raw = m.groupdict().get("d")
    if raw is None:
        return None
    d = int(raw)
    return d if 1 <= d <= 31 else None


def _key(kind: str, m: re.Match[str]) -> str | None:
    if kind in {"md", "dm"}:
        day = _day(m)
        mon = _MONTH_NUM.get(m.group("mon").rstrip("."))
        if day is None or mon is None:
            return None
        if kind == "dm" and not (m.group("ds") or m.group("dw")) and (
                m.group("mon") not in MONTHS or m.group("mon") == "may" or " of " in m.group(0)):
            return None  # "12 march" only with a full month name; "4 may I" is no date
        return f"md:{mon:02d}-{day:02d}"
    if kind in {"dom", "the"}:
        day = _day(m)
        return None if day is None else f"d:{day:02d}"
    if kind in {"iso", "num"}:
        mon, day = int(m.group("m")), int(m.group("d"))
        if not (1 <= mon <= 12 and 1 <= day <= 31):
            return None
        return f"md:{mon:02d}-{day:02d}"
    if kind == "rel":
        words = m.group(0).split()
        if "after" in words:
            return "rel:overmorrow"
        if "weekend" in words:
            return "rel:" + ("next weekend" if words[0] == "next" else "weekend")
        return "rel:" + words[-1]
    if kind == "wd":
        return "wd:" + m.group("wd")
    return None


# Necessary conditions, one per pattern: a text that fails its kind's test holds no match
# of that pattern (so skipping it changes nothing, the patterns' spans included). Every
# month alternative of `_MONTH_RE` contains its three-letter abbreviation ("sept",
# "september": "sep"); every weekday ends in "day"; a day of the month (`_DAY_RE`) is a
# digit or an ordinal word, and every ordinal word holds "th", "first" or "second".
_MONTH_NEEDLES = tuple(sorted({m[:3] for m in MONTHS}))
_ORDINAL_NEEDLES = ("th", "first", "second")  # tests/test_reading.py checks every word
_DIGIT = re.compile(r"\d")  # what the patterns' `\d` reads


def _kinds_possible(folded: str) -> frozenset[str]:
    """The kinds of `_PATTERNS` that may match `folded`: a kind left out cannot."""
    out: set[str] = set()
    digit = _DIGIT.search(folded) is not None
    if digit:
        out.update(("iso", "num"))
    if "day" in folded:
        out.update(("wd", "rel"))
    elif "tomorrow" in folded or "weekend" in folded:
        out.add("rel")
    if digit or any(n in folded for n in _ORDINAL_NEEDLES):
        out.add("the")
        if "month" in folded:
            out.add("dom")
        if any(n in folded for n in _MONTH_NEEDLES):
            out.update(("md", "dm"))
    return frozenset(out)


def _may_match(kind: str, folded: str) -> bool:
    """False only when pattern `kind` of `_PATTERNS` cannot match `folded`."""
    return kind in _kinds_possible(folded)


@memo_list(maxsize=4096)
def find_dates(text: str) -> list[DateMention]:
    """Dates stated in `text`, earliest first, without overlaps (longest reading wins).
    Memoised per text (S1 reads the same history for every date value)."""
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    found: list[DateMention] = []
    taken = Taken()  # the spans of `found`
    possible = _kinds_possible(folded)
    if not possible:
        return []
    for kind, pat in _PATTERNS:
        if kind not in possible:
            continue
        for m in pat.finditer(folded):
            s, e = m.start(), m.end()
            if taken.overlaps(s, e):  # O(log n), not a scan (long texts)
                continue
            if kind == "the":
                nxt = re.match(r"\s*([a-z]+)", folded[e:e + 64])
                if nxt and nxt.group(1) not in _ALLOWED_AFTER_BARE_ORDINAL:
                    continue
            if kind == "md" and m.group("mon") == "may" and not (m.group("ds") or m.group("dw")):
                # "may 2 people come": the modal verb, not the month
                nxt = re.match(r"\s*([a-z]+)", folded[e:e + 64])
                if nxt and nxt.group(1) not in _ALLOWED_AFTER_BARE_ORDINAL:
                    continue
            if kind == "md" and not (m.group("ds") or m.group("dw")):
                # "march 12 people": a count after a month name is not a day
                nxt = re.match(r"\s*([a-z]+)", folded[e:e + 64])
                if nxt and nxt.group(1) in {"people", "persons", "tickets", "seats", "guests",
                                            "nights", "days", "rooms", "pm", "am"}:
                    continue
            key = _key(kind, m)
            if key is None:
                continue
            raw = text[s:e]
            if raw.lower().startswith("the "):
                raw = raw[4:]
            found.append(DateMention(e - len(raw), e, raw, key, kind))
            taken.add(e - len(raw), e)
    return sorted(found, key=lambda f: f.start)


def date_key(value: str) -> str | None:
    """The comparison key of a written date value ("March 12th", "2019-03-12",
    "next Monday"), or None when it is not a date this module reads."""
    v = value.strip()
    if not v:
        return None
    b = fold(v).strip().rstrip(".")
    if b in _WEEKDAY_ABBR:
        return "wd:" + _WEEKDAY_ABBR[b]
    found = find_dates(v)
    if len(found) != 1:
        return None
    f = found[0]
    # the mention must be (nearly) the whole value: "march 12th" in "the march 12th show"
    rest = (v[:f.start] + " " + v[f.end:]).lower()
    if re.sub(r"[^a-z0-9]+", " ", rest).strip() not in {"", "the", "on", "on the"}:
        return None
    return f.key


def same_day(a: str, b: str) -> bool | None:
    """Whether two date keys name the same day: True, False, or None (not comparable).

    A day of the month matches a month-day with that day; weekdays with "next"
    or "this" are the weekday; relative days compare only with relative days.
    """
    if a == b:
        return True
    ka, _, va = a.partition(":")
    kb, _, vb = b.partition(":")
    if ka == kb:
        return False
    pair = {ka, kb}
    if pair == {"md", "d"}:
        day_a = va.split("-")[-1]
        day_b = vb.split("-")[-1]
        return day_a == day_b
    return None
