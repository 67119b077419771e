"""`sage-tod audit sample`: strata, quotas, seeds, and what an audit item may hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.contracts.errors import InputError
from sage_tod.outputs.audit_sample import SampleOptions, allocate, read_audit_turns

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
AIRLINE = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"


def _evaluate(tmp_path: Path, turns: Path, spec: Path, name: str = "v.jsonl") -> Path:
    out = tmp_path / name
    r = runner.invoke(app, ["evaluate", "--spec", str(spec), "--turns", str(turns), "--out",
                            str(out), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    return out


def _sample(tmp_path: Path, verdicts: Path, turns: Path, out: str, *extra: str) -> Path:
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(verdicts), "--turns",
                            str(turns), "--out", str(tmp_path / out), *extra])
    assert r.exit_code == 0, r.output
    return tmp_path / out


def test_equal_allocation_caps_small_strata_and_gives_their_turns_back() -> None:
    sizes = {"acceptable": 500, "failure:IUV": 300, "failure:PC": 4, "failure:UV": 80,
             "undecided": 10}
    q = allocate(sizes, SampleOptions(n=200, acceptable_share=0.25))
    assert sum(q.values()) == 200
    assert q["acceptable"] == 50
    assert q["failure:PC"] == 4 and q["undecided"] == 10  # all they have
    # the 150 - 14 left are split equally between the two big failure strata
    assert q["failure:IUV"] == q["failure:UV"] == 68


def test_proportional_allocation_weights_and_exclusion() -> None:
    sizes = {"acceptable": 100, "failure:IUV": 300, "failure:UV": 100}
    q = allocate(sizes, SampleOptions(n=40, acceptable_share=0.0, allocation="proportional"))
    assert q == {"failure:IUV": 30, "failure:UV": 10, "acceptable": 0}
    q = allocate(sizes, SampleOptions(n=40, acceptable_share=0.5,
                                      weights={"failure:UV": 3.0}))
    assert q == {"acceptable": 20, "failure:IUV": 5, "failure:UV": 15}
    q = allocate(sizes, SampleOptions(n=40, weights={"failure:UV": 0.0}))
    assert q["failure:UV"] == 0 and sum(q.values()) == 40


def test_a_short_population_gives_everything() -> None:
    sizes = {"acceptable": 3, "failure:IUV": 2}
    assert allocate(sizes, SampleOptions(n=200)) == {"acceptable": 3, "failure:IUV": 2}


@pytest.mark.parametrize(("opts", "flag"), [
    (SampleOptions(n=0), "--n"), (SampleOptions(acceptable_share=1.5), "--acceptable-share"),
    (SampleOptions(allocation="random"), "--allocation"),
    (SampleOptions(weights={"failure:XYZ": 1.0}), "--weight"),
])
def test_bad_options_are_input_errors(opts: SampleOptions, flag: str) -> None:
    with pytest.raises(InputError, match=flag):
        allocate({"acceptable": 5, "failure:IUV": 5}, opts)


def test_sample_is_seeded_blind_and_stratified(tmp_path: Path) -> None:
    turns = demo.turns_path()
    v = _evaluate(tmp_path, turns, demo.spec_path())
    a = _sample(tmp_path, v, turns, "a", "--n", "10", "--seed", "3", "--spec",
                str(demo.spec_path()))
    b = _sample(tmp_path, v, turns, "b", "--n", "10", "--seed", "3", "--spec",
                str(demo.spec_path()))
    c = _sample(tmp_path, v, turns, "c", "--n", "10", "--seed", "4")
    for name in ("audit.json", "items.jsonl", "key.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "items.jsonl").read_bytes() != (c / "items.jsonl").read_bytes()
    items = [json.loads(x) for x in (a / "items.jsonl").read_text().splitlines()]
    key = json.loads((a / "key.json").read_text())
    assert len(items) == 10 == len(key["items"])
    assert [i["item"] for i in items] == [k["item"] for k in key["items"]]
    verdicts = {f"{d['dialogue_id']}:{d['turn_id']}": d
                for d in map(json.loads, v.read_text().splitlines()) if "dialogue_id" in d}
    for i, k in zip(items, key["items"], strict=True):
        assert set(i) == {"item", "dialogue_id", "turn_id", "workflow", "history", "user",
                          "agent", "state_before", "state_after", "tool_calls"}
        vd = verdicts[f"{i['dialogue_id']}:{i['turn_id']}"]
        assert k["verdict"] == vd["verdict"]
        assert k["stratum"] == (vd["verdict"] if vd["verdict"] != "failure"
                                else "failure:" + k["stratum"].split(":")[1])
        if vd["verdict"] == "failure":
            assert k["stratum"].split(":")[1] in vd["classes"]
    text = (a / "items.jsonl").read_text() + (a / "audit.json").read_text()
    assert '"verdict"' not in text and '"gold"' not in text and '"criteria"' not in text
    pops = {s: x["population"] for s, x in key["strata"].items()}
    assert sum(pops.values()) == len(verdicts)
    manifest = json.loads((a / "audit.json").read_text())
    assert manifest["workflows"]["restaurant_booking"]["required"][0]["slot"]
    # the sample command refuses to overwrite an audit set
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(v), "--turns", str(turns),
                            "--out", str(a)])
    assert r.exit_code == 2 and "--overwrite" in r.output


def test_legacy_tool_results_become_the_turns_calls(tmp_path: Path) -> None:
    """A real τ²-bench log imported with --tool-results (tests/fixtures/logs, MIT): each
    turn's `[tool NAME] RESULT` entries at the end of h_<t are its calls' results."""
    new = tmp_path / "new.jsonl"
    r = runner.invoke(app, ["import", "tau-bench", str(LOGS / "tau2-bench-airline-simulation.json"),
                            "--spec", str(AIRLINE), "--out", str(new)])
    assert r.exit_code == 0, r.output
    # the shape an earlier sage-tod wrote with --tool-results: no `tool_calls`, each result a
    # `[tool NAME] RESULT` history entry at the end of h_<t (and before its turn's entry later)
    raw = [json.loads(x) for x in new.read_text().splitlines()]
    shown: list[dict[str, str]] = []
    for t in raw:
        own = [{"user": "", "agent": f"[tool {c['name']}] "
                + (c["result"] if isinstance(c["result"], str) else json.dumps(c["result"]))}
               for c in t.pop("tool_calls") if c["result"] is not None]
        t["history"] = [*shown, *own]
        shown = [*t["history"][:len(shown)], *own, {"user": t["user"], "agent": t["agent"]}]
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(t) + "\n" for t in raw))
    keys = {f"{t['dialogue_id']}:{t['turn_id']}" for t in raw}
    got = read_audit_turns(turns, keys)
    for t in raw:
        item = got[f"{t['dialogue_id']}:{t['turn_id']}"]
        names = [c["name"] for c in t["meta"]["tool_calls"]]
        assert [c.name for c in item.tool_calls] == names
        assert not item.history or not item.history[-1].tool_calls  # moved, not repeated
        shown = [h for h in t["history"] if h["agent"].startswith("[tool ")]
        kept = sum(len(h.tool_calls) for h in item.history)
        with_result = sum(c.result is not None for c in item.tool_calls)
        assert kept + with_result == len(shown)
    cancel = next(c for i in got.values() for c in i.tool_calls if c.name == "cancel_reservation")
    assert json.loads(cancel.result)["status"] == "cancelled"


def _tool_turn(**extra: Any) -> dict[str, Any]:
    return {"dialogue_id": "d1", "turn_id": 0, "workflow": "cancel_flight",
            "user": "Cancel EHGLP3 please.", "agent": "Done, it is cancelled.",
            "state_before": {}, "state_after": {"reservation-id": "EHGLP3"}, **extra}


def test_the_tool_calls_field_is_read_from_turns_and_history(tmp_path: Path) -> None:
    calls = [{"id": "c1", "name": "cancel_reservation", "arguments": {"reservation_id": "EHGLP3"},
              "result": {"status": "cancelled"}, "error": False},
             {"id": None, "name": "get_user", "arguments": {}, "result": "not found",
              "error": True}]
    hist = [{"user": "Hi", "agent": "Let me look.", "tool_calls": calls[1:]}]
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(_tool_turn(tool_calls=calls, history=hist)) + "\n")
    item = read_audit_turns(p, {"d1:0"})["d1:0"]
    assert [(c.id, c.name, c.error) for c in item.tool_calls] == [
        ("c1", "cancel_reservation", False), (None, "get_user", True)]
    assert item.tool_calls[0].arguments == {"reservation_id": "EHGLP3"}
    assert item.history[0].tool_calls[0].result == "not found"


@pytest.mark.parametrize(("turn", "field"), [
    (_tool_turn(tool_calls={"name": "x"}), "tool_calls"),
    (_tool_turn(tool_calls=[{"arguments": {}}]), "tool_calls[0]"),
    (_tool_turn(user=3), "user"),
    (_tool_turn(state_after={"a": 1}), "state_after"),
    (_tool_turn(history=[{"user": 1}]), "history[0]"),
])
def test_bad_turn_lines_name_line_and_field(tmp_path: Path, turn: dict[str, Any],
                                            field: str) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(turn) + "\n")
    with pytest.raises(InputError) as exc:
        read_audit_turns(p, {"d1:0"})
    assert exc.value.problem.line == 1 and exc.value.problem.field == field


def test_verdicts_without_their_turns_are_refused(tmp_path: Path) -> None:
    v = _evaluate(tmp_path, demo.turns_path(), demo.spec_path())
    other = tmp_path / "other.jsonl"
    other.write_text(demo.turns_path().read_text().splitlines()[0] + "\n")
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(v), "--turns", str(other),
                            "--out", str(tmp_path / "x"), "--n", "50"])
    assert r.exit_code == 2
    assert "has no turn for" in r.output and "Traceback" not in r.output


def test_duplicate_verdicts_and_an_empty_sample_are_refused(tmp_path: Path) -> None:
    v = _evaluate(tmp_path, demo.turns_path(), demo.spec_path())
    first = next(x for x in v.read_text().splitlines() if '"dialogue_id"' in x)  # not the header
    dup = tmp_path / "dup.jsonl"
    dup.write_text(v.read_text() + first + "\n")
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(dup), "--turns",
                            str(demo.turns_path()), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "duplicate verdict for turn" in r.output
    strata = ["acceptable", "failure:IUV", "failure:PC", "failure:UV", "failure:WNF",
              "undecided"]
    zero = [x for s in strata for x in ("--weight", f"{s}=0")]
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(v), "--turns",
                            str(demo.turns_path()), "--out", str(tmp_path / "y"), *zero])
    assert r.exit_code == 2 and "nothing to sample" in r.output
