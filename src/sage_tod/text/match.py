"""Finding a slot value in an utterance, under the shared normalisation.

S1 support checks and the extractor both ask "where in this text is value v
for slot s?". The answer is a character span in the original text, so the
evidence shown to a user points at exactly what was said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.text.normalize import (
    MONTHS,
    WEEKDAYS,
    basic_tokens,
    fold,
    is_dontcare,
    normalize_date,
    normalize_number,
    normalize_time,
    tokens_with_spans,
)
from sage_tod.text.slot import SlotLike

# Clock times: "6:30 pm", "6.30pm", "18:30", "7 pm", "7 o'clock", "noon".
_TIME_RE = re.compile(
    r"\b(?:(?P<h>\d{1,2})(?:\s*[:.]\s*(?P<m>\d{2}))?\s*(?P<mer>a\.?\s?m\b\.?|p\.?\s?m\b\.?|"
    r"o'?\s?clock)?|(?P<word>noon|midday|midnight))",
)
_TIME_CONTEXT = {"at", "by", "after", "before", "around", "about", "from", "until", "till",
                 "arrive", "leave", "past"}
_HOUR_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_WORD_TIME_RE = re.compile(
    r"\b(?:(?P<q>half|quarter)\s+(?P<rel>past|to)\s+)?(?P<hw>one|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve)(?:\s+o'?\s?clock)?"
    r"(?:\s+(?:in\s+the\s+)?(?P<part>morning|afternoon|evening|night|am|pm|tonight))?\b"
)
_NEGATION = frozenset({"not", "no", "dont", "don", "nt", "never", "except", "without", "instead",
                       "rather", "other", "than"})
DONTCARE_CUES = ("any", "anything", "anywhere", "anytime", "doesn't matter", "does not matter",
                 "don't care", "do not care", "dont care", "no preference", "not fussy",
                 "whatever", "either", "not picky", "open to")


@dataclass(frozen=True)
class Found:
    """A value found in a text: character span and the canonical key it matched."""

    start: int
    end: int
    key: str


def find_times(text: str) -> list[tuple[int, int, frozenset[str]]]:
    """Clock times in `text` as (start, end, possible HH:MM readings).

    A time without am/pm ("at 7:30") has two readings; bare numbers count as
    times only after a time preposition ("at 7").
    """
    folded = fold(text)
    out: list[tuple[int, int, frozenset[str]]] = []
    for m in _TIME_RE.finditer(folded):
        if m.group("word"):
            t = normalize_time(m.group("word"))
            if t:
                out.append((m.start(), m.end(), frozenset({t})))
            continue
        if m.group("h") is None:
            continue
        h, mm, mer = m.group("h"), m.group("m"), (m.group("mer") or "")
        prev = folded[:m.start()].split()[-1:] if m.start() else []
        if not mm and not mer and not (prev and prev[0] in _TIME_CONTEXT):
            continue
        if mer.startswith("o"):
            mer = ""
        # a number directly followed by a date/count word is not a time
        tail = folded[m.end():m.end() + 12].split()[:1]
        if not mm and not mer and tail and tail[0] in {"people", "persons", "nights", "stars",
                                                         "minutes", "hours", "days", "guests"}:
            continue
        raw = f"{h}:{mm or '00'} {mer}".strip()
        t = normalize_time(raw)
        if t is None:
            continue
        readings = {t}
        hour = int(h)
        if not mer and 1 <= hour < 12:
            readings.add(f"{hour + 12:02d}:{int(mm or 0):02d}")
        out.append((m.start(), m.end(), frozenset(readings)))
    for m in _WORD_TIME_RE.finditer(folded):
        if not (m.group("q") or m.group("part") or "clock" in m.group(0)):
            continue
        hour = _HOUR_WORDS[m.group("hw")]
        minute = 0
        if m.group("q"):
            minute = 30 if m.group("q") == "half" else 15
            if m.group("rel") == "to":
                hour, minute = (hour - 1) % 12 or 12, 60 - minute
        part = m.group("part") or ""
        readings = set()
        if part in {"afternoon", "evening", "night", "pm", "tonight"}:
            readings.add(f"{(hour % 12) + 12:02d}:{minute:02d}")
        elif part in {"morning", "am"}:
            readings.add(f"{hour % 12:02d}:{minute:02d}")
        else:
            readings |= {f"{hour % 12:02d}:{minute:02d}", f"{(hour % 12) + 12:02d}:{minute:02d}"}
            if hour == 12:
                readings.add("12:00" if minute == 0 else f"12:{minute:02d}")
        out.append((m.start(), m.end(), frozenset(readings)))
    return out


# How people state a party size without a number ("just me", "my wife and I"); only for
# count slots about people
_PARTY_SLOT = re.compile(r"people|person|guest|party|passenger|traveller|traveler|seat|ticket",
                         re.IGNORECASE)
_PARTY_SIZES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("1", re.compile(r"\b(just|only) (me|myself)\b|\bby myself\b|\bon my own\b|"
                     r"\b(i'?m|i am) (alone|travell?ing alone|on my own)\b")),
    ("2", re.compile(r"\b(the two of us|both of us|me and my (wife|husband|partner|friend|"
                     r"girlfriend|boyfriend)|my (wife|husband|partner|friend|girlfriend|"
                     r"boyfriend) and (i|me))\b")),
)


def _content_tokens(text: str) -> list[tuple[str, int, int]]:
    """Tokens without the possessive "s" ("christ 's college" reads as "christ college")."""
    return [(t, a, b) for t, a, b in tokens_with_spans(text)
            if not (t == "s" and a > 0 and text[a - 1] in "'\u2019 "
                    and "'" in fold(text[max(0, a - 2):a]))]


def _one_edit(a: str, b: str) -> bool:
    """At most one insertion, deletion, substitution or swap ("cambrige"/"cambridge")."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1:]


