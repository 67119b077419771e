"""Values said by reference to another task ("the same area as the restaurant").

Utterances are quoted from MultiWOZ 2.1 (MIT licence): dialogues among the 199 set aside
for development (`$SAGE_TOD_DATA/mwzeval/dev_dialogues.json`, as the natural-failure
slice carries them) or the validation split where a test says so; each test names its
dialogue and turn index. The spec is the MultiWOZ slots of `test_extract_natural.py`
(the generated spec's descriptions, from which the cue words come).
"""

from __future__ import annotations

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import Extraction, extract_user_values
from sage_tod.contracts.criteria import EXACT, FailureClass, IUVArgs
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import Turn, parse_turn
from sage_tod.evaluation.aggregate import repair_signal
from test_extract_natural import SPEC
from test_extract_roles import taxi_workflow


def _spec() -> SpecBundle:
    return parse_spec(SPEC)


def _turn(wf: str, user: str, before: dict[str, str],
          after: dict[str, str] | None = None) -> Turn:
    return parse_turn({"dialogue_id": "d", "turn_id": 3, "workflow": wf, "user": user,
                       "agent": "", "state_before": before,
                       "state_after": dict(before) if after is None else after,
                       "history": [{"user": "", "agent": "Anything else?"}]}, _spec()).turn


def _same_as(wf: str, user: str, before: dict[str, str],
             after: dict[str, str] | None = None) -> list[Extraction]:
    spec = _spec()
    workflow = spec.workflow(wf)
    assert workflow is not None
    return [e for e in extract_user_values(_turn(wf, user, before, after), workflow, spec)
            if e.source == "same_as"]


def test_the_same_area_as_the_named_workflow() -> None:
    # PMUL2194 turn 3 (development): s_{t-1} holds the restaurant's area
    user = "I am looking for some places to go in the same area as the restaurant ."
    got = _same_as("attraction", user, {"restaurant-area": "centre",
                                        "restaurant-food": "chinese"})
    assert [(e.candidates, e.value, e.exact) for e in got] == [
        (("attraction-area",), "centre", True)]
    assert user[got[0].start:got[0].end] == "same area as the restaurant"


def test_the_same_group_of_people_without_a_named_workflow() -> None:
    # PMUL0276 turn 5 (development): the one other booking holds the party size
    got = _same_as("hotel", "I would like to book rooms for the same group of people for 2 "
                   "nights starting Monday .", {"restaurant-bookpeople": "3",
                                                "restaurant-bookday": "monday"})
    assert [(e.candidates, e.value) for e in got] == [(("hotel-bookpeople",), "3")]
    # MUL1633 turn 5 (development): "the same amount of people" for the train tickets
    got = _same_as("train", "Yes please , for the same amount of people . I need the "
                   "reference number too .", {"restaurant-bookpeople": "5"})
    assert [(e.candidates, e.value) for e in got] == [(("train-bookpeople",), "5")]


def test_a_stated_value_or_a_held_slot_wins() -> None:
    # PMUL0276 turn 5 again, with "for 3 people" said outright: the count reader fills the
    # slot and the reference adds nothing
    got = _same_as("hotel", "I would like to book rooms for the same group of people , 4 "
                   "people , for 2 nights .", {"restaurant-bookpeople": "3"})
    assert got == []
    # MUL0260 turn 7 (development): "the same day" as the booking s_{t-1} already has
    got = _same_as("restaurant", "Could you please try for 17:15 on the same day ?",
                   {"restaurant-bookday": "wednesday", "hotel-bookday": "friday"})
    assert got == []


def test_no_reading_when_the_referents_disagree_or_none_holds_a_value() -> None:
    user = "Yes . I would like a restaurant for the same day ."  # PMUL0899 turn 4, cut
    assert _same_as("restaurant", user, {"train-day": "monday",
                                         "hotel-bookday": "sunday"}) == []
    assert _same_as("restaurant", user, {"restaurant-food": "chinese"}) == []
    assert [e.value for e in _same_as("restaurant", user, {"train-day": "monday",
                                                           "hotel-bookday": "monday"})] == [
        "monday"]


def test_not_in_a_question_about_an_entity_nor_negated() -> None:
    # MUL0113 turn 3 (development): a question about the hotel, no wish
    assert _same_as("hotel", "Not yet . Is the Gonville Hotel in the same price range as the "
                    "Curry Garden ?", {"restaurant-pricerange": "expensive"}) == []
    assert _same_as("hotel", "I need a hotel , but not in the same area as the restaurant .",
                    {"restaurant-area": "centre"}) == []
    # the workflow's own name: "the same area as the hotel" asked in the hotel's workflow
    assert _same_as("hotel", "I need a hotel in the same area as the hotel .",
                    {"restaurant-area": "centre"}) == []


