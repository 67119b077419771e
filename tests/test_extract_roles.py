"""A role word right before a value decides between sibling slots (issue 23, item 3).

Departure and destination (pick-up and drop-off, origin and destination) share one set
of values, so a station alone may be either. The word right before it ("from",
"to", "leaving", "departing") names its role: the extraction is then sure, and the
value held only in the sibling slot ("recorded somewhere") does not count as recorded.
Utterances are quoted from MultiWOZ 2.1 (MIT licence) dialogues among the 199 set
aside for development in `$SAGE_TOD_DATA/mwzeval/dev_dialogues.json`, as the
natural-failure slice carries them, with the published system's state; the τ-bench
one from the shared tool-agent trajectories (MIT licence).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import extract_user_values
from sage_tod.contracts.criteria import EXACT, IUVArgs
from sage_tod.contracts.spec import SpecBundle, load_spec, parse_spec
from sage_tod.contracts.turns import Turn, parse_turn

AIRLINE = Path(__file__).resolve().parents[1] / "examples" / "tau2-airline" / "spec.yaml"
# the MultiWOZ train workflow as `sage-tod slices` generates it, its stations the
# corpus database's
_STATIONS = ["birmingham new street", "bishops stortford", "broxbourne", "cambridge", "ely",
             "kings lynn", "leicester", "london kings cross", "london liverpool street",
             "norwich", "peterborough", "stansted airport", "stevenage"]
_SPEC = parse_spec({"workflows": [{"id": "train", "slots": [
    {"name": "train-leaveat", "description": "leaving time for the train", "type": "time"},
    {"name": "train-arriveby", "description": "arrival time of the train", "type": "time"},
    {"name": "train-day", "description": "day of the train", "type": "categorical",
     "values": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                "sunday"]},
    {"name": "train-departure", "description": "departure location of the train",
     "type": "categorical", "values": _STATIONS},
    {"name": "train-destination", "description": "destination of the train",
     "type": "categorical", "values": _STATIONS}]}]})


def _turn(user: str, agent_before: str = "", state: dict[str, str] | None = None,
          spec: SpecBundle = _SPEC, wf: str = "train") -> Turn:
    history = [{"user": "", "agent": agent_before}] if agent_before else []
    return parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": wf, "user": user,
                       "agent": "", "state_before": state or {}, "state_after": state or {},
                       "history": history}, spec).turn


def _read(user: str, agent_before: str = "") -> dict[str, tuple[str, bool]]:
    """slot -> (value, exact) of what the extractor reads in `user`."""
    turn = _turn(user, agent_before)
    out = extract_user_values(turn, make_context(_SPEC, turn).workflow, _SPEC)
    return {e.candidates[0]: (e.value.lower(), e.exact) for e in out if len(e.candidates) == 1}


def _iuv(turn: Turn) -> list[IUVArgs]:
    return [c.args for c in compile_turn(make_context(_SPEC, turn))
            if isinstance(c.args, IUVArgs)]


def test_from_and_to_decide_the_role_surely() -> None:
    # MUL1478 turn 4 (DAMD, MinTL): s_t records neither
    got = _read("I will be departing from Cambridge and traveling to Peterborough .",
                "I am sorry , would you like to go to or from Cambridge ?")
    assert got["train-departure"] == ("cambridge", True)
    assert got["train-destination"] == ("peterborough", True)


def test_a_departure_verb_right_before_the_place_decides_it() -> None:
    # MUL1661 turn 1 (SOLOIST) and PMUL0745 turn 5: "leaving X", "departing X"
    assert _read("leaving cambridge on sunday",
                 "There are 202 trains that match your trip . Do you have a specific "
                 "departure city ?")["train-departure"] == ("cambridge", True)
    assert _read("I will be departing Kings Lynn on Friday .")["train-departure"] == (
        "kings lynn", True)


def test_a_word_that_names_no_role_decides_nothing() -> None:
    # SNG0317 turn 1: "coming into Stansted Airport" is where the train leaves from, so
    # "into" must not make it a sure destination
    got = _read("I 'm coming into Stansted Airport and i want to go to Cambridge . "
                "Is there a train for that ?")
    assert got["train-destination"] == ("cambridge", True)
    assert not any(v == ("stansted airport", True) for v in got.values())
    # MUL1678 turn 0: flying into the airport, the train leaves from it; "into" read alone
    # as "to" would make it the destination
    got = _read("I 'll be flying into Stansted Airport and need to find a train to "
                "Cambridge . Can you help me ?")
    assert got["train-destination"] == ("cambridge", True)


def test_arriving_at_or_in_a_place_is_its_destination() -> None:
    # MultiWOZ val MUL1780 turn 2 and PMUL1310 turn 2 (their gold records the
    # destination); "out of" is "from" (PMUL3117 turn 0)
    got = _read("I 'm also looking for a train . It will depart from broxbourne and "
                "should arrive at cambridge .")
    assert got["train-departure"] == ("broxbourne", True)
    assert got["train-destination"] == ("cambridge", True)
    assert _read("Yes , I need to find a train that arrives in Kings Lynn by 19:30 .")[
        "train-destination"] == ("kings lynn", True)
    assert _read("I need a train out of Cambridge , but I need to arrive at my destination "
                 "by 08:00 .")["train-departure"] == ("cambridge", True)


def test_another_values_role_words_do_not_cue_this_one() -> None:
    # MultiWOZ val MUL0321 turn 4: "departs from" is ely's; only "to" is Cambridge's
    got = _read("Can you find me a train that departs from ely to Cambridge ? I need to "
                "book a seat on the same day as my restaurant booking please")
    assert got["train-departure"] == ("ely", True)
    assert got["train-destination"] == ("cambridge", True)
    # a run of role words is the value's own ("leaving from")
    assert _read("I need a train leaving from cambridge")["train-departure"] == (
        "cambridge", True)


def test_a_value_held_only_in_the_sibling_slot_is_not_recorded() -> None:
    # PMUL1812 turn 3 (DAMD): the system holds cambridge as the departure (the user
    # leaves kings lynn); "going to Cambridge" names the destination, which s_t lacks
    state = {"train-day": "wednesday", "train-departure": "cambridge", "train-leaveat": "13:45"}
    turn = _turn("I can leave any time after 13:45 going to Cambridge . Will you check "
                 "the schedule again , please ?", "No train leaving kings lynn at 13.45 . Do "
                 "you want to change the departure time ?", state)
    found = [(a.slot, a.value.lower(), a.confidence >= EXACT) for a in _iuv(turn)]
    assert ("train-destination", "cambridge", True) in found


def test_s1_says_which_sibling_slot_holds_the_value() -> None:
    # the same PMUL1812 turn 3: S1's failure says where s_t put Cambridge
    from sage_tod.verifiers.base import Item
    from sage_tod.verifiers.symbolic import SymbolicVerifier

    state = {"train-day": "wednesday", "train-departure": "cambridge", "train-leaveat": "13:45"}
    turn = _turn("I can leave any time after 13:45 going to Cambridge . Will you check "
                 "the schedule again , please ?", "No train leaving kings lynn at 13.45 . Do "
                 "you want to change the departure time ?", state)
    ctx = make_context(_SPEC, turn)
    crit = next(c for c in compile_turn(ctx) if isinstance(c.args, IUVArgs)
                and c.args.slot == "train-destination")
    decision = SymbolicVerifier().decide([Item(crit, ctx)])[0]
    assert decision.outcome.value == "true"
    assert decision.rationale.endswith("leaves it unfilled (s_t holds it for train-departure)")


def test_a_value_whose_role_is_unsure_still_counts_in_the_sibling_slot() -> None:
    # the same state, with a reply that names the station without a role word: the
    # extractor may have picked the wrong sibling, so s_t holding it anywhere counts
    state = {"train-day": "wednesday", "train-departure": "cambridge", "train-leaveat": "13:45"}
    turn = _turn("Cambridge , please .", "Where will you be travelling to ?", state)
    assert not [a for a in _iuv(turn) if a.value.lower() == "cambridge"]


def test_role_words_in_a_tool_agents_workflow_stay_unsure() -> None:
    # τ-bench airline (gpt-4o), task 1 trial 0, the first user message: "from Texas to
    # Newark" describes the reservation to change, not a new wish, so no sure reading
    spec = load_spec(AIRLINE)
    turn = _turn("Hi there! I need to change my return flight from Texas to Newark. It "
                 "currently departs at 3pm, but I'd like to get on a later flight back the "
                 "same day, or the earliest one the next day. ", spec=spec, wf="book_flight")
    ctx = make_context(spec, turn)
    got = extract_user_values(turn, ctx.workflow, spec, after=ctx.after, before=ctx.before)
    assert any(e.value == "EWR" for e in got)
    assert not any(e.value == "EWR" and e.exact for e in got)


# the MultiWOZ taxi workflow as `sage-tod slices` generates it, with a few of the names
# its catalogue lists for both places (the slots stay free)
_PLACES = ["wagamama", "mumford theatre", "restaurant two two",
           "museum of classical archaeology", "the cambridge punter"]


def taxi_workflow(places: list[str]) -> dict[str, Any]:
    """The generated spec's taxi workflow, its two places listing `places`."""
    return {"id": "taxi", "slots": [
        {"name": "taxi-leaveat", "description": "leaving time of taxi", "type": "time"},
        {"name": "taxi-arriveby", "description": "arrival time of taxi", "type": "time"},
        {"name": "taxi-departure", "description": "departure location of taxi",
         "type": "free", "values": places},
        {"name": "taxi-destination", "description": "destination of taxi", "type": "free",
         "values": places}]}


