"""Text-only extraction of free-form values: dates, places, people's names, and the
false positives the extractor must not produce (IUV, issue: free-form recall)."""

from __future__ import annotations

from typing import Any

import pytest

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import Extraction, extract_user_values
from sage_tod.contracts.criteria import EXACT, Criterion, FailureClass, Outcome
from sage_tod.contracts.spec import SlotSpec, SpecBundle, parse_spec
from sage_tod.contracts.turns import Turn, parse_turn
from sage_tod.text.dates import date_key, find_dates, same_day
from sage_tod.text.places import find_places, is_place_slot, same_place
from sage_tod.text.times import find_times, normalize_time
from sage_tod.verifiers.base import Item
from sage_tod.verifiers.symbolic import SymbolicVerifier

SPEC: dict[str, Any] = {"workflows": [
    {"id": "flights", "slots": [
        {"name": "origin_city", "description": "City in which the journey originates"},
        {"name": "destination_city", "description": "City in which the journey ends"},
        {"name": "departure_date", "description": "Date of departure flight", "type": "date"},
        {"name": "return_date", "description": "Date of return flight", "type": "date"},
        {"name": "passengers", "description": "Number of passengers to find flight seats for",
         "type": "number"},
        {"name": "outbound_departure_time",
         "description": "Local time of departure of flight from origin to destination"}]},
    {"id": "weather", "slots": [
        {"name": "city", "description": "Name of the city"},
        {"name": "date", "description": "Date for the weather", "type": "date"}]},
    {"id": "cars", "slots": [
        {"name": "pickup_city", "description": "City to pick up the rental car"},
        {"name": "pickup_date", "description": "Date of rental car pickup", "type": "date"},
        {"name": "dropoff_date", "description": "Date of rental car drop-off", "type": "date"},
        {"name": "pickup_time", "description": "Time of rental car pickup", "type": "time"}]},
    {"id": "music", "slots": [
        {"name": "artist", "description": "Artist who performed the song"},
        {"name": "year", "description": "Year in which the song was released",
         "type": "number"}]},
    {"id": "movies", "slots": [
        {"name": "director", "description": "Name of the director of the movie"},
        {"name": "starring", "description": "Name of actor starring in movie"},
        {"name": "event_location", "description": "Name of event location"}]},
    {"id": "hotel", "slots": [
        {"name": "hotel-type", "description": "type of the hotel", "type": "categorical",
         "values": ["hotel", "guesthouse"]},
        {"name": "hotel-area", "description": "area of the hotel", "type": "categorical",
         "values": ["east", "west", "centre"]},
        {"name": "hotel-pricerange", "description": "price budget of the hotel",
         "type": "categorical", "values": ["cheap", "expensive"]},
        {"name": "hotel-internet", "description": "whether the hotel has internet",
         "type": "categorical", "values": ["free", "no", "yes"]},
        {"name": "hotel-parking", "description": "whether the hotel has parking",
         "type": "categorical", "values": ["free", "no", "yes"]},
        {"name": "hotel-name", "description": "name of the hotel"},
        {"name": "hotel-bookday", "description": "day of the hotel booking", "type": "date"},
        {"name": "hotel-bookpeople", "description": "number of people for the hotel booking",
         "type": "number"}]},
    {"id": "banks", "slots": [
        {"name": "account_type", "description": "The user's account type",
         "type": "categorical", "values": ["checking", "savings"]},
        {"name": "recipient_account_type",
         "description": "The account type of the recipient to transfer the money to",
         "type": "categorical", "values": ["checking", "savings"]}]},
]}


@pytest.fixture(scope="module")
def bundle() -> SpecBundle:
    return parse_spec(SPEC)


def _turn(bundle: SpecBundle, workflow: str, user: str, after: dict[str, str] | None = None,
          before: dict[str, str] | None = None, agent_before: str = "") -> Turn:
    obj: dict[str, Any] = {
        "dialogue_id": "d", "turn_id": 1, "workflow": workflow, "user": user,
        "agent": "Ok.", "state_before": before or {}, "state_after": after or {},
        "history": [{"user": "Hi.", "agent": agent_before}] if agent_before else []}
    return parse_turn(obj, bundle).turn


