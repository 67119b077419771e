"""Shared fixtures: a small spec and a helper that builds turns."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sage_tod import demo
from sage_tod.compiler.context import TurnContext, make_context
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import Turn, parse_turn

# The runtime reads data only from SAGE_TOD_DATA; the developers' and CI's copy sits beside
# the checkout, so the suite names it when it is there (as the Makefile and .ci/run do).
_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "SAGE_TOD_DATA" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["SAGE_TOD_DATA"] = str(_SHARED_DATA)

SPEC_YAML = """
version: 1
workflows:
  - id: rest
    slots:
      - {name: area, description: area of the city, type: categorical,
         values: [centre, north, south], synonyms: {centre: [center, downtown]}}
      - {name: food, description: type of food, type: categorical,
         values: [italian, chinese]}
      - {name: pricerange, description: price range of the restaurant, type: categorical,
         values: [cheap, expensive]}
      - {name: name, description: name of the restaurant}
      - {name: people, description: number of people for the booking, type: number}
      - {name: time, description: time of the booking, type: time}
    required: [area, food, name, people, time]
    order: [[area, food], [name], [people, time]]
  - id: train
    slots:
      - {name: departure, description: station the train leaves from}
      - {name: destination, description: station the train goes to}
      - {name: leaveat, description: time the train should leave at, type: time}
      - {name: arriveby, description: time the train should arrive by, type: time}
    required: [departure, destination]
    outcome: "all_required and (filled(leaveat) or filled(arriveby))"
"""


@pytest.fixture(scope="session")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("spec") / "spec.yaml"
    p.write_text(SPEC_YAML, encoding="utf-8")
    return p


@pytest.fixture(scope="session")
def spec(spec_path: Path) -> SpecBundle:
    return load_spec(spec_path)


@pytest.fixture(scope="session")
def demo_spec() -> SpecBundle:
    return load_spec(demo.spec_path())


TurnMaker = Callable[..., Turn]


@pytest.fixture
def make_turn(spec: SpecBundle) -> TurnMaker:
    def make(user: str = "", agent: str = "", before: dict[str, str] | None = None,
             after: dict[str, str] | None = None, workflow: str = "rest",
             history: list[dict[str, str]] | None = None, **extra: Any) -> Turn:
        obj: dict[str, Any] = {
            "dialogue_id": "d", "turn_id": 0, "workflow": workflow, "user": user,
            "agent": agent, "state_before": before or {},
            "state_after": after if after is not None else dict(before or {}),
            "history": history or [], **extra,
        }
        return parse_turn(obj, spec).turn
    return make


@pytest.fixture
def ctx_of(spec: SpecBundle) -> Callable[[Turn], TurnContext]:
    return lambda turn: make_context(spec, turn)
