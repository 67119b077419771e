"""Round 16 of the speed work: each shortcut against the code it replaces.

The extractor's `\\b`-led alternations got a first-character look-ahead, the cue index
counts hits in a plain dict, and the slot-assignment function reads each slot's words
from a per-workflow table. Each is checked here against the previous form (kept below
as the reference): the look-aheads on generated texts made of the patterns' own words
in several cases (and of characters that case-fold oddly), the rest on every slot of
the shipped specs and on generated token lists.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sage_tod.compiler import assign, descriptors, detect, dontcare, names, offers, values
from sage_tod.compiler.cues import SlotCues, _stem, slot_cues
from sage_tod.contracts.spec import SpecBundle, Workflow, load_spec
from sage_tod.text import party, places, times
from sage_tod.text.sentences import sentences

_LOOKAHEADS = {
    "offers._OFFER_QUESTION": offers._OFFER_QUESTION, "offers._BOOKED": offers._BOOKED,
    "offers._OFFERING": offers._OFFERING, "names._ABOUT": names._ABOUT,
    "dontcare._WAIVER": dontcare._WAIVER, "names._NAMING": names._NAMING,
    "descriptors._WANT_AMENITY": descriptors._WANT_AMENITY,
    "descriptors._AFTER_VERB": descriptors._AFTER_VERB,
    "descriptors._ASKS_FOOD": descriptors._ASKS_FOOD,
    "descriptors._REQUEST": descriptors._REQUEST,
    "offers._BOOKING_WORDS": offers._BOOKING_WORDS, "offers._REFUSE": offers._REFUSE,
    "values._NAMING_WORD": values._NAMING_WORD, "party.ALONE": party.ALONE,
    "party.COUPLE": party.COUPLE,
    "dontcare._ONLY_CARE": dontcare._ONLY_CARE, "detect._IMPLIED_CONFIRM": detect._IMPLIED_CONFIRM,
    "times._WORD_HOUR_AFTER_CUE_RE": times._WORD_HOUR_AFTER_CUE_RE,
}
_LEAD = re.compile(r"^\(\?=\[([a-z]+)\]\)")


def _without_lookahead(p: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern as it was: its first-character look-ahead taken out."""
    out = _LEAD.sub("", p.pattern, count=1)
    assert out != p.pattern
    return re.compile(out, p.flags)


def _firsts(items: list[tuple[Any, Any]]) -> set[str] | None:
    """The characters a match of the parsed pattern `items` can start with (past
    zero-width `\\b`), or None where that is not a finite set of literals."""
    for op, av in items:
        if op is sre_c.AT:
            continue
        if op is sre_c.LITERAL:
            return {chr(av)}
        if op is sre_c.SUBPATTERN:
            return _firsts(list(av[3]))
        if op is sre_c.BRANCH:
            out: set[str] = set()
            for branch in av[1]:
                got = _firsts(list(branch))
                if got is None:
                    return None
                out |= got
            return out
        return None
    return None


def test_each_lookahead_is_the_set_of_first_letters() -> None:
    """The look-ahead's class is exactly the letters the old pattern's matches can start
    with (so it is a necessary condition and rules out nothing a match needs)."""
    for name, p in _LOOKAHEADS.items():
        lead = _LEAD.match(p.pattern)
        assert lead is not None, name
        old = _without_lookahead(p)
        firsts = _firsts(list(sre_parse.parse(old.pattern, old.flags)))
        assert firsts is not None, name
        assert set(lead.group(1)) == firsts, name


# every alternative of those patterns, in several cases, beside separators and the
# characters whose case folding is not ASCII's (long s, Kelvin sign, dotted capital I)
_ALTERNATIVES = sorted({w for p in _LOOKAHEADS.values()
                        for w in re.findall(r"[a-z']+(?: [a-z']+)*", p.pattern)})
_LA_WORDS = [*_ALTERNATIVES, *(w.upper() for w in _ALTERNATIVES), *(
    w.title() for w in _ALTERNATIVES), "the", "x", "\u017fhall", "\u212aind", "\u0130s",
    "\u017fuggest", "nt", "n't", "not", "any", "time", "fine", "after", "on", "that",
    ",", ".", "?", " ", "-", "'", "1"]
