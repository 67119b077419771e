"""One reading per utterance: the screens that skip tokenising change no answer.

`text.match.Reading` reads a text's tokens only when a value needs them, and
`ValueQuery.find` rules a text out on its string when it holds none of the
value's needles; `find_times` rules out a text with no digit or hour word; the
fuzzy pass starts only where a typo window can start. Each shortcut is checked
here against the path it skips, on generated texts full of the words the
tokenizer rewrites ("two", "center", "guesthouse"), typos and counting words, so
a needle that misses a spelling fails.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sage_tod.contracts.spec import SlotSpec
from sage_tod.text import match, times
from sage_tod.text.dates import date_key
from sage_tod.text.normalize import basic_tokens, fold, token_text, tokens_with_spans
from sage_tod.text.numbers import number_token, read_number

_WORDS = ["two", "2", "02", "center", "centre", "centres", "cenre", "guesthouse", "guest",
          "house", "theater", "theaters", "theatres", "colour", "favourite", "couple", "pair",
          "single", "a", "the", "cheap", "cheaper", "cheaply", "moderately", "nightclubs",
          "night", "club", "cambridge", "cambrige", "cmabridge", "cambridgee", "artworks",
          "golden", "goldne", "curry", "christ", "'s", "\u2019s", "college", "b&b", "bed",
          "and", "breakfast", "fri", "friday", "thurs", "weds", "tue", "noon", "seven", "at",
          "by", "7", "7:30", "17:15", "5pm", "half", "past", "twenty", "one", "phone",
          "often", "\u017fix", "caf\u00e9", "Cafe", "UNO", "uno", ",", ".", "?", "not", "for",
          "people", "nights", "5kg", "2GB", "expensive", "expenisve", "moderate", "east"]
texts = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=12).map(" ".join)
values = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join)

_SLOTS = (
    SlotSpec(name="hotel-name"),
    SlotSpec(name="hotel-area", type="categorical", values=("centre", "east", "north"),
             synonyms={"centre": ("city centre", "town center")}),
    SlotSpec(name="hotel-pricerange", type="categorical",
             values=("cheap", "moderate", "expensive")),
    SlotSpec(name="hotel-type", type="categorical", values=("guesthouse", "hotel")),
    SlotSpec(name="hotel-bookpeople", type="number"),
    SlotSpec(name="train-leaveat", type="time"),
    SlotSpec(name="hotel-bookday", type="date"),
)


def _fresh(text: str) -> match.Reading:
    """A reading of `text` with nothing built: the screens are in force."""
    match.reading.cache_clear()
    return match.reading(text)


@settings(max_examples=500, deadline=None)
@given(texts, values, st.booleans())
def test_a_screened_text_reads_as_an_indexed_one(text: str, value: str, fuzzy: bool) -> None:
    """The screen only skips work: the answer for a text nothing has tokenised yet is the
    answer once its index is built, and the answer with the screen off."""
    for slot in (None, *_SLOTS):
        query = match.ValueQuery(value, slot, fuzzy)
        assert not _fresh(text).indexed
        screened = query.find(text)
        match.reading(text).index()
        assert query.find(text) == screened, (text, value, slot and slot.name)
        assert match.find_values(text, value, slot, fuzzy) == screened
        assert _unscreened(query).find(text) == screened, (text, value, slot and slot.name)


def _unscreened(query: match.ValueQuery) -> match.ValueQuery:
    """`query` with a screen every text passes (the empty needle is in every string)."""
    open_plan = match._Plan(query.plan.forms, query.plan.typo_able, query.plan.graded)
    open_plan._needles = ("",)
    query.plan = open_plan
    return query


@settings(max_examples=500, deadline=None)
@given(texts, values)
def test_needles_are_necessary(text: str, value: str) -> None:
    """Where a text holds no needle of a value's forms, no token pass finds any form."""
    for slot in _SLOTS[:4]:
        query = match.ValueQuery(value, slot, fuzzy=True)
        if query.similar or any(n in token_text(text) for n in query.plan.needles()):
            continue
        r = match.reading(text)
        for fz in (False, True):
            for form in query.plan.forms:
                assert list(match._iter_tokens(r, form, fuzzy=fz)) == [], (text, form)


@settings(max_examples=500, deadline=None)
@given(texts, st.sampled_from(["1", "2", "5", "7", "20", "two", "a couple", "05"]))
def test_number_needles_are_necessary(text: str, value: str) -> None:
    n = read_number(value)
    assert n is not None
    if not any(w in token_text(text) for w in match._number_needles(n)):
        assert not [t for t, _, _ in tokens_with_spans(text) if number_token(t) == n]


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(["friday", "thursday", "wednesday", "tuesday", "monday"]))
def test_day_abbreviation_screen_is_necessary(text: str, day: str) -> None:
    query = match.ValueQuery(day, _SLOTS[-1])
    if not any(a in token_text(text) for a in query.abbreviations):
        assert not [t for t, _, _ in tokens_with_spans(text)
                    if t in match._DAY_ABBREVIATIONS and date_key(t) == date_key(day)]


@settings(max_examples=500, deadline=None)
@given(texts)
def test_time_screen_is_necessary(text: str) -> None:
    """A text `find_times` rules out on its string gives no reader anything to read."""
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    if times._MAYBE_TIME.search(folded) is None:
        found = times._digit_times(folded) + times._word_times(folded)
        found += times._spaced_times(folded)
        assert found == [] and times._bare_hours(folded, found) == []


