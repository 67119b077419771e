"""MultiWOZ loader and spec compilation, on fixtures cut from the ConvLab-2 MultiWOZ 2.1 copy."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sage_tod.compiler.diff import state_diff
from sage_tod.contracts.spec import load_spec, parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.importers import multiwoz_dialogues as mwd
from sage_tod.lab.datasets import multiwoz
from sage_tod.lab.datasets.paths import ENV_VAR, DataMissing, data_root, require

FIX = Path(__file__).parent / "fixtures" / "datasets"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data"


def _turns(split: str = "val") -> dict[tuple[str, int], dict]:  # type: ignore[type-arg]
    return {(t["dialogue_id"], t["turn_id"]): t
            for t in multiwoz.iter_turns(split, FIX, version="2.1")}  # type: ignore[arg-type]


def test_known_turn_states_and_diff() -> None:
    t = _turns()[("MUL0012", 1)]
    assert t["workflow"] == "hotel"
    assert t["user"].startswith("I also need free wifi")
    # s_{t-1} is the previous system turn's metadata; "not mentioned" is unset
    assert t["state_before"] == {"hotel-parking": "yes"}
    assert t["state_after"] == {"hotel-internet": "yes", "hotel-parking": "yes",
                                "hotel-type": "hotel"}
    assert t["history"] == [{"user": "I need information on a hotel that includes free "
                                     "parking please .",
                             "agent": "There are 29 hotels that meet your needs . Would you "
                                      "like to narrow your search by area and/or price range ?"}]
    bundle = parse_spec(multiwoz.compile_spec(FIX))
    rec = parse_turn(t, bundle)
    diff = state_diff(bundle, bundle.workflow("hotel"), rec.turn.before(), rec.turn.after())
    assert {(c.slot, c.old, c.new) for c in diff} == {("hotel-internet", None, "yes"),
                                                      ("hotel-type", None, "hotel")}


def test_user_acts_become_user_values_with_char_spans() -> None:
    t = _turns()[("MUL0012", 1)]
    by_slot = {u["slot"]: u for u in t["user_values"]}
    typ = by_slot["hotel-type"]
    assert t["user"][typ["start"]:typ["end"]] == "hotel"  # token span -> characters
    assert by_slot["hotel-internet"]["start"] is None  # the act value "yes" has no span
    assert t["agent_acts"] == {"request": [], "confirm": False,
                               "inform": {"hotel-area": "north", "hotel-name": "Ashley Hotel",
                                          "hotel-pricerange": "moderate"}}


def test_first_turn_has_empty_state_before_and_history() -> None:
    t = _turns()[("MUL0012", 0)]
    assert t["state_before"] == {} and t["history"] == []
    assert t["meta"]["domain_rule"] == "user_acts"


def test_metadata_key_mapping_and_unset() -> None:
    names = frozenset({"taxi-leaveat", "hotel-bookpeople", "hotel-name"})
    md = {"taxi": {"semi": {"leaveAt": "17:15", "arriveBy": ""}, "book": {"booked": []}},
          "hotel": {"semi": {"name": "not mentioned"}, "book": {"booked": [], "people": "2"}}}
    assert mwd.flat_state(md, names) == {"hotel-bookpeople": "2", "taxi-leaveat": "17:15"}


def test_act_slot_mapping_depends_on_domain() -> None:
    names = frozenset({"train-day", "hotel-bookday", "train-bookpeople"})
    assert mwd.act_slot("train", "Day", names) == "train-day"
    assert mwd.act_slot("hotel", "Day", names) == "hotel-bookday"
    assert mwd.act_slot("train", "People", names) == "train-bookpeople"
    assert mwd.act_slot("train", "Ref", names) is None


def test_turn_domain_rules() -> None:
    assert mwd.turn_domain({"Taxi-Inform": [["Dest", "x"]], "general-thank": [["none",
                                "none"]]}, {}, {}, {}, None) == ("taxi", "user_acts")
    assert mwd.turn_domain({}, {"Train-Request": [["Day", "?"]]}, {}, {},
                                "hotel") == ("train", "system_acts")
    assert mwd.turn_domain({}, {}, {}, {"hotel-area": "north"}, None) == (
        "hotel", "state_change")
    assert mwd.turn_domain({}, {}, {}, {}, "taxi") == ("taxi", "previous_turn")


def test_every_turn_validates_against_the_compiled_spec(tmp_path: Path) -> None:
    p = tmp_path / "multiwoz.json"
    p.write_text(json.dumps(multiwoz.compile_spec(FIX)))
    bundle = load_spec(p)
    assert sorted(bundle.workflows) == sorted(multiwoz.DOMAINS)
    for t in _turns().values():
        parse_turn(t, bundle)


def test_spec_orders_search_constraints_before_booking_fields() -> None:
    bundle = parse_spec(multiwoz.compile_spec(FIX))
    hotel = bundle.workflows["hotel"]
    assert len(hotel.buckets) == 2
    assert all(not s.split("-", 1)[1].startswith("book") for s in hotel.buckets[0])
    assert all(s.split("-", 1)[1].startswith("book") for s in hotel.buckets[1])
    # types from the schema's values and the ontology
    assert hotel.slots["hotel-bookpeople"].type == "number"
    assert hotel.slots["hotel-bookday"].type == "date"
    assert bundle.workflows["taxi"].slots["taxi-leaveat"].type == "time"



def test_spec_carries_the_corpus_conventions() -> None:
    # MultiWOZ records an amenity the user asks about, and prices a place in words its
    # value list lacks ("a high end Indian restaurant", SNG0547)
    bundle = parse_spec(multiwoz.compile_spec(FIX))
    hotel = bundle.workflows["hotel"]
    assert hotel.slots["hotel-internet"].recorded_when_asked
    assert hotel.slots["hotel-parking"].recorded_when_asked
    assert not hotel.slots["hotel-area"].recorded_when_asked
    price = hotel.slots["hotel-pricerange"]
    assert price.table["high end"] == "expensive" and price.table["inexpensive"] == "cheap"
    # one letter from a common word, "pricey" would be found in "moderately priced"
    assert "pricey" not in price.table and "posh" not in price.table


def test_spec_carries_area_words_and_the_database_cuisines() -> None:
    # "in the southern part of town" (val MUL0065), "on the Eastside" (val MUL1615); the
    # adjective alone is left out ("Northern European cuisine" is food)
    bundle = parse_spec(multiwoz.compile_spec(FIX))
    area = bundle.workflows["restaurant"].slots["restaurant-area"]
    assert area.table["southern part"] == "south" and area.table["eastside"] == "east"
    assert "northern" not in area.table
    # the cuisines the restaurant database serves are the food slot's catalogue: the
    # slot stays free (a cuisine no restaurant serves is still a value)
    food = bundle.workflows["restaurant"].slots["restaurant-food"]
    served = sorted({r["food"] for r in json.loads(
        (FIX / "multiwoz" / "db" / "restaurant_db.json").read_text())})
    assert food.type == "free" and list(food.values) == served


def test_required_rule_thresholds_and_or_groups() -> None:
    """Required = filled in >= 50% of completions; outcome needs >= 95%; two same-type slots
    that are each below 95% but together above it form an or-group."""
    service = multiwoz.load_schema(FIX)["taxi"]
    fill = {"taxi-leaveat": 0.6, "taxi-destination": 1.0, "taxi-departure": 0.97,
            "taxi-arriveby": 0.4}
    union = {("taxi-arriveby", "taxi-leaveat"): 1.0, ("taxi-departure", "taxi-destination"): 1.0,
             ("taxi-arriveby", "taxi-departure"): 1.0}
    stats = multiwoz.CompletionStats("taxi", 100, fill, union)
    wf = parse_spec({"workflows": [multiwoz._workflow(service, stats, {}, frozenset())]}
                    ).workflows["taxi"]
    assert set(wf.required) == {"taxi-destination", "taxi-departure"}
    assert wf.outcome_holds({"taxi-destination": "a", "taxi-departure": "b",
                             "taxi-arriveby": "10:00"})
    assert not wf.outcome_holds({"taxi-destination": "a", "taxi-departure": "b"})


def test_loader_accepts_a_multiwoz24_data_json(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for rel in ("multiwoz/mwz22/schema.json", "multiwoz/mwz21_convlab2/val.json.gz"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes((FIX / rel).read_bytes())
    with gzip.open(FIX / "multiwoz/mwz21_convlab2/val.json.gz", "rt") as fh:
        data = json.load(fh)
    data["MUL0012.json"] = data.pop("MUL0012")
    # 2.4 relabels a belief state: the loader must read it from data.json
    data["MUL0012.json"]["log"][3]["metadata"]["hotel"]["semi"]["area"] = "north"
    (root / "multiwoz/mwz24").mkdir(parents=True)
    (root / multiwoz.MWZ24_DATA).write_text(json.dumps(data))
    (root / multiwoz.MWZ24_LISTS["val"]).write_text(json.dumps(["MUL0012.json"]))
    turns = list(multiwoz.iter_turns("val", root))
    assert {t["dialogue_id"] for t in turns} == {"MUL0012"}
    assert turns[0]["meta"]["version"] == "2.4"
    assert turns[1]["state_after"]["hotel-area"] == "north"


def test_missing_file_names_path_and_source(tmp_path: Path) -> None:
    with pytest.raises(DataMissing) as exc:
        multiwoz.load_dialogues("val", tmp_path, version="2.1")
    msg = str(exc.value)
    assert str(tmp_path / "multiwoz/mwz21_convlab2/val.json.gz") in msg
    assert "ConvLab-2" in msg


def test_data_root_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert data_root() == tmp_path
    with pytest.raises(DataMissing, match="SGD-X"):
        require("sgd/sgd_x/v1/test/schema.json")


@pytest.mark.skipif(not (REAL / multiwoz.SPLIT_FILES["val"]).exists(), reason="no shared data")
def test_real_spec_as_documented() -> None:
    bundle = parse_spec(multiwoz.compile_spec(REAL))
    taxi, train = bundle.workflows["taxi"], bundle.workflows["train"]
    assert "filled(taxi-arriveby) or filled(taxi-leaveat)" in taxi.outcome_text
    assert train.buckets == (("train-departure", "train-day", "train-destination"),
                             ("train-bookpeople",))
    assert bundle.workflows["attraction"].required == ("attraction-area", "attraction-type")


@pytest.mark.skipif(not (REAL / multiwoz.SPLIT_FILES["val"]).exists(), reason="no shared data")
def test_real_validation_split_counts() -> None:
    turns = list(multiwoz.iter_turns("val", REAL, version="2.1"))
    assert len({t["dialogue_id"] for t in turns}) == 999  # PMUL4707 is missing upstream
    assert {t["workflow"] for t in turns} == set(multiwoz.DOMAINS)
    # the loader may read the held-out test split (slices never do: test_slices.py)
    test_ids = {t["dialogue_id"] for t in multiwoz.iter_turns("test", REAL, version="2.1")}
    assert len(test_ids) == 1000


def test_a_train_booking_confirms_only_the_train_workflow() -> None:
    from sage_tod.importers.multiwoz_dialogues import _agent_acts

    acts = {"Train-OfferBooked": [["Ref", "X1"]], "Hotel-Inform": [["Area", "east"]]}
    names = frozenset({"hotel-area", "train-day"})
    assert _agent_acts(acts, "train", frozenset({"train-day"}), names)["confirm"] is True
    hotel = _agent_acts(acts, "hotel", frozenset({"hotel-area"}), names)
    assert hotel["confirm"] is False and hotel["inform"] == {"hotel-area": "east"}
