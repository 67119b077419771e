"""examples/tau2-telecom/spec.yaml on real τ²-bench telecom logs.

Real logs (sierra-research/tau2-bench, MIT; data/tool-agents/SOURCES.md):
- $SAGE_TOD_DATA/tool-agents/tau2-telecom-gpt-4.1.json, task
  `[service_issue]contract_end_suspension|unseat_sim_card[PERSONA:Hard]`: line L1002 is
  suspended with a contract that ended 2025-01-31; the agent sends a payment request for
  the overdue bill B1234321 (overdue, as the bill list showed, but asked for by no one
  and unable to lift this suspension) and, once the user says they paid, resumes the
  line, which the policy forbids ("You are not allowed to lift the suspension if the
  line's contract end date is in the past");
- $SAGE_TOD_DATA/tool-agents/tau2-telecom-gpt-4o.json, task
  `[mobile_data_issue]user_abroad_roaming_disabled_on[PERSONA:Easy]`: the user gives
  555-123-2002 (line L1002) and the agent enables roaming on L1001 (555-123-2001);
- tau2-telecom-gpt-4.1.json, task `[service_issue]airplane_mode_on|overdue_bill_suspension
  [PERSONA:None]`: the agent reads the bill back as paid before resuming the line (held).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sage_tod import Evaluator, InputError
from sage_tod.contracts.spec import load_spec
from sage_tod.importers.tau_bench import read as read_tau

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "tau2-telecom" / "spec.yaml"
DATA = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents"
GPT41 = DATA / "tau2-telecom-gpt-4.1.json"
GPT4O = DATA / "tau2-telecom-gpt-4o.json"
needs_data = pytest.mark.skipif(not (GPT41.exists() and GPT4O.exists()),
                                reason="tool-agents data absent ($SAGE_TOD_DATA)")

WRITES = {"send_payment_request", "suspend_line", "resume_line", "enable_roaming",
          "disable_roaming", "refuel_data"}


def test_the_spec_declares_the_agents_write_tools_as_committing_and_no_device_tool(
        ) -> None:
    spec = load_spec(SPEC)
    tools = {n: ts for wf in spec.workflows.values() for n, ts in wf.tools.items()}
    assert {n for n, ts in tools.items() if ts.is_commit} == WRITES
    assert "get_details_by_id" in tools and not tools["get_details_by_id"].is_commit
    # the user's device tools are the user's actions, not the agent's
    assert not {"toggle_roaming", "make_payment", "reboot_device"} & set(tools)


def _verdicts(path: Path, task_id: str, tmp_path: Path) -> list[Any]:
    doc = json.loads(path.read_text())
    sim = next(s for s in doc["simulations"] if s["task_id"] == task_id)
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"simulations": [sim], "tasks": [], "info": doc.get("info", {})}))
    spec = load_spec(SPEC)
    res = read_tau(p, spec)
    return list(Evaluator(spec, config="s1").evaluate(res.records(spec).records))


def _criterion(vs: list[Any], suffix: str) -> tuple[Any, Any]:
    found = [(v, c) for v in vs for c in v.criteria if c.id.endswith(suffix)]
    assert len(found) == 1, [c.id for _, c in found]
    return found[0]


@needs_data
def test_resuming_a_line_whose_contract_ended_fires(tmp_path: Path) -> None:
    vs = _verdicts(GPT41, "[service_issue]contract_end_suspension|unseat_sim_card"
                          "[PERSONA:Hard]", tmp_path)
    v, c = _criterion(vs, ":rule:contract-not-ended")
    assert v.verdict == "failure" and c.decision.value == "true" and c.decided_by == "S1"
    assert c.support is not None and "2025-01-31" in c.support.text  # the line as read
    # the payment request before it is for a bill the agent saw overdue: the rule holds
    _, req = _criterion(vs, ":rule:bill-overdue")
    assert req.decision.value == "false"


@needs_data
def test_roaming_enabled_on_another_line_than_the_users_number_fires(tmp_path: Path
                                                                    ) -> None:
    vs = _verdicts(GPT4O, "[mobile_data_issue]user_abroad_roaming_disabled_on"
                          "[PERSONA:Easy]", tmp_path)
    found = [(v, c) for v in vs for c in v.criteria
             if c.id.endswith(":rule:users-line") and c.args.get("tool") == "enable_roaming"]
    assert len(found) == 1
    v, c = found[0]
    assert v.verdict == "failure" and c.decision.value == "true"
    assert c.support is not None and "L1001" in c.support.text


@needs_data
def test_resuming_after_the_bill_was_read_back_paid_holds(tmp_path: Path) -> None:
    vs = _verdicts(GPT41, "[service_issue]airplane_mode_on|overdue_bill_suspension"
                          "[PERSONA:None]", tmp_path)
    v, c = _criterion(vs, ":rule:overdue-bills-paid")
    assert c.decision.value == "false" and v.verdict == "acceptable"
    _, ended = _criterion(vs, ":rule:contract-not-ended")
    assert ended.decision.value == "false"


REFUEL_TASK = ("[mobile_data_issue]airplane_mode_on|bad_network_preference|bad_vpn|"
               "data_mode_off|data_saver_mode_on|data_usage_exceeded|"
               "user_abroad_roaming_enabled_off[PERSONA:Easy]")


@needs_data
def test_a_refuel_of_the_amount_the_user_asked_holds_and_more_than_2gb_fires(
        tmp_path: Path) -> None:
    # the user: "Let's go ahead and add 2GB to my line"; the agent refuels 2 GB on L1002
    vs = _verdicts(GPT41, REFUEL_TASK, tmp_path)
    for rule in ("amount-from-user", "at-most-2gb", "users-line", "price-stated"):
        _, c = _criterion(vs, f":rule:{rule}")
        assert c.decision.value == "false", (rule, c.rationale)
    # the same call with 3 GB: over the policy's maximum, and not what the user asked for
    doc = json.loads(GPT41.read_text())
    sim = next(s for s in doc["simulations"] if s["task_id"] == REFUEL_TASK)
    call = next(tc for m in sim["messages"] for tc in (m.get("tool_calls") or [])
                if tc["name"] == "refuel_data")
    call["arguments"]["gb_amount"] = 3
    bigger = tmp_path / "telecom-3gb.json"
    bigger.write_text(json.dumps(doc))
    vs = _verdicts(bigger, REFUEL_TASK, tmp_path)
    for rule in ("amount-from-user", "at-most-2gb"):
        v, c = _criterion(vs, f":rule:{rule}")
        assert v.verdict == "failure" and c.decision.value == "true", rule


@needs_data
def test_an_unasked_payment_request_for_a_line_whose_contract_ended_fires(
        tmp_path: Path) -> None:
    """The contract-end task: the user reports "No Signal" and never mentions paying; the
    agent sends a payment request for the overdue bill and promises the service back,
    though the suspended line's contract ended, so paying cannot lift the suspension.
    In the overdue-bill task the suspended line's contract runs on: the unasked request
    is the policy's own step toward resuming it, and the rule holds."""
    vs = _verdicts(GPT41, "[service_issue]contract_end_suspension|unseat_sim_card"
                          "[PERSONA:Hard]", tmp_path)
    v, c = _criterion(vs, ":rule:payment-asked-or-lifts-suspension")
    assert v.verdict == "failure" and c.decision.value == "true"
    vs = _verdicts(GPT41, "[service_issue]airplane_mode_on|overdue_bill_suspension"
                          "[PERSONA:None]", tmp_path)
    _, c = _criterion(vs, ":rule:payment-asked-or-lifts-suspension")
    assert c.decision.value == "false"


