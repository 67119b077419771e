"""Tool-call checks on real τ²-bench logs: preferences over listed options ("the
cheapest"), retries after a refused call, bags the user did not ask for, and the pairing
of calls with their results.

Real logs:
- $SAGE_TOD_DATA/tool-agents/tau2-airline-whissle.json (sierra-research/tau2-bench,
  results/whissle/airline_run1.json, MIT): task 16 — the user asks for "the cheapest
  economy option" for a new date and the agent books HAT227 + HAT139 ($216) while the
  search listed HAT110 + HAT172 ($207) with seats (τ²-bench gives the task reward 0);
- $SAGE_TOD_DATA/tool-agents/tau2-airline-claude-opus-4-6-button.json (the same
  repository's leaderboard submission, MIT): task 25 — the user books with "no checked
  bags" and the booking carries one;
- tests/fixtures/logs/tau-bench-gpt-4o-airline.json (sierra-research/tau-bench, MIT): a
  gpt-4o trajectory whose `calculate` call reuses the id of the earlier
  `get_user_details` call, and whose one-stop search reuses the direct search's id.
Spec: examples/tau2-airline/spec.yaml (`prefer: cheapest`).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from sage_tod import Evaluator
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec, parse_spec
from sage_tod.importers.chat import pair_results, parse_messages
from sage_tod.importers.tau_bench import read as read_tau

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = ROOT / "examples" / "tau2-airline" / "spec.yaml"
V1_LOG = ROOT / "tests" / "fixtures" / "logs" / "tau-bench-gpt-4o-airline.json"
WHISSLE = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents" / \
    "tau2-airline-whissle.json"
needs_data = pytest.mark.skipif(not WHISSLE.exists(),
                                reason="tool-agents data absent ($SAGE_TOD_DATA)")
CID = "IUV:call0:prefer:cheapest"
ADAPTIVE = WHISSLE.with_name("tau2-airline-claude-opus-4-6-adaptive.json")


def _task16() -> dict[str, Any]:
    doc = json.loads(WHISSLE.read_text())
    sim = next(s for s in doc["simulations"] if str(s["task_id"]) == "16")
    return {"simulations": [sim], "tasks": [], "info": doc.get("info", {})}


def _verdicts(doc: Any, tmp_path: Path) -> dict[int, Any]:
    p = tmp_path / "log.json"
    p.write_text(json.dumps(doc))
    spec = load_spec(AIRLINE)
    res = read_tau(p, spec)
    return {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        res.records(spec).records)}


def _booking_turn(vs: dict[int, Any]) -> Any:
    return next(v for v in vs.values() if any(c.id == CID for c in v.criteria))


@needs_data
def test_a_costlier_option_than_the_cheapest_listed_fires_with_the_result(
        tmp_path: Path) -> None:
    v = _booking_turn(_verdicts(_task16(), tmp_path))
    c = next(c for c in v.criteria if c.id == CID)
    assert v.verdict == "failure" and "IUV" in v.classes
    assert c.decision.value == "true" and c.decided_by == "S1"
    assert "HAT227" in c.rationale and "216" in c.rationale and "207" in c.rationale
    assert c.support is not None and c.support.source == "tool_result"
    assert "HAT172" in c.support.text  # the cheaper option, as the search listed it
    assert c.evidence is not None and c.evidence.text.lower() == "cheapest"
    assert "commit the flights option" in (c.repair or "")


@needs_data
def test_the_committed_option_named_by_the_user_holds(tmp_path: Path) -> None:
    doc = _task16()
    msgs = doc["simulations"][0]["messages"]
    last_user = max(i for i, m in enumerate(msgs)
                    if m["role"] == "user" and any(
                        c.get("name") == "update_reservation_flights"
                        for n in msgs[i + 1:i + 3] for c in n.get("tool_calls") or []))
    msgs[last_user]["content"] = "Yes, book HAT227 and HAT139 please."
    c = next(c for c in _booking_turn(_verdicts(doc, tmp_path)).criteria if c.id == CID)
    assert c.decision.value == "false" and "HAT227" in c.rationale


@needs_data
def test_no_preference_without_the_users_words(tmp_path: Path) -> None:
    doc = copy.deepcopy(_task16())
    for m in doc["simulations"][0]["messages"]:
        if m["role"] == "user" and m.get("content"):
            m["content"] = m["content"].replace("cheapest", "best").replace(
                "Cheapest", "Best")
    vs = _verdicts(doc, tmp_path)
    assert not any(c.id == CID for v in vs.values() for c in v.criteria)


def test_a_preference_naming_an_undeclared_tool_stops_the_load(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(AIRLINE.read_text())
    wf = next(w for w in data["workflows"] if w["id"] == "book_flight")
    pref = dict(wf["tools"]["book_reservation"]["prefer"][0])
    pref["options"] = ["search_flights_typo"]
    wf["tools"]["book_reservation"]["prefer"] = [pref]
    with pytest.raises(InputError) as err:
        parse_spec(data, "spec.yaml")
    assert "prefer[0].options[0]" in str(err.value) and "search_flights_typo" in str(err.value)
    pref["options"] = ["search_direct_flight"]
    pref["key"] = "item.prices[args.cabin"
    with pytest.raises(InputError) as err:
        parse_spec(data, "spec.yaml")
    assert "prefer[0].key" in str(err.value)


@needs_data
def test_the_fastest_asked_for_is_the_shortest_travel_time_listed(tmp_path: Path) -> None:
    """τ-bench gpt-4o, task 3 trial 1: "I'm looking for the fastest return trip including
    layover time", and the change books HAT084 + HAT266 (04:00 to 16:00, 12 hours) while
    the same one-stop search listed HAT290 + HAT175 with seats. Trial 3 of the task,
    where the user asks the same, holds: no listed option is faster than the one booked."""
    rec = [next(r for r in json.loads(V1_DATA.read_text())
                if r["task_id"] == 3 and r["trial"] == 1)]
    fired = [c for v in _v1_verdicts(rec, tmp_path).values() for c in v.criteria
             if c.id.endswith(":prefer:fastest")]
    assert [c.decision.value for c in fired] == ["true"]
    assert "HAT084" in fired[0].rationale and "720" in fired[0].rationale
    assert fired[0].support is not None and "HAT290" in fired[0].support.text
    assert fired[0].evidence is not None and fired[0].evidence.text.lower() == "fastest"
    rec = [next(r for r in json.loads(V1_DATA.read_text())
                if r["task_id"] == 3 and r["trial"] == 3)]
    held = [c for v in _v1_verdicts(rec, tmp_path).values() for c in v.criteria
            if c.id.endswith(":prefer:fastest")]
    assert held and all(c.decision.value == "false" for c in held)


@needs_data
def test_the_second_cheapest_is_the_next_distinct_fare(tmp_path: Path) -> None:
    """τ-bench gpt-4o, task 25 trial 2: the user asks for the second cheapest economy
    option and the agent books HAT083 + HAT011 ($314) while the searches listed the
    cheapest, and HAT069 + HAT258 at $290 above it, with seats (`rank: 2`). Trial 3,
    which books HAT069 + HAT258, holds; so does the cheapest preference, which its
    `unless` keeps from reading "second cheapest"."""
    def prefs(trial: int) -> list[Any]:
        rec = [next(r for r in json.loads(V1_DATA.read_text())
                    if r["task_id"] == 25 and r["trial"] == trial)]
        return [c for v in _v1_verdicts(rec, tmp_path).values() for c in v.criteria
                if ":prefer:" in c.id]
    fired = [c for c in prefs(2) if c.id.endswith(":prefer:second-cheapest")]
    assert [c.decision.value for c in fired] == ["true"]
    assert "314" in fired[0].rationale and "290" in fired[0].rationale
    assert fired[0].support is not None and "HAT258" in fired[0].support.text
    held = prefs(3)
    assert held and all(c.decision.value == "false" for c in held)
    assert not [c for c in held if c.id.endswith(":prefer:cheapest")]


def test_a_preference_key_over_the_option_is_checked_when_the_spec_loads(tmp_path: Path
                                                                         ) -> None:
    import yaml

    data = yaml.safe_load(AIRLINE.read_text())
    wf = next(w for w in data["workflows"] if w["id"] == "book_flight")
    pref = dict(next(p for p in wf["tools"]["book_reservation"]["prefer"]
                     if p["id"] == "fastest"))
    pref["over"] = "options"
    wf["tools"]["book_reservation"]["prefer"] = [pref]
    with pytest.raises(InputError) as err:
        parse_spec(data, "spec.yaml")
    assert "prefer" in str(err.value) and "over" in str(err.value)


def test_a_reused_call_id_pairs_each_call_with_its_own_result() -> None:
    doc = json.loads(V1_LOG.read_text())
    traj = (doc[0] if isinstance(doc, list) else doc)["traj"]
    msgs = parse_messages(traj, V1_LOG, None, "traj")
    answers = pair_results(msgs)
    calls = [c for m in msgs for c in m.calls]
    by_name = {c.name: answers[id(c)].text for c in calls if id(c) in answers}
    assert by_name["get_user_details"].lstrip().startswith("{")
    assert "payment_methods" in by_name["get_user_details"]
    assert by_name["calculate"].strip() in ("255.0", "55.0")
    assert by_name["search_onestop_flight"].lstrip().startswith("[[")  # pairs of flights
    assert by_name["search_direct_flight"].lstrip().startswith("[{")
    # every call got an answer, and no tool message answered two calls
    assert all(id(c) in answers for c in calls)
    assert len({id(m) for m in answers.values()}) == len(answers)


def _simulation(task: str, path: Path = WHISSLE) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    sim = next(s for s in doc["simulations"] if str(s["task_id"]) == task)
    return {"simulations": [sim], "tasks": [], "info": doc.get("info", {})}


def _adaptive(task: str) -> list[dict[str, Any]]:
    """One simulation of claude-opus-4-6 (adaptive): the leaderboard file is a bare list
    of τ² simulations, which the importer reads as it is."""
    sims = json.loads(ADAPTIVE.read_text())
    return [next(s for s in sims if str(s["task_id"]) == task)]


@needs_data
def test_a_retry_after_a_refused_call_is_carried_by_the_users_instruction(
        tmp_path: Path) -> None:
    """Task 21: update_reservation_flights is refused (no seats, then the payment), the
    agent asks which card; "Please use the gift card ..., gift_card_6276644" carries the
    retry."""
    vs = _verdicts(_simulation("21"), tmp_path)
    retry = [c for v in vs.values() for c in v.criteria
             if c.id.endswith(":confirmation") and "refused" in c.rationale]
    assert retry and all(c.decision.value == "false" for c in retry)
    assert any("use" in (c.support.text.lower() if c.support else "") for c in retry)
    # the bags of the same reservation, confirmed with the flight change, go with the
    # retry: the user's instruction carries them too (and the rationale names the
    # refused tool, not the bags)
    bags = [c for c in vs[27].criteria if c.id == "PC:call1:confirmation"]
    assert [c.decision.value for c in bags] == ["false"]
    assert "update_reservation_flights was refused" in bags[0].rationale


@needs_data
def test_bags_on_a_new_booking_must_be_the_users(tmp_path: Path) -> None:
    doc = _simulation("25", WHISSLE.with_name("tau2-airline-claude-opus-4-6-button.json"))
    vs = _verdicts(doc, tmp_path)
    bags = [c for v in vs.values() for c in v.criteria
            if c.id.endswith(":total_baggages") and c.args.get("tool") == "book_reservation"]
    assert bags and bags[-1].decision.value == "true"
    assert "never said it" in bags[-1].rationale
    assert "ask the user" in (bags[-1].repair or "")
    # zero bags adds nothing: no words needed
    for m in doc["simulations"][0]["messages"]:
        for c in m.get("tool_calls") or []:
            if c.get("name") == "book_reservation":
                c["arguments"]["total_baggages"] = 0
    vs = _verdicts(doc, tmp_path)
    bags = [c for v in vs.values() for c in v.criteria
            if c.id.endswith(":total_baggages") and c.args.get("tool") == "book_reservation"]
    assert bags and all(c.decision.value == "false" for c in bags)


V1_DATA = WHISSLE.with_name("tau-bench-airline-gpt-4o.json")


def _v1_record(task: int, trial: int) -> list[dict[str, Any]]:
    doc = json.loads(V1_DATA.read_text())
    return [next(r for r in doc if r["task_id"] == task and r["trial"] == trial)]


def _declined(vs: dict[int, Any]) -> list[Any]:
    return [c for v in vs.values() for c in v.criteria if c.id.startswith("IUV:declined:")]


@needs_data
def test_a_refusal_the_policy_does_not_back_fires(tmp_path: Path) -> None:
    """τ-bench gpt-4o, task 30: the user asks to cancel FDZ0T5, a business-class booking
    (the policy lets business bookings be cancelled), and the agent refuses and hands the
    user to a human."""
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(_v1_record(30, 0)))
    spec = load_spec(AIRLINE)
    vs = {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}
    fired = [c for c in _declined(vs) if c.decision.value == "true"]
    assert fired and "FDZ0T5" in fired[0].rationale
    assert fired[0].support is not None and '"cabin": "business"' in fired[0].support.text


@needs_data
def test_a_refusal_the_policy_backs_holds(tmp_path: Path) -> None:
    """The same conversation with the booking in economy: no rule lets it be cancelled
    (booked 2024-05-13, no insurance), so declining was right."""
    rec = _v1_record(30, 0)
    for m in rec[0]["traj"]:
        if m.get("role") == "tool" and '"reservation_id": "FDZ0T5"' in (m.get("content") or ""):
            m["content"] = m["content"].replace('"cabin": "business"', '"cabin": "economy"')
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(rec))
    spec = load_spec(AIRLINE)
    vs = {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}
    decided = [c for c in _declined(vs) if c.decision.value in ("true", "false")]
    assert decided and all(c.decision.value == "false" for c in decided)
    assert any("declining was right" in c.rationale for c in decided)


@needs_data
def test_a_refusal_right_for_every_entity_the_user_may_mean_holds(tmp_path: Path) -> None:
    """τ-bench gpt-4o, task 26: two reservations were read and the user's words do not
    single one out; the policy forbids cancelling either, so declining was right
    whichever they meant (the reader used to abstain here)."""
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(_v1_record(26, 0)))
    spec = load_spec(AIRLINE)
    vs = {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}
    both = [c for c in _declined(vs) if c.rationale.startswith("the same for each entity")]
    assert both and all(c.decision.value == "false" for c in both)
    assert "IFOYYZ" in both[0].rationale and "NQNU5R" in both[0].rationale


@needs_data
def test_a_refusal_is_judged_on_the_entity_it_names(tmp_path: Path) -> None:
    """τ²-bench claude-opus-4-6 (adaptive), task 1: the user asks to cancel "the trip from
    Philadelphia to LaGuardia" (five reservations read; their words name none by field:
    the records hold airport codes) and the agent refuses naming Q69X3R, an economy
    booking more than a day old with no insurance: declining was right. Without the id
    in the refusal the reader cannot tell which reservation was meant."""
    doc = _adaptive("1")
    declined = _declined(_verdicts(doc, tmp_path))
    assert declined and declined[0].decision.value == "false"
    assert "'Q69X3R'" in declined[0].rationale and "cancellable" in declined[0].rationale
    for m in doc[0]["messages"]:
        if m["role"] == "assistant" and "not eligible" in (m.get("content") or ""):
            m["content"] = m["content"].replace("Q69X3R", "your reservation")
    declined = _declined(_verdicts(doc, tmp_path))
    assert declined and declined[0].decision.value == "abstain"
    assert "cannot tell which" in declined[0].rationale


@needs_data
def test_removing_a_passenger_is_declined_not_handed_over(tmp_path: Path) -> None:
    """τ²-bench task 11 ("I need to remove a passenger from my upcoming round trip"):
    the policy allows no change in the number of passengers ("even a human agent cannot
    modify the number of passengers"). claude-opus-4-6 (adaptive) declines: right.
    whissle transfers to a human at once, without an attempt or a refusal: a failure
    (τ²-bench gives it reward 0)."""
    doc = _adaptive("11")
    declined = [c for c in _declined(_verdicts(doc, tmp_path))
                if c.id == "IUV:declined:update_reservation_passengers"]
    assert declined and all(c.decision.value == "false" for c in declined)
    assert "same-number-of-passengers" in declined[0].rationale
    handoff = [c for v in _verdicts(_simulation("11"), tmp_path).values()
               for c in v.criteria if c.id.endswith(":handoff")]
    assert [c.decision.value for c in handoff] == ["true"]
    assert handoff[0].evidence is not None
    assert handoff[0].evidence.text.lower() == "remove a passenger"
    # the rationale says what was not done, and not that nothing was looked up
    assert "without calling update_reservation_passengers" in handoff[0].rationale


@needs_data
def test_a_request_the_agent_never_looked_into_is_left_open_at_the_end(tmp_path: Path
                                                                       ) -> None:
    """τ-bench gpt-4o, task 22 trial 3 (reward 0): "I need to change my upcoming flight
    from EWR on May 21"; the agent asks for the user and reservation ids, the user has
    neither with them, the agent never looks the booking up, and the user leaves to find
    them ("###STOP###" right after, so the last message gave the agent no turn). The
    request asked in the first message is open at the end: the agent never read what the
    flight change would act on."""
    vs = _v1_verdicts(_v1_record(22, 3), tmp_path)
    open_ = [c for v in vs.values() for c in v.criteria
             if c.id == "IUV:unfinished:update_reservation_flights"]
    assert [c.decision.value for c in open_] == ["true"]
    assert open_[0].evidence is not None and open_[0].evidence.index == 0
    assert open_[0].evidence.text == "change my upcoming flight"


@needs_data
def test_a_request_the_agent_looked_into_and_the_user_let_drop_is_not_open(
        tmp_path: Path) -> None:
    """τ²-bench claude-opus-4-6 (adaptive), task 29 (reward 1): the user asks to change
    their flights, the agent reads the reservation and the options, and the conversation
    ends without a change and without a refusal: the request was looked into, so the end
    of the conversation leaves nothing open."""
    doc = _adaptive("29")
    vs = _verdicts(doc, tmp_path)
    assert not [c for v in vs.values() for c in v.criteria
                if c.id.startswith("IUV:unfinished:")]
    # the condition under test: the reservation was read
    assert any(c.get("name") == "get_reservation_details"
               for m in doc[0]["messages"] for c in m.get("tool_calls") or [])


def _declined_flights(vs: dict[int, Any], turn: int) -> Any:
    return next(c for c in vs[turn].criteria
                if c.id == "IUV:declined:update_reservation_flights")


@needs_data
def test_a_declined_flight_change_on_basic_economy_naming_no_cabin_holds(tmp_path: Path
                                                                        ) -> None:
    """τ-bench gpt-4o, task 21 trial 3: "Is there any possibility to switch to a nonstop
    flight sooner, even if there's a change fee involved?" on DF89BM, a basic-economy
    round trip, and the agent declines. The request names no cabin, so it keeps basic
    economy, and "basic economy flights cannot be modified" decides it (the check used
    to abstain: the rule reads `args.cabin`, which a request the agent never made does
    not carry)."""
    rec = [next(r for r in json.loads(V1_DATA.read_text())
                if r["task_id"] == 21 and r["trial"] == 3)]
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(rec))
    spec = load_spec(AIRLINE)
    vs = {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}
    c = _declined_flights(vs, 3)
    assert c.decision.value == "false"
    assert "basic-economy-flights-unchanged" in c.rationale and "DF89BM" in c.rationale
    # the same request with a cabin named: the user may upgrade first, so the basic-economy
    # rule no longer settles it
    for m in rec[0]["traj"]:
        if m.get("role") == "user" and "switch to a nonstop flight sooner" in m["content"]:
            m["content"] = m["content"].replace("even if there's a change fee involved",
                                                "if I upgrade to business class")
    p.write_text(json.dumps(rec))
    vs = {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}
    c = _declined_flights(vs, 3)
    assert "basic-economy-flights-unchanged" not in c.rationale




@pytest.mark.skipif(not ADAPTIVE.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_declined_upgrade_is_judged_with_the_cabin_the_user_named(tmp_path: Path) -> None:
    """τ²-bench claude-opus-4-6 (adaptive; sierra-research/tau2-bench leaderboard
    submission, MIT), task 13: on basic-economy XEWRD9, whose outbound legs have flown,
    the user asks "If I were to upgrade to regular economy ... would I be able to make
    the change then?" and the agent says no. The probe carries the cabin the user named
    (economy), so the cabin rule applies and is false: declining was right. It is decided
    though an earlier rule (basic economy, reading the flights the user never listed)
    cannot be: one false rule settles a refusal wherever it stands."""
    vs = _verdicts(_adaptive("13"), tmp_path)
    c = _declined_flights(vs, 2)
    assert c.decision.value == "false"
    assert "cabin-change-not-flown" in c.rationale and "XEWRD9" in c.rationale
    assert c.support is not None and c.support.source == "tool_result"


def _v1_verdicts(rec: list[dict[str, Any]], tmp_path: Path) -> dict[int, Any]:
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(rec))
    spec = load_spec(AIRLINE)
    return {int(v.turn_id): v for v in Evaluator(spec, config="s1").evaluate(
        read_tau(p, spec).records(spec).records)}


@needs_data
def test_a_refused_passenger_change_that_keeps_their_number_fires(tmp_path: Path) -> None:
    """τ-bench gpt-4o, task 43 trial 1: "I need to change the passenger name" on 3RK2T9,
    and the agent answers that basic economy cannot be modified, "including changing
    passenger names". The policy lets passengers be changed in any cabin, only not their
    number; a request that neither adds nor removes a traveller keeps the number, so
    every rule holds and the refusal fires (it abstained: the rule reads
    `args.passengers`). Asked with "and add a passenger", the request changes the
    number: declining it was right."""
    rec = [next(r for r in json.loads(V1_DATA.read_text())
                if r["task_id"] == 43 and r["trial"] == 1)]
    c = next(c for c in _v1_verdicts(rec, tmp_path)[1].criteria
             if c.id == "IUV:declined:update_reservation_passengers")
    assert c.decision.value == "true" and "3RK2T9" in c.rationale
    user = next(m for m in rec[0]["traj"] if m.get("role") == "user")
    user["content"] = user["content"].replace("reservation.", "reservation and add a passenger.")
    c = next(c for c in _v1_verdicts(rec, tmp_path)[1].criteria
             if c.id == "IUV:declined:update_reservation_passengers")
    assert c.decision.value == "false" and "same-number-of-passengers" in c.rationale


@pytest.mark.skipif(not ADAPTIVE.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_an_agent_asking_how_to_carry_out_the_request_declines_nothing(tmp_path: Path
                                                                       ) -> None:
    """τ²-bench claude-opus-4-6 (adaptive), task 40: "Which passenger's name would you
    like to update, and what should the new name be? Please note that the total number
    of passengers cannot be changed." The note reads as a refusal, but the agent is
    taking the name change forward: no declined passenger change is raised (it was, and
    fired once the rule read the request's passenger count)."""
    vs = _verdicts(_adaptive("40"), tmp_path)
    assert not [c for c in vs[1].criteria
                if c.id == "IUV:declined:update_reservation_passengers"]


TELECOM = WHISSLE.with_name("tau2-telecom-gpt-4.1.json")
TELECOM_SPEC = ROOT / "examples" / "tau2-telecom" / "spec.yaml"


@pytest.mark.skipif(not TELECOM.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_request_already_carried_out_is_no_refusal_of_another_line(tmp_path: Path
                                                                      ) -> None:
    """τ²-bench telecom, gpt-4.1 (sierra-research/tau2-bench results, MIT), the
    airplane-mode / data-saver / data-usage task: the agent refuels line L1002 (the
    user's number), the data still does not work and it hands over. The customer's
    other line, L1001, was read too, but the user never named it: the hand-off
    declines no refuel of it (the check used to probe L1001, and call declining right
    because L1001 is not the user's line)."""
    doc = json.loads(TELECOM.read_text())
    sim = next(s for s in doc["simulations"]
               if "airplane_mode_on|data_mode_off|data_saver_mode_on" in s["task_id"])
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"simulations": [sim], "tasks": doc["tasks"],
                             "info": doc.get("info", {})}))
    spec = load_spec(TELECOM_SPEC)
    vs = list(Evaluator(spec, config="s1").evaluate(read_tau(p, spec).records(spec).records))
    refuelled = next(i for i, v in enumerate(vs)
                     if any(c.id.startswith("PC:call") and ":rule:" in c.id
                            and "refuel" in (c.question or "") for c in v.criteria))
    later = [c for v in vs[refuelled + 1:] for c in v.criteria
             if c.id == "IUV:declined:refuel_data"]
    assert not later