def _same_or_typo(tok: str, want: str) -> bool:
    if tok == want:
        return True
    # a typo in a long word, never in short words or numbers ("east"/"west", "17:15")
    return (len(want) >= 6 and len(tok) >= 6 and want.isalpha() and tok.isalpha()
            and tok[0] == want[0] and _one_edit(tok, want))


def _find_tokens(text: str, needle: list[str], fuzzy: bool = False) -> tuple[int, int] | None:
    if not needle:
        return None
    toks = _content_tokens(text)
    n = len(needle)
    for i in range(len(toks) - n + 1):
        window = [toks[i + k][0] for k in range(n)]
        if all(window[k] == needle[k] for k in range(n)):
            return toks[i][1], toks[i + n - 1][2]
        if fuzzy and sum(window[k] != needle[k] for k in range(n)) == 1 and all(
                _same_or_typo(window[k], needle[k]) for k in range(n)):
            return toks[i][1], toks[i + n - 1][2]
    return None


def is_negated(text: str, start: int) -> bool:
    """True when one of the three tokens before `start` negates what follows."""
    before = [t for t, _, e in tokens_with_spans(text) if e <= start][-3:]
    return any(t in _NEGATION for t in before)


def find_dontcare(text: str) -> Found | None:
    folded = fold(text)
    for cue in DONTCARE_CUES:
        m = re.search(rf"\b{re.escape(cue)}\b", folded)
        if m:
            return Found(m.start(), m.end(), "dontcare")
    return None


def _date_forms(value: str) -> list[list[str]]:
    key = normalize_date(value)
    forms = [basic_tokens(value)]
    if key in WEEKDAYS:
        forms.append([key])
    m = re.match(r"^\d{4}-(\d{2})-(\d{2})$", key)
    if m:
        month, day = MONTHS[int(m.group(1)) - 1], str(int(m.group(2)))
        forms += [[month, day], [day, month], [month, day + "th"], [month, day + "st"],
                  [month, day + "nd"], [month, day + "rd"], [day + "th", "of", month]]
    return forms


def find_value(text: str, value: str, slot: SlotLike | None, fuzzy: bool = False
               ) -> Found | None:
    """Where `text` states `value` for `slot`, or None.

    Matching is token-exact after normalisation, widened by the slot's
    synonyms, number words and clock-time readings; paraphrases beyond that
    are left to S2 on purpose. `fuzzy` also accepts one typo in one long word
    of the value ("Cambrige Artworks"), which is how people type.
    """
    if not text or not value:
        return None
    stype = slot.type if slot is not None else "free"
    if is_dontcare(value):
        return find_dontcare(text)
    key = slot.normalize(value) if slot is not None else " ".join(basic_tokens(value))
    if stype == "time":
        t = normalize_time(value)
        if t is not None:
            for s, e, readings in find_times(text):
                if t in readings:
                    return Found(s, e, t)
            return None
    if stype == "number":
        n = normalize_number(value)
        if n is not None:
            for tok, s, e in tokens_with_spans(text):
                if tok == n:
                    return Found(s, e, n)
            if slot is not None and _PARTY_SLOT.search(f"{slot.name} {slot.description}"):
                for count, pattern in _PARTY_SIZES:
                    m = pattern.search(fold(text))
                    if m and count == n:
                        return Found(m.start(), m.end(), n)
            return None
    forms: list[list[str]] = []
    if stype == "date":
        forms = _date_forms(value)
    elif slot is not None:
        forms = [basic_tokens(f) for f in slot.surface_forms(value)]
    else:
        forms = [basic_tokens(value)]
    if stype == "free":  # "the Lensfield Hotel" is stated by "Lensfield Hotel" too
        forms += [f[1:] for f in forms if len(f) > 1 and f[0] in {"the", "a", "an"}]
    # longest form first so "city centre" wins over "centre"
    forms = [[t for t in f if t != "s"] or f for f in forms]  # possessives, as in the text
    for form in sorted(forms, key=len, reverse=True):
        hit = _find_tokens(text, form)
        if hit:
            return Found(hit[0], hit[1], key)
    if fuzzy:
        for form in sorted(forms, key=len, reverse=True):
            hit = _find_tokens(text, form, fuzzy=True)
            if hit:
                return Found(hit[0], hit[1], key)
    return None