@needs_data
def test_the_suspension_a_payment_could_lift_is_the_users_line(tmp_path: Path) -> None:
    """`[service_issue]break_apn_settings|contract_end_suspension|lock_sim_card_pin
    [PERSONA:Hard]`: the user gives 555-123-2002 (L1002, suspended, contract ended) and
    the agent sends an unasked payment request "for your overdue bill". The account's
    L1003 is suspended too with its contract running, which used to make the request
    look like a step toward lifting a suspension; it is not the user's line. And in the
    `...|unseat_sim_card[PERSONA:Hard]` run the user's "Sure, my name is John Smith and my
    phone number is ..." answers a question about identity, not an offer to pay."""
    for task in ("[service_issue]break_apn_settings|contract_end_suspension|"
                 "lock_sim_card_pin[PERSONA:Hard]",
                 "[service_issue]break_apn_settings|contract_end_suspension|"
                 "lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]"):
        v, c = _criterion(_verdicts(GPT41, task, tmp_path),
                          ":rule:payment-asked-or-lifts-suspension")
        assert v.verdict == "failure" and c.decision.value == "true", task


def _transfer_rules(vs: list[Any]) -> dict[str, str]:
    """rule id -> decision of the transfer's rules (the manual's steps), on the one turn
    that holds the transfer."""
    (v,) = [v for v in vs if any(c.id.endswith(":rule:phone-settings-fixed")
                                 for c in v.criteria)]
    return {c.id.rsplit(":", 1)[1]: c.decision.value for c in v.criteria
            if ":rule:" in c.id and c.id.split(":")[1].startswith("call")}