la_texts = st.lists(st.sampled_from(_LA_WORDS), min_size=0, max_size=12).map(" ".join)
la_glued = st.lists(st.sampled_from(_LA_WORDS), min_size=0, max_size=12).map("".join)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(la_texts, la_glued), st.integers(min_value=0, max_value=80),
       st.integers(min_value=0, max_value=20))
@example("Would you like me to book it? I have booked the hotel, any area is fine", 60, 3)
@example("\u017fhall I book a table at the \u212aing's, \u0130s there a",  40, 0)
def test_first_character_lookaheads_change_no_match(text: str, end: int, start: int
                                                    ) -> None:
    """Each pattern with its look-ahead finds what it found without it, in the whole
    text, the lower-cased text (what `dontcare` searches) and between two positions (as
    `dontcare` searches a sentence)."""
    for name, p in _LOOKAHEADS.items():
        old = _without_lookahead(p)
        for folded in (text, text.lower()):
            assert ([(m.span(), m.groups()) for m in p.finditer(folded)]
                    == [(m.span(), m.groups()) for m in old.finditer(folded)]), name
            assert ([m.span() for m in p.finditer(folded, start, end)]
                    == [m.span() for m in old.finditer(folded, start, end)]), name
            assert (p.search(folded) is None) == (old.search(folded) is None), name


def _old_slots_for(cues: SlotCues, tokens: list[str]) -> dict[str, int]:
    """`SlotCues.slots_for` as it was: a Counter."""
    hits: Counter[str] = Counter()
    seen: set[str] = set()
    for t in tokens:
        st_ = _stem(t)
        if st_ in seen:
            continue
        for slot in cues.index.get(st_, ()):
            hits[slot] += 1
        if st_ in cues.index:
            seen.add(st_)
    return dict(hits)


def _specs() -> list[SpecBundle]:
    root = Path(__file__).resolve().parents[1]
    paths = sorted({*root.glob("examples/*/spec.yaml"), *root.glob("src/sage_tod/**/*.yaml")})
    out = []
    for p in paths:
        try:
            out.append(load_spec(p))
        except Exception:  # not a spec (a config, a manifest)
            continue
    assert len(out) >= 3
    return out


_WORKFLOWS: list[Workflow] = [wf for spec in _specs() for wf in spec.workflows.values()]
_CUE_WORDS = sorted({w for wf in _WORKFLOWS for k in slot_cues(wf).index for w in (k, k + "s")}
                    | {"the", "from", "to", "people", "leaving", "x"})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_CUE_WORDS), max_size=10))
def test_slots_for_is_the_counter_form(tokens: list[str]) -> None:
    """The dict form gives the same slots, in the same order, with the same counts."""
    for wf in _WORKFLOWS:
        cues = slot_cues(wf)
        got = cues.slots_for(tokens)
        want = _old_slots_for(cues, tokens)
        assert got == want and list(got) == list(want)


def test_slot_words_table_is_slot_words() -> None:
    """The per-workflow table holds `slot_words` of every slot."""
    for wf in _WORKFLOWS:
        table = assign.slot_words_of(wf)
        assert set(table) == set(wf.slots)
        for name, spec in wf.slots.items():
            assert table[name] == assign.slot_words(spec)


def _old_disambiguate(text: str, start: int, candidates: list[str], wf: Workflow,
                      prep_word: str | None = None) -> list[str]:
    """`assign.disambiguate` as it was: a loop over every preposition, the words of each
    candidate read from its spec (with round 17's reading past an article and round
    19's two-word role words and cut at another value's phrase, which are changes of
    behaviour, not of form)."""
    if len(candidates) < 2:
        return candidates
    before = assign.tokens_before(text, start, 4)
    bare = before[:-1] if before and before[-1] in ("the", "a", "an") else before
    last = prep_word or assign.role_word(bare)
    run = assign._final_role_run(bare) if last in assign.PREP_HINTS else len(bare)
    hits = slot_cues(wf).slots_for(before[run:] if run < len(bare) else before)
    for prep, hint_words in assign.PREP_HINTS.items():
        if last == prep:
            for c in candidates:
                if assign.slot_words(wf.slots[c]) & hint_words:
                    hits[c] = hits.get(c, 0) + 2
    scored = [(hits.get(c, 0), c) for c in candidates]
    best = max(s for s, _ in scored)
    return assign.unqualified(text, [c for s, c in scored if s == best])


