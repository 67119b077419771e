"""Finding a slot value in an utterance, under the shared normalisation.

S1 support checks and the extractor both ask "where in this text is value v
for slot s?". The answer is a character span in the original text, so the
evidence shown to a user points at exactly what was said.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz.distance import OSA, LCSseq

from sage_tod.text.booleans import dontcare_span, is_dontcare
from sage_tod.text.dates import date_key, find_dates
from sage_tod.text.normalize import (
    SPECIAL_WORDS,
    Token,
    basic_tokens,
    fold,
    spellings,
    token_text,
    tokens_before,
    tokens_with_spans,
)
from sage_tod.text.numbers import COUNT_NOUNS, NUMBER_WORDS, number_token, read_number
from sage_tod.text.party import party_phrases
from sage_tod.text.slot import SlotLike
from sage_tod.text.times import find_times, normalize_time

_NEGATION = frozenset({"not", "no", "dont", "don", "nt", "never", "except", "without", "instead",
                       "rather", "other", "than", "opposed"})
# "not too pricey or cheap": a negation before the first of two joined values reaches both
_JOINERS = frozenset({"or", "nor"})


_DAY_ABBREVIATIONS = frozenset({"tues", "thur", "thurs", "weds", "thu", "fri", "tue"})
# a day's key -> the abbreviations that name it (what a date value's screen looks for)
_ABBREVIATIONS_OF: dict[str, tuple[str, ...]] = {}
for _abbr in sorted(_DAY_ABBREVIATIONS):
    _day = date_key(_abbr)
    if _day is not None:
        _ABBREVIATIONS_OF[_day] = (*_ABBREVIATIONS_OF.get(_day, ()), _abbr)


@dataclass(frozen=True)
class Found:
    """A value found in a text: character span and the canonical key it matched."""

    start: int
    end: int
    key: str


# count slots about people, for which a party said in words counts (`text.party`)
_PARTY_SLOT = re.compile(r"people|person|guest|party|passenger|traveller|traveler|seat|ticket",
                         re.IGNORECASE)


class Reading:
    """One text as the matcher reads it, built once for every value looked up in it.

    S1 looks for each value of a turn in every utterance of its history, and the
    extractor asks for several values in the same user turn; each text is therefore
    read once, here, and its analysis shared: the tokenizer's string (`token_text`, at
    once, cheap), then, only when a value needs them, the content tokens (the
    possessive "s" dropped: "christ 's college" reads as "christ college") and the
    positions of each. Most history utterances hold none of a
    value's words: `ValueQuery.find` rules those out on the string alone, without
    tokenising them.
    """

    __slots__ = ("_by_token", "_toks", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = token_text(text)
        self._toks: tuple[Token, ...] | None = None
        self._by_token: dict[str, list[int]] = {}

    @property
    def indexed(self) -> bool:
        """Whether the token index is built (looking a value up then costs lookups only)."""
        return self._toks is not None

    def index(self) -> tuple[tuple[Token, ...], dict[str, list[int]]]:
        """The content tokens and the positions of each, built in one pass."""
        if self._toks is None:
            text = self.text
            toks: list[Token] = []
            by_token: dict[str, list[int]] = {}
            for tok in tokens_with_spans(text):
                t, a, _ = tok
                if t == "s" and a > 0 and text[a - 1] in "'\u2019 " and "'" in fold(
                        text[max(0, a - 2):a]):
                    continue
                by_token.setdefault(t, []).append(len(toks))
                toks.append(tok)
            self._toks, self._by_token = tuple(toks), by_token
        return self._toks, self._by_token


@lru_cache(maxsize=4096)
def reading(text: str) -> Reading:
    """The one `Reading` of `text` (least recently used, bounded): the utterances of a
    dialogue come back in every later turn's history, and the extractor and S1 read
    the same user turn."""
    return Reading(text)


def _content_tokens(text: str) -> tuple[Token, ...]:
    return reading(text).index()[0]


def _same_or_typo(tok: str, want: str) -> bool:
    if tok == want:
        return True
    # a typo in a long word, never in short words or numbers ("east"/"west", "17:15"):
    # at most one insertion, deletion, substitution or swap of neighbours ("cambrige",
    # "cmabridge"), which is the optimal-string-alignment distance 1
    return (len(want) >= 6 and len(tok) >= 6 and want.isalpha() and tok.isalpha()
            and tok[0] == want[0] and OSA.distance(tok, want, score_cutoff=1) <= 1)


def _iter_tokens(r: Reading, needle: Sequence[str], fuzzy: bool = False
                 ) -> Iterator[tuple[int, int]]:
    """Every span of the text whose tokens spell `needle` (or one token joining it)."""
    if not needle:
        return
    toks, by_token = r.index()
    n = len(needle)
    if n > 1:  # one written token for the whole value: "nightclubs" for "night club"
        whole = "".join(needle)
        for i in sorted(by_token.get(whole, []) + by_token.get(whole + "s", [])):
            yield toks[i][1], toks[i][2]
    starts = by_token.get(needle[0], [])
    if fuzzy:
        # a window with one wrong token has its first token exact, or (the typo there)
        # its second; one wrong token alone is a typo of the value's word
        if n > 1:
            starts = sorted({*starts, *(j - 1 for j in by_token.get(needle[1], ()) if j)})
        else:
            starts = sorted(i for t, at in by_token.items() if _same_or_typo(t, needle[0])
                            for i in at)
    for i in starts:
        if i > len(toks) - n:
            break
        window = [toks[i + k][0] for k in range(n)]
        wrong = sum(window[k] != needle[k] for k in range(n))
        if wrong == 0 or (fuzzy and wrong == 1 and all(
                _same_or_typo(window[k], needle[k]) for k in range(n))):
            yield toks[i][1], toks[i + n - 1][2]


def is_negated(text: str, start: int, since: int = 0) -> bool:
    """True when one of the three tokens before `start` negates what follows, or the
    three before an "or" among them do ("not too pricey or cheap"). A contrast negates
    ("rather than", "instead of", "as opposed to"); a bound does not ("no later than",
    "not before", "earlier than": `_BOUND_WORDS`). This is the one negation test of the
    extractor and of S1. Only tokens that begin at or after `since` count (a clause
    start). The six tokens this reads are found by binary search: callers ask once per
    candidate value of a possibly long text."""
    before = _words(tokens_before(text, start, 9, since))[-6:]
    n = len(before)
    if any(_negates_at(before, i) for i in range(max(0, n - 3), n)):
        return True
    joins = [i for i, t in enumerate(before) if t in _JOINERS and i >= n - 3]
    return bool(joins) and any(_negates_at(before, i)
                               for i in range(max(0, joins[0] - 3), joins[0]))


# bound words: a negation right before one states a limit, not a refusal ("no later than
# 17:15", "not before 10:00", "no more than 3 nights": MultiWOZ val MUL1722 turn 4), and
# "than" right after one compares with the value, it does not contrast ("earlier than
# 10:00" arrives by 10:00; "rather than", "other than" still contrast)
_BOUND_WORDS = frozenset({"later", "earlier", "sooner", "more", "less", "fewer", "before",
                          "after", "until", "till", "past", "over", "under"})


def _negates_at(words: list[str], i: int) -> bool:
    """`words[i]` negates what follows it, unless it is part of a bound."""
    w = words[i]
    if not _negates(w):
        return False
    if w == "than":
        return not (i and words[i - 1] in _BOUND_WORDS)
    return not (i + 1 < len(words) and words[i + 1] in _BOUND_WORDS)


# the pieces a contraction's apostrophe splits off ("don't" is "don", "t"; MultiWOZ's
# "do n't" is "do", "n", "t"): part of the word before, so that a window of three words
# holds "don't want a" before "guesthouse"
_CLITICS = frozenset({"t", "s", "d", "ll", "re", "ve", "m"})


def _words(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for t in tokens:
        if t in _CLITICS and out:
            out[-1] = out[-1] + "'" + t
        else:
            out.append(t)
    return out


def _negates(word: str) -> bool:
    """A negation word, or a contraction of "not" ("don't", "wouldn't", "n't")."""
    return word in _NEGATION or word.endswith("n't")


def text_tokens(text: str) -> frozenset[str]:
    """The content tokens `text` holds (for `anchor_tokens` screening)."""
    return frozenset(reading(text).index()[1])


@lru_cache(maxsize=8192)
def anchor_tokens(value: str) -> frozenset[str] | None:
    """Tokens one of which a text must hold for `find_value(text, value, None)` to find
    `value`: the first token of each form it looks for, and a multi-word form written
    as one token ("nightclub(s)"). None for a don't-care value, which is found by its
    cues, not its tokens: never screen it out."""
    if is_dontcare(value):
        return None
    out: set[str] = set()
    for form in _match_forms((value,), True):
        if form:
            out.add(form[0])
        if len(form) > 1:
            whole = "".join(form)
            out.update((whole, whole + "s"))
    return frozenset(out)


def find_dontcare(text: str) -> Found | None:
    """Where `text` says the user does not mind (`text.booleans.DONTCARE_CUES`)."""
    span = dontcare_span(text)
    return None if span is None else Found(span[0], span[1], "dontcare")


def find_value(text: str, value: str, slot: SlotLike | None, fuzzy: bool = False
               ) -> Found | None:
    """Where `text` first states `value` for `slot`, or None (see `find_values`)."""
    return next(iter(find_values(text, value, slot, fuzzy)), None)


_GLUED_UNIT = re.compile(r"(?<![\w.])(\d+)([A-Za-z]{1,4})\b")
_NOT_UNITS = frozenset({"am", "pm", "st", "nd", "rd", "th", "h", "hr", "hrs", "x"})


def find_values(text: str, value: str, slot: SlotLike | None, fuzzy: bool = False
                ) -> list[Found]:
    """Every place `text` states `value` for `slot`, in reading order within each form.

    Matching is token-exact after normalisation, widened by the slot's
    synonyms, number words and clock-time readings; paraphrases beyond that
    are left to S2 on purpose. `fuzzy` also accepts one typo in one long word
    of the value ("Cambrige Artworks"), which is how people type. All the
    places are returned so a caller can judge each one's role ("3 nights" and
    "3 people" both state 3; only one is a party size). To look for one value in
    many texts, prepare it once: `ValueQuery(value, slot, fuzzy).find(text)`.
    """
    if not text or not value:
        return []
    return ValueQuery(value, slot, fuzzy).find(text)


class _Plan:
    """How the token forms of a value are looked for (`_plan`). The screen's needles are
    worked out the first time a text not yet tokenised is screened: a value looked up
    only in tokenised texts (the extractor's, mostly) never needs them."""

    __slots__ = ("_needles", "forms", "graded", "typo_able")

    def __init__(self, forms: tuple[tuple[str, ...], ...], typo_able: bool = False,
                 graded: bool = False) -> None:
        self.forms = forms
        self.typo_able = typo_able  # a fuzzy pass can add a typo in a long word
        self.graded = graded  # graded forms count ("cheaper" for cheap)
        self._needles: tuple[str, ...] | None = None

    def needles(self) -> tuple[str, ...]:
        """A text holding none of these holds no form (`_needles`)."""
        if self._needles is None:
            self._needles = _needles(self.forms, typo_able=self.typo_able, graded=self.graded)
        return self._needles


_NO_FORMS = _Plan(())


class ValueQuery:
    """A value for a slot, prepared once to be looked for in many texts.

    S1 asks for the same value in every utterance of a history: its key, its typed
    reading (time, count, date), its token forms and their screen (`_needles`) are
    worked out here once, not once per utterance. `find` returns what `find_values`
    returns.
    """

    __slots__ = ("abbreviations", "count_needles", "date", "dontcare", "empty", "key",
                 "number", "party", "plan", "similar", "stype", "time")

    def __init__(self, value: str, slot: SlotLike | None, fuzzy: bool = False) -> None:
        stype = slot.type if slot is not None else "free"
        self.stype = stype
        self.empty = not value
        self.dontcare = bool(value) and is_dontcare(value)
        self.time: str | None = None
        self.number: str | None = None
        self.date: str | None = None
        self.abbreviations: tuple[str, ...] = ()
        self.party = False
        self.similar: tuple[str, ...] = ()  # the name `_similar_spans` compares windows with
        self.key = ""
        self.count_needles: tuple[str, ...] = ()
        self.plan = _NO_FORMS
        if not value or self.dontcare:
            return
        self.key = slot.normalize(value) if slot is not None else " ".join(basic_tokens(value))
        if stype == "time":
            self.time = normalize_time(value)
            if self.time is not None:
                # the value as written, for a text no time reader reads it in
                self.plan = _Plan((tuple(basic_tokens(value)),))
                return
        if stype == "number":
            self.number = read_number(value)
            if self.number is not None:
                self.count_needles = _number_needles(self.number)
                self.party = slot is not None and _PARTY_SLOT.search(
                    f"{slot.name} {slot.description}") is not None
                return
        if stype == "date":
            self.date = date_key(value)
            if self.date is not None:  # the day abbreviations that name this day
                self.abbreviations = _ABBREVIATIONS_OF.get(self.date, ())
        written = (tuple(slot.surface_forms(value)) if slot is not None and stype != "date"
                   else (value,))
        self.plan = _plan(written, free=stype == "free", categorical=stype == "categorical",
                          fuzzy=fuzzy)
        if fuzzy and stype == "free":
            name = tuple(basic_tokens(value))
            if len(name) >= 2 and len(" ".join(name)) >= 8:
                self.similar = name

    def find(self, text: str) -> list[Found]:
        """Every place `text` states the value (`find_values`)."""
        if not text or self.empty:
            return []
        if self.dontcare:
            dc = find_dontcare(text)
            return [] if dc is None else [dc]
        key = self.key
        if self.time is not None:
            t = self.time
            mentions = find_times(text)
            timed = [Found(tm.start, tm.end, t) for tm in mentions if t in tm.readings]
            if timed:
                return timed
            # the value as written where no time is read ("for 7 in the evening", where
            # "for 7" may count), but not "01:15" inside "01:15 pm"
            r = reading(text)
            if not any(n in r.folded for n in self.plan.needles()):
                return []
            return [Found(a, b, t) for a, b in _iter_tokens(r, self.plan.forms[0])
                    if not any(tm.start < b and a < tm.end for tm in mentions)]
        if self.number is not None:
            n = self.number
            # a token that reads as n holds n's digits or is a word for n (the needles)
            out = [Found(s, e, n) for tok, s, e in tokens_with_spans(text)
                   if number_token(tok) == n] if any(
                w in token_text(text) for w in self.count_needles) else []
            # a number glued to its unit ("2GB", "5kg"), not a clock time or an ordinal
            out += [Found(m.start(1), m.end(1), n) for m in _GLUED_UNIT.finditer(text)
                    if m.group(2).lower() not in _NOT_UNITS and read_number(m.group(1)) == n]
            if self.party:
                out += [Found(p.start, p.end, n) for p in party_phrases(text) if p.count == n]
            return out
        if self.date is not None:
            d = self.date
            dated = [Found(dm.start, dm.end, key) for dm in find_dates(text) if dm.key == d]
            # "Thurs", "weds": abbreviations no English word shares ("sat", "wed" are)
            if any(w in token_text(text) for w in self.abbreviations):
                dated += [Found(a, b, key) for tok, a, b in tokens_with_spans(text)
                          if tok in _DAY_ABBREVIATIONS and date_key(tok) == d
                          and not any(f.start <= a < f.end for f in dated)]
            if dated:
                return dated
        r = reading(text)
        # the screen: a text holding no needle holds no form, typo or graded form, and no
        # near-name window when its string is too far from the name (`_may_be_similar`):
        # it is ruled out on its string, never tokenised. The screen holds for a text
        # already indexed too (the user's turn, which the extractor read): there it
        # spares the fuzzy pass, which compares every token of the text with the form
        folded = r.folded
        for n in self.plan.needles():  # a loop, not any(): this runs for every utterance
            if n in folded:
                break
        else:
            if not self.similar or not _may_be_similar(folded, self.similar):
                return []
        forms = self.plan.forms
        for fz in ((False, True) if self.plan.typo_able else (False,)):
            found: list[Found] = []
            for form in forms:
                found += [Found(a, b, key) for a, b in _iter_tokens(r, form, fuzzy=fz)
                          if not any(f.start <= a and b <= f.end for f in found)]
            if found:
                return found
        if self.stype == "categorical":  # "a cheaper hotel", "the cheapest one", "moderately"
            toks, by_token = r.index()  # the possessive "s" is never graded
            graded = [Found(toks[i][1], toks[i][2], key) for form in forms
                      if len(form) == 1 and gradable(form[0])
                      for i in sorted(i for suffix in GRADES
                                      for i in by_token.get(form[0] + suffix, []))]
            if graded:
                return graded
        if self.similar:
            return [Found(a, b, key) for a, b in _similar_spans(text, self.similar)]
        return []


@lru_cache(maxsize=8192)
def _plan(written: tuple[str, ...], *, free: bool, categorical: bool, fuzzy: bool) -> _Plan:
    """The forms of `written`, whether a fuzzy pass can add to them, and their screen;
    memoised, since the same value is looked up in every turn of a log."""
    forms = _match_forms(written, free)
    typo_able = fuzzy and any(len(w) >= 6 and w.isalpha() for f in forms for w in f)
    return _Plan(forms, typo_able, categorical)


def _needles(forms: tuple[tuple[str, ...], ...], *, typo_able: bool, graded: bool
             ) -> tuple[str, ...]:
    """Strings one of which `token_text(t)` contains whenever the token passes of
    `ValueQuery.find` can find a form in t: a necessary condition, never a sufficient one.

    A token of a text is spelled in `token_text` as one of its `spellings`. An exact
    match needs a form's first token, or the whole form as one token ("nightclubs"); a
    typo window of two or more tokens keeps its first or its second token exact; one
    long word with one edit keeps its first or its last (len - 2) // 2 letters (an edit
    touches at most two neighbouring letters) unless it is a token the tokenizer
    rewrites (`SPECIAL_WORDS`: "center" gives "centre"); a graded form is one token
    ("cheaper").
    """
    out: dict[str, None] = {}
    present = set(forms)
    for f in forms:
        if not f:
            continue
        if len(f) > 1 and f[0] in _ARTICLES and f[1:] in present:
            # "the copper kettle" beside "copper kettle": the article is never a typo (too
            # short), so a text holding the longer form, exactly, with a typo in a later
            # word or as one token ("thecopperkettle"), holds a needle of the shorter one
            # too; "the" itself, in nearly every utterance, would screen out nothing
            continue
        words = [f[0]]
        if len(f) > 1:
            whole = "".join(f)
            words += [whole, whole + "s"]
            if typo_able:
                words.append(f[1])
        elif typo_able and len(f[0]) >= 6 and f[0].isalpha():
            w, h = f[0], (len(f[0]) - 2) // 2
            out.update(dict.fromkeys((w[:h], w[len(w) - h:])))
            out.update(dict.fromkeys(raw for raw, pieces in _SPECIAL_BY_FIRST.get(w[0], ())
                                     if any(_same_or_typo(p, w) for p in pieces)))
        if graded and len(f) == 1 and gradable(f[0]):
            words += [f[0] + suffix for suffix in GRADES]
        for w in words:
            out.update(dict.fromkeys(spellings(w)))
    return tuple(out)


_ARTICLES = frozenset({"the", "a", "an"})  # the articles `_match_forms` strips off a name

# `SPECIAL_WORDS`' items (in its order) under each first letter of their pieces: a piece
# that is a word or a typo of it starts with the word's first letter (`_same_or_typo`),
# so `_needles` asks only these of a word, not all of them
_SPECIAL_BY_FIRST: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
for _raw, _parts in SPECIAL_WORDS.items():
    for _first in dict.fromkeys(p[0] for p in _parts if p):
        _SPECIAL_BY_FIRST.setdefault(_first, []).append((_raw, _parts))


def _number_needles(n: str) -> tuple[str, ...]:
    """Strings one of which `token_text(t)` contains where a token of t reads as the
    count n (`number_token`): n's digits (a digit token is n after leading zeros, or a
    number word the tokenizer rewrote, `spellings`), or a counting word for n."""
    return (*spellings(n), *sorted(w for w in COUNT_NOUNS if str(NUMBER_WORDS[w]) == n))


def _match_forms(written: tuple[str, ...], free: bool) -> tuple[tuple[str, ...], ...]:
    """The token forms `find_values` looks for, longest first (so "city centre" wins over
    "centre")."""
    forms = [basic_tokens(f) for f in written]
    if free:  # "the Lensfield Hotel" is stated by "Lensfield Hotel" too
        forms += [f[1:] for f in forms if len(f) > 1 and f[0] in _ARTICLES]
        forms += _ampersand_forms(forms)
    forms = [[t for t in f if t != "s"] or f for f in forms]  # possessives, as in the text
    # tuples: the memo hands the same forms to every caller, so they must not change
    return tuple(tuple(f) for f in sorted(forms, key=len, reverse=True))


# the comparative, the superlative and the adverb of an adjective value state it:
# "cheaper", "cheapest", "moderately (priced)"
GRADES = ("er", "est", "ly")


def gradable(word: str) -> bool:
    """A value whose graded or adverb forms are read as it ("cheaper" for "cheap")."""
    return len(word) >= 4 and word.isalpha()


def _ampersand_forms(forms: list[list[str]]) -> list[list[str]]:
    """"Bed & Breakfast" (the "&" is no token) and "B&B" for a name with "bed and breakfast"."""
    out: list[list[str]] = []
    for f in forms:
        if "and" in f[1:-1]:
            out.append([t for t in f if t != "and"])
        j = next((i for i in range(len(f) - 2) if f[i:i + 3] == ["bed", "and", "breakfast"]),
                 None)
        if j is not None:
            out.append([*f[:j], "b", "b", *f[j + 3:]])
    return out


_NAME_RATIO = 0.9  # "cafe uno" / "caffe uno" .94; "pizza hut city centre" / "... fen ditton" .6


# every word the tokenizer rewrites, longest first; where one is written, its tokens are
# put right after it (`_may_be_similar`)
_SPECIAL_RE = re.compile("|".join(sorted(map(re.escape, SPECIAL_WORDS), key=len, reverse=True)))


def _with_tokens(m: re.Match[str]) -> str:
    return m.group() + "".join(SPECIAL_WORDS[m.group()])


def _may_be_similar(folded: str, name: Sequence[str]) -> bool:
    """False only when no window of the text can pass `_similar_spans` for `name`.

    A window's tokens, spaces left out, are a subsequence of the text's `token_text` with
    each word the tokenizer rewrites followed by its tokens (insertions keep every
    subsequence, and such a word is a whole raw token: letters between non-letters). So
    the window's LCS with the name is at most that string's LCS with the name without
    spaces, plus the name's n - 1 spaces: B. A window of any length then scores at most
    2B / (B + |name|) (2M / (|window| + |name|) with |window| >= M grows with M); below
    the threshold, by a margin no rounding crosses, no window passes."""
    want = " ".join(name)
    spread = _SPECIAL_RE.sub(_with_tokens, folded)
    bound = min(len(want), LCSseq.similarity(spread, want.replace(" ", "")) + len(name) - 1)
    return 2.0 * bound / (bound + len(want)) >= _NAME_RATIO - 1e-9


def _similar_spans(text: str, needle: Sequence[str]) -> list[tuple[int, int]]:
    """Spans of as many tokens as a multi-word name that spell it nearly the same
    (character ratio >= .9, same first letter): "cafe uno" for "Caffe Uno".

    The ratio is 2·LCS / (|window| + |name|), LCS the longest common subsequence of
    characters (rapidfuzz's Indel similarity), computed as difflib's `ratio()` computes
    its 2·M / T so that the same counts give the same float. difflib's M (matching
    blocks, Ratcliff/Obershelp) is at most the LCS, so where they differ this ratio is
    the higher one; on every bench slice and golden turn they decide alike
    (docs/method.md)."""
    n = len(needle)
    want = " ".join(needle)
    if n < 2 or len(want) < 8:
        return []
    toks = _content_tokens(text)
    out: list[tuple[int, int]] = []
    for i in range(len(toks) - n + 1):
        if toks[i][0][:1] != want[0]:
            continue
        window = " ".join(t for t, _, _ in toks[i:i + n])
        total = len(window) + len(want)
        if 2.0 * LCSseq.similarity(window, want) / total >= _NAME_RATIO:
            out.append((toks[i][1], toks[i + n - 1][2]))
    return out
