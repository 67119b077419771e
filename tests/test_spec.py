from __future__ import annotations

from pathlib import Path

import pytest

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle, load_spec, parse_spec


def _wf(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "w",
        "slots": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "opt"}],
        "required": ["a", "b", "c"],
        "order": [["a"], ["b", "c"]],
    }
    base.update(over)
    return base


def _err(data: object) -> InputError:
    with pytest.raises(InputError) as exc:
        parse_spec(data, "spec.yaml")
    return exc.value


def test_ordering_buckets_and_next_fields(spec: SpecBundle) -> None:
    wf = spec.workflows["rest"]
    assert wf.next_fields({}) == ("area", "food")
    assert wf.next_fields({"area": "north"}) == ("food",)
    assert wf.next_fields({"area": "north", "food": "italian"}) == ("name",)
    assert wf.missing_prereqs("people", {"area": "north"}) == {"food", "name"}
    assert wf.missing_prereqs("area", {}) == frozenset()
    assert wf.is_optional("pricerange") and not wf.is_optional("area")


def test_outcome_default_and_custom(spec: SpecBundle) -> None:
    rest, train = spec.workflows["rest"], spec.workflows["train"]
    full = {"area": "n", "food": "f", "name": "x", "people": "2", "time": "18:00"}
    assert rest.outcome_holds(full)
    assert not rest.outcome_holds({**full, "time": ""})
    assert rest.outcome_unmet({k: v for k, v in full.items() if k != "people"}) == {"people"}
    assert not train.outcome_holds({"departure": "a", "destination": "b"})
    assert train.outcome_holds({"departure": "a", "destination": "b", "arriveby": "9:00"})


def test_outcome_value_comparison_uses_normalisation() -> None:
    b = parse_spec(_wf(slots=[{"name": "a", "type": "time"}, {"name": "b"}, {"name": "c"}],
                       outcome="a == '6:30 pm'"))
    assert b.workflows["w"].outcome_holds({"a": "18:30"})


def test_single_workflow_and_shared_slots_and_precedes() -> None:
    single = parse_spec(_wf())
    assert list(single.workflows) == ["w"]
    shared = parse_spec({"slots": [{"name": "a", "type": "time"}],
                         "workflows": [_wf(slots=["a", {"name": "b"}, {"name": "c"}])]})
    assert shared.workflows["w"].slots["a"].type == "time"
    pairs = parse_spec(_wf(order=None, precedes=[["a", "b"], ["b", "c"]]))
    wf = pairs.workflows["w"]
    assert wf.missing_prereqs("c", {}) == {"a", "b"}
    assert wf.missing_prereqs("c", {"a": "x"}) == {"b"}
    assert wf.buckets == (("a",), ("b",), ("c",))


def test_any_of_bucket_opens_later_buckets_with_one_member() -> None:
    # "book once the search has started": by name or by area, whichever the user gave
    wf = parse_spec(_wf(order=[{"any": ["a", "opt"]}, ["b", "c"]], required=["a", "b", "c"])
                    ).workflows["w"]
    assert wf.missing_prereqs("b", {}) == {"a", "opt"}
    assert wf.describe_missing("b", {}) == "one of a, opt"
    assert not wf.missing_prereqs("b", {"opt": "x"})  # an optional alternative is enough
    assert not wf.missing_prereqs("b", {"a": "x"})
    assert not wf.missing_prereqs("b", {}, also=["opt"])  # supplied in the same turn
    assert wf.next_fields({}) == ("a",)
    assert wf.next_fields({"opt": "x"}) == ("a", "b", "c")
    assert wf.order_text() == "any{a, opt} < {b, c}"
    mixed = parse_spec(_wf(order=[["a"], {"any": ["b", "opt"]}, ["c"]])).workflows["w"]
    assert mixed.describe_missing("c", {}) == "a, one of b, opt"
    assert not mixed.missing_prereqs("c", {"a": "1", "opt": "2"})


