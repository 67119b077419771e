"""The Python API under misuse: an `InputError` (or a loud assertion), never a stray
exception or a silently wrong result. docs/guarantees.md names these tests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import sage_tod
from sage_tod import Evaluator, InputError, Turn, TurnRecord, demo, load_spec
from sage_tod.contracts.spec import parse_spec
from sage_tod.evaluation.cascade import Cascade
from sage_tod.testing import StageMissingError, assert_turns_pass

TURN: dict[str, Any] = {"dialogue_id": "d", "turn_id": 0, "workflow": "restaurant_booking",
                        "user": "Somewhere cheap in the centre.", "agent": "What food?",
                        "state_before": {},
                        "state_after": {"restaurant-area": "centre",
                                        "restaurant-pricerange": "cheap"}}


@pytest.fixture(scope="module")
def ev() -> Evaluator:
    return Evaluator(load_spec(demo.spec_path()), "s1")


@pytest.mark.parametrize("bad", [None, 42, "a turn", ["list"]])
def test_evaluate_turn_of_a_non_turn(ev: Evaluator, bad: Any) -> None:
    with pytest.raises(InputError, match="a turn must be a Turn"):
        ev.evaluate_turn(bad)


def test_turn_objects_get_the_spec_checks(ev: Evaluator) -> None:
    slot = Turn.model_validate({**TURN, "state_after": {"no-such-slot": "x"}})
    with pytest.raises(InputError, match="not in the schema"):
        ev.evaluate_turn(slot)
    wf = Turn.model_validate({**TURN, "workflow": "nope"})
    with pytest.raises(InputError, match="unknown workflow"):
        ev.evaluate_turn(TurnRecord(wf))
    with pytest.raises(InputError, match="unknown workflow"):
        list(ev.evaluate([wf]))


@pytest.mark.parametrize("spec", [{"not": "a spec"}, 3.5, None])
def test_evaluator_of_a_bad_spec(spec: Any) -> None:
    with pytest.raises(InputError):
        Evaluator(spec, "s1")


def test_evaluator_of_a_parsed_spec_mapping() -> None:
    doc = {"workflows": [{"id": "w", "slots": [{"name": "a"}], "required": ["a"]}]}
    assert Evaluator(doc, "s1").spec.workflows.keys() == {"w"}


@pytest.mark.parametrize("options", [{"tau": "abc"}, {"tau": 5}, {"tau": float("nan")},
                                     {"template": "nope"}, {"pc_state": "sideways"}])
def test_bad_options_are_input_errors_before_any_model_loads(options: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    with pytest.raises(InputError):
        Evaluator(load_spec(demo.spec_path()), "core", options=options)
    assert time.perf_counter() - t0 < 5.0  # refused before an export or a model load


@pytest.mark.parametrize("config", ["fast", 3, None])
def test_unknown_config(config: Any) -> None:
    with pytest.raises(InputError, match="unknown config"):
        Evaluator(load_spec(demo.spec_path()), config)


def test_options_must_be_a_mapping() -> None:
    with pytest.raises(InputError, match="mapping"):
        Evaluator(load_spec(demo.spec_path()), "s1", options=[("tau", 0.2)])  # type: ignore


def test_turn_id_true_and_colliding_keys_are_rejected(tmp_path: Path) -> None:
    spec = load_spec(demo.spec_path())
    with pytest.raises(InputError, match="turn_id"):
        Evaluator(spec, "s1").evaluate_turn({**TURN, "turn_id": True})
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({**TURN, "dialogue_id": "a:b", "turn_id": 0}) + "\n"
                 + json.dumps({**TURN, "dialogue_id": "a", "turn_id": "b:0"}) + "\n")
    with pytest.raises(InputError, match="duplicate turn a:b:0"):
        sage_tod.load_turns(p, spec)


def test_non_utf8_line_is_located_and_skippable(tmp_path: Path) -> None:
    spec = load_spec(demo.spec_path())
    p = tmp_path / "t.jsonl"
    p.write_bytes(json.dumps(TURN).encode() + b"\n"
                  + json.dumps({**TURN, "turn_id": 1}).encode().replace(b"cheap", b"ch\xe9ap")
                  + b"\n" + json.dumps({**TURN, "turn_id": 2}).encode() + b"\n")
    with pytest.raises(InputError) as exc:
        sage_tod.load_turns(p, spec)
    assert exc.value.problem.line == 2 and "UTF-8" in str(exc.value)
    tf = sage_tod.load_turns(p, spec, skip_invalid=True)
    assert [r.turn.turn_id for r in tf.records] == [0, 2] and tf.skipped[0].line == 2


def test_assert_turns_pass_of_no_turns_fails() -> None:
    with pytest.raises(AssertionError, match="no turns"):
        assert_turns_pass(demo.spec_path(), [], config="s1")


def test_a_stage_that_cannot_run_is_reported_everywhere(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """No S2 model: `missing_stages` names S2, verdicts say stages ["S1"] + missing ["S2"],
    and assert_turns_pass(allow_undecided=True) refuses to pass turns unchecked."""
    from sage_tod.nli import resolve

    monkeypatch.delenv("SAGE_TOD_NLI_MODEL", raising=False)
    monkeypatch.setattr(resolve, "resolve_model", lambda *a, **k: resolve.Resolution(
        None, "none", ["nowhere"]))
    ev = Evaluator(load_spec(demo.spec_path()), "core")
    assert list(ev.missing_stages) == ["S2"]
    v = ev.evaluate_turn(TURN)
    assert v.stages == ["S1"] and v.missing == ["S2"]
    assert v.to_dict()["missing"] == ["S2"]
    from sage_tod.outputs.render import Summary
    from sage_tod.outputs.report_html import render_report
    from sage_tod.outputs.scoring import score

    assert score([(v.key, None)], [v]).stages_missing == {"S2": 1}
    assert "S2 configured, not run" in render_report([v])
    acc = Summary()
    acc.add(v)
    assert acc.missing == {"S2": 1}
    with pytest.raises(StageMissingError, match="S2"):
        assert_turns_pass(demo.spec_path(), [TURN], config="core")
    assert_turns_pass(demo.spec_path(), [TURN], config="core", allow_missing_stages=True)


def test_a_complete_run_writes_no_missing_field(ev: Evaluator) -> None:
    d = ev.evaluate_turn(TURN).to_dict()
    assert "missing" not in d and d["stages"] == ["S1"]


def test_a_long_precedes_chain_is_cheap() -> None:
    """2,500 slots in one `precedes` chain: no recursion limit, no quadratic sets."""
    import tracemalloc

    n = 2500
    names = [f"s{i}" for i in range(n)]
    doc = {"workflows": [{"id": "w", "slots": [{"name": s} for s in names], "required": names,
                          "precedes": [[names[i], names[i + 1]] for i in range(n - 1)]}]}
    tracemalloc.start()  # this test's own allocations (ru_maxrss is the process's peak)
    t0 = time.perf_counter()
    wf = parse_spec(doc).workflows["w"]
    elapsed = time.perf_counter() - t0
    grown_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert elapsed < 10 and grown_mb < 200
    assert wf.missing_prereqs("s3", {}) == {"s0", "s1", "s2"}
    assert len(wf.prereqs["s2499"]) == n - 1 and len(wf.buckets) == n


def test_precedes_cycle_is_named() -> None:
    doc = {"workflows": [{"id": "w", "slots": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                          "required": ["a", "b", "c"],
                          "precedes": [["a", "b"], ["b", "c"], ["c", "b"]]}]}
    with pytest.raises(InputError, match=r"ordering cycle: .*b.*c"):
        parse_spec(doc)


def test_a_100kb_utterance_is_fast_with_rules_only(ev: Evaluator) -> None:
    user = ("I would like a cheap restaurant in the centre for 4 people at 7pm, not on "
            "friday, the 12th of march please. ") * 1000
    turn = {**TURN, "user": user[:100_000]}
    t0 = time.perf_counter()
    ev.evaluate_turn(turn)
    assert time.perf_counter() - t0 < 6.0  # measured < 2 s (docs/results-trust.md)


def test_cascade_fingerprint_names_stage_settings() -> None:
    fp = Cascade.from_config("s1").fingerprint()
    # S1's fingerprint holds what changes its verdicts: the states it reads and the
    # clock-time rule's switch (issue 24: it used to be empty)
    assert fp == {"config": "s1", "stages": {"S1": {"pc_state": "after", "wnf_state": "either",
                                                    "times": True}},
                  "missing": [], "criteria": ["UV", "IUV", "WNF", "PC"]}
    before = Cascade.from_config("s1", {"pc_state": "before"}).fingerprint()
    assert before["stages"]["S1"]["pc_state"] == "before"


def test_s2_fingerprint_names_its_meaning_claims_and_runtime() -> None:
    """S2's meaning-claim setting changes its verdicts, so a resume must see it."""
    on = Cascade.from_config("no_s1").fingerprint()
    if "S2" in on["missing"]:
        pytest.skip("no NLI model here")
    off = Cascade.from_config("no_s1", {"meaning_claims": "off"}).fingerprint()
    s2_on, s2_off = on["stages"]["S2"], off["stages"]["S2"]
    assert s2_on["meaning_claims"] != s2_off["meaning_claims"]
    assert s2_on["runtime"]["tokenizers"] and s2_on["model"]
