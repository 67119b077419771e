"""`sage-tod import mwzeval`: predictions in the MultiWOZ_Evaluation format joined with the corpus.

Fixtures are excerpts of real prediction files and of the corpus (tests/fixtures/mwzeval/README.md).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import InputError, load_turns
from sage_tod.cli.app import app
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.importers.mwzeval import clean_value, read_mwzeval, spec_slot
from sage_tod.lab.datasets import multiwoz

FIX = Path(__file__).parent / "fixtures" / "mwzeval"
DATA_FIX = Path(__file__).parent / "fixtures" / "datasets"
CORPUS = FIX / "corpus_test_excerpt.json"


@pytest.fixture(scope="module")
def spec() -> SpecBundle:
    return parse_spec(multiwoz.compile_spec(DATA_FIX))


def _write(tmp_path: Path, data: Any, name: str = "pred.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_slot_names_map_onto_the_spec(spec: SpecBundle) -> None:
    names = list(spec.all_slots)
    assert spec_slot("hotel", "price range", names) == "hotel-pricerange"
    assert spec_slot("train", "arrive", names) == "train-arriveby"
    assert spec_slot("taxi", "leave at", names) == "taxi-leaveat"
    assert spec_slot("hotel", "people", names) == "hotel-bookpeople"
    assert spec_slot("train", "day", names) == "train-day"  # a search slot for trains
    assert spec_slot("hotel", "day", names) == "hotel-bookday"
    assert spec_slot("restaurant", "time", names) == "restaurant-booktime"
    assert spec_slot("hotel", "arrive", names) is None


def test_value_format_repairs() -> None:
    assert clean_value("do n't care") == "dontcare"
    assert clean_value("don't care") == "dontcare"
    assert clean_value("saint john 's college") == "saint john's college"
    assert clean_value("19 :15") == "19:15"
    assert clean_value("cambridge") == "cambridge"


def test_turns_join_system_output_with_the_corpus(spec: SpecBundle) -> None:
    turns, counts = read_mwzeval(FIX / "damd_excerpt.json", CORPUS, spec)
    by = {(t["dialogue_id"], t["turn_id"]): t for t in turns}
    assert counts.dialogues == 3 and counts.turns == len(turns)
    t0, t1 = by[("mul0014", 0)], by[("mul0014", 1)]
    assert t0["user"].startswith("I 'm looking for a place to stay in the south")
    assert t0["agent"].startswith("there are [value_choice] [value_type]")  # the system's
    assert t0["state_before"] == {}
    assert t0["state_after"] == {"hotel-area": "south", "hotel-parking": "dontcare"}
    # s_{t-1} is the system's previous state; the history is the corpus's (what it saw)
    assert t1["state_before"] == t0["state_after"]
    assert t1["state_after"]["hotel-pricerange"] == "expensive"
    assert t1["history"] == [{"user": t0["user"], "agent": t0["meta"]["corpus_agent"]}]
    assert t1["workflow"] == "hotel"
    assert t0["meta"]["corpus_state_after"] == {"hotel-area": "south",
                                                "hotel-parking": "dontcare"}


def test_imported_turns_load_as_turns(tmp_path: Path, spec: SpecBundle) -> None:
    from sage_tod.lab.datasets.common import write_jsonl

    turns, _ = read_mwzeval(FIX / "mintl_excerpt.json", CORPUS, spec)
    path = tmp_path / "turns.jsonl"
    write_jsonl(path, turns)
    records = load_turns(path, spec).records
    assert len(records) == len(turns)
    sng = [r.turn for r in records if r.turn.dialogue_id == "sng0274"]
    assert sng[0].after()["train-arriveby"] == "19:15"  # "19 :15" repaired


def test_dialogue_subset(spec: SpecBundle) -> None:
    turns, counts = read_mwzeval(FIX / "mintl_excerpt.json", CORPUS, spec, dialogues=["SNG0274"])
    assert {t["dialogue_id"] for t in turns} == {"sng0274"} and counts.dialogues == 1


def test_errors_name_file_dialogue_and_turn(tmp_path: Path, spec: SpecBundle) -> None:
    data = json.loads((FIX / "damd_excerpt.json").read_text(encoding="utf-8"))
    bad = dict(data)
    bad["sng0274"] = data["sng0274"][:-1]
    with pytest.raises(InputError, match=r"dialogue sng0274: 3 system turns, but the corpus "
                                         r"dialogue SNG0274 has 4"):
        read_mwzeval(_write(tmp_path, bad), CORPUS, spec)
    with pytest.raises(InputError, match="dialogue pmul9999: unknown dialogue id"):
        read_mwzeval(_write(tmp_path, {"pmul9999": []}), CORPUS, spec)
    slot = json.loads(json.dumps(data))
    slot["pmul4044"][1]["state"]["hotel"]["arrive"] = "15:00"
    with pytest.raises(InputError, match=r"dialogue pmul4044 turn 1: field 'state.hotel.arrive'"
                                         r": unknown slot 'hotel-arrive'") as exc:
        read_mwzeval(_write(tmp_path, slot), CORPUS, spec)
    assert "pred.json" in str(exc.value)
    turns, counts = read_mwzeval(_write(tmp_path, slot), CORPUS, spec, unknown_slots="drop")
    assert counts.dropped_slots == {"hotel-arrive": 1} and turns
    shape = {"mul0014": [{"response": 3, "state": {}}]}
    with pytest.raises(InputError, match="dialogue mul0014 turn 0: 'response' must be a string"):
        read_mwzeval(_write(tmp_path, shape), CORPUS, spec)


def test_cli_import(tmp_path: Path, spec: SpecBundle, monkeypatch: pytest.MonkeyPatch) -> None:
    from sage_tod.lab.slices import dump_spec

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(dump_spec(multiwoz.compile_spec(DATA_FIX)), encoding="utf-8")
    out = tmp_path / "turns.jsonl"
    runner = CliRunner()
    res = runner.invoke(app, ["import", "mwzeval", str(FIX / "damd_excerpt.json"), "--out",
                              str(out), "--spec", str(spec_path), "--corpus", str(CORPUS)])
    assert res.exit_code == 0, res.output
    assert len(out.read_text(encoding="utf-8").splitlines()) > 5
    bad = _write(tmp_path, {"pmul9999": []})
    res = runner.invoke(app, ["import", "mwzeval", str(bad), "--out", str(tmp_path / "b.jsonl"),
                              "--spec", str(spec_path), "--corpus", str(CORPUS)])
    assert res.exit_code == 2
    assert "unknown dialogue id" in res.output and "Traceback" not in res.output
    # evaluating the predictions directly reads them the same way (the corpus from the
    # data directory: a copy of the fixture laid out like it)
    data = tmp_path / "data" / "multiwoz" / "mwz21_convlab2"
    data.mkdir(parents=True)
    with gzip.open(data / "test.json.gz", "wt", encoding="utf-8") as fh:
        fh.write(CORPUS.read_text(encoding="utf-8"))
    monkeypatch.setenv("SAGE_TOD_DATA", str(tmp_path / "data"))
    res = runner.invoke(app, ["evaluate", "--spec", str(spec_path), "--turns",
                              str(FIX / "damd_excerpt.json"), "--format", "mwzeval",
                              "--out", str(tmp_path / "v.jsonl"), "--config", "s1"])
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()) == 1 + len(
        out.read_text(encoding="utf-8").splitlines())  # the run header, then the verdicts
