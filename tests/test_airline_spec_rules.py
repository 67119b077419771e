"""Two rules of examples/tau2-airline/spec.yaml over tool results. `itinerary-connects`:
the flights a booking or a flight change leaves on the reservation make its trip (origin
to destination, and back for a round trip, each flight leaving from where an earlier one
landed). `bags-added`: a baggage update adds bags (one that adds none only re-prices the
bags the reservation has).

Real logs: tests/fixtures/logs/tau-bench-gpt-4o-airline.json (τ-bench, MIT; its README):
task 0 books JFK -> ATL -> SEA one way (holds); the same record with the second leg's
result edited at test time to land in MIA (fires). And, when the tool-agents data is
present, τ-bench's GPT-4o airline file, task 10 trial 3: a JFK-SFO round trip booked
with HAT023 JFK -> SFO on 05-20 and the same flight, the same way, on 05-25 (fires).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sage_tod import Evaluator
from sage_tod.contracts.spec import load_spec
from sage_tod.importers.tau_bench import read as read_tau

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "tau2-airline" / "spec.yaml"
FIXTURE = ROOT / "tests" / "fixtures" / "logs" / "tau-bench-gpt-4o-airline.json"
FULL = (Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents"
        / "tau-bench-airline-gpt-4o.json")
RULE = "rule:itinerary-connects"


def _decisions(records: list[dict[str, Any]], tmp_path: Path) -> list[tuple[str, str]]:
    p = tmp_path / "log.json"
    p.write_text(json.dumps(records))
    spec = load_spec(SPEC)
    recs = read_tau(p, spec).records(spec).records
    # the rule of each successful call (a refused one left nothing on the reservation)
    return [(c.decision, c.rationale) for v in Evaluator(spec, config="s1").evaluate(recs)
            for c in v.criteria if c.id.endswith(RULE) and "refused" not in c.question]


def test_a_connecting_one_way_booking_holds(tmp_path: Path) -> None:
    task0 = json.loads(FIXTURE.read_text())[0]
    got = _decisions([task0], tmp_path)
    assert [d for d, _ in got] == ["false"] and "holds" in got[0][1]


def test_a_booking_that_never_reaches_the_destination_fires(tmp_path: Path) -> None:
    task0 = json.loads(FIXTURE.read_text())[0]
    (m,) = [m for m in task0["traj"] if m.get("role") == "tool"
            and m.get("name") == "book_reservation" and "HATHAT" in (m.get("content") or "")]
    result = json.loads(m["content"])
    assert [f["destination"] for f in result["flights"]] == ["ATL", "SEA"]
    result["flights"][1]["destination"] = "MIA"
    m["content"] = json.dumps(result)
    got = _decisions([task0], tmp_path)
    assert [d for d, _ in got] == ["true"]


@pytest.mark.skipif(not FULL.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_round_trip_whose_return_flies_the_way_out_again_fires(tmp_path: Path) -> None:
    rec = next(r for r in json.loads(FULL.read_text())
               if r["task_id"] == 10 and r["trial"] == 3)
    got = _decisions([rec], tmp_path)
    assert "true" in [d for d, _ in got]


TOOLORCHESTRA = FULL.parent / "tau2-airline-toolorchestra.json"


@pytest.mark.skipif(not TOOLORCHESTRA.exists(),
                    reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_a_bag_update_that_adds_no_bag_fires(tmp_path: Path) -> None:
    # τ² airline, ToolOrchestra's run of task 46: after downgrading JG7FMM to economy the
    # agent calls update_reservation_baggages with the 3 bags the reservation has and 1
    # of them now non-free ($50); adding 1 more bag (total 4) is the same call, allowed
    doc = json.loads(TOOLORCHESTRA.read_text())
    sim = next(s for s in doc["simulations"] if str(s["task_id"]) == "46")

    def bags_rule(total: int) -> list[str]:
        for m in sim["messages"]:
            for c in m.get("tool_calls") or ():
                if c["name"] == "update_reservation_baggages":
                    c["arguments"]["total_baggages"] = total
        p = tmp_path / "log.json"
        p.write_text(json.dumps({"simulations": [sim], "tasks": [],
                                 "info": doc.get("info", {})}))
        spec = load_spec(SPEC)
        recs = read_tau(p, spec).records(spec).records
        return [c.decision for v in Evaluator(spec, config="s1").evaluate(recs)
                for c in v.criteria if c.id.endswith("rule:bags-added")]

    assert bags_rule(3) == ["true"]
    assert bags_rule(4) == ["false"]