def _extract(bundle: SpecBundle, workflow: str, user: str, **kw: Any) -> list[Extraction]:
    turn = _turn(bundle, workflow, user, **kw)
    wf = bundle.workflow(workflow)
    assert wf is not None
    return extract_user_values(turn, wf, bundle)


def _iuv(bundle: SpecBundle, workflow: str, user: str, **kw: Any
         ) -> list[tuple[Criterion, Outcome]]:
    ctx = make_context(bundle, _turn(bundle, workflow, user, **kw))
    crits = [c for c in compile_turn(ctx) if c.failure_class is FailureClass.IUV]
    decisions = SymbolicVerifier().decide([Item(c, ctx) for c in crits])
    return [(c, d.outcome) for c, d in zip(crits, decisions, strict=True)]


# ---------------------------------------------------------------- dates: the reader
@pytest.mark.parametrize(("text", "said", "key"), [
    ("I want to check the weather there on March 12th.", "March 12th", "md:03-12"),
    ("on the 11th of this month", "11th of this month", "d:11"),
    ("Can you find me a car for the 7th of this month?", "7th of this month", "d:07"),
    ("Until March 13th.", "March 13th", "md:03-13"),
    ("the 5th of March", "5th of March", "md:03-05"),
    ("For 3 days, starting Monday next week.", "Monday next week", "wd:monday"),
    ("next Tuesday would be best", "next Tuesday", "wd:tuesday"),
    ("the day after tomorrow", "day after tomorrow", "rel:overmorrow"),
    ("No, on the 3rd please.", "3rd", "d:03"),
    ("March 1st, 2019 works", "March 1st, 2019", "md:03-01"),
])
def test_find_dates_reads_written_dates(text: str, said: str, key: str) -> None:
    (m,) = find_dates(text)
    assert (m.text, m.key) == (said, key)
    assert text[m.start:m.end] == said


@pytest.mark.parametrize("text", ["May I have the 2nd one?", "a table for 4 may I ask",
                                  "the 3rd option", "March 12 people"])
def test_find_dates_ignores_look_alikes(text: str) -> None:
    assert find_dates(text) == []


def test_date_keys_compare_spellings() -> None:
    assert date_key("12th of march") == date_key("March 12th") == date_key("2019-03-12")
    assert same_day("md:03-12", "d:12") is True  # "the 12th" is March 12th's day
    assert same_day("md:03-12", "md:03-13") is False
    assert same_day("rel:tomorrow", "md:03-02") is None  # cannot tell from text
    assert date_key("soon") is None


# ---------------------------------------------------------------- dates: IUV
def test_month_date_for_the_only_date_slot_is_exact(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "weather", "I want to check the weather there on March 12th.",
                     after={"city": "Paris"}, before={"city": "Paris"})
    assert o is Outcome.TRUE and c.args.slot == "date" and c.args.source == "date"
    assert c.evidence is not None and c.evidence.text == "March 12th"


def test_date_held_in_another_spelling_is_not_ignored(bundle: SpecBundle) -> None:
    assert _iuv(bundle, "weather", "On March 12th please.", after={"date": "12th of march"}) == []
    assert _iuv(bundle, "weather", "the 12th", after={"date": "2019-03-12"}) == []
    assert _iuv(bundle, "hotel", "For 3 days, starting Monday next week.",
                after={"hotel-bookday": "Monday next week"}) == []


def test_date_against_an_incomparable_held_date_claims_nothing(bundle: SpecBundle) -> None:
    # s_t may well record "March 2nd" as "tomorrow": no criterion either way
    assert _iuv(bundle, "weather", "It is for March 2nd.", after={"date": "tomorrow"}) == []


def test_stale_date_fires(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "weather", "Actually make it March 14th.",
                     before={"date": "March 12th"}, after={"date": "March 12th"})
    assert o is Outcome.TRUE and c.args.value == "March 14th"


