"""The natural-failure labeller, its audit and its scorer (sage_tod.lab.natural*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sage_tod.contracts.spec import parse_spec
from sage_tod.importers.mwzeval import read_mwzeval
from sage_tod.lab.datasets import multiwoz
from sage_tod.lab.natural import (
    AUDIT_FILE,
    AuditEntry,
    apply_audit,
    label_system,
    label_turn,
    read_audit,
)
from sage_tod.lab.natural_score import in_scope, score_natural
from sage_tod.lab.natural_values import same_value

FIX = Path(__file__).parent / "fixtures" / "mwzeval"
DATA_FIX = Path(__file__).parent / "fixtures" / "datasets"
ALL = frozenset({"hotel-area", "hotel-pricerange", "hotel-type", "hotel-name", "hotel-parking",
                 "hotel-bookpeople", "hotel-bookstay", "restaurant-name", "train-leaveat"})


def _turn(user: str, sb: dict[str, str], sa: dict[str, str], gb: dict[str, str],
          ga: dict[str, str], last_agent: str = "How can I help?") -> dict[str, Any]:
    return {"dialogue_id": "d", "turn_id": 1, "workflow": "hotel", "user": user,
            "agent": "ok", "state_before": sb, "state_after": sa,
            "history": [{"user": "Hi.", "agent": last_agent}],
            "meta": {"corpus_state_before": gb, "corpus_state_after": ga}}


@pytest.mark.parametrize(("slot", "a", "b"), [
    ("attraction-name", "saint john 's college", "saint johns college"),
    ("hotel-name", "the lensfield hotel", "lensfield hotel"),
    ("restaurant-name", "cafe uno", "caffe uno"),
    ("restaurant-booktime", "17:45", "5:45 pm"),
    ("hotel-type", "guest house", "guesthouse"),
    ("hotel-area", "center", "centre"),
    ("hotel-parking", "free", "yes"),
    ("hotel-pricerange", "do n't care", "dontcare"),
])
def test_lenient_values_are_the_same(slot: str, a: str, b: str) -> None:
    assert same_value(slot, a, b)


@pytest.mark.parametrize(("slot", "a", "b"), [
    ("hotel-pricerange", "cheap", "expensive"),
    ("train-leaveat", "17:45", "17:15"),
    ("hotel-bookpeople", "3", "2"),
    ("hotel-name", "acorn guest house", "alexander bed and breakfast"),
])
def test_different_values_differ(slot: str, a: str, b: str) -> None:
    assert not same_value(slot, a, b)


def test_typed_value_dropped_is_an_iuv_failure() -> None:
    t = _turn("I need free parking in the north.", {}, {"hotel-area": "north"}, {},
              {"hotel-area": "north", "hotel-parking": "yes"})
    lab = label_turn(t, {}, ALL)
    assert lab.label == "failure" and lab.failure_class == "IUV"
    (e,) = lab.errors
    assert (e.slot, e.kind, e.how, e.value_type) == ("hotel-parking", "dropped", "typed",
                                                     "boolean")
    assert in_scope({"meta": {"errors": [e.to_dict()]}})


def test_dontcare_and_unsupported_values_are_tagged() -> None:
    t = _turn("I don't care about the price.", {}, {"hotel-bookpeople": "3"}, {},
              {"hotel-pricerange": "dontcare"})
    lab = label_turn(t, {}, ALL)
    by = {e.slot: e for e in lab.errors}
    assert by["hotel-pricerange"].how == "dontcare"
    assert by["hotel-pricerange"].value_type == "dontcare"
    extra = by["hotel-bookpeople"]
    assert (extra.kind, extra.how, extra.side) == ("extra", "unsupported", "system")


def test_gold_lag_is_not_a_failure() -> None:
    # the system records what the user said now; the corpus records it one turn later
    t = _turn("Somewhere in the north please.", {}, {"hotel-area": "north"}, {}, {})
    lab = label_turn(t, {"hotel-area": "north"}, ALL)
    assert lab.label == "acceptable"
    assert [q["quirk"] for q in lab.quirks] == ["gold_lag"]


def test_offered_value_counts_only_when_the_user_accepts() -> None:
    offer = "How about the Acorn Guest House?"
    ga = {"hotel-name": "acorn guest house"}
    accepted = label_turn(_turn("Yes, that sounds good.", {}, {}, {}, ga, offer), {}, ALL)
    assert [(e.how, e.value_type) for e in accepted.errors] == [("accepted_offer",
                                                                 "accepted_offer")]
    ignored = label_turn(_turn("What is the postcode of the museum?", {}, {}, {}, ga, offer),
                         {}, ALL)
    assert ignored.label == "acceptable"
    assert ignored.quirks[0]["quirk"] == "gold_from_agent_inform"


def test_restated_and_late_recorded_values_count_at_this_turn() -> None:
    # restated in u_t, held by the corpus since earlier, still missing from s_t
    t = _turn("As I said, somewhere in the north.", {}, {}, {"hotel-area": "north"},
              {"hotel-area": "north"})
    (e,) = label_turn(t, {"hotel-area": "north"}, ALL).errors
    assert (e.slot, e.kind, e.how, e.to_dict()["note"]) == ("hotel-area", "dropped", "typed",
                                                            "restated")
    # typed now, recorded by the corpus only one turn later, never by the system
    t = _turn("Somewhere in the north.", {}, {}, {}, {})
    (e,) = label_turn(t, {"hotel-area": "north"}, ALL, next_user="Thanks.").errors
    assert e.to_dict()["note"] == "gold_lags"
    # ... unless the user says it again next turn (then it is that turn's)
    assert label_turn(t, {"hotel-area": "north"}, ALL, next_user="The north.").label == (
        "acceptable")


def test_counts_are_read_for_their_slot() -> None:
    t = _turn("Book it for 3 nights please.", {}, {}, {}, {"hotel-bookpeople": "3"})
    lab = label_turn(t, {}, ALL)
    assert [e.how for e in lab.errors] != ["typed"]  # "3 nights" does not state 3 people


def test_generic_hotel_type_and_untracked_slots() -> None:
    t = _turn("I need a hotel for 2 people.", {}, {}, {},
              {"hotel-type": "hotel", "hotel-bookpeople": "2"})
    lab = label_turn(t, {}, frozenset({"hotel-type"}))
    assert [q["quirk"] for q in lab.quirks] == ["generic_hotel_type"]
    (e,) = lab.errors  # a slot the system never writes still fails, marked as such
    assert e.slot == "hotel-bookpeople" and e.to_dict()["untracked"] is True


def test_labels_on_real_system_output() -> None:
    spec = parse_spec(multiwoz.compile_spec(DATA_FIX))
    turns, _ = read_mwzeval(FIX / "mintl_excerpt.json", FIX / "corpus_test_excerpt.json", spec)
    lines = {(t["dialogue_id"], t["turn_id"]): t for t in label_system("mintl", turns)}
    first = lines[("mintl/mul0014", 0)]  # "It does n't need to have free parking" tracked
    assert first["gold"] == {"label": "acceptable", "class": None}
    # "That sounds good" to the agent's train: the corpus overwrites the user's arrive-by
    # constraint with the chosen train's times, which is no failure of the system
    offer = lines[("mintl/sng0274", 2)]
    assert offer["gold"]["label"] == "acceptable"
    assert {q["quirk"] for q in offer["meta"]["quirks"]} == {"gold_chosen_train_times"}


def _line(key: str, label: str, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    did, tid = key.rsplit(":", 1)
    return {"dialogue_id": did, "turn_id": int(tid), "gold": {"label": label, "class": None},
            "meta": {"errors": errors or [], "quirks": [], "system": did.split("/")[0],
                     "raw_label": label}}


def test_audit_corrects_drops_and_refuses_stale_entries() -> None:
    lines = [_line("a/d1:0", "failure"), _line("a/d1:1", "failure"), _line("a/d2:0",
                                                                              "acceptable")]
    audit = [AuditEntry("a", "d1", 0, "failure", "acceptable", "gold noise"),
             AuditEntry("a", "d1", 1, "failure", "drop", "ambiguous"),
             AuditEntry("a", "d2", 0, "acceptable", "acceptable", "clean")]
    out = apply_audit(lines, audit)
    assert [(t["dialogue_id"], t["turn_id"], t["gold"]["label"]) for t in out] == [
        ("a/d1", 0, "acceptable"), ("a/d2", 0, "acceptable")]
    assert out[0]["gold"]["note"] == "raw label failure"
    assert out[0]["meta"]["raw_label"] == "failure"
    with pytest.raises(ValueError, match="re-audit it"):
        apply_audit(lines, [AuditEntry("a", "d2", 0, "failure", "failure", "x")])


def test_committed_audit_is_well_formed() -> None:
    audit = read_audit(AUDIT_FILE)
    assert len(audit) >= 200
    assert len({a.key for a in audit}) == len(audit)
    assert {a.corrected_label for a in audit} <= {"failure", "acceptable", "drop"}
    assert all(a.reason for a in audit)
    raw = [json.loads(x) for x in AUDIT_FILE.read_text(encoding="utf-8").splitlines()]
    assert all(set(r) <= {"system", "dialogue_id", "turn_id", "raw_label", "first_raw_label",
                          "raw_how",
                          "corrected_label", "reason", "tags"} for r in raw)


def _verdict(key: str, verdict: str, criteria: list[dict[str, Any]]) -> dict[str, Any]:
    did, tid = key.rsplit(":", 1)
    return {"dialogue_id": did, "turn_id": int(tid), "verdict": verdict, "criteria": criteria,
            "classes": ["IUV"] if verdict == "failure" else []}


def test_scorer_counts_and_iuv_coverage(tmp_path: Path) -> None:
    drop = {"slot": "hotel-name", "kind": "dropped", "system": None, "gold": "acorn",
            "how": "typed", "value_type": "name", "side": "gold"}
    drop_area = dict(drop, slot="hotel-area", gold="north", value_type="area")
    lines = [_line("s/a:0", "failure", [drop]), _line("s/b:0", "failure", [drop_area]),
             _line("s/c:0", "acceptable"), _line("s/d:0", "acceptable")]
    iuv = {"class": "IUV", "args": {"slot": "hotel-area", "value": "north"},
           "decision": "true"}
    verdicts = [_verdict("s/a:0", "acceptable", []), _verdict("s/b:0", "failure", [iuv]),
                _verdict("s/c:0", "failure", [dict(iuv, args={"slot": "hotel-type"})]),
                _verdict("s/d:0", "undecided", [])]
    s = score_natural(lines, verdicts)
    assert (s["tp"], s["fp"], s["fn"], s["tn"]) == (1, 1, 1, 1)
    assert s["precision"] == s["recall"] == 0.5
    assert s["clean_flag_rate"] == 0.5 and s["undecided_rate"] == 0.25
    assert s["in_scope"] == {"n": 2, "recall": 0.5}
    assert s["iuv_coverage"]["name"] == {"n": 1, "compiled": 0.0, "fired": 0.0,
                                         "turn_flagged": 0.0}
    assert s["iuv_coverage"]["area"]["fired"] == 1.0
    with pytest.raises(ValueError, match="no verdict"):
        score_natural(lines, verdicts[:2])

    # the command line reads a verdicts file as `sage-tod evaluate` writes it: run header
    # first (it used to fail on the header with KeyError 'dialogue_id')
    from sage_tod.lab.natural_score import main

    sl, vf = tmp_path / "slice.jsonl", tmp_path / "v.jsonl"
    sl.write_text("".join(json.dumps(x) + "\n" for x in lines))
    head = {"record": "sage-tod run", "header_version": 1, "format_version": 2}
    vf.write_text("".join(json.dumps(x) + "\n" for x in [head, *verdicts]))
    assert main([str(sl), str(vf)]) == 0


def test_cli_natural_reports_missing_data(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sage_tod.cli.app import app

    res = CliRunner().invoke(app, ["slices", "natural", "--out", str(tmp_path / "o"),
                                   "--data", str(tmp_path)])
    assert res.exit_code == 2
    assert "missing data file" in res.output and "Traceback" not in res.output
