"""Lenient value comparison for the natural-failure labels (docs/benchmarks.md).

The corpus and the systems spell one value many ways ("saint john 's college" /
"saint johns college", "5:45 pm" / "17:45", "guest house" / "guesthouse",
"cafe uno" / "caffe uno"); a label must never call a spelling a failure, so
these readers are deliberately more lenient than the evaluator's own. Kept
apart from the labeller so that phase-B work and other benchmarks can reuse
them without the slice.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Mapping, Sequence

# ---------------------------------------------------------------------------------------------
# frozen readers
#
# The labels are the measuring stick of the evaluator, so they must not move when the
# evaluator's own readers (sage_tod.text) change: the folding, clock-time, count and
# don't-care readers below are a frozen copy of sage_tod.normalize as of 54bdd2a, the code
# the 204 audited turns were labelled with.

_SPELLING: Mapping[str, str] = {"center": "centre", "theater": "theatre",
                                "theaters": "theatres", "colour": "color",
                                "favourite": "favorite", "guesthouse": "guest house"}
_NUMBER_WORDS: Mapping[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "single": 1, "couple": 2, "pair": 2,
}
_DONTCARE_FORMS = frozenset({
    "dontcare", "dont care", "don t care", "do nt care", "do not care", "doesnt matter",
    "doesn t matter", "does not matter", "no preference", "any",
})
_TOKEN_RE = re.compile(r"[a-z0-9]+(?::[0-9]{2})?")
_TIME_VALUE_RE = re.compile(
    r"^(?P<h>\d{1,2})(?:\s*[:.h]\s*(?P<m>\d{2}))?\s*(?P<mer>a\.?\s?m\.?|p\.?\s?m\.?)?$")


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _basic_tokens(text: str) -> list[str]:
    out: list[str] = []
    for m in _TOKEN_RE.finditer(_fold(text)):
        tok = _SPELLING.get(m.group(), m.group())
        if tok in _NUMBER_WORDS and tok not in {"single", "couple", "pair"}:
            tok = str(_NUMBER_WORDS[tok])
        out.extend(tok.split())
    return out


def basic(text: str) -> str:
    """Case, punctuation, spelling variants and number words folded ("Centre" = "center")."""
    return " ".join(_basic_tokens(text))


def is_dontcare(value: str) -> bool:
    return basic(value) in _DONTCARE_FORMS


def normalize_time(value: str) -> str | None:
    """"HH:MM" for a clock time in 12- or 24-hour form ("5:45 pm", "1830"), else None."""
    v = _fold(value).strip()
    if v in {"noon", "midday", "12 noon"}:
        return "12:00"
    if v == "midnight":
        return "00:00"
    v = v.replace("o'clock", "").replace("oclock", "").strip()
    m = _TIME_VALUE_RE.match(v)
    if not m and re.fullmatch(r"\d{4}", v):
        m = _TIME_VALUE_RE.match(f"{v[:2]}:{v[2:]}")
    if not m:
        return None
    hour, minute = int(m.group("h")), int(m.group("m") or 0)
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
    toks = _basic_tokens(value)
    if len(toks) == 1:
        if toks[0].isdigit():
            return str(int(toks[0]))
        if toks[0] in _NUMBER_WORDS:
            return str(_NUMBER_WORDS[toks[0]])
    if len(toks) == 2 and all(t.isdigit() for t in toks) and int(toks[1]) == 0:
        return str(int(toks[0]))
    if len(toks) == 2 and toks[0] in {"a", "an"} and toks[1] in _NUMBER_WORDS:
        return str(_NUMBER_WORDS[toks[1]])
    return None


# ---------------------------------------------------------------------------------------------
# lenient comparison

# value type of a slot, by the slot's key (docs/benchmarks.md, "Natural failures")
SLOT_VALUE_TYPE: Mapping[str, str] = {
    "name": "name", "type": "type", "departure": "place", "destination": "place",
    "leaveat": "time", "arriveby": "time", "booktime": "time", "day": "day", "bookday": "day",
    "bookpeople": "number", "bookstay": "number", "stars": "number", "area": "area",
    "food": "food", "pricerange": "price", "internet": "boolean", "parking": "boolean",
}
VALUE_TYPES: tuple[str, ...] = ("name", "type", "place", "time", "day", "number", "area",
                                "food", "price", "boolean", "dontcare", "accepted_offer")

# Surface forms the corpus and the systems use for one value (both directions are
# checked). Lenient on purpose: the labels must not call a spelling a failure.
SURFACE_FORMS: Mapping[str, tuple[str, ...]] = {
    "centre": ("center", "central", "downtown", "city centre", "town centre"),
    "north": ("northern",), "south": ("southern",), "east": ("eastern",),
    "west": ("western",),
    "cheap": ("inexpensive", "budget", "low cost", "cheaply", "cheaper", "low priced"),
    "expensive": ("upscale", "high end", "pricey", "expensively", "luxury", "fancy"),
    "moderate": ("moderately", "mid range", "moderately priced", "reasonably priced",
                 "reasonable", "average price"),
    "guesthouse": ("guest house", "guesthouses", "guest houses", "bed and breakfast"),
    "hotel": ("hotels",),
    "nightclub": ("night club", "nightclubs", "club"),
    "swimmingpool": ("swimming pool", "pool", "swimming"),
    "concerthall": ("concert hall", "concert"),
    "multiple sports": ("sports", "sport"),
    "mutliple sports": ("multiple sports", "sports"),
    "entertainment": ("fun",),
    "boat": ("boats", "punting", "punt"),
    "cinema": ("movie", "movies", "film"),
    "architecture": ("architectural",),
    "college": ("colleges",), "museum": ("museums",), "park": ("parks",),
    "theatre": ("theater", "theatres"),
}
BOOLEAN_CUES: Mapping[str, tuple[str, ...]] = {
    "internet": ("internet", "wifi", "wi fi", "wireless"),
    "parking": ("parking", "park"),
}
_TIME_IN_TEXT = re.compile(r"\b(\d{1,2})(?:\s*[:.]\s*(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)?(?!\d)",
                           re.IGNORECASE)
_FOUR_DIGITS = re.compile(r"\b([01]\d|2[0-3])([0-5]\d)\b")
FUZZY = 0.85


def _tokens(value: str) -> list[str]:
    """basic() tokens with the possessive and plural 's' folded ("john 's" = "johns" = "john")."""
    out: list[str] = []
    for t in basic(value).split():
        if t == "s" and out:
            continue
        if t in {"the", "a", "an"}:
            continue
        out.append(t[:-1] if len(t) > 3 and t.endswith("s") else t)
    return out


def _time_key(value: str) -> str | None:
    t = normalize_time(value)
    if t is not None:
        return t
    m = _FOUR_DIGITS.fullmatch(value.strip())
    return f"{m.group(1)}:{m.group(2)}" if m else None


def value_key(slot: str, value: str) -> str:
    """One comparison key per value: dontcare, HH:MM, digits, else folded tokens."""
    if is_dontcare(value) or basic(value) in {"do n t care", "dont care", "dontcare"}:
        return "dontcare"
    vt = SLOT_VALUE_TYPE.get(slot.split("-", 1)[1], "")
    if vt == "time":
        t = _time_key(value)
        if t is not None:
            return t
    if vt == "number":
        n = normalize_number(value)
        if n is not None:
            return n
    if vt == "boolean":
        b = basic(value)
        return "yes" if b in {"yes", "free", "y", "true"} else "no" if b in {"no", "n",
                                                                              "false"} else b
    toks = _tokens(value)
    key = " ".join(toks)
    for canon, forms in SURFACE_FORMS.items():
        if key.replace(" ", "") == canon.replace(" ", "") or key in {
                " ".join(_tokens(f)) for f in forms}:
            return canon.replace(" ", "")
    return key


def same_value(slot: str, a: str | None, b: str | None) -> bool:
    """Lenient equality of two values of one slot (normalised, synonyms, fuzzy names)."""
    if a is None or b is None:
        return False
    ka, kb = value_key(slot, a), value_key(slot, b)
    if ka == kb or ka.replace(" ", "") == kb.replace(" ", ""):
        return True
    vt = SLOT_VALUE_TYPE.get(slot.split("-", 1)[1], "")
    if vt in {"name", "place", "food"} and ka and kb:
        if difflib.SequenceMatcher(None, ka, kb).ratio() >= FUZZY:
            return True
        short, long_ = sorted((ka, kb), key=len)
        # "pizza hut city centre" / "pizza hut"; "cambridge" / "cambridge railway station"
        if len(short) >= 4 and re.search(rf"(^| ){re.escape(short)}( |$)", long_):
            return True
    return False


def found_in(slot: str, value: str, text: str) -> bool:
    """Whether `text` states `value` (for that slot's kind of value), leniently."""
    if not text:
        return False
    key = value_key(slot, value)
    vt = SLOT_VALUE_TYPE.get(slot.split("-", 1)[1], "")
    if key == "dontcare":
        b = f" {basic(text)} "
        return any(f" {c} " in b for c in (
            "care", "matter", "matters", "preference", "any", "either", "whatever",
            "not important", "no particular", "not particular", "flexible", "dont mind",
            "do n t mind", "don t mind", "not fussy", "all the same", "anything", "anywhere",
            "unimportant", "indifferent", "not picky"))
    if vt == "time":
        for m in _TIME_IN_TEXT.finditer(text):
            t = _time_key(m.group(0))
            if t == key:
                return True
            # "after 5" for 17:00: an hour without a meridiem, read both ways
            if m.group(2) is None and m.group(3) is None and t is not None:
                h = int(m.group(1)) % 12
                if key.endswith(":00") and int(key[:2]) % 12 == h and h != 0:
                    return True
        return any(f"{m.group(1)}:{m.group(2)}" == key for m in _FOUR_DIGITS.finditer(text))
    if vt == "boolean":
        b = basic(text)
        return any(re.search(rf"(^| ){c}( |$)", b) for c in BOOLEAN_CUES[slot.split("-")[1]])
    toks = _tokens(text)
    if vt == "number" and key.isdigit():
        return _count_for(slot.split("-", 1)[1], key, toks)
    joined = " " + " ".join(toks) + " "
    forms = [key, *SURFACE_FORMS.get(key, ())]
    for canon, fs in SURFACE_FORMS.items():
        if canon.replace(" ", "") == key:
            forms.extend([canon, *fs])
    for f in forms:
        ft = " ".join(_tokens(f))
        if ft and f" {ft} " in joined:
            return True
    if vt in {"name", "place", "food"} and key:
        vtoks = key.split()
        n = len(vtoks)
        for i in range(max(0, len(toks) - n + 1)):
            window = " ".join(toks[i:i + n])
            if difflib.SequenceMatcher(None, window, key).ratio() >= FUZZY:
                return True
        # a distinctive part of a name ("the lensfield" for "lensfield hotel")
        generic = {"hotel", "restaurant", "guest", "house", "college", "museum", "church",
                   "centre", "street", "station", "train", "cambridge", "and", "of", "in",
                   "bar", "cafe", "gallery", "park", "pool", "theatre", "hall", "kitchen"}
        distinct = [t for t in vtoks if t not in generic and len(t) >= 4]
        if vt == "name" and distinct and all(f" {t} " in joined for t in distinct):
            return True
    return False


# the nouns that say what a count counts ("3 nights" is a stay, not a party)
COUNT_NOUNS: Mapping[str, frozenset[str]] = {
    "stars": frozenset({"star"}),
    "bookstay": frozenset({"night", "day", "week"}),
    "bookpeople": frozenset({"people", "person", "guest", "adult", "ticket", "seat", "of"}),
}


def _count_for(key: str, number: str, toks: Sequence[str]) -> bool:
    """`number` occurs in `toks` as a count of this slot's kind: not followed by a noun
    that names another slot's count ("3 nights" does not state 3 people)."""
    others = frozenset().union(*(v for k, v in COUNT_NOUNS.items() if k != key))
    for i, t in enumerate(toks):
        if t == number:
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if nxt not in others:
                return True
    return False


def value_type(slot: str, value: str, how: str) -> str:
    """The IUV-coverage value type: dontcare / accepted offer first, else the slot's kind."""
    if how == "dontcare" or value_key(slot, value) == "dontcare":
        return "dontcare"
    if how == "accepted_offer":
        return "accepted_offer"
    return SLOT_VALUE_TYPE.get(slot.split("-", 1)[1], "other")