def test_until_narrows_to_the_drop_off_date(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "cars", "Until March 13th.",
                     after={"pickup_date": "12th of march", "pickup_city": "Los Angeles"})
    assert c.args.candidates == ("dropoff_date",) and o is Outcome.TRUE


def test_two_date_slots_without_a_cue_go_to_s2(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "cars", "Can you find me a car for the 7th of this month?")
    assert set(c.args.candidates) == {"pickup_date", "dropoff_date"}
    assert o is Outcome.ABSTAIN and c.nlu


def test_relative_days_are_never_exact_and_closings_are_skipped(bundle: SpecBundle) -> None:
    (ex,) = _extract(bundle, "weather", "What about the weather tomorrow please.")
    assert ex.value == "tomorrow" and not ex.exact
    assert _extract(bundle, "hotel", "No, that's all I need today. Thanks so much!") == []
    assert _extract(bundle, "hotel", "Today is my wedding anniversary.") == []


def test_range_end_without_an_end_slot_is_not_a_booking_day(bundle: SpecBundle) -> None:
    ex = _extract(bundle, "hotel", "Saturday through Monday, please.")
    assert [e.value for e in ex] == ["Saturday"]


def test_negation_stops_at_the_clause_boundary(bundle: SpecBundle) -> None:
    assert [e.value for e in _extract(bundle, "weather", "No, the 8th.")] == ["8th"]
    assert _extract(bundle, "weather", "Not on the 8th please.") == []


# ---------------------------------------------------------------- places
@pytest.mark.parametrize(("spec", "place"), [
    ({"name": "city", "description": "Name of the city"}, True),
    ({"name": "from_location", "description": "City where bus is leaving from"}, True),
    ({"name": "area", "description": "City where the apartment is located"}, True),
    ({"name": "event_location", "description": "Name of event location"}, False),
    ({"name": "from_station", "description": "Station where bus is leaving from"}, False),
    ({"name": "outbound_departure_time",
      "description": "Local time of departure of flight from origin to destination"}, False),
    ({"name": "hotel-area", "description": "area", "type": "categorical",
      "values": ["north"]}, False),
])
def test_place_slots_come_from_the_schema(spec: dict[str, Any], place: bool) -> None:
    assert is_place_slot(SlotSpec.model_validate(spec)) is place


@pytest.mark.parametrize(("text", "said", "context"), [
    ("Search in Paris.", "Paris", "in"),
    ("I'd like attractions in Phoenix, AZ.", "Phoenix, AZ", "in"),
    ("I'll be leaving from Fresno, CA soon.", "Fresno, CA", "from"),
    ("I'd like a bus ticket to Fresno, Ca for march 10th", "Fresno, Ca", "to"),
    ("Check Santa rosa.", "Santa rosa", "check"),
    ("I want to do something in NYC.", "NYC", "in"),
    ("check flights to Mexico City on March 11th", "Mexico City", "to"),
    ("I want to fly out of Toronto on March 1st.", "Toronto", "from"),
    ("Las Vegas please.", "Las Vegas", "answer"),
    ("Go to New York City.", "New York City", "to"),
])
def test_find_places(text: str, said: str, context: str) -> None:
    (m,) = find_places(text)
    assert (m.text, m.context) == (said, context)


@pytest.mark.parametrize("text", ["Sounds good.", "Got it.", "Interesting. What's the address?",
                                  "I wish to Schedule a visit.", "Thanks, that is all.",
                                  "Total?", "I want to go on March 3rd."])
def test_find_places_ignores_other_capitals(text: str) -> None:
    assert find_places(text) == []


def test_same_place_spellings() -> None:
    assert same_place("Santa Rosa", "Santa Rosa, CA")
    assert same_place("NYC", "New York City") and same_place("LA", "Los Angeles")
    assert same_place("Kettle 's Yard", "kettles yard")
    assert not same_place("Santa Rosa", "Santa Clara")


def test_place_after_a_preposition_goes_to_s2(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "weather", "Search in Paris.")
    assert c.args.candidates == ("city",) and c.args.source == "place"
    assert c.args.confidence < EXACT and o is Outcome.ABSTAIN and c.nlu


