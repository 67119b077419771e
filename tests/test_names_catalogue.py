"""The MultiWOZ databases' entity names as the name slots' catalogue (issue 23, coverage).

The spec generator lists every hotel, restaurant and attraction name as its name slot's
`values` and the union of them as the taxi's departure and destination, so the
extractor reads a listed name wherever and in whatever case the user writes it. The
utterances are MultiWOZ 2.1 validation turns (development data; MIT licence), each
named by dialogue and turn; the spec is the one compiled from the test fixtures'
databases (a sample of the real ones).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import extract_user_values
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.offers import offered_names
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.lab.datasets import multiwoz

FIX = Path(__file__).parent / "fixtures" / "datasets"


def _spec() -> SpecBundle:
    return parse_spec(multiwoz.compile_spec(FIX))


def _db_names(domain: str) -> list[str]:
    recs = json.loads((FIX / "multiwoz" / "db" / f"{domain}_db.json").read_text())
    return sorted({r["name"].lower() for r in recs})


def _read(wf: str, user: str, agent: str = "", state: dict[str, str] | None = None
          ) -> list[tuple[str, tuple[str, ...], bool, str]]:
    spec = _spec()
    turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": wf, "user": user,
                       "agent": "", "state_before": {}, "state_after": state or {},
                       "history": [{"user": "", "agent": agent}] if agent else []},
                      spec).turn
    ctx = make_context(spec, turn)
    return [(e.value, e.candidates, e.exact, e.source)
            for e in extract_user_values(turn, ctx.workflow, spec, after=ctx.after,
                                         before=ctx.before)]


def test_the_name_slots_list_the_database_names_and_the_taxi_goes_between_them() -> None:
    wfs = _spec().workflows
    for dom in ("hotel", "restaurant", "attraction"):
        name = wfs[dom].slots[f"{dom}-name"]
        assert name.type == "free" and list(name.values) == _db_names(dom)
    places = sorted({n for d in ("hotel", "restaurant", "attraction") for n in _db_names(d)})
    for slot in ("taxi-departure", "taxi-destination"):
        assert wfs["taxi"].slots[slot].type == "free"
        assert list(wfs["taxi"].slots[slot].values) == places
    # the train's stations are categorical: they keep the schema's values
    assert "allenbell" not in wfs["train"].slots["train-departure"].values


def test_a_name_users_write_as_an_ordinary_word_is_left_out() -> None:
    # "I 'm looking for a place to go in the centre of town ." (val MUL0871 turn 0): "the
    # place" is an attraction, but validation users write "place" in 354 turns and the
    # state records it in one; a name the state records whenever it is written stays
    def dlg(user: str, name: str) -> dict[str, Any]:
        semi = {"name": name} if name else {}
        return {"log": [{"text": user}, {"text": "", "metadata": {"attraction": {"semi": semi}}}]}
    place = "I 'm looking for a place to go in the centre of town ."
    ballare = "I am looking for ballare . I need the area , attraction type and entrance fee"
    dialogues = {f"p{i}": dlg(place, "") for i in range(multiwoz.WORD_MIN_TURNS)}
    dialogues |= {f"b{i}": dlg(ballare, "ballare") for i in range(multiwoz.WORD_MIN_TURNS)}
    names = ["ballare", "the place"]
    assert multiwoz.ordinary_words(names, dialogues) == {"the place"}
    # under WORD_MIN_TURNS writings say nothing either way
    few = {k: v for k, v in dialogues.items() if k in {"p0", "p1", "b0"}}
    assert multiwoz.ordinary_words(names, few) == frozenset()
    # recorded in half of the turns that write it: a name
    half = {f"p{i}": dlg(place, "the place" if i % 2 else "")
            for i in range(multiwoz.WORD_MIN_TURNS)}
    assert multiwoz.ordinary_words(names, half) == frozenset()


def test_a_listed_name_is_read_surely_in_any_case() -> None:
    # PMUL1274 turn 4 (lower case, no naming cue), PMUL1795 turn 2 (after "the")
    assert ("ballare", ("attraction-name",), True, "categorical") in _read(
        "attraction", "I am looking for ballare . I need the area , attraction type and "
        "entrance fee")
    assert ("allenbell", ("hotel-name",), True, "categorical") in _read(
        "hotel", "Ok , the Allenbell will do . Can you book me a room for 3 people , "
        "2 nights starting Tuesday please ?",
        "Okay I could recommend the Allenbell which is a 4 star guesthouse with free "
        "parking in the cheap price range located on the east side .")


def test_a_taxi_place_is_read_and_its_role_decides_the_slot() -> None:
    # PMUL2219 turn 8: "leaving from" decides the departure
    got = _read("taxi", "Yes , I am leaving from Ballare .")
    assert ("ballare", ("taxi-departure",), True, "categorical") in got


def test_the_name_catalogue_is_no_other_slots_value_to_the_offer_reader() -> None:
    # SNG0752 turn 2: the agent offers the Allenbell, the user books it; the state lacks
    # the name. Were the catalogue a value of another slot, the offer would be no name.
    wf = _spec().workflows["hotel"]
    assert "allenbell" not in lexicon(wf).others and "allenbell" in lexicon(wf).value_words
    agent = ("The Allenbell is on the east side of town , is a guesthouse type , and has "
             "parking and wifi . Would you like me to book it ?")
    assert offered_names(agent, wf) == ["Allenbell"]
    got = _read("hotel", "Yes , please book it for 5 people and 3 nights , starting from "
                "Monday .", agent)
    assert ("Allenbell", ("hotel-name",), True, "accepted_offer") in got


def test_a_value_word_inside_a_listed_name_belongs_to_the_name() -> None:
    # "I 'd like to find out about the Cambridge Arts Theatre" style: the attraction type
    # "theatre" inside a listed name is the name's (val MUL1967 turn 0 reads "King 's
    # College" so; the fixture lists the ADC Theatre): PMUL3840 turn 4
    got = _read("attraction", "What 's the phone number and address for the ADC Theatre ?")
    assert [g for g in got if g[1] == ("attraction-type",)] == []
    assert any(g[0] == "adc theatre" and g[1] == ("attraction-name",) for g in got)


def test_a_catalogue_keeps_the_free_slots_keys() -> None:
    # MultiWOZ val MUL0187 turn 1: the user's "The Copper Kettle" is the state's "copper
    # kettle"; a listed name with an article is the same value without it, as it was
    # before the slot had a value list (the fixture lists "the missing sock")
    wf = _spec().workflows["restaurant"]
    name = wf.slots["restaurant-name"]
    assert "the missing sock" in name.values
    assert name.normalize("The Missing Sock") == name.normalize("missing sock")
    assert wf.equals("restaurant-name", "missing sock", "the missing sock")


def test_either_of_two_offered_restaurants_waives_no_name() -> None:
    # validation MUL1463 turn 3 (names changed to the fixture database's): with the
    # catalogue the two names are a closed set, yet "either one" leaves the pick to the
    # agent; the entity's name is no constraint to waive
    got = _read("restaurant", "Either one would be fine . Can you book a table for 2 ?",
                "I have Curry Garden and Curry Prince . Which would you prefer ?")
    assert not [r for r in got if r[0] == "dontcare" and "restaurant-name" in r[1]]
    # a choice of price range between two offers is still waived
    got = _read("restaurant", "Either one would be fine .", "One is cheap and the other "
                "expensive . Do you prefer one over the other ?")
    assert [r[1] for r in got if r[0] == "dontcare"] == [("restaurant-pricerange",)]