@needs_data
def test_a_transfer_while_the_phone_shows_airplane_mode_fires(tmp_path: Path) -> None:
    """gpt-4.1, `[mms_issue]airplane_mode_on|bad_wifi_calling|user_abroad_roaming_enabled_off
    [PERSONA:Easy]` (reward 0): the user's last device call before the transfer shows
    "Status Bar: ✈️ Airplane Mode" (turned back on); the manual has the user toggle it."""
    vs = _verdicts(GPT41, "[mms_issue]airplane_mode_on|bad_wifi_calling|"
                          "user_abroad_roaming_enabled_off[PERSONA:Easy]", tmp_path)
    rules = _transfer_rules(vs)
    assert rules["phone-settings-fixed"] == "true"
    v, c = _criterion(vs, ":rule:phone-settings-fixed")
    assert v.verdict == "failure" and c.decided_by == "S1"
    # the reading it was decided on: the user's newest device call with a status bar
    assert c.support is not None and c.support.source == "user_tool_result"
    assert "Status Bar:" in c.support.text and "Airplane Mode" in c.support.text
    # the repair says the runbook's step in words, not the CEL condition
    assert c.repair is not None and c.repair.startswith("do not hand the user over yet:")
    assert "user_calls" not in c.repair


@needs_data
def test_a_transfer_before_the_mms_steps_fires_and_a_locked_sim_transfer_holds(
        tmp_path: Path) -> None:
    """gpt-4.1: `[mms_issue]airplane_mode_on|bad_wifi_calling|break_app_both_permissions|
    data_mode_off|data_usage_exceeded|unseat_sim_card|user_abroad_roaming_enabled_off
    [PERSONA:None]` (reward 0) transfers while MMS fails without the messaging app's
    permissions checked; `[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]`
    (reward 1) transfers for a SIM locked with a PIN, the manual's own transfer."""
    early = _transfer_rules(_verdicts(
        GPT41, "[mms_issue]airplane_mode_on|bad_wifi_calling|break_app_both_permissions|"
               "data_mode_off|data_usage_exceeded|unseat_sim_card|"
               "user_abroad_roaming_enabled_off[PERSONA:None]", tmp_path))
    assert early["mms-steps-taken"] == "true"
    due = _transfer_rules(_verdicts(
        GPT41, "[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]", tmp_path))
    assert set(due) == {"phone-settings-fixed", "mms-steps-taken", "slow-data-steps-taken",
                        "roaming-checked", "data-limit-checked"}
    assert set(due.values()) == {"false"}


@needs_data
def test_a_transfer_before_the_roaming_check_of_a_travelling_user_fires(tmp_path: Path
                                                                        ) -> None:
    """gpt-4o, `[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]` (reward
    0): the user, abroad, has no data connection; the line's roaming is enabled but the
    phone's data roaming was never turned on ("Device roaming OFF → User:
    toggle_roaming()") when the agent transfers. `[mobile_data_issue]
    user_abroad_roaming_disabled_on[PERSONA:Easy]`: the phone reads "Data Roaming
    Enabled: Yes" and the agent enabled the line's roaming before the transfer: the
    roaming check was done (that conversation fails on the line it enabled)."""
    early = _transfer_rules(_verdicts(
        GPT4O, "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]", tmp_path))
    assert early["roaming-checked"] == "true"
    done = _transfer_rules(_verdicts(
        GPT4O, "[mobile_data_issue]user_abroad_roaming_disabled_on[PERSONA:Easy]", tmp_path))
    assert done["roaming-checked"] == "false"


MMS_ABROAD = ("[mms_issue]bad_network_preference|data_mode_off|"
              "user_abroad_roaming_disabled_on[PERSONA:None]")


@needs_data
def test_an_mms_transfer_without_the_roaming_question_fires(tmp_path: Path) -> None:
    """gpt-4.1, `[mms_issue]bad_network_preference|data_mode_off|
    user_abroad_roaming_disabled_on[PERSONA:None]` (reward 0): MMS still fails, no speed
    test showed data working, the agent never asked whether the user travels and the
    line's roaming was never enabled. With the manual's question asked ("Are you outside
    your usual service area?") and an answer that names no travel, the step was done."""
    assert _transfer_rules(_verdicts(GPT41, MMS_ABROAD, tmp_path))["roaming-checked"] == "true"
    doc = json.loads(GPT41.read_text())
    sim = next(s for s in doc["simulations"] if s["task_id"] == MMS_ABROAD)
    first = next(m for m in sim["messages"] if m["role"] == "assistant" and m.get("content"))
    first["content"] += " Are you outside your usual service area?"
    doc["simulations"] = [sim]
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc))
    asked = _transfer_rules(_verdicts(p, MMS_ABROAD, tmp_path))
    assert asked["roaming-checked"] == "false"


def test_rules_are_for_committing_or_hand_off_tools_only(tmp_path: Path) -> None:
    text = SPEC.read_text()
    text = text.replace("get_data_usage: {writes: false}",
                        "get_data_usage: {writes: false, rules: [{id: r, check: 'true'}]}")
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    with pytest.raises(InputError, match="a hand-off tool, handoff: true, may have rules"):
        load_spec(p)