def test_place_with_a_state_suffix_is_exact(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "flights", "I'll be leaving from Fresno, CA soon.")
    assert c.args.candidates == ("origin_city",) and o is Outcome.TRUE


def test_whole_answer_needs_the_agent_to_ask_for_a_place(bundle: SpecBundle) -> None:
    ((c, o),) = _iuv(bundle, "flights", "Las Vegas please.",
                     agent_before="Which city are you departing from?",
                     after={"destination_city": "Paris"}, before={"destination_city": "Paris"})
    assert c.args.candidates == ("origin_city",) and o is Outcome.TRUE
    assert _iuv(bundle, "flights", "Las Vegas please.",
                agent_before="Anything else I can do?") == []


def test_place_held_in_another_spelling_is_not_ignored(bundle: SpecBundle) -> None:
    assert _iuv(bundle, "weather", "Something in Santa Rosa.",
                after={"city": "Santa Rosa, CA"}) == []
    assert _iuv(bundle, "weather", "I want to do something in NYC.",
                after={"city": "New York City"}) == []


def test_no_place_from_questions_negations_or_agent_echoes(bundle: SpecBundle) -> None:
    assert _extract(bundle, "weather", "Is it in Phoenix?") == []
    assert [e.value for e in _extract(bundle, "weather", "Not in Phoenix, in Tucson.")] == [
        "Tucson"]
    # the agent offered it and the slot already holds a value: a reference, not a constraint
    assert _extract(bundle, "weather", "Do that in Oakland then.",
                    agent_before="I also have results in Oakland.",
                    after={"city": "Berkeley"}) == []


def test_search_questions_keep_their_constraints(bundle: SpecBundle) -> None:
    (ex,) = _extract(bundle, "weather", "Is there anything going on in Napa?")
    assert ex.value == "Napa" and not ex.exact


def test_second_place_beside_the_recorded_one_is_not_a_value(bundle: SpecBundle) -> None:
    assert _iuv(bundle, "weather", "Having guests over to BBQ, check the weather in "
                "Discovery Bay.", after={"city": "Discovery Bay"}) == []


# ---------------------------------------------------------------- people's names
def test_names_after_a_role_word(bundle: SpecBundle) -> None:
    (d,) = _extract(bundle, "movies", "Something like a comic film directed by Morton DaCosta?")
    assert (d.value, d.candidates, d.source) == ("Morton DaCosta", ("director",), "name")
    assert not d.exact
    (s,) = _extract(bundle, "movies", "Can you find me something that stars Jeff Harding?")
    assert s.candidates == ("starring",)
    assert _iuv(bundle, "movies", "directed by Morton DaCosta",
                after={"director": "Morton Dacosta"}) == []


def test_called_names_the_name_slot(bundle: SpecBundle) -> None:
    (e,) = _extract(bundle, "hotel", "I'm looking for a hotel called Hobson 's House.")
    assert e.candidates == ("hotel-name",)
    assert _extract(bundle, "hotel", "I'm looking for a hotel called Hobson 's House.",
                    after={"hotel-name": "hobsons house"}) == []


# ---------------------------------------------------------------- false positives
@pytest.mark.parametrize("text", ["Can you find one way flight for me?",
                                  "I want to find a one-way economy ticket.",
                                  "Give me one of them for the flight."])
def test_one_way_is_no_passenger_count(bundle: SpecBundle, text: str) -> None:
    assert [e for e in _extract(bundle, "flights", text) if e.source == "number"] == []


def test_years_ago_is_no_year(bundle: SpecBundle) -> None:
    assert _extract(bundle, "music", "A pop song from two years ago?") == []
    assert _extract(bundle, "music", "Some pop music from one years back.") == []
    (y,) = _extract(bundle, "music", "A song from the year 2010.")
    assert y.value == "2010"


