"""ABCD loader (full-corpus format, tested on the 3-conversation sample) and specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sage_tod.contracts.spec import parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.lab.datasets import abcd
from sage_tod.lab.datasets.paths import DataMissing

FIX = Path(__file__).parent / "fixtures" / "datasets"


def _turns() -> list[dict]:  # type: ignore[type-arg]
    return list(abcd.iter_turns(abcd.load_conversations(abcd.sample_path(FIX)), FIX))


def test_action_values_become_state() -> None:
    t = next(t for t in _turns() if t["dialogue_id"] == "abcd-3592" and t["turn_id"] == 1)
    assert t["workflow"] == "return_size"
    assert t["user"] == "Crystal Minh"
    assert t["state_before"] == {}
    assert t["state_after"] == {"customer_name": "crystal minh"}
    assert t["meta"]["actions"][0]["action"] == "pull-up-account"
    t3 = next(t for t in _turns() if t["dialogue_id"] == "abcd-3592" and t["turn_id"] == 3)
    # validate-purchase values are matched to slots through the scenario
    assert t3["state_after"] == {"customer_name": "crystal minh", "email": "cminh730@email.com",
                                 "order_id": "3348917502", "username": "cminh730"}


def test_faq_subflow_suffix_and_history() -> None:
    turns = _turns()
    assert {t["workflow"] for t in turns} == {"return_size", "timing", "refund_status"}
    first = next(t for t in turns if t["dialogue_id"] == "abcd-3592" and t["turn_id"] == 0)
    # the leading agent greeting is history only
    assert first["history"] == [{"user": "", "agent": "Hi! How can I help you?"}]


def test_spec_one_workflow_per_subflow() -> None:
    bundle = parse_spec(abcd.compile_spec(FIX))
    assert len(bundle.workflows) == 55
    wf = bundle.workflows["return_size"]
    assert wf.required == ("membership_level",)  # the only single-slot action
    for t in _turns():
        parse_turn(t, bundle)


def test_full_corpus_missing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataMissing, match=r"abcd_v1\.1\.json\.gz"):
        abcd.require_full_corpus(tmp_path)
