"""SGD / SGD-X loader and specs, on fixtures cut from the SGD test split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sage_tod.compiler.diff import state_diff
from sage_tod.contracts.spec import parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.importers import sgd_dialogues
from sage_tod.lab.datasets import sgd
from sage_tod.lab.datasets.paths import DataMissing

FIX = Path(__file__).parent / "fixtures" / "datasets"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data"


def _turns() -> dict[tuple[str, int], dict[str, Any]]:
    return {(t["dialogue_id"], t["turn_id"]): t for t in sgd.iter_turns("test", FIX)}


def test_known_turn_states_diff_and_acts() -> None:
    t = _turns()[("1_00000", 1)]
    assert t["workflow"] == "Restaurants_2.ReserveRestaurant"
    assert t["state_before"] == {"date": "the 8th"}
    assert t["state_after"] == {"date": "the 8th", "location": "Corte Madera",
                                "restaurant_name": "P.f. Chang's", "time": "afternoon 12"}
    spans = {u["slot"]: t["user"][u["start"]:u["end"]] for u in t["user_values"]}
    assert spans == {"restaurant_name": "P.f. Chang's", "location": "Corte Madera",
                     "time": "afternoon 12"}
    bundle = parse_spec(sgd.compile_spec("test", FIX))
    rec = parse_turn(t, bundle)
    diff = state_diff(bundle, bundle.workflow(t["workflow"]), rec.turn.before(),
                      rec.turn.after())
    assert {c.slot for c in diff} == {"location", "restaurant_name", "time"}
    # the system's CONFIRM acts are informs, not a confirmation of the workflow
    assert t["agent_acts"]["confirm"] is False
    assert t["agent_acts"]["inform"]["time"] == "12 pm"


def test_requests_and_notify_success() -> None:
    turns = _turns()
    assert turns[("1_00000", 0)]["agent_acts"]["request"] == ["time", "restaurant_name",
                                                              "location"]
    assert turns[("1_00000", 4)]["agent_acts"]["confirm"] is True  # NOTIFY_SUCCESS


def test_state_keeps_a_value_still_listed() -> None:
    prev = {"time": "afternoon 12"}
    assert sgd_dialogues._stable_state({"time": ["12 pm", "afternoon 12"]}, prev) == prev
    assert sgd_dialogues._stable_state({"time": ["12 pm"]}, prev) == {"time": "12 pm"}


def test_spec_buckets_and_types() -> None:
    bundle = parse_spec(sgd.compile_spec("test", FIX))
    reserve = bundle.workflows["Restaurants_2.ReserveRestaurant"]
    # entity-identifying slots (taken or returned by the search intent) come first
    assert reserve.buckets == (("restaurant_name", "location"), ("time",))
    assert reserve.slots["time"].type == "time"
    assert reserve.slots["date"].type == "date"
    assert reserve.slots["number_of_seats"].type == "number"
    assert reserve.slots["has_seating_outdoors"].type == "boolean"
    find = bundle.workflows["Restaurants_2.FindRestaurants"]
    assert find.buckets == (("category", "location"),)
    assert all(parse_turn(t, bundle) for t in _turns().values())


def test_sgdx_variant_aligned_by_position() -> None:
    ren = sgd.renaming("test", "v1", FIX)
    assert ren.workflow("Restaurants_2.ReserveRestaurant") == (
        "Restaurants_21.ReserveTableAtRestaurant")
    assert ren.slot("Restaurants_2.ReserveRestaurant", "restaurant_name") == "business_name"
    bundle = parse_spec(sgd.compile_spec("test", FIX, variant="v1"))
    wf = bundle.workflows["Restaurants_21.ReserveTableAtRestaurant"]
    # types and ordering carried over from the original by position
    assert wf.buckets == (("business_name", "location_city"), ("time_to_reserve",))
    assert wf.slots["time_to_reserve"].type == "time"
    t = _turns()[("1_00000", 1)]
    v = sgd.rename_turn(t, ren, "v1")
    parse_turn(v, bundle)
    assert v["user"] == t["user"] and v["agent"] == t["agent"]
    assert v["state_after"]["business_name"] == "P.f. Chang's"
    assert v["meta"]["original_workflow"] == "Restaurants_2.ReserveRestaurant"


def test_unknown_variant_is_a_clear_error() -> None:
    with pytest.raises(DataMissing, match="unknown SGD-X variant"):
        sgd.compile_spec("test", FIX, variant="v9")


@pytest.mark.skipif(not (REAL / "sgd/test/schema.json").exists(), reason="no shared data")
def test_real_schema_has_38_workflows_and_variants_align() -> None:
    assert len(parse_spec(sgd.compile_spec("test", REAL)).workflows) == 38
    for v in sgd.VARIANTS:
        assert len(parse_spec(sgd.compile_spec("test", REAL, variant=v)).workflows) == 38
