"""The per-workflow tables (`compiler.lexicon`, `detect`) agree with the paths they replace.

`Lexicon.candidates` picks a turn's categorical forms from its tokens instead of
screening every form of the workflow; it must return exactly the forms the old
loop found anything for (any anchor among the text's content tokens, no anchors,
or the compact spelling among its bigrams), in the same reading order. The
prepared `ValueQuery` of a form finds what `find_values(text, form, None)` finds (a
graded form's, what its slot's query finds: "moderately" for "moderate"),
and the said-back screen in `names` (the user's distinctive words looked for in
the agent's string) is a necessary condition for them to be among its tokens.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from sage_tod.compiler import descriptors, detect, dontcare
from sage_tod.compiler.lexicon import lexicon
from sage_tod.contracts.spec import Workflow, parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.text.match import find_values, text_tokens
from sage_tod.text.normalize import basic_tokens, fold, spellings, token_text, tokens_with_spans
from sage_tod.text.sentences import sentences
from test_extract_natural import SPEC

_SPEC = parse_spec(SPEC)
_WFS = list(_SPEC.workflows.values())


def _vocabulary() -> list[str]:
    """Every word of every value form of the spec, glued and split variants, and words
    the tokenizer rewrites: texts made of them hit many anchors and bigrams."""
    words: set[str] = {"a", "the", "not", "two", "center", "guesthouse", "'s", ",", "?",
                       "please", "nightclubs", "swimming", "pool", "free", "yes", "no",
                       "moderately", "cheapest", "cheaper"}
    for wf in _WFS:
        for vf in lexicon(wf).forms:
            toks = vf.form.split()
            words.update(toks)
            words.add("".join(toks))
            words.update(t + "s" for t in toks)
    return sorted(words)


_VOCAB = _vocabulary()
_TEXTS = st.lists(st.sampled_from(_VOCAB), min_size=0, max_size=14).map(" ".join)


def _old_candidates(text: str, wf_index: int) -> list[int]:
    """The forms the loop over every form found anything for."""
    lex = lexicon(_WFS[wf_index])
    said = text_tokens(text)
    toks = tokens_with_spans(text)
    bigrams = {t1 + t2 for (t1, _, _), (t2, _, _) in pairwise(toks)}
    return [i for i, vf in enumerate(lex.forms)
            if vf.anchors is None or not vf.anchors.isdisjoint(said)
            or (len(vf.compact) >= 8 and vf.compact in bigrams)]


def test_the_lexicon_has_forms_to_screen() -> None:
    assert sum(len(lexicon(wf).forms) for wf in _WFS) > 20
    assert any(lexicon(wf).by_compact for wf in _WFS)


@settings(max_examples=400, deadline=None)
@given(text=_TEXTS, wf_index=st.integers(min_value=0, max_value=len(_WFS) - 1))
def test_candidates_are_the_forms_the_full_loop_reads(text: str, wf_index: int) -> None:
    lex = lexicon(_WFS[wf_index])
    toks = tokens_with_spans(text)
    bigrams = {t1 + t2: None for (t1, _, _), (t2, _, _) in pairwise(toks)}
    got = lex.candidates(text_tokens(text), bigrams)
    assert got == _old_candidates(text, wf_index)
    # a form left out finds nothing in the text
    for i, vf in enumerate(lex.forms):
        if i not in got:
            assert not find_values(text, vf.form, None), (text, vf.form)


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS, wf_index=st.integers(min_value=0, max_value=len(_WFS) - 1))
def test_prepared_queries_find_what_find_values_finds(text: str, wf_index: int) -> None:
    for vf in lexicon(_WFS[wf_index]).forms:
        # a graded form ("moderate": "moderately priced") is looked for as its slot reads it
        assert vf.query.find(text) == find_values(text, vf.form, vf.spec if vf.graded else None)


@settings(max_examples=300, deadline=None)
@given(user=_TEXTS, agent=_TEXTS)
def test_said_back_screen_is_necessary(user: str, agent: str) -> None:
    """A user token among the agent's tokens has a spelling in the agent's string."""
    folded = token_text(agent)
    agent_tokens = set(basic_tokens(agent))
    for w in basic_tokens(user):
        if w in agent_tokens:
            assert any(sp in folded for sp in spellings(w)), (w, agent)


def test_name_slot_and_value_words_match_the_schema() -> None:
    for wf in _WFS:
        lex = lexicon(wf)
        names = [s for s, sp in wf.slots.items() if sp.type == "free" and "name" in s]
        assert lex.name_slot == (names[0] if len(names) == 1 else None)
        for sp in wf.slots.values():
            for v in sp.values:
                assert " ".join(basic_tokens(v)) in lex.value_words
        assert lex.value_words <= lex.others


# -- the agent-side tables of `compiler.detect` --------------------------------------------

_CUE_SPEC = parse_spec({"workflows": [{
    "id": "hotel",
    "confirmation_cues": ["all set", "two rooms", "guesthouse booked", "see you"],
    "slots": [{"name": "hotel-area", "type": "categorical",
               "values": ["centre", "north"], "synonyms": {"centre": ["city center"]}},
              {"name": "hotel-people", "type": "number"}],
}]})
_CUE_WORDS = ["all", "set", "two", "2", "rooms", "room", "guest", "house", "guesthouse",
              "booked", "see", "you", "center", "centre", "city", "north", ".", "?", "not",
              "I", "have", "reference", "number", "what", "time", "how", "many"]
_AGENT = st.lists(st.sampled_from(_CUE_WORDS), min_size=0, max_size=16).map(" ".join)


def _old_confirmation_span(text: str, wf: Workflow) -> tuple[int, int, bool] | None:
    """`detect._confirmation_span` as it was: every sentence tokenised, cues per call."""
    implied: tuple[int, int, bool] | None = None
    cue_tokens = [basic_tokens(c) for c in wf.confirmation_cues]
    for sent in sentences(text):
        s, sentence = sent.start, sent.text
        if sentence.rstrip().endswith("?"):
            continue
        folded = fold(sentence)
        if detect._REFUSAL.search(folded):
            continue
        toks = tokens_with_spans(sentence)
        words = [t for t, _, _ in toks]
        for cue in cue_tokens:
            n = len(cue)
            for i in range(len(words) - n + 1):
                if cue and words[i:i + n] == cue:
                    return s + toks[i][1], s + toks[i + n - 1][2], True
        for pat in detect._STRONG_CONFIRM:
            m = pat.search(folded)
            if m:
                return s + m.start(), s + m.end(), True
        m = detect._IMPLIED_CONFIRM.search(folded)
        if m and implied is None and not detect._DEFERRAL.search(folded):
            implied = (s + m.start(), s + m.end(), False)
    return implied


def _old_names_a_value(sentence: str, slot: str, wf: Workflow) -> bool:
    spec = wf.slots[slot]
    if not spec.values:
        return False
    joined = f" {' '.join(basic_tokens(sentence))} "
    return any(f" {' '.join(basic_tokens(f))} " in joined
               for v in spec.values for f in spec.surface_forms(v))


@settings(max_examples=400, deadline=None)
@given(agent=_AGENT)
def test_detect_tables_agree_with_the_per_sentence_path(agent: str) -> None:
    wf = _CUE_SPEC.workflow("hotel")
    assert wf is not None
    assert detect._confirmation_span(agent, wf) == _old_confirmation_span(agent, wf)
    for slot in wf.slots:
        assert detect._names_a_value(agent, slot, wf) == _old_names_a_value(agent, slot, wf)


# -- the waiver screen of `compiler.dontcare` -----------------------------------------------

_WAIVER_WORDS = ["it", "does", "doesn't", "doesn", "'t", "n't", "not", "matter", "i", "don't",
                 "care", "no", "none", "nope", "preference", "any", "area", "price", "time",
                 "after", "is", "fine", "really", ".", ",", "?", "!", "but", "cheap", "north",
                 "know", "either", "whichever", "works", "i'm", "flexible", "particular"]
_USER = st.lists(st.sampled_from(_WAIVER_WORDS), min_size=0, max_size=14).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(user=_USER, agent=st.sampled_from(["What area would you like?",
                                          "Do you have a price preference?", "",
                                          "I have a cheap one and an expensive one."]))
def test_waiver_screen_changes_nothing(user: str, agent: str) -> None:
    turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": "hotel", "user": user,
                       "agent": "ok", "state_before": {}, "state_after": {},
                       "history": [{"user": "hi", "agent": agent}] if agent else []},
                      _SPEC).turn
    wf = _SPEC.workflow("hotel")
    assert wf is not None
    assert dontcare.find_waivers(turn, wf) == dontcare._read_waivers(turn, wf)


_DESCRIBING = ["thai", "food", "cuisine", "restaurant", "serves", "serving", "italian", "a",
               "need", "free", "wifi", "parking", "with", "has", "internet", "not", "doesn't",
               "include", ".", "?", ",", "cheap", "Indian", "dishes", "specializes", "in"]
_DESCRIBED = st.lists(st.sampled_from(_DESCRIBING), min_size=0, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(user=_DESCRIBED, wf_index=st.integers(min_value=0, max_value=len(_WFS) - 1))
def test_descriptor_screen_changes_nothing(user: str, wf_index: int) -> None:
    turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": _WFS[wf_index].id,
                       "user": user, "agent": "ok", "state_before": {}, "state_after": {}},
                      _SPEC).turn
    wf = _WFS[wf_index]
    assert descriptors.find_descriptors(turn, wf) == descriptors._read_descriptors(turn, wf)


def test_the_descriptor_screen_is_exercised() -> None:
    """Some workflow of the spec has a food slot and some a yes/no one."""
    assert any(descriptors._SLOTS.of(wf)[0] for wf in _WFS)
    assert any(descriptors._SLOTS.of(wf)[1] for wf in _WFS)


_CONFIRM_TEXT = st.lists(st.sampled_from([
    "i", "we", "have", "'ve", "now", "booked", "reserved", "confirmed", "scheduled", "arranged",
    "made", "is", "are", "has", "been", "booking", "reservation", "order", "successful",
    "complete", "done", "placed", "reference", "confirmation", "number", "code", "#", "you're",
    "you", "all", "set", "taken", "care", "of", "good", "to", "go", "on", "its", "it's", "way",
    "i'll", "will", "go", "ahead", "and", "book", "reserve", "going", "the", "table", "."]),
    min_size=0, max_size=10).map(" ".join)


@settings(max_examples=800, deadline=None)
@given(_CONFIRM_TEXT)
def test_confirmation_word_screen_is_necessary(text: str) -> None:
    """A sentence `detect._CONFIRM_WORDS` finds nothing in matches no confirmation pattern."""
    folded = fold(text)
    if detect._CONFIRM_WORDS.search(folded) is None:
        assert not any(p.search(folded) for p in detect._STRONG_CONFIRM)
        assert detect._IMPLIED_CONFIRM.search(folded) is None