_TAXI = parse_spec({"workflows": [taxi_workflow(_PLACES)]})


def test_a_role_word_decides_past_the_article() -> None:
    # SNG0085 turn 1 (DOTS): the system wrote 'mumgam theatre' as the destination; "to
    # the mumford theatre" names the role through "the", as "from wagamama" does directly
    user = "I need to be picked up from wagamama and I 'm headed to the mumford theatre ."
    state = {"taxi-arriveby": "09:00", "taxi-departure": "wagamama",
             "taxi-destination": "mumgam theatre"}
    turn = _turn(user, "Okay , and where do you want to be picked up from and what is "
                 "your destination ?", state, spec=_TAXI, wf="taxi")
    got = {e.candidates[0]: (e.value.lower(), e.exact)
           for e in extract_user_values(turn, make_context(_TAXI, turn).workflow, _TAXI)
           if len(e.candidates) == 1}
    assert got["taxi-departure"] == ("wagamama", True)
    assert got["taxi-destination"] == ("mumford theatre", True)
    found = [(a.slot, a.value.lower(), a.confidence >= EXACT)
             for a in (c.args for c in compile_turn(make_context(_TAXI, turn)))
             if isinstance(a, IUVArgs)]
    assert ("taxi-destination", "mumford theatre", True) in found