def _old_role_decides(text: str, start: int, slot: str, candidates: list[str], wf: Workflow
                      ) -> bool:
    if wf.tools:
        return False
    before = assign.tokens_before(text, start, 3)
    if before and before[-1] == "the":
        before = before[:-1]
    hint = assign.PREP_HINTS.get(assign.role_word(before))
    if hint is None:
        return False
    return [c for c in candidates if assign.slot_words(wf.slots[c]) & hint] == [slot]


_PREPS = [*assign.PREP_HINTS, "the", "out of", "leaving from", "arrive", "arrive at", "x",
          "book", "day"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PREPS + _CUE_WORDS[:40]), max_size=6),
       st.sampled_from([None, *assign.PREP_HINTS, "x"]))
def test_disambiguate_and_role_decides_are_the_old_forms(words: list[str],
                                                         prep: str | None) -> None:
    """On every workflow, for its slots of each type as candidates, after any words."""
    text = " ".join(words) + " cambridge"
    start = len(text) - len("cambridge")
    for wf in _WORKFLOWS:
        by_type: dict[str, list[str]] = {}
        for name, spec in wf.slots.items():
            by_type.setdefault(spec.type, []).append(name)
        for cands in (*by_type.values(), list(wf.slots)):
            assert (assign.disambiguate(text, start, list(cands), wf, prep)
                    == _old_disambiguate(text, start, list(cands), wf, prep))
            for slot in cands[:4]:
                assert (assign.role_decides(text, start, slot, list(cands), wf)
                        == _old_role_decides(text, start, slot, list(cands), wf))


_NAME_PIECES = ["Kettle", "'s", "Yard", "New", "York", "Santa", "rosa", "Fresno", ",", "CA",
                "UK", "France", ".", "?", "!", ";", " ", "  ", "the", "of", "and", "NYC",
                "Morton", "DaCosta", "in", "to", "on", "Monday", "\u2019", "-", "x", "I",
                "Jesus", "Green", "called", "12", "ok", "Me", "hi"]
name_texts = st.lists(st.sampled_from(_NAME_PIECES), max_size=14).map(" ".join)
name_glued = st.lists(st.sampled_from(_NAME_PIECES), max_size=14).map("".join)


def _old_name_spans(text: str) -> list[places.NameSpan]:
    """`places.name_spans` as it was: each sentence's tokens read three times."""
    out: list[places.NameSpan] = []
    parts = [sm for sm in sentences(text, semicolons=True)
             if places._TOKEN_RE.search(sm.text)]
    for sm in parts:
        sentence, offset = sm.text, sm.start
        lows = [m.group().lower() for m in places._TOKEN_RE.finditer(sentence)]
        for i, j, start, end in places._spans(sentence, offset):
            out.append(places.NameSpan(start, end, text[start:end],
                                       tuple(lows[:i]), tuple(lows[j + 1:]), j - i + 1,
                                       question=sentence.rstrip().endswith("?"),
                                       alone=len(parts) == 1))
    return out


@settings(max_examples=1500, deadline=None)
@given(st.one_of(name_texts, name_glued))
@example("I want to go to Kettle 's Yard in New York. Is it near Fresno, CA?")
def test_name_spans_is_the_old_form(text: str) -> None:
    assert places.name_spans(text) == _old_name_spans(text)


_HEAD_WORDS = ["italian", "Italian", "food", "cuisine", "restaurant", "restaurants", "dishes",
               "dish", "foods", "cheap", "some", "good", " ", "  ", ",", ".", "-", "\t", "x",
               "FOOD", "Food", "seafood", "nice"]
head_texts = st.lists(st.sampled_from(_HEAD_WORDS), max_size=10).map(" ".join)
head_glued = st.lists(st.sampled_from(_HEAD_WORDS), max_size=10).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(head_texts, head_glued))
@example("some italian food")
def test_before_head_screen_changes_no_answer(text: str) -> None:
    """The literal screen answers what the pattern's search does."""
    assert descriptors._has_before_head(text) == (
        descriptors._BEFORE_HEAD.search(text) is not None)