def test_optional_slot_only_in_an_any_bucket() -> None:
    err = _err({"workflows": [_wf(order=[["a", "opt"], ["b", "c"]])]})
    assert err.problem.field == "workflows[0].order[0][1]" and "not a required field" in str(err)
    err = _err({"workflows": [_wf(order=[{"any": ["a", "zz"]}, ["b", "c"]])]})
    assert err.problem.field == "workflows[0].order[0].any[1]" and "unknown slot" in str(err)
    err = _err({"workflows": [_wf(order=[{"any": ["a"], "all": ["b"]}, ["b", "c"]])]})
    assert err.problem.field == "workflows[0].order" and "bucket 0" in str(err)


@pytest.mark.parametrize(("data", "field", "words"), [
    ({"workflows": [_wf(colour="red")]}, "workflows[0].colour", "unknown key"),
    ({"workflows": [_wf(required=["a", "zz"])]}, "workflows[0].required[1]", "unknown slot"),
    ({"workflows": [_wf(order=[["a"], ["b", "zz"]])]}, "workflows[0].order[1][1]",
     "unknown slot"),
    ({"workflows": [_wf(outcome="filled(zz)")]}, "workflows[0].outcome", "unknown slot"),
    ({"workflows": [_wf(outcome="filled(a) and")]}, "workflows[0].outcome", "does not parse"),
    ({"workflows": [_wf(), _wf()]}, "workflows[1].id", "duplicate workflow id"),
    ({"workflows": [_wf(order=[["a", "b"], ["b", "c"]])]}, "workflows[0].order[1][0]",
     "cycle"),
    ({"workflows": [_wf(order=None, precedes=[["a", "b"], ["b", "a"]])]},
     "workflows[0].precedes", "cycle"),
    ({"workflows": [_wf(order=[["a"], ["b"]])]}, "workflows[0].order", "missing"),
    ({"workflows": [_wf(order=[["a", "opt"], ["b", "c"]])]}, "workflows[0].order[0][1]",
     "not a required field"),
    ({"workflows": [_wf(slots=[{"name": "a", "type": "colour"}])]},
     "workflows[0].slots[0]", ""),
    ({"workflows": [_wf(slots=[{"name": "a", "values": ["x"], "synonyms": {"y": ["z"]}},
                               {"name": "b"}, {"name": "c"}])]},
     "workflows[0].slots[0].synonyms", "not in values"),
    ({"workflows": [_wf(slots=[{"name": "a"}, {"name": "a"}])]}, "workflows[0].slots[1]",
     "duplicate slot"),
    ({"workflows": [_wf(slots=["nope"])]}, "workflows[0].slots[0]", "unknown slot"),
    ({"workflows": []}, "workflows", ""),
])
def test_spec_errors_name_the_field(data: object, field: str, words: str) -> None:
    err = _err(data)
    assert err.problem.path == "spec.yaml"
    assert err.problem.field is not None and err.problem.field.startswith(field)
    assert words in err.problem.message


def test_files_yaml_json_and_syntax_errors(tmp_path: Path) -> None:
    j = tmp_path / "s.json"
    j.write_text('{"id": "w", "slots": [{"name": "a"}], "required": ["a"]}')
    assert "w" in load_spec(j).workflows
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflows:\n  - id: w\n    slots: [a\n")
    with pytest.raises(InputError) as exc:
        load_spec(bad)
    assert exc.value.problem.line is not None and "YAML" in exc.value.problem.message
    badj = tmp_path / "bad.json"
    badj.write_text('{"id": "w",\n "slots": }')
    with pytest.raises(InputError) as exc:
        load_spec(badj)
    assert exc.value.problem.line == 2
    empty = tmp_path / "empty.yaml"
    empty.write_text("  \n")
    with pytest.raises(InputError, match="empty"):
        load_spec(empty)
    with pytest.raises(InputError, match="not found"):
        load_spec(tmp_path / "missing.yaml")


def test_demo_spec_loads(demo_spec: SpecBundle) -> None:
    assert set(demo_spec.workflows) == {"restaurant_booking", "taxi_booking"}
