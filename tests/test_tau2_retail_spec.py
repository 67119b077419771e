"""examples/tau2-retail/spec.yaml's `whole-order-read-back` on a real τ²-bench retail log.

Real log (sierra-research/tau2-bench, MIT; data/tool-agents/SOURCES.md):
$SAGE_TOD_DATA/tool-agents/tau2-retail-gpt-4.1-sft.json, task 38: the user wants to
cancel only the most expensive item of pending order #W9348897; the agent reads back
"cancel the Action Camera (item ID 6117189161) from your pending order #W9348897", the
user says "Yes." and the agent calls `cancel_pending_order`, which cancels the whole
order (five items, a $1,166.98 refund). The edited variants are that record changed at
test time: the read-back naming every item, and naming none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sage_tod import Evaluator
from sage_tod.contracts.spec import load_spec
from sage_tod.importers.tau_bench import read as read_tau

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "tau2-retail" / "spec.yaml"
LOG = (Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents"
       / "tau2-retail-gpt-4.1-sft.json")
pytestmark = pytest.mark.skipif(not LOG.exists(),
                                reason="tool-agents data absent ($SAGE_TOD_DATA)")
READ_BACK = "the Action Camera (item ID 6117189161)"
RULE = "rule:whole-order-read-back"


def _task(task: str) -> dict[str, Any]:
    doc = json.loads(LOG.read_text())
    sim = next(s for s in doc["simulations"] if str(s["task_id"]) == task)
    return {"simulations": [sim], "tasks": [], "info": doc.get("info", {})}


def _criterion(doc: dict[str, Any], tmp_path: Path, suffix: str) -> Any:
    """The first criterion whose id ends with `suffix` (S1), or None."""
    p = tmp_path / "log.json"
    p.write_text(json.dumps(doc))
    spec = load_spec(SPEC)
    recs = read_tau(p, spec).records(spec).records
    return next((c for v in Evaluator(spec, config="s1").evaluate(recs)
                 for c in v.criteria if c.id.endswith(suffix)), None)


def _rule_decision(doc: dict[str, Any], tmp_path: Path) -> str | None:
    c = _criterion(doc, tmp_path, RULE)
    return None if c is None else c.decision


def _edit_read_back(doc: dict[str, Any], new: str) -> dict[str, Any]:
    msgs = doc["simulations"][0]["messages"]
    (m,) = [m for m in msgs if m["role"] == "assistant" and READ_BACK in (m["content"] or "")]
    m["content"] = m["content"].replace(READ_BACK, new)
    return doc


def _items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    for m in doc["simulations"][0]["messages"]:
        if m["role"] == "tool" and '"order_id": "#W9348897"' in (m["content"] or "") \
                and '"items"' in m["content"]:
            items: list[dict[str, Any]] = json.loads(m["content"])["items"]
            return items
    raise AssertionError("the order's details are in the log")


def test_a_read_back_of_one_item_does_not_confirm_cancelling_the_order(
        tmp_path: Path) -> None:
    assert _rule_decision(_task("38"), tmp_path) == "true"


def test_a_read_back_of_every_item_confirms_it(tmp_path: Path) -> None:
    doc = _task("38")
    every = ", ".join(f"{i['name']} (item ID {i['item_id']})" for i in _items(doc))
    assert len(_items(doc)) > 1
    assert _rule_decision(_edit_read_back(doc, every), tmp_path) == "false"


def test_a_read_back_naming_no_item_is_not_judged_by_it(tmp_path: Path) -> None:
    # "cancel your pending order #W9348897": the order as a whole, nothing narrower
    doc = _edit_read_back(_task("38"), "it")
    assert _rule_decision(doc, tmp_path) == "false"  # `when` false: does not apply


# task 60 of the same log: the agent changes an item of pending order #W5061109 and pays
# the difference with paypal_3742148, the method the order was paid with, without ever
# reading the user's profile (`get_user_details`)
PROFILE_RULE = "rule:payment-in-profile"


def test_a_method_the_order_was_paid_with_is_in_the_profile_unread(tmp_path: Path) -> None:
    c = _criterion(_task("60"), tmp_path, PROFILE_RULE)
    assert c.decision == "false" and "holds" in c.rationale


def test_another_method_with_the_profile_unread_abstains(tmp_path: Path) -> None:
    doc = _task("60")
    for m in doc["simulations"][0]["messages"]:
        for call in m.get("tool_calls") or []:
            if call["name"] == "modify_pending_order_items":
                call["arguments"]["payment_method_id"] = "gift_card_0000000"
    c = _criterion(doc, tmp_path, PROFILE_RULE)
    assert c.decision == "abstain" and "no successful get_user_details" in c.rationale