def _plain_iter_tokens(text: str, needle: list[str], fuzzy: bool) -> list[tuple[int, int]]:
    """The token scan as it was defined: every start with the needle's first letter."""
    toks = match._content_tokens(text)
    n, out = len(needle), []
    if n > 1:
        whole = "".join(needle)
        out += [(a, b) for t, a, b in toks if t in (whole, whole + "s")]
    for i, (t, _, _) in enumerate(toks):
        if i > len(toks) - n:
            break
        if (t[:1] != needle[0][:1]) if fuzzy else (t != needle[0]):
            continue
        window = [toks[i + k][0] for k in range(n)]
        wrong = sum(window[k] != needle[k] for k in range(n))
        if wrong == 0 or (fuzzy and wrong == 1 and all(
                match._same_or_typo(window[k], needle[k]) for k in range(n))):
            out.append((toks[i][1], toks[i + n - 1][2]))
    return out


@settings(max_examples=600, deadline=None)
@given(texts, values, st.booleans())
def test_fuzzy_starts_equal_the_first_letter_scan(text: str, value: str, fuzzy: bool) -> None:
    needle = basic_tokens(value)
    if needle:
        got = list(match._iter_tokens(match.reading(text), needle, fuzzy))
        assert got == _plain_iter_tokens(text, needle, fuzzy)


def test_the_screen_skips_tokenising() -> None:
    """What the screen is for: an utterance without the value's words is not tokenised."""
    text = "There are 29 hotels that meet your needs . Would you like to narrow it down ?"
    r = _fresh(text)
    assert match.ValueQuery("cheap", _SLOTS[2], fuzzy=True).find(text) == []
    assert not r.indexed
    assert match.ValueQuery("centre", _SLOTS[1], fuzzy=True).find(text + " center") != []
    assert match.reading(text + " center").indexed


_NAMES = st.lists(st.sampled_from(["the", "golden", "curry", "cafe", "uno", "caffe", "two",
                                   "centre", "theatre", "guest", "house", "2", "cambridge",
                                   "artworks"]), min_size=2, max_size=4)


@settings(max_examples=600, deadline=None)
@given(texts, _NAMES)
@example("center theater two", ["centre", "theatre", "2"])  # rewritten words only
def test_near_name_screen_is_necessary(text: str, name: list[str]) -> None:
    """Where `_may_be_similar` rules a text out, no window passes `_similar_spans`
    (the bound counts the tokens of rewritten words: "two" reads as 2, "center" as
    centre, "guesthouse" as guest house)."""
    if not match._may_be_similar(token_text(text), name):
        assert match._similar_spans(text, name) == [], (text, name)


_DATE_WORDS = ["march", "mar", "sept", "the", "12th", "12", "3rd", "of", "this", "next",
               "month", "first", "second", "twenty", "fifth", "thirtieth", "may", "2019-03-12",
               "3/12", "today", "tomorrow", "weekend", "day", "after", "friday", "week",
               "people", "i", "come", ",", "june", "in", "dec"]
date_texts = st.lists(st.sampled_from(_DATE_WORDS), min_size=0, max_size=10).map(" ".join)


def test_every_ordinal_word_holds_a_needle() -> None:
    from sage_tod.text import dates

    assert all(any(n in w for n in dates._ORDINAL_NEEDLES) for w in dates._ORDINAL_WORDS)
    assert all(any(n in m for n in dates._MONTH_NEEDLES) for m in dates.MONTHS)


@settings(max_examples=600, deadline=None)
@given(date_texts)
@example("the first of march")
@example("march the twenty-first, 2019")
@example("next friday or the day after tomorrow")
def test_date_screens_are_necessary(text: str) -> None:
    """A pattern `find_dates` skips by its screen (`dates._may_match`) matches nothing."""
    from sage_tod.text import dates

    folded = fold(text)
    for kind, pat in dates._PATTERNS:
        if not dates._may_match(kind, folded):
            assert pat.search(folded) is None, (kind, text)



def test_an_article_form_needs_no_needle_of_its_own() -> None:
    """A name's form with its article ("the cambridge artworks") is found only where the
    form without it has a needle: the article is no needle, and the texts still read."""
    name = _SLOTS[0]
    query = match.ValueQuery("the cambridge artworks", name, fuzzy=True)
    assert "the" not in query.plan.needles()
    for text in ("the cambridge artworks please", "the cambrige artworks",
                 "at thecambridgeartworks", "the cambridge artwork", "to the cmabridge artworks"):
        assert not _fresh(text).indexed
        screened = query.find(text)
        match.reading(text).index()
        assert screened and query.find(text) == screened, text
    assert query.find("the museum, then the college") == []


_TIME_WORDS = ["at", "by", "half", "past", "quarter", "to", "seven", "one", "twelve", "phone",
               "someone", "6", "10", "12", "30", "6:30", "in", "the", "evening", "morning",
               "tonight", "night", "afternoon", "o'clock", "pm", "a.m.", "for", "3", "people",
               "leave", "around", "fifteen", "forty", "five", ",", "."]
time_texts = st.lists(st.sampled_from(_TIME_WORDS), min_size=0, max_size=10).map(" ".join)


@settings(max_examples=800, deadline=None)
@given(time_texts)
@example("half past 6")
@example("2 in the afternoon")
@example("leave at seven fifteen")
def test_time_reader_screens_are_necessary(text: str) -> None:
    """`find_times` skips `_word_times` without an hour word and `_bare_hours` without a
    word of `_PREFIX_RE` / `_SUFFIX_RE`: each then reads nothing."""
    folded = fold(text)
    if not times._HOUR_WORD.search(folded):
        assert times._word_times(folded) == []
    if not any(w in folded for w in times._BARE_HOUR_NEEDLES):
        found = times._digit_times(folded) + times._word_times(folded)
        assert times._bare_hours(folded, found) == []
