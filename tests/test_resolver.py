"""The extractor's resolver (`compiler/resolve.py`): its priority table, its steps, and
which reader wins, on real corpus utterances.

Utterances are quoted from MultiWOZ 2.1 (MIT licence) as the natural-failure slice and
the bench slices carry them (the corpus user turn, the agent turn before it, the state a
system wrote); each test names its dialogue and turn index. Each priority test shows
both sides: what the losing reader reads on its own, and that the resolver drops it.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sage_tod.compiler import values
from sage_tod.compiler.descriptors import find_descriptors
from sage_tod.compiler.dontcare import find_waivers
from sage_tod.compiler.extract import READERS, extract_user_values
from sage_tod.compiler.mentions import SOURCES, Claims, Extraction, Mention, Source
from sage_tod.compiler.names import find_typed_names
from sage_tod.compiler.offers import find_acceptance
from sage_tod.compiler.resolve import _STEPS, PRIORITY, RANK, Reader, plan, resolve
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.criteria import EXACT
from sage_tod.contracts.spec import Workflow
from sage_tod.contracts.turns import Turn, parse_turn
from sage_tod.text.match import is_negated
from test_extract_coverage import _spec, _wf


def _turn(wf: str, user: str, agent_before: str = "", before: dict[str, str] | None = None,
          after: dict[str, str] | None = None) -> Turn:
    history = [{"user": "", "agent": agent_before}] if agent_before else []
    return parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": wf, "user": user,
                       "agent": "", "state_before": before or {},
                       "state_after": after if after is not None else (before or {}),
                       "history": history}, _spec()).turn


def _extract(turn: Turn) -> list[Extraction]:
    wf = _wf(turn.workflow)
    return extract_user_values(turn, wf, _spec())


class _Open(Claims):
    """No span claimed: what a reader reads on its own."""

    def free(self, start: int, end: int, source: str = "") -> bool:
        return True

    def extracted(self) -> tuple[Extraction, ...]:
        return ()


# the corpus turns the priority tests read
_MUSEUM = _turn("attraction", "Yes I would like to go the Fitzwilliam Museum .   Can you give "
                "me the address ?", "", {"attraction-name": "fitzwilliam museum"})  # MUL0990 t4
_SOUTH_AFRICAN = _turn("restaurant", "I also need a restaurant with south African food in the "
                       "centre .", "", {"restaurant-food": "south african"})  # MUL1376 turn 5
_EIGHT_PM = _turn("restaurant", "Please make the reservation for 2 people at 8 pm tonight .",
                  "", {"restaurant-bookpeople": "2", "restaurant-booktime": "20:00"})  # PMUL0289
_HAKKA = _turn("restaurant", "Lets try Hakka . It will be just myself at 16:45 on tuesday .",
               "Yes , both Hakka and The Hotpot serve Chinese .   Can I book either for you ?",
               {"restaurant-area": "north", "restaurant-pricerange": "expensive"})  # MUL1598 t2
_ANYTHING = _turn("restaurant", "Anything will work , book me for what available , Ill need "
                  "the postal code for wherever I am booked .",
                  "There are several options available to you , is there a specific type of "
                  "food you are wanting to try ?",
                  {"restaurant-area": "centre", "restaurant-pricerange": "cheap"},
                  {"restaurant-area": "centre", "restaurant-food": "dontcare",
                   "restaurant-pricerange": "cheap"})  # MUL1276 turn 2, as LABES wrote it
_WIFI = _turn("hotel", "No , but I do need free wifi .   Could you book a room for Wednesday ?"
              "   I will need it for 4 nights .   I will be alone .",
              "I have moderate hotels across Cambridge do you have an area in mind ?",
              {"hotel-internet": "no"})  # MUL1189 turn 6
_CORPUS = (_MUSEUM, _SOUTH_AFRICAN, _EIGHT_PM, _HAKKA, _ANYTHING, _WIFI)


# -- the table ------------------------------------------------------------------------------

def test_the_priority_table_ranks_every_source_once() -> None:
    listed = [src for row in PRIORITY for src in row.sources]
    assert sorted(listed) == sorted(SOURCES)
    assert set(RANK) == set(SOURCES)
    assert all(row.why.strip() for row in PRIORITY)


def test_every_source_has_a_step_and_one_reader() -> None:
    assert set(_STEPS) == set(SOURCES)
    read = [src for r in READERS for src in r.sources]
    assert sorted(read) == sorted(SOURCES)


def test_the_readers_run_in_the_rank_of_their_sources() -> None:
    ranks = [min(RANK[s] for s in r.sources) for r in READERS]
    assert ranks == sorted(ranks)
    # listing the readers in another order changes nothing: the table orders them
    assert plan(tuple(reversed(READERS))) == READERS
    for turn in _CORPUS:
        u = UserTurn(turn)
        wf = _wf(turn.workflow)
        assert resolve(u, wf, plan(tuple(reversed(READERS)))) == resolve(UserTurn(turn), wf,
                                                                          READERS)


def _reader(*sources: Source) -> Reader:
    return Reader(lambda u, wf, claims: [], sources)


def test_plan_refuses_readers_no_order_can_serve() -> None:
    with pytest.raises(ValueError, match="read by"):
        plan((_reader("time"), _reader("time", "time_held")))
    # a reader of times and places would have to run both before and after counts
    with pytest.raises(ValueError, match="interleave"):
        plan((_reader("time", "place"), _reader("number")))


def test_a_mention_of_an_undeclared_source_is_refused() -> None:
    def stray(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
        return [Mention("north", ("restaurant-area",), 0, 5, "place")]

    with pytest.raises(ValueError, match="does not declare"):
        resolve(UserTurn(_turn("restaurant", "north")), _wf("restaurant"),
                (Reader(stray, ("categorical",)),))


# -- which reader wins ----------------------------------------------------------------------

def test_a_name_the_state_records_wins_over_the_type_word_inside_it() -> None:
    wf = _wf("attraction")
    u = UserTurn(_MUSEUM)
    # on its own, the categorical reader reads "Museum" as the attraction's type ...
    alone = values.categorical(u, wf, _Open())
    assert [(m.value, m.slots) for m in alone] == [("museum", ("attraction-type",))]
    # ... but the recorded name claimed those words first, and the reader sees that claim
    found = _extract(_MUSEUM)
    assert [(e.value, e.source) for e in found] == [("fitzwilliam museum", "state")]


def test_a_recorded_cuisine_wins_over_the_area_word_inside_it() -> None:
    found = {(e.value, e.source) for e in _extract(_SOUTH_AFRICAN)}
    assert ("south african", "state") in found and ("centre", "categorical") in found
    assert ("south", "categorical") not in found


def test_a_time_the_state_holds_keeps_its_digits_from_being_a_count() -> None:
    wf = _wf("restaurant")
    u = UserTurn(_EIGHT_PM)
    held = [m for m in values.times(u, wf, _Open()) if m.source == "time_held"]
    assert [(m.value, m.slots) for m in held] == [("8 pm", ())]
    assert [e for e in _extract(_EIGHT_PM) if e.value == "8"] == []

    # without the claim-only mention, "8" next to "people" would be a second party size
    def times_unheld(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
        return [m for m in values.times(u, wf, claims) if m.source != "time_held"]

    unheld = plan(tuple(r if r.read is not values.times else Reader(times_unheld, ("time",))
                        for r in READERS))
    counts = [e.value for e in resolve(UserTurn(_EIGHT_PM), wf, unheld) if e.source == "number"]
    assert "8" in counts


def test_a_name_the_user_types_wins_over_the_offer() -> None:
    wf = _wf("restaurant")
    # the agent's turn reads as offering "Hotpot" alone; the user typed "Hakka"
    offer = find_acceptance(_HAKKA, wf)
    assert offer is not None and offer.value == "Hotpot"
    assert [m.value for m in find_typed_names(_HAKKA, wf)] == ["Hakka"]
    names = [(e.value, e.source) for e in _extract(_HAKKA) if "restaurant-name" in e.candidates]
    assert names == [("Hakka", "typed_name")]


def test_a_value_the_state_records_wins_over_the_waiver_that_says_it() -> None:
    wf = _wf("restaurant")
    waivers = find_waivers(_ANYTHING, wf)
    assert [(m.slots, _ANYTHING.user[m.start:m.end]) for m in waivers] == [
        (("restaurant-food",), "Anything will work")]
    found = [(e.value, e.source, _ANYTHING.user[e.start or 0:e.end or 0])
             for e in _extract(_ANYTHING) if "restaurant-food" in e.candidates]
    # s_t's "dontcare" is said as "Anything" and claims it: the waiver over it is dropped
    assert found == [("dontcare", "state", "Anything")]


def test_an_amenity_wanted_with_a_verb_makes_its_synonym_reading_exact() -> None:
    wf = _wf("hotel")
    described = find_descriptors(_WIFI, wf)
    assert [(m.value, m.slots, m.confidence) for m in described] == [
        ("yes", ("hotel-internet",), EXACT)]
    internet = [e for e in _extract(_WIFI) if e.candidates == ("hotel-internet",)]
    # one extraction, the categorical reading of "free wifi", raised by the verb
    assert [(e.value, e.source, e.exact) for e in internet] == [("yes", "categorical", True)]
    # without the descriptor, "free" (a synonym of yes for two amenities) with the amenity
    # right after it is exact too (round 19); with the amenity further off ("wifi that is
    # free") only likely, and the verb still raises it ("I do need wifi that is free")
    plain = plan(tuple(r for r in READERS if "descriptor" not in r.sources))
    alone = [e for e in resolve(UserTurn(_WIFI), wf, plain) if e.candidates == ("hotel-internet",)]
    assert [(e.value, e.source, e.exact) for e in alone] == [("yes", "categorical", True)]
    far = _turn("hotel", "No , but I do need wifi that is free .", "", {"hotel-internet": "no"})
    alone = [e for e in resolve(UserTurn(far), wf, plain) if e.candidates == ("hotel-internet",)]
    assert [(e.value, e.source, e.exact) for e in alone] == [("yes", "categorical", False)]
    assert [(e.value, e.exact) for e in _extract(far) if e.candidates == ("hotel-internet",)
            ] == [("yes", True)]


# -- the turn analysis the resolver reads -------------------------------------------------

def test_the_question_flags_are_the_turn_analysis() -> None:
    # SNG01957 turn 4: a search for hotels; MUL1008 turn 4: a search for attractions
    text = ("I do n't need a booking after all , sorry . Are there any cheap guesthouses in "
            "the north with free wifi ?")
    search = UserTurn(_turn("hotel", text), others=frozenset({"attraction"}))
    assert search.entity_searches == [(text.index("Are"), len(text))]
    other = ("And that is a 2 star hotel , correct ?   Are there any attractions I could "
             "visit in the centre ?")
    u = UserTurn(_turn("hotel", other), others=frozenset({"attraction"}))
    # a question ("Are there ...?") that searches another workflow: its values are free
    # of no claim, yet state nothing for the hotel
    assert u.entity_questions == [(other.index("Are"), len(other))]
    assert u.entity_searches == []
    # PMUL2917 turn 2: "not" three words back, in the same clause, negates; a comma ends it
    neg = UserTurn(_turn("restaurant", "No , the 8th ."))
    assert not neg.negated(neg.text.index("8th"))


# -- the clause negation moved into the turn analysis -----------------------------------------

_OLD_NEGATION = re.compile(r"\b(?:not|no|never|without|nt|n't|dont|doesnt|isnt)\b|n't\b",
                           re.IGNORECASE)


def _old_clause_negated(text: str, start: int) -> bool:
    """`descriptors.clause_negated` as it was: the clause cut from a 120-character window,
    and (round 21) from its last conjunction of its own polarity on ("That doesn't
    matter as long as it has free wifi")."""
    clause = re.split(r"[,.;:!?]", text[max(0, start - 120):start])[-1]
    clause = re.split(r"\b(?:but|as long as|so long as|provided|although|though|however"
                      r"|just)\b", clause, flags=re.IGNORECASE)[-1]
    return bool(_OLD_NEGATION.search(clause)) or is_negated(text, start)


_NEG_WORDS = ["it", "does", "n't", "need", "not", "no", "free", "parking", "wifi", ",", ".",
              "?", "but", "I", "want", "never", "without", "dont", "a", "long", "clause",
              "knot", "nothing", "wifi!", "as", "though", "just", "x" * 40]


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(_NEG_WORDS), min_size=0, max_size=30))
def test_clause_negation_reads_as_it_did(words: list[str]) -> None:
    text = " ".join(words)
    u = UserTurn(_turn("hotel", text))
    for at in range(len(text) + 1):
        assert u.clause_negated(at) == _old_clause_negated(text, at), (text, at)