def test_workflow_name_is_no_hotel_type(bundle: SpecBundle) -> None:
    after = {"hotel-area": "east", "hotel-pricerange": "cheap"}
    assert _iuv(bundle, "hotel", "I'm looking for a cheap hotel in the east.", after=after) == []
    assert _iuv(bundle, "hotel", "Yes, could you book the hotel room for me?") == []
    ((c, _o),) = _iuv(bundle, "hotel", "I want a hotel, not a guesthouse.")
    assert c.args.slot == "hotel-type" and c.args.value == "hotel"


def test_yes_no_free_need_a_slot_word(bundle: SpecBundle) -> None:
    assert _iuv(bundle, "hotel", "No, but I am looking for a place to stay.") == []
    assert _iuv(bundle, "hotel", "It should include free wifi.",
                after={"hotel-internet": "yes"}) == []
    ((c, _o),) = _iuv(bundle, "hotel", "It should include free wifi.")
    assert c.args.candidates == ("hotel-internet",)


def test_unsaid_qualifier_narrows_the_slot(bundle: SpecBundle) -> None:
    (e,) = _extract(bundle, "banks", "Okay, I need to check my checking balance.")
    assert e.candidates == ("account_type",)


# ---------------------------------------------------------------- clock times
@pytest.mark.parametrize(("text", "said", "readings"), [
    ("I need it at half past 6 in the evening.", "half past 6 in the evening", {"18:30"}),
    ("pick it up at 2 in the afternoon", "2 in the afternoon", {"14:00"}),
    ("around evening 4:30", "evening 4:30", {"16:30"}),
    ("at quarter to 12 in the morning", "quarter to 12 in the morning", {"11:45"}),
    ("at 7 please", "7", {"07:00", "19:00"}),
])
def test_clock_times_with_day_parts(text: str, said: str, readings: set[str]) -> None:
    tm = find_times(text)[0]
    assert text[tm.start:tm.end] == said and set(tm.readings) == readings


def test_clock_times_ignore_addresses_and_ordinals() -> None:
    assert find_times("it is at 11 Peas Hill") == []
    assert find_times("from 10th of this month") == []
    assert normalize_time("2 in the afternoon") == "14:00"
    assert normalize_time("soon") is None


def test_time_held_in_words_is_not_ignored(bundle: SpecBundle) -> None:
    assert _iuv(bundle, "cars", "I want the car at half past 6 in the evening.",
                after={"pickup_time": "half past 6 in the evening"}) == []
    ((c, o),) = _iuv(bundle, "cars", "I want the car at half past 6 in the evening.")
    assert c.args.readings == ("18:30",) and o is Outcome.TRUE


_TWO_TASKS = parse_spec({"workflows": [
    {"id": "hotel", "slots": [
        {"name": "hotel-stars", "description": "star rating of the hotel", "type": "number"},
        {"name": "hotel-bookstay", "description": "number of nights to stay", "type": "number"},
        {"name": "hotel-bookpeople", "description": "number of people", "type": "number"}]},
    {"id": "restaurant", "slots": [
        {"name": "restaurant-bookpeople", "description": "number of people",
         "type": "number"}, {"name": "restaurant-area", "description": "area"}]},
    {"id": "train", "slots": [
        {"name": "train-bookpeople", "description": "number of tickets", "type": "number"},
        {"name": "train-day", "description": "day of the journey", "type": "date"}]}]})


def _said(user: str, wf: str) -> list[tuple[str, tuple[str, ...]]]:
    t = parse_turn({"dialogue_id": "d", "turn_id": 0, "workflow": wf, "user": user,
                    "agent": "ok", "state_before": {}, "state_after": {}}, _TWO_TASKS).turn
    return [(e.value, e.candidates)
            for e in extract_user_values(t, _TWO_TASKS.workflows[wf], _TWO_TASKS)]


def test_the_noun_after_a_count_names_what_it_counts() -> None:
    assert _said("a place with 4 stars for two nights", "hotel") == [
        ("4", ("hotel-stars",)), ("2", ("hotel-bookstay",))]
    assert _said("a table for two nights", "restaurant") == []  # no people counted
    assert _said("a table for 4 at 7 please", "restaurant") == [
        ("4", ("restaurant-bookpeople",))]
