"""Tool-agent turns: each committing call judged against the user, the results and the spec.

Real log: tests/fixtures/logs/tau2-bench-airline-simulation.json (τ²-bench, MIT; a
basic-economy reservation booked eleven days earlier is cancelled — the policy forbids
it, and τ²-bench gives the conversation reward 0). Spec: examples/tau2-airline/spec.yaml.
Variants of the log change one thing each, so every check is seen to fire and to hold.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sage_tod import Evaluator
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec, parse_spec
from sage_tod.contracts.tool_rules import evaluate_rule
from sage_tod.importers.tau_bench import read as read_tau

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "logs" / "tau2-bench-airline-simulation.json"
AIRLINE = ROOT / "examples" / "tau2-airline" / "spec.yaml"
RETAIL = ROOT / "examples" / "tau2-retail" / "spec.yaml"


def _doc() -> dict[str, Any]:
    return json.loads(LOG.read_text())


def _messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    sim = doc["simulations"][0] if "simulations" in doc else doc
    return sim["messages"]  # type: ignore[no-any-return]


def _verdicts(doc: dict[str, Any], tmp_path: Path) -> dict[int, Any]:
    p = tmp_path / "log.json"
    p.write_text(json.dumps(doc))
    spec = load_spec(AIRLINE)
    res = read_tau(p, spec)
    ev = Evaluator(spec, config="s1")
    return {int(v.turn_id): v for v in ev.evaluate(res.records(spec).records)}


def _criterion(v: Any, cid: str) -> Any:
    return next(c for c in v.criteria if c.id == cid)


def test_forbidden_cancellation_fires_with_the_reservation_as_evidence(tmp_path: Path) -> None:
    vs = _verdicts(_doc(), tmp_path)
    v = vs[2]  # "Yes, I'd like to proceed" -> cancel_reservation(EHGLP3)
    assert v.verdict == "failure" and v.classes == ["PC"]
    rule = _criterion(v, "PC:call0:rule:cancellable")
    assert rule.decision.value == "true" and rule.decided_by == "S1"
    assert rule.support is not None and rule.support.source == "tool_result"
    assert '"cabin": "basic_economy"' in rule.support.text
    # the support is the facts the rule read (cabin, booking time, insurance) of the
    # reservation it names, not the whole record: no flight list, no passenger names
    facts = json.loads(rule.support.text)
    assert set(facts) == {"reservation_id", "cabin", "created_at", "insurance"}
    assert facts["insurance"] == "no" and facts["reservation_id"] == "EHGLP3"
    flown = _criterion(v, "PC:call0:rule:not-flown")
    assert flown.support is not None and flown.support.path == "flights"
    assert set(json.loads(flown.support.text)) == {"reservation_id", "flights"}
    assert "do not call cancel_reservation" in (rule.repair or "")
    # what holds is decided false: the id is the user's, the yes is there, the read came first
    assert _criterion(v, "UV:call0:reservation_id").decision.value == "false"
    assert _criterion(v, "PC:call0:confirmation").decision.value == "false"
    assert _criterion(v, "PC:call0:after:get_reservation_details").decision.value == "false"
    assert _criterion(v, "PC:call0:rule:not-flown").decision.value == "false"
    # turns without a committing call raise nothing (no IUV on the read-back turn)
    assert all(not vs[t].criteria and vs[t].verdict == "acceptable" for t in (0, 1, 3))


def _result_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    msgs = _messages(doc)
    call_ids = [c["id"] for m in msgs for c in (m.get("tool_calls") or []) if c["name"] == name]
    for m in msgs:
        if m["role"] == "tool" and m.get("id") == call_ids[0]:
            return m
    raise AssertionError(name)


def test_an_allowed_cancellation_is_acceptable(tmp_path: Path) -> None:
    doc = _doc()
    for name in ("get_reservation_details", "cancel_reservation"):
        m = _result_of(doc, name)
        res = json.loads(m["content"])
        res["cabin"] = "business"  # "It is a business flight": cancellable
        m["content"] = json.dumps(res)
    v = _verdicts(doc, tmp_path)[2]
    assert v.verdict == "acceptable"
    assert _criterion(v, "PC:call0:rule:cancellable").decision.value == "false"


def test_no_yes_before_the_call_fires(tmp_path: Path) -> None:
    doc = _doc()
    for m in _messages(doc):
        if m["role"] == "user" and m.get("content", "").startswith("Yes, I'd like to proceed"):
            m["content"] = "Could you please confirm if I'll receive a refund?"
    v = _verdicts(doc, tmp_path)[2]
    c = _criterion(v, "PC:call0:confirmation")
    assert c.decision.value == "true" and c.support.source == "user"


def test_a_value_nothing_in_the_log_holds_fires_and_an_unknown_rule_field_abstains(
        tmp_path: Path) -> None:
    doc = _doc()
    for m in _messages(doc):
        for c in m.get("tool_calls") or []:
            if c["name"] == "cancel_reservation":
                c["arguments"]["reservation_id"] = "ZZQ9X1"
    v = _verdicts(doc, tmp_path)[2]
    uv = _criterion(v, "UV:call0:reservation_id")
    assert uv.decision.value == "true" and "nothing in the log" in uv.rationale
    # the call names no reservation that was read: the rules over it cannot be evaluated
    rule = _criterion(v, "PC:call0:rule:cancellable")
    assert rule.decision.value == "abstain" and "target" in rule.rationale


def test_a_refused_call_answers_only_to_the_rules_and_claiming_it_succeeded_fires(
        tmp_path: Path) -> None:
    doc = _doc()
    done = {c.id: c.decision.value for c in _verdicts(doc, tmp_path)[2].criteria
            if c.id.startswith("PC:call0:rule:")}
    m = _result_of(doc, "cancel_reservation")
    m["content"], m["error"] = "Error: reservation not found", True
    v = _verdicts(doc, tmp_path)[2]
    # the refused call changed nothing: no argument or yes criteria for it, only the
    # policy's rules (an attempt the rules forbid is still the agent's error); and the
    # agent says "Your reservation EHGLP3 has been successfully cancelled."
    ids = [c.id for c in v.criteria]
    assert ids[0] == "PC:call0:claimed" and len(ids) > 1
    assert all(i.startswith("PC:call0:rule:") for i in ids[1:])
    c = v.criteria[0]
    assert c.decision.value == "true" and c.evidence is not None
    assert "cancelled" in c.evidence.text and c.evidence.source == "agent"
    # each rule reads the same log as for the successful call, and says the same
    assert done and {r.id: r.decision.value for r in v.criteria[1:]} == done
    for m in _messages(doc):
        if m["role"] == "assistant" and "successfully cancelled" in (m.get("content") or ""):
            m["content"] = "I'm sorry, the cancellation did not go through. Shall I try again?"
    after = _verdicts(doc, tmp_path)[2]
    assert [c.id for c in after.criteria] == ids[1:]


def test_tool_rule_errors_name_the_field(tmp_path: Path) -> None:
    base = {"workflows": [{"id": "w", "slots": ["a"], "tools": {
        "get_order_details": {"writes": False},
        "cancel": {"confirms": True, "rules": [{"id": "r", "check": "target.status =="}]}}}],
        "slots": [{"name": "a"}]}
    with pytest.raises(InputError, match=r"rules\[0\]\.check.*does not compile"):
        parse_spec(base, "s.yaml")
    bad = copy.deepcopy(base)
    bad["workflows"][0]["tools"]["cancel"]["rules"][0]["check"] = 'order.status == "x"'
    with pytest.raises(InputError, match="unknown name 'order'"):
        parse_spec(bad, "s.yaml")
    bad["workflows"][0]["tools"]["cancel"]["rules"][0]["check"] = "results.get_oder.x == 1"
    with pytest.raises(InputError, match=r"results\.get_oder"):
        parse_spec(bad, "s.yaml")
    # a misspelt function would compile and abstain at every call: stopped at load
    bad["workflows"][0]["tools"]["cancel"]["rules"][0]["check"] = "sizes(args.items) > 0"
    with pytest.raises(InputError, match=r"rules\[0\]\.check.*unknown function 'sizes'"):
        parse_spec(bad, "s.yaml")
    bad["workflows"][0]["tools"]["cancel"]["rules"][0]["check"] = (
        'size(args.items) > 0 && has(args.x) && minutes("2024-05-27", "9:30") > 0')
    parse_spec(bad, "s.yaml")
    bad = copy.deepcopy(base)
    del bad["workflows"][0]["tools"]["cancel"]["rules"]
    bad["workflows"][0]["tools"]["cancel"]["target"] = {"arg": "id", "read": ["get_order"]}
    with pytest.raises(InputError, match=r"target\.read\[0\]"):
        parse_spec(bad, "s.yaml")


def test_cel_rules_evaluate_arithmetic_lists_and_abstain_on_missing_fields() -> None:
    b = {"args": {"total_baggages": 3, "nonfree_baggages": 1, "passengers": [{}, {}]},
         "context": {"free": {"gold": {"economy": 1}}}, "results": {"u": {"membership": "gold"}}}
    rule = ("int(args.nonfree_baggages) == (int(args.total_baggages) - int(context.free["
            "results.u.membership]['economy']) * size(args.passengers) > 0 ? "
            "int(args.total_baggages) - int(context.free[results.u.membership]['economy']) * "
            "size(args.passengers) : 0)")
    assert evaluate_rule(rule, b).value is True
    b["args"]["nonfree_baggages"] = 0
    assert evaluate_rule(rule, b).value is False
    out = evaluate_rule("target.status == 'pending'", b)
    assert out.value is None and "target" in out.reason


def test_cel_minutes_reads_schedule_times_and_abstains_on_text_it_cannot_read() -> None:
    """`minutes(date, time)`: a travel time is the difference of two; "02:00:00+1" (as
    τ²-bench's flight schedules write a next-day arrival) lands a day later."""
    from sage_tod.contracts.tool_rules import evaluate_number

    trip = ("minutes(option[size(option) - 1].date, option[size(option) - 1].arrives) - "
            "minutes(option[0].date, option[0].departs)")
    legs = [{"date": "2024-05-27", "departs": "04:00:00", "arrives": "06:00:00"},
            {"date": "2024-05-27", "departs": "17:00:00", "arrives": "02:00:00+1"}]
    assert evaluate_number(trip, {"option": legs}) == (22 * 60.0, "")
    assert evaluate_rule('minutes("2024-05-27", "9:30") - minutes("2024-05-26", "23:45") == '
                         "585", {}).value is True
    legs[1]["arrives"] = "late evening"
    value, why = evaluate_number(trip, {"option": legs})
    assert value is None and "late evening" in why


def test_example_specs_load() -> None:
    for p in (AIRLINE, RETAIL):
        spec = load_spec(p)
        commits = {n for wf in spec.workflows.values() for n, t in wf.tools.items() if t.is_commit}
        assert commits, p


def test_more_targets_than_the_user_asked_for_fire(tmp_path: Path) -> None:
    """The user asks to cancel "only this one" and the agent cancels a second
    reservation too: the second call acts on more than the user asked for."""
    doc = _doc()
    msgs = _messages(doc)
    msgs[1]["content"] = ("Hi, I'd like to cancel only this one, please. "
                          "The confirmation code is EHGLP3.")
    extra = copy.deepcopy(msgs[12])
    extra["tool_calls"][0]["id"] = "gem_cancel_reservation_1"
    extra["tool_calls"][0]["arguments"] = {"reservation_id": "XEHM4B"}
    answer = copy.deepcopy(msgs[13])
    answer["id"] = "gem_cancel_reservation_1"
    msgs[14:14] = [extra, answer]
    v = _verdicts(doc, tmp_path)[2]
    first = _criterion(v, "PC:call0:targets")
    second = _criterion(v, "PC:call1:targets")
    assert first.decision.value == "false"
    assert second.decision.value == "true" and "XEHM4B" in second.rationale
    assert second.evidence is not None and second.evidence.text == "only this one"
    assert "ask before" in (second.repair or "")
    # as logged ("cancel my reservation": no count stated) nothing is raised
    assert not any(c.id.endswith(":targets") for c in _verdicts(_doc(), tmp_path)[2].criteria)


def _ending_after_the_yes(doc: dict[str, Any], reply: str) -> dict[str, Any]:
    """The log cut after the user's yes to the cancellation, with `reply` as the agent's
    last message (no call), then the simulator's stop."""
    msgs = _messages(doc)
    yes = next(i for i, m in enumerate(msgs)
               if m["role"] == "user" and "proceed with the cancellation" in m["content"])
    del msgs[yes + 1:]
    msgs.append({"role": "assistant", "content": reply})
    msgs.append({"role": "user", "content": "###STOP###"})
    return doc


def test_a_request_the_agent_answered_but_never_carried_out_fires_on_the_last_turn(
        tmp_path: Path) -> None:
    doc = _ending_after_the_yes(_doc(), "Thank you. Is there anything else I can help with?")
    vs = _verdicts(doc, tmp_path)
    last = vs[max(vs)]
    c = _criterion(last, "IUV:unfinished:cancel_reservation")
    assert c.decision.value == "true" and last.verdict == "failure"
    # the evidence is the user's own request ("proceed with the cancellation")
    assert c.evidence is not None and c.evidence.source == "user"
    assert c.evidence.text.lower() == "cancellation"
    assert "carry out cancel_reservation" in (c.repair or "")
    # only the last turn looks back over the conversation
    assert all(not cr.id.startswith("IUV:unfinished") for t, v in vs.items() if t != max(vs)
               for cr in v.criteria)


def test_no_unfinished_request_when_the_agent_declines_or_never_got_a_turn(
        tmp_path: Path) -> None:
    declined = _ending_after_the_yes(
        _doc(), "I'm sorry, I'm unable to cancel this basic economy reservation.")
    vs = _verdicts(declined, tmp_path)
    assert not any(c.id.startswith("IUV:unfinished") for c in vs[max(vs)].criteria)
    silent = _ending_after_the_yes(_doc(), "")  # the user left right after the yes
    vs = _verdicts(silent, tmp_path)
    assert not any(c.id.startswith("IUV:unfinished") for c in vs[max(vs)].criteria)


def test_the_importer_marks_only_the_last_turn(tmp_path: Path) -> None:
    p = tmp_path / "log.json"
    p.write_text(LOG.read_text())
    spec = load_spec(AIRLINE)
    turns = read_tau(p, spec).records(spec).records
    assert [r.turn.last for r in turns] == [None] * (len(turns) - 1) + [True]


def test_requested_must_be_a_regular_expression(tmp_path: Path) -> None:
    text = AIRLINE.read_text()
    assert "requested: '\\bcancel(?:lation)?\\b'" in text
    bad = tmp_path / "airline.yaml"
    bad.write_text(text.replace("requested: '\\bcancel(?:lation)?\\b'", "requested: 'cancel('"))
    with pytest.raises(InputError, match="requested is not a regular expression") as err:
        load_spec(bad)
    assert "cancel_reservation.requested" in str(err.value)


def test_a_refused_attempt_made_good_later_in_the_turn_is_not_judged(tmp_path: Path) -> None:
    doc = _doc()
    msgs = _messages(doc)
    at = next(i for i, m in enumerate(msgs) if m["role"] == "assistant" and any(
        c["name"] == "cancel_reservation" for c in m.get("tool_calls") or []))
    # a first try with a mistyped code, refused, before the call that went through
    attempt = copy.deepcopy(msgs[at])
    attempt["tool_calls"][0]["id"] = "first_try"
    attempt["tool_calls"][0]["arguments"] = {"reservation_id": "EHGLP8"}
    refusal = {"role": "tool", "id": "first_try", "content": "Error: reservation not found",
               "error": True}
    msgs[at:at] = [attempt, refusal]
    v = _verdicts(doc, tmp_path)[2]
    assert not any(c.id.startswith("PC:call0:") for c in v.criteria)
    assert any(c.id.startswith("PC:call1:rule:") for c in v.criteria)
