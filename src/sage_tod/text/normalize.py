"""Value normalisation shared by the state diff, the extractor and the rules.

Two spellings of one value must never count as a change or a mismatch:
"Centre"/"center", "6:30 pm"/"18:30", "two"/"2", a categorical synonym and its
canonical value. Everything that compares values goes through `normalize_value`
so that the diff, the compiler and S1 agree on what "the same value" means.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache

# Spelling variants folded to one token everywhere (British/American and common
# abbreviations). Kept small on purpose: slot-specific equivalences belong in a
# spec's categorical `synonyms`.
SPELLING_VARIANTS: Mapping[str, str] = {
    "center": "centre",
    "theater": "theatre",
    "theaters": "theatres",
    "colour": "color",
    "favourite": "favorite",
    "guesthouse": "guest house",
}

NUMBER_WORDS: Mapping[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "single": 1, "couple": 2, "pair": 2,
}

DONTCARE_FORMS = frozenset({
    "dontcare", "dont care", "don t care", "do nt care", "do not care", "doesnt matter",
    "doesn t matter", "does not matter", "no preference", "any",
})
DONTCARE = "dontcare"

TRUE_FORMS = frozenset({"yes", "true", "y", "1", "free", "included", "available"})
FALSE_FORMS = frozenset({"no", "false", "n", "0", "none", "not included"})

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_ABBR = {d[:3]: d for d in WEEKDAYS} | {"tues": "tuesday", "thur": "thursday",
                                                 "thurs": "thursday", "weds": "wednesday"}
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")

_TOKEN_RE = re.compile(r"[a-z0-9]+(?::[0-9]{2})?")
_TIME_VALUE_RE = re.compile(
    r"^(?P<h>\d{1,2})(?:\s*[:.h]\s*(?P<m>\d{2}))?\s*(?P<mer>a\.?\s?m\.?|p\.?\s?m\.?)?$"
)
_ISO_DATE_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")


def fold(text: str) -> str:
    """Unicode-fold and lowercase; apostrophes become plain quotes."""
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


@lru_cache(maxsize=8192)
def tokens_with_spans(text: str) -> tuple[tuple[str, int, int], ...]:
    """Normalised tokens of `text` with their character offsets in `text`.

    Offsets refer to the original string (NFKC folding keeps lengths for the
    characters dialogue text uses), so evidence spans can be shown verbatim.
    Cached: the compiler, S1 and S2 read the same few utterances of a turn
    many times (once per slot and surface form), and tokenise each once.
    """
    folded = fold(text)
    if len(folded) != len(text):  # exotic characters changed length: fall back to lower()
        folded = text.lower()
    out: list[tuple[str, int, int]] = []
    for m in _TOKEN_RE.finditer(folded):
        for piece in normalize_token(m.group()).split():
            out.append((piece, m.start(), m.end()))
    return tuple(out)


def normalize_token(tok: str) -> str:
    """Map one token to its canonical form (spelling variant, number word)."""
    tok = SPELLING_VARIANTS.get(tok, tok)
    if tok in NUMBER_WORDS and tok not in {"single", "couple", "pair"}:
        return str(NUMBER_WORDS[tok])
    return tok


def basic_tokens(text: str) -> list[str]:
    return [t for t, _, _ in tokens_with_spans(text)]


def basic(text: str) -> str:
    """Case, whitespace, punctuation, spelling variants and number words folded."""
    return " ".join(basic_tokens(text))


def normalize_time(value: str) -> str | None:
    """Return "HH:MM" for a clock time written in 12- or 24-hour form, else None."""
    v = fold(value).strip()
    if v in {"noon", "midday", "12 noon"}:
        return "12:00"
    if v == "midnight":
        return "00:00"
    v = v.replace("o'clock", "").replace("oclock", "").strip()
    m = _TIME_VALUE_RE.match(v)
    if not m:
        if re.fullmatch(r"\d{4}", v):  # 1830
            m = _TIME_VALUE_RE.match(f"{v[:2]}:{v[2:]}")
        if not m:
            return None
    hour = int(m.group("h"))
    minute = int(m.group("m") or 0)
    mer = (m.group("mer") or "").replace(".", "").replace(" ", "")
    if mer == "pm" and hour < 12:
        hour += 12
    elif mer == "am" and hour == 12:
        hour = 0
    if hour > 24 or minute > 59 or (mer and not 1 <= int(m.group("h")) <= 12):
        return None
    return f"{hour % 24:02d}:{minute:02d}"


def normalize_number(value: str) -> str | None:
    """Digits for a count written as digits or words ("two" -> "2"), else None."""
    toks = basic_tokens(value)
    if len(toks) == 1:
        tok = toks[0]
        if tok.isdigit():
            return str(int(tok))
        if tok in NUMBER_WORDS:
            return str(NUMBER_WORDS[tok])
    if len(toks) == 2 and all(t.isdigit() for t in toks) and int(toks[1]) == 0:
        return str(int(toks[0]))  # "2.0" tokenises as 2, 0
    if len(toks) == 2 and toks[0] in {"a", "an"} and toks[1] in NUMBER_WORDS:
        return str(NUMBER_WORDS[toks[1]])
    return None


def normalize_date(value: str) -> str:
    """Weekday names and ISO dates in one spelling; other dates fall back to `basic`."""
    b = basic(value)
    if b in _WEEKDAY_ABBR:
        return _WEEKDAY_ABBR[b]
    m = _ISO_DATE_RE.match(fold(value).strip())
    if m:
        return f"{int(m.group(1)):04d}-{int(m.group(2)):02d}-{int(m.group(3)):02d}"
    return b


def normalize_boolean(value: str) -> str | None:
    b = basic(value)
    if b in TRUE_FORMS:
        return "true"
    if b in FALSE_FORMS:
        return "false"
    return None


def is_dontcare(value: str) -> bool:
    return basic(value) in DONTCARE_FORMS


def synonym_table(values: Iterable[str], synonyms: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """basic(surface form) -> canonical value, for a categorical slot."""
    table: dict[str, str] = {}
    for v in values:
        table[basic(v)] = v
    for canon, forms in synonyms.items():
        table[basic(canon)] = canon
        for f in forms:
            table.setdefault(basic(f), canon)
    return table


def normalize_typed(value: str, slot_type: str, table: Mapping[str, str] | None = None) -> str:
    """Canonical comparison key of `value` for a slot of `slot_type`.

    `table` is the categorical synonym table (see `synonym_table`). Values that
    cannot be parsed for their type fall back to the basic form, so comparison
    never fails, it only becomes stricter.
    """
    if is_dontcare(value):
        return DONTCARE
    if slot_type == "time":
        t = normalize_time(value)
        if t is not None:
            return t
    elif slot_type == "number":
        n = normalize_number(value)
        if n is not None:
            return n
    elif slot_type == "boolean":
        bval = normalize_boolean(value)
        if bval is not None:
            return bval
    elif slot_type == "date":
        return normalize_date(value)
    b = basic(value)
    if table:
        return basic(table.get(b, b))
    if slot_type == "free":
        return strip_article(b)
    return b


def strip_article(text: str) -> str:
    """"the lensfield hotel" and "lensfield hotel" name the same place."""
    head, _, rest = text.partition(" ")
    return rest if head in {"the", "a", "an"} and rest else text


def is_unset(value: str | None) -> bool:
    """Unset values: missing, empty, or the MultiWOZ placeholders."""
    return value is None or basic(value) in {"", "not mentioned", "none"}
