"""Place names stated in free text, for free slots that hold a city, area or location.

Specs do not list the cities a user may name, so place values are found by
their shape: a capitalised span ("Phoenix", "Mexico City", "Santa rosa",
"Fresno, CA", "NYC") in a place context — after a preposition ("in", "to",
"from", "around", "near", "at"), after a search verb ("check", "try", "how
about"), or as the whole of a short answer ("Las Vegas please."). Only small
closed word lists are used (prepositions, function words, US state codes);
nothing here knows any city.

A span is a guess: the finder reports how it was found and callers decide
how much to trust it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sage_tod.text.dates import DATE_WORDS
from sage_tod.text.normalize import basic_tokens
from sage_tod.text.sentences import sentences
from sage_tod.text.slot import SlotLike

# words of a slot's name/description that make it hold a place
PLACE_WORDS = frozenset({"city", "town", "location", "area", "destination", "origin",
                         "region", "district", "neighbourhood", "neighborhood", "country",
                         "village", "place", "suburb"})
_NAME_PLACE_WORDS = frozenset({"from", "to"})
# ... unless they say it is an address, a venue's name, a station or an airport
_NOT_PLACE_WORDS = frozenset({"address", "street", "phone", "airport", "station", "postcode",
                              "zip", "email", "time", "date", "day", "price", "fare", "cost",
                              "duration", "number", "rating", "amount", "count"})
_CITY_WORDS = frozenset({"city", "town", "village"})

US_STATES = frozenset({
    "al", "ak", "az", "ar", "ca", "co", "ct", "de", "fl", "ga", "hi", "id", "il", "in", "ia",
    "ks", "ky", "la", "me", "md", "ma", "mi", "mn", "ms", "mo", "mt", "ne", "nv", "nh", "nj",
    "nm", "ny", "nc", "nd", "oh", "ok", "or", "pa", "ri", "sc", "sd", "tn", "tx", "ut", "vt",
    "va", "wa", "wv", "wi", "wy", "dc", "uk", "us", "usa",
})

# Prepositions before a place, and how sure a span after them is a place.
PLACE_PREPS = {"in": 0.8, "to": 0.8, "from": 0.8, "around": 0.8, "near": 0.8, "into": 0.8,
               "towards": 0.8, "toward": 0.8, "visiting": 0.7, "visit": 0.7, "leaving": 0.7,
               "departing": 0.7, "at": 0.6}
# Two words before a place: "out of Phoenix", "bound for Boston", "city of Stanford".
_TWO_WORD_PREPS = {("out", "of"): "from", ("bound", "for"): "to", ("city", "of"): "in",
                   ("town", "of"): "in", ("headed", "for"): "to", ("heading", "for"): "to",
                   ("way", "to"): "to", ("up", "in"): "in", ("down", "in"): "in",
                   ("over", "in"): "in", ("back", "to"): "to"}
_DETERMINERS = frozenset({"a", "an", "the", "my", "me", "some", "it", "this", "that", "your"})
_ADDRESS_RE = re.compile(r"\b\d{1,6}[A-Za-z]?(?:\s+(?:[A-Z0-9#][\w'#.-]*))+")
# Verbs that take a place directly ("check Santa Rosa", "how about Napa?").
SEARCH_VERBS = {"check": 0.6, "try": 0.6, "search": 0.6, "out": 0.6, "about": 0.6}

# Words that never start or end a place span, though written with a capital.
_FUNCTION = frozenset({
    "i", "i'm", "i'd", "i'll", "i've", "a", "an", "the", "yes", "yeah", "yep", "no", "nope",
    "ok", "okay", "sure", "please", "thanks", "thank", "hi", "hello", "hey", "great", "good",
    "perfect", "fine", "also", "and", "but", "or", "so", "then", "actually", "maybe", "what",
    "where", "when", "how", "which", "who", "why", "is", "are", "was", "were", "can", "could",
    "would", "will", "should", "do", "does", "did", "it", "it's", "that", "that's", "this",
    "there", "there's", "here", "my", "me", "we", "we're", "our", "you", "your", "let", "let's",
    "find", "search", "look", "check", "try", "book", "get", "show", "tell", "give", "any",
    "some", "not", "none", "mr", "mrs", "ms", "dr", "today", "tomorrow", "tonight", "now",
    "just", "well", "um", "uh", "hmm", "oh", "wow", "cool", "awesome", "nice", "alright",
    "in", "to", "from", "at", "on", "for", "with", "of", "by", "near", "around", "into",
    "be", "been", "am", "pm", "a.m", "p.m", "one", "two", "three", "all", "every",
    "have", "has", "had", "need", "want", "like", "love", "know", "think", "see", "go",
    "going", "make", "take", "play", "help", "anything", "something", "nothing", "everything",
    "else", "more", "other", "another", "same", "different", "new", "next", "last", "first",
    "these", "those", "them", "they", "he", "she", "his", "her", "its", "us", "if", "as",
    "than", "too", "very", "really", "much", "many", "only", "again", "still", "soon",
    "later", "instead", "though", "however", "because", "after", "before", "until", "till",
    "since", "about", "over", "under", "up", "down", "out", "off", "area", "city", "town",
    "place", "places", "location", "somewhere", "anywhere", "everywhere", "nowhere",
    "morning", "afternoon", "evening", "night", "week", "weekend", "day", "days", "month",
    "year", "years", "time", "times", "people", "person", "ticket", "tickets", "way",
    "goodbye", "bye", "cheers", "welcome", "sorry", "excuse", "pardon", "regards", "wonderful",
    "excellent", "fantastic", "amazing", "correct", "right", "exactly", "absolutely",
    "definitely", "certainly", "done", "confirm", "confirmed", "nah", "sounds", "got",
    "works", "agreed", "yup",
})
# lowercase words that may sit inside a name ("Stratford upon Avon", "Rio de Janeiro")
_CONNECTORS = frozenset({"of", "de", "del", "da", "do", "dos", "la", "le", "les", "du",
                         "upon", "sur", "los", "las", "el", "di", "van", "von", "am", "an"})
# filler around a place given as a whole short answer ("In Phoenix, please.")
_LEAD_FILLER = frozenset({"yes", "yeah", "no", "ok", "okay", "sure", "um", "uh", "well",
                          "actually", "maybe", "just", "hmm", "and", "also", "then", "in", "to",
                          "from", "at", "near", "around", "oh", "alright", "i", "think",
                          "probably", "perhaps", "how", "what", "about", "it", "it's", "is",
                          "that's", "that", "will", "be", "going", "gonna", "let's", "make",
                          "say"})
_TAIL_FILLER = frozenset({"please", "thanks", "thank", "you", "instead", "then", "is", "fine",
                          "works", "would", "be", "great", "good", "ok", "okay", "too", "as",
                          "well", "for", "now", "perfect", "sounds", "will", "do", "that's",
                          "it", "that", "city", "area", "town", "one", "i", "think", "guess",
                          "pls", "thx", "again"})

# after a one-word reply only politeness may follow ("Phoenix, please" but not "Got it")
_SHORT_TAIL = frozenset({"please", "thanks", "thank", "you", "instead", "then", "pls", "thx",
                         "too", "again"})

_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")


@dataclass(frozen=True)
class PlaceMention:
    """A capitalised span in a place context."""

    start: int
    end: int
    text: str
    context: str      # the preposition or verb before it, or "answer" for a whole reply
    confidence: float

    @property
    def core(self) -> str:
        """The place without a ", CA" / ", UK" suffix."""
        head, _, tail = self.text.partition(",")
        return head.strip() if tail.strip() else self.text


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def is_place_slot(spec: SlotLike) -> bool:
    """A free slot whose name or description says it holds a city, area or location."""
    if spec.type != "free" or spec.values:
        return False
    return _is_place_name(spec.name, spec.description)


@lru_cache(maxsize=4096)
def _is_place_name(name: str, description: str) -> bool:
    """`is_place_slot` of a free slot without values, by its name and description
    (memoised: the extractor asks for every slot of the workflow in every turn)."""
    name_words = _words(name.replace("_", " ").replace("-", " "))
    words = name_words | _words(description)
    if words & _NOT_PLACE_WORDS:
        return False
    if "name" in words and not words & _CITY_WORDS:
        return False  # "name of event location": a venue's name, not a place constraint
    return bool(words & PLACE_WORDS or name_words & _NAME_PLACE_WORDS)



# capitalised words that may continue a name though they never start one ("Mexico City")
_INNER_OK = frozenset({"city", "town", "place", "area", "new", "one", "two", "up", "over",
                       "under", "out", "off", "down", "about"})
# two-letter words that are also state codes: only in capitals after a comma
_AMBIGUOUS_CODES = frozenset({"in", "or", "me", "hi", "ok", "oh", "us", "la", "de", "pa", "ma",
                              "co", "al", "id", "ne", "wa", "mo", "ms"})


def _is_cap(tok: str, inner: bool = False) -> bool:
    low = tok.lower()
    if (low in _FUNCTION and not (inner and low in _INNER_OK)) or low in DATE_WORDS:
        return False
    if tok.isupper():
        return len(tok) >= 2 and tok.isalpha()
    return tok[0].isupper() and tok[0].isalpha()


def _spans(sentence: str, offset: int, matches: list[re.Match[str]] | None = None
           ) -> list[tuple[int, int, int, int]]:
    """Capitalised spans of one sentence as (first token, last token, start, end).
    `matches`: `list(_TOKEN_RE.finditer(sentence))`, when the caller has it already."""
    if matches is None:
        matches = list(_TOKEN_RE.finditer(sentence))
    toks = [(m.group(), m.start() + offset, m.end() + offset) for m in matches]
    out: list[tuple[int, int, int, int]] = []
    i = 0

    def gap(a: int, b: int) -> str:
        return sentence[toks[a][2] - offset:toks[b][1] - offset]

    while i < len(toks):
        head = toks[i][0]
        # "New York": a word that starts no name alone may start one before a capital
        lead = (head[0].isupper() and head.lower() in _INNER_OK and i + 1 < len(toks)
                and gap(i, i + 1) == " " and _is_cap(toks[i + 1][0], inner=True))
        if not (_is_cap(head) or lead):
            i += 1
            continue
        j = i
        lower_used = False
        while j + 1 < len(toks):
            if (toks[j + 1][0] == "s" and gap(j, j + 1) in {" '", " ’"} and j + 2 < len(toks)
                    and gap(j + 1, j + 2) == " " and _is_cap(toks[j + 2][0], inner=True)):
                j += 2  # "Kettle 's Yard", as tokenised corpora write "Kettle's Yard"
                continue
            if gap(j, j + 1) != " ":
                break
            nxt = toks[j + 1][0]
            if _is_cap(nxt, inner=True):
                j += 1
                continue
            if (nxt in _CONNECTORS and j + 2 < len(toks) and gap(j + 1, j + 2) == " "
                    and _is_cap(toks[j + 2][0])):
                j += 2
                continue
            # "Santa rosa": one lowercase word that is no common word, ending the span
            if (not lower_used and j == i and nxt.islower() and len(nxt) >= 3
                    and nxt not in _FUNCTION and nxt not in DATE_WORDS
                    and (j + 2 >= len(toks) or gap(j + 1, j + 2).strip()
                         or toks[j + 2][0].lower() in _FUNCTION)):
                lower_used = True
                j += 1
                continue
            break
        # ", CA" / ", UK" / ", France." suffix
        if j + 1 < len(toks) and gap(j, j + 1) == ", ":
            nxt = toks[j + 1][0]
            rest = sentence[toks[j + 1][2] - offset:].strip()
            state_code = nxt.lower() in US_STATES and (nxt.isupper() or (
                nxt[0].isupper() and nxt.lower() not in _AMBIGUOUS_CODES))
            country = (_is_cap(nxt) and not nxt.isupper()
                       and (not rest or rest.startswith((".", "!", "?"))))
            if state_code or country:
                j += 1
        out.append((i, j, toks[i][1], toks[j][2]))
        i = j + 1
    return out


@dataclass(frozen=True)
class NameSpan:
    """A capitalised span with the lowercased words of its sentence around it."""

    start: int
    end: int
    text: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    words: int
    question: bool = False  # its sentence ends with "?"
    alone: bool = False     # its sentence is the whole text


def name_spans(text: str) -> list[NameSpan]:
    """Every capitalised span of `text` ("Mexico City", "Santa rosa", "Fresno, CA",
    "NYC", "Morton DaCosta"), with the words of its sentence before and after it."""
    out: list[NameSpan] = []
    # each sentence's token matches read once, for the test that it has a token (it has
    # one exactly when the list is not empty: what `_TOKEN_RE.search` asked), its
    # lowercased words and its spans (`_spans` read them again before)
    parts = [(sm, ms) for sm in sentences(text, semicolons=True)
             if (ms := list(_TOKEN_RE.finditer(sm.text)))]
    for sm, ms in parts:
        sentence, offset = sm.text, sm.start
        # the sentence's words lowercased once, not once per span (an agent's turn may
        # hold a dozen capitalised spans)
        lows = [m.group().lower() for m in ms]
        for i, j, start, end in _spans(sentence, offset, ms):
            out.append(NameSpan(start, end, text[start:end],
                                tuple(lows[:i]), tuple(lows[j + 1:]), j - i + 1,
                                question=sentence.rstrip().endswith("?"),
                                alone=len(parts) == 1))
    return out


def find_places(text: str) -> list[PlaceMention]:
    """Capitalised spans of `text` in a place context, with how sure each is a place."""
    out: list[PlaceMention] = []
    for span in name_spans(text):
        before, after = span.before, span.after
        prev = before[-1] if before else ""
        prev2 = before[-2] if len(before) > 1 else ""
        conf: float | None = None
        context = ""
        if span.words == 1 and after and after[0] in _DETERMINERS:
            continue  # "to Schedule a visit": a capitalised verb and its object
        if prev in PLACE_PREPS:
            conf, context = PLACE_PREPS[prev], prev
        elif prev == "the" and prev2 in PLACE_PREPS:
            conf, context = PLACE_PREPS[prev2], prev2
        elif (prev2, prev) in _TWO_WORD_PREPS:
            conf, context = 0.8, _TWO_WORD_PREPS[(prev2, prev)]
        elif prev in SEARCH_VERBS and (prev != "about" or prev2 in {"how", "what"}):
            conf, context = SEARCH_VERBS[prev], prev
        elif (not span.question and (span.alone or span.words > 1)
              and all(b in _LEAD_FILLER for b in before) and len(after) <= 4
              and all(a in (_TAIL_FILLER if span.words > 1 else _SHORT_TAIL) for a in after)):
            # "Las Vegas please.", "It is Phoenix." ("Sounds good.", "Got it.",
            # "Interesting. What's the address?" are no places)
            conf, context = 0.6, "answer" if span.alone else "reply"
        if conf is None:
            continue
        out.append(PlaceMention(span.start, span.end, span.text, context, conf))
    for m in _ADDRESS_RE.finditer(text):
        # "to 160 Saratoga Ave": a house number and a capitalised street
        word = (text[max(0, m.start() - 64):m.start()].split() or [""])[-1].lower()
        if word in {"to", "at", "from"}:
            value = m.group().rstrip(" ,.")
            out.append(PlaceMention(m.start(), m.start() + len(value), value, word, 0.6))
    return sorted(out, key=lambda p: p.start)


def initials(value: str) -> str:
    return "".join(t[0] for t in basic_tokens(value) if t)


def _loose(tokens: list[str]) -> list[str]:
    """Tokens without possessive and plural s ("christ 's college" -> christ college)."""
    return [t[:-1] if t.endswith("s") and len(t) > 3 else t for t in tokens if t != "s"]


def same_place(span: str, value: str) -> bool:
    """Whether a stated place and a written value may name the same place: equal, one a
    word-prefix of the other ("Santa Rosa" / "Santa Rosa, CA"), or an acronym ("NYC")."""
    a = basic_tokens(span.partition(",")[0]) or basic_tokens(span)
    b = basic_tokens(value.partition(",")[0]) or basic_tokens(value)
    if not a or not b:
        return False
    if a[0] in {"the"} and len(a) > 1:
        a = a[1:]
    if b[0] in {"the"} and len(b) > 1:
        b = b[1:]
    n = min(len(a), len(b))
    if a[:n] == b[:n] or "".join(a) == "".join(b) or _loose(a) == _loose(b):
        return True  # "Kettle 's Yard" / "kettles yard", "Christ 's College" / "christ college"
    raw = span.partition(",")[0].strip()
    if raw.isupper() and len(raw) >= 2 and initials(value).startswith(raw.lower()):
        return True
    raw_v = value.partition(",")[0].strip()
    return raw_v.isupper() and len(raw_v) >= 2 and initials(span).startswith(raw_v.lower())