V1_FULL = WHISSLE.parent / "tau-bench-airline-gpt-4o.json"


@pytest.mark.skipif(not V1_FULL.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_card_named_by_its_last_digits_is_not_another_card_of_the_kind(tmp_path: Path
                                                                         ) -> None:
    """τ-bench gpt-4o airline, task 26 trial 1 (sierra-research/tau-bench
    historical_trajectories/gpt-4o-airline.json, MIT): the user asks to pay the upgrade
    with "my credit card ending in 7334", the agent never reads the profile and charges
    credit_card_4959530 (a card of the cancelled reservations' payment history). Neither
    the agent's earlier "credit card or gift card", nor its "refund to the original
    payment method" on the cancellations, nor the user's yes ties the call to that card."""
    doc = json.loads(V1_FULL.read_text())
    rec = next(r for r in doc if r["task_id"] == 26 and r["trial"] == 1)
    vs = _verdicts([rec], tmp_path)  # type: ignore[arg-type]
    upgrade = next(v for v in vs.values() if any(
        c.id == "UV:call0:payment_id" and "credit_card_4959530" in str(c.args)
        for c in v.criteria))
    uv = next(c for c in upgrade.criteria if c.id == "UV:call0:payment_id")
    assert uv.decision.value == "true" and "never chose" in (uv.rationale or "")
    assert upgrade.verdict == "failure"


def test_ending_digits_tell_a_card_from_another_of_its_kind() -> None:
    from sage_tod.verifiers.tool_checks import names_other

    text = "Please use my credit card ending in 7334 for the payment."
    end = text.index("credit card") + len("credit card")
    card = {"amount": 116, "payment_id": "credit_card_4959530"}
    assert names_other(text, end, card, "credit_card_4959530")
    assert not names_other(text, end, {"last_four": "7334"}, "credit_card_1234567")
    assert not names_other(text, end, None, "credit_card_5557334")
    assert not names_other("Use my credit card, thanks.", 14, card, "credit_card_4959530")


@pytest.mark.skipif(not V1_FULL.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_flight_date_is_grounded_by_the_flight_it_belongs_to(tmp_path: Path) -> None:
    """τ-bench gpt-4o airline, task 2 trial 1 (same file, MIT): the agent rebooks the
    user's flights; each new flight's number is grounded in the search result, and its
    date only through the record that lists the number with that date. Before the
    sibling link every date abstained and the turn (a gold-clean write) was undecided."""
    doc = json.loads(V1_FULL.read_text())
    rec = next(r for r in doc if r["task_id"] == 2 and r["trial"] == 1)
    vs = _verdicts([rec], tmp_path)  # type: ignore[arg-type]
    dates = [c for v in vs.values() for c in v.criteria
             if c.id.startswith("UV:call") and c.id.endswith(".date")]
    assert dates and all(c.decision.value == "false" for c in dates)
    linked = [c for c in dates if "which is grounded" in (c.rationale or "")]
    assert linked and all(c.support is not None and c.support.source == "tool_result"
                          for c in linked)


@needs_data
def test_a_hand_off_instead_of_a_refusal_is_a_failure(tmp_path: Path) -> None:
    """Whissle task 28: "I need to cancel my flights ... reservation SI5UKW", the user
    gives the reason (change of plans); the agent reads the basic-economy reservation and
    transfers at once. The policy transfers only what the tools cannot handle; a
    cancellation the rules forbid is the agent's to refuse."""
    vs = _verdicts(_simulation("28"), tmp_path)
    v = vs[1]
    c = next(c for c in v.criteria if c.id.endswith(":handoff"))
    assert c.decision.value == "true" and v.verdict == "failure"
    assert c.evidence is not None and c.evidence.text.lower() == "cancel"
    assert "refuse" in (c.repair or "")


@needs_data
def test_a_hand_off_the_policy_requires_is_right(tmp_path: Path) -> None:
    """Whissle task 35: the user asks to cancel a reservation whose first flight has
    flown; "if any portion of the flight has already been flown ... transfer is needed"
    (the airline spec marks rule not-flown `handoff: true`)."""
    vs = _verdicts(_simulation("35"), tmp_path)
    c = next(c for v in vs.values() for c in v.criteria if c.id.endswith(":handoff"))
    assert c.decision.value == "false" and "not-flown" in (c.rationale or "")


@needs_data
def test_no_hand_off_criterion_after_a_refusal(tmp_path: Path) -> None:
    """Whissle task 27: the agent refuses compensation ("I am unable to offer
    compensation"), the user insists, the agent transfers: the hand-off passes on what it
    already denied. No hand-off criterion anywhere in the conversation."""
    doc = _simulation("27")
    names = [c.get("function", c).get("name") for m in doc["simulations"][0]["messages"]
             for c in m.get("tool_calls") or []]
    assert "transfer_to_human_agents" in names
    vs = _verdicts(doc, tmp_path)
    assert not [c for v in vs.values() for c in v.criteria if c.id.endswith(":handoff")]


@pytest.mark.skipif(not V1_FULL.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_the_change_charges_the_amount_the_user_agreed_to(tmp_path: Path) -> None:
    """τ-bench gpt-4o airline, task 26 (same file, MIT), the business upgrade of a
    two-passenger reservation: in trial 2 the agent quotes "the additional cost will be
    $597" (one passenger's difference), the user says yes, and the call charges $1,194;
    in trial 1 the agent quotes $1,194 and the rule holds."""
    doc = json.loads(V1_FULL.read_text())
    for trial, expect in ((2, "true"), (1, "false")):
        rec = next(r for r in doc if r["task_id"] == 26 and r["trial"] == trial)
        vs = _verdicts([rec], tmp_path)  # type: ignore[arg-type]
        rules = [c for v in vs.values() for c in v.criteria
                 if c.id.endswith(":rule:amount-read-back")]
        # decided on the upgrade: it holds, or it fires (not "does not apply")
        found = [c for c in rules
                 if c.decision.value == "true" or "holds" in (c.rationale or "")]
        assert found and {c.decision.value for c in found} == {expect}, trial
        if expect == "true":  # the quote the user said yes to, and what the change charged
            c = found[0]
            assert c.evidence is not None and c.evidence.source == "history.agent"
            assert "$597" in c.evidence.text
            assert c.support is not None and c.support.source == "tool_result"
            assert "1194" in c.support.text and c.support.path == "payment_history"


def test_money_amounts_as_agents_write_them() -> None:
    from sage_tod.text.money import money_amounts

    text = ("The upgrade costs $1,194 (was $597.50); a refund of 45 dollars, 30 USD. "
            "Flight HAT123 leaves at 19:00 on 2024-05-22.")
    assert money_amounts(text) == [1194.0, 597.5, 45.0, 30.0]
    # quoted: only what a charge word leads to in its sentence, not a listed price
    listing = ("I found the Google Home thermostat (item 7747408585, $249.01). The additional "
               "cost for upgrading only the outgoing flight is $105. Total refund: $14,190")
    assert money_amounts(listing, quoted=True) == [105.0, 14190.0]


@needs_data
def test_a_refund_larger_than_the_quote_takes_nothing_from_the_user(tmp_path: Path) -> None:
    """whissle, task 30 (τ²-bench, MIT): the agent quotes "you will be refunded the
    difference of $207" (one passenger's) and the change refunds $414 to the two
    passengers' gift card: the user gets no less than agreed, the rule holds. τ-bench
    gpt-4o task 22, trial 1: the agent quotes "the remaining cost of $234" and the change
    refunds $114, less than any amount it stated: the rule fires."""
    vs = _verdicts(_simulation("30"), tmp_path)
    rules = [c for v in vs.values() for c in v.criteria
             if c.id.endswith(":rule:amount-read-back") and "holds" in (c.rationale or "")]
    assert rules and {c.decision.value for c in rules} == {"false"}
    if not V1_FULL.exists():
        pytest.skip("τ-bench v1 trajectories absent ($SAGE_TOD_DATA)")
    rec = next(r for r in json.loads(V1_FULL.read_text())
               if r["task_id"] == 22 and r["trial"] == 1)
    vs = _verdicts([rec], tmp_path)  # type: ignore[arg-type]
    fired = [c for v in vs.values() for c in v.criteria
             if c.id.endswith(":rule:amount-read-back") and c.decision.value == "true"]
    assert fired, "a refund smaller than every quoted amount must fail"


@needs_data
def test_the_hand_off_tool_is_the_one_the_spec_marks(tmp_path: Path) -> None:
    """Whissle task 28 again with the transfer tool renamed in the log and the spec
    (`escalate_to_agent`, `handoff: true`): the same criteria are raised and decided, so
    no tool name is built in; with the mark removed, the call is no hand-off at all."""
    def run(spec_text: str, doc: dict[str, Any]) -> dict[str, str]:
        spec_path = tmp_path / "spec.yaml"
        spec_path.write_text(spec_text)
        log = tmp_path / "log.json"
        log.write_text(json.dumps(doc))
        spec = load_spec(spec_path)
        recs = read_tau(log, spec).records(spec).records
        return {c.id: c.decision.value for v in Evaluator(spec, config="s1").evaluate(recs)
                for c in v.criteria}

    text = AIRLINE.read_text()
    doc = _simulation("28")
    before = run(text, doc)
    renamed = json.loads(json.dumps(doc).replace("transfer_to_human_agents", "escalate_to_agent"))
    after = run(text.replace("transfer_to_human_agents", "escalate_to_agent"), renamed)
    assert after == before and any(k.endswith(":handoff") for k in before)
    unmarked = run(text.replace("transfer_to_human_agents", "escalate_to_agent").replace(
        "handoff: true}", "handoff: false}"), renamed)
    assert not any(k.endswith(":handoff") or k.startswith("IUV:declined") for k in unmarked)


@needs_data
def test_a_cancelled_flight_of_another_reservation_is_no_reason_to_cancel(
        tmp_path: Path) -> None:
    """claude-opus-4-6 (adaptive), task 39 (τ²-bench leaderboard, MIT): the user cancels
    "all" reservations; a status read shows HAT116 of 2024-05-03 cancelled, a flight of
    none of them, and MSJ4OA (economy, insured, "change of plans") is cancelled too. The
    rule reads the status of the reservation's own flights (`calls[*].result` with the
    arguments that asked for it): it fires on MSJ4OA and holds for the business ones."""
    (sim,) = _adaptive("39")
    tasks = json.loads((WHISSLE.parent / "domains" / "airline" / "tasks.json").read_text())
    doc = {"simulations": [sim], "tasks": [t for t in tasks if str(t["id"]) == "39"]}
    vs = _verdicts(doc, tmp_path)
    rules = {c.support.text if c.support else "": c.decision.value for v in vs.values()
             for c in v.criteria if c.id.endswith(":rule:cancellable")}
    assert [d for s, d in rules.items() if "MSJ4OA" in s] == ["true"]
    assert any("business" in s and d == "false" for s, d in rules.items())


@pytest.mark.skipif(not V1_FULL.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_my_return_flight_names_a_leg_not_a_round_trip(tmp_path: Path) -> None:
    """τ-bench gpt-4o airline, task 1, trial 0 (MIT): "I need to change my return flight
    from Texas to Newark" opens a conversation that ends in a booking. "Return" there is
    the way back, not the trip type: no flight-type value is read from it (the airline
    spec's round-trip synonyms are "round trip", "return trip", "return ticket"; a bare
    "return" read as round trip raised IUV on the user's first message)."""
    rec = next(r for r in json.loads(V1_FULL.read_text())
               if r["task_id"] == 1 and r["trial"] == 0)
    vs = _verdicts([rec], tmp_path)  # type: ignore[arg-type]
    assert vs, "the record gave no turns"
    assert not [c for v in vs.values() for c in v.criteria
                if c.id.startswith("IUV:flight-type")]


def _task(task_id: str) -> dict[str, Any]:
    doc = json.loads(WHISSLE.read_text())
    sim = next(s for s in doc["simulations"] if str(s["task_id"]) == task_id)
    return {"simulations": [sim], "tasks": [], "info": doc.get("info", {})}


@needs_data
def test_the_cheapest_among_the_flights_within_the_users_times_holds(tmp_path: Path) -> None:
    """whissle task 29: "I prefer early flights that arrive before 7 am at the destination
    ... the cheapest Economy options". HAT263 ($109) is cheaper than the committed HAT169
    ($171) but lands at 17:00: no choice this user asked for."""
    c = next(c for c in _booking_turn(_verdicts(_task("29"), tmp_path)).criteria
             if c.id == CID)
    assert c.decision.value == "false"
    assert "within the times the user stated" in c.rationale and "7 am" in c.rationale
    # without the limit the cheaper flight is a better choice, and the criterion fires
    doc = _task("29")
    for m in doc["simulations"][0]["messages"]:
        if m["role"] == "user" and m.get("content"):
            m["content"] = m["content"].replace(
                "I prefer early flights that arrive before 7 am at the destination. ", "")
    c = next(c for c in _booking_turn(_verdicts(doc, tmp_path)).criteria if c.id == CID)
    assert c.decision.value == "true" and "HAT263" in c.rationale