def test_a_dropped_reference_is_a_sure_failure_whose_repair_names_the_referent() -> None:
    # MUL1276 turn 3 (development): labes left hotel-area unset
    user = ("That 's all I needed on restaruants . Can you help me find a place to stay in "
            "the same area with a 4 star rating ?")
    spec = _spec()
    before = {"restaurant-area": "centre", "restaurant-food": "chinese"}
    turn = _turn("hotel", user, before, {**before, "hotel-stars": "4"})
    ctx = make_context(spec, turn)
    iuv = [c for c in compile_turn(ctx) if c.failure_class is FailureClass.IUV]
    assert len(iuv) == 1
    a = iuv[0].args
    assert isinstance(a, IUVArgs)
    assert (a.slot, a.value, a.source) == ("hotel-area", "centre", "same_as")
    assert a.confidence >= EXACT
    start = user.index("same area")
    assert repair_signal(iuv[0], ctx) == (
        f"record value 'centre' (said as 'same area' at span [{start},{start + 9}] of u_t: "
        "restaurant-area holds 'centre') into slot hotel-area")
    # recorded: no IUV criterion is compiled
    turn = _turn("hotel", user, before, {**before, "hotel-stars": "4", "hotel-area": "centre"})
    assert not [c for c in compile_turn(make_context(spec, turn))
                if c.failure_class is FailureClass.IUV]


# the MultiWOZ taxi workflow beside the others: its departure and destination list the
# entity names of the other workflows (as the generated spec's catalogue does)
_NAMES = ["worth house", "the lucky star", "royal spice", "museum of classical archaeology",
          "cocum", "acorn guest house", "castle galleries"]
_WITH_TAXI = parse_spec({"workflows": [*SPEC["workflows"], taxi_workflow(_NAMES)]})


def _taxi(user: str, before: dict[str, str]) -> list[tuple[str, str, str]]:
    turn = parse_turn({"dialogue_id": "d", "turn_id": 7, "workflow": "taxi", "user": user,
                       "agent": "", "state_before": before, "state_after": before,
                       "history": [{"user": "", "agent": "Anything else?"}]},
                      _WITH_TAXI).turn
    wf = _WITH_TAXI.workflow("taxi")
    assert wf is not None
    return [(e.candidates[0], e.value, user[e.start or 0:e.end or 0])
            for e in extract_user_values(turn, wf, _WITH_TAXI) if e.source == "same_as"
            and e.exact]


def test_an_entity_named_by_its_kind_for_the_taxi() -> None:
    # MultiWOZ validation MUL0036 turn 7: the gold taxi holds both names
    names = {"hotel-name": "worth house", "restaurant-name": "the lucky star"}
    assert sorted(_taxi("Can I have a taxi take me to the restaurant from the hotel ? I need "
                        "it to arrive by the time my reservation is booked for .", names)) == [
        ("taxi-departure", "worth house", "the hotel"),
        ("taxi-destination", "the lucky star", "the restaurant")]
    # MUL2360 turn 6 (validation): "the Museum" is the attraction's kind
    assert sorted(_taxi("Yes , I need a Taxi from the Museum by 11:30 to the restaurant .",
                        {"attraction-name": "museum of classical archaeology",
                         "restaurant-name": "cocum"})) == [
        ("taxi-departure", "museum of classical archaeology", "the Museum"),
        ("taxi-destination", "cocum", "the restaurant")]


def test_no_entity_reading_without_a_held_name_a_role_or_an_open_slot() -> None:
    user = "I also need a taxi to commute from the hotel to the museum ."  # MUL2587 turn 5
    held = {"hotel-name": "acorn guest house", "attraction-name": "castle galleries"}
    assert len(_taxi(user, held)) == 2
    # no name held for the museum: only the hotel is read
    assert _taxi(user, {"hotel-name": "acorn guest house"}) == [
        ("taxi-departure", "acorn guest house", "the hotel")]
    # the departure s_{t-1} holds already is not read again
    assert _taxi(user, {**held, "taxi-departure": "acorn guest house"}) == [
        ("taxi-destination", "castle galleries", "the museum")]
    # no role word before the article: which end is meant is not said
    assert _taxi("I need a taxi for the hotel and the museum .", held) == []


def test_a_swapped_taxi_is_a_failure_of_both_ends() -> None:
    # MUL0990 turn 5 (development; SOLOIST): the system wrote the restaurant as the
    # departure and the museum as the destination; "from the museum to the restaurant"
    # decides each end by its role word, so neither name counts as recorded in the other
    user = "I also want to book a taxi from the museum to the restaurant . I want to by 15:45 ."
    before = {"attraction-name": "castle galleries", "restaurant-name": "cocum"}
    after = {**before, "taxi-departure": "cocum", "taxi-destination": "castle galleries"}
    turn = parse_turn({"dialogue_id": "d", "turn_id": 5, "workflow": "taxi", "user": user,
                       "agent": "", "state_before": before, "state_after": after,
                       "history": [{"user": "", "agent": "Anything else?"}]},
                      _WITH_TAXI).turn
    ctx = make_context(_WITH_TAXI, turn)
    crits = [c for c in compile_turn(ctx)
             if isinstance(c.args, IUVArgs) and c.args.source == "same_as"]
    assert sorted((c.args.slot, c.args.value) for c in crits
                  if isinstance(c.args, IUVArgs)) == [
        ("taxi-departure", "castle galleries"), ("taxi-destination", "cocum")]
    # each repair names the words and the slot that holds the value they refer to
    start = user.index("the museum")
    assert sorted(repair_signal(c, ctx) for c in crits) == [
        f"record value 'castle galleries' (said as 'the museum' at span [{start},"
        f"{start + 10}] of u_t: attraction-name holds 'castle galleries') into slot "
        "taxi-departure",
        f"record value 'cocum' (said as 'the restaurant' at span [{start + 14},"
        f"{start + 28}] of u_t: restaurant-name holds 'cocum') into slot taxi-destination"]
