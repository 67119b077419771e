"""One evaluation path: every door gives the CLI's verdicts on the same conversations.

The fixtures are real agent logs (tests/fixtures/logs/README.md: sources and
licences): a τ²-bench airline simulation (tool calls with structured results, an
error flag, a closing `###STOP###`) and two τ-bench GPT-4o trajectories
(OpenAI-style tool calls). Each is evaluated by `sage-tod evaluate --format`,
then through the Python API (`sage_tod.evaluate_files`), by importing it and
evaluating the turns file, through the integrations' transcript mapping (raw
messages as a chat library holds them, and the turns file turned into
transcripts as the DeepEval/Inspect helpers do) and through the pytest
fixture's `assert_turns_pass`; the verdicts must be equal, latency aside.
DeepEval's and Inspect's own objects are compared in their test files (they
need the integration extras).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import sage_tod
from sage_tod import demo, load_spec, load_turns, read_verdicts
from sage_tod.cli.app import app
from sage_tod.evaluation.run import RunSettings
from sage_tod.integrations.conversation import (
    Conversation,
    ConversationJudge,
    Message,
    ToolCall,
    from_turns,
)
from sage_tod.outputs.testing import TurnsFailedError, assert_turns_pass

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
AIRLINE = ROOT / "examples" / "tau2-airline" / "spec.yaml"
CASES = [("tau2-bench-airline-simulation.json", "tau-bench"),
         ("tau-bench-gpt-4o-airline.json", "tau-bench")]
runner = CliRunner()


def _plain(vs: list[sage_tod.Verdict]) -> list[dict[str, Any]]:
    out = []
    for v in vs:
        d = v.to_dict()
        d.pop("latency_ms")
        out.append(d)
    return out


def _cli(tmp: Path, log: Path, fmt: str | None, config: str = "s1") -> list[dict[str, Any]]:
    out = tmp / f"cli-{log.stem}.jsonl"
    argv = ["evaluate", "--spec", str(AIRLINE), "--turns", str(log), "--out", str(out),
            "--config", config, "--quiet", "--overwrite"]
    r = runner.invoke(app, [*argv, *(["--format", fmt] if fmt else [])])
    assert r.exit_code == 0, r.output
    return _plain(read_verdicts(out))


def _transcripts(log: Path) -> list[Conversation]:
    """The log's conversations as a chat library holds them: messages, tool calls with
    ids and arguments, tool results answering a call id (τ²: with an error flag)."""
    doc = json.loads(log.read_text())
    runs = doc["simulations"] if isinstance(doc, dict) else doc
    convs = []
    for run in runs:
        raw = run.get("messages") or run.get("traj")
        msgs = []
        for m in raw:
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function")
                name = fn["name"] if fn else c["name"]
                args = json.loads(fn["arguments"]) if fn else c["arguments"]
                calls.append(ToolCall(name, args, id=c.get("id")))
            if m["role"] == "tool":
                msgs.append(Message("tool", m.get("content") or "",
                                    call_id=m.get("tool_call_id") or m.get("id"),
                                    error=m.get("error")))
            else:
                msgs.append(Message(m["role"], m.get("content") or "", tool_calls=tuple(calls)))
        did = f"task{run['task_id']}-trial{run['trial']}"
        convs.append(Conversation(did, msgs))
    return convs


@pytest.mark.parametrize("config", ["s1", "core"])
@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_every_door_gives_the_cli_verdicts(tmp_path: Path, name: str, fmt: str,
                                           config: str) -> None:
    log = LOGS / name
    want = _cli(tmp_path, log, fmt, config)
    assert want and any(v["verdict"] == "failure" for v in want)

    # the Python API: what the CLI calls
    api_out = tmp_path / "api.jsonl"
    sage_tod.evaluate_files(sage_tod.EvaluateRequest(
        spec=AIRLINE, turns=log, out=api_out, log_format=fmt,
        settings=RunSettings(config=config)))
    assert _plain(read_verdicts(api_out)) == want

    # import, then evaluate the turns file
    turns = tmp_path / "turns.jsonl"
    r = runner.invoke(app, ["import", fmt, str(log), "--spec", str(AIRLINE), "--out",
                            str(turns)])
    assert r.exit_code == 0, r.output
    assert _cli(tmp_path, turns, None, config) == want

    spec = load_spec(AIRLINE)
    judge = ConversationJudge(spec, config=config)
    # the raw transcripts, as an Inspect sample or an MLflow session holds them
    got = [v for c in _transcripts(log) for v in judge.judge(c)]
    assert [v["dialogue_id"] for v in _plain(got)] == [v["dialogue_id"] for v in want]
    assert _plain(got) == want
    # the turns file as transcripts (DeepEval's `to_test_cases`, Inspect samples)
    records = load_turns(turns, spec).records
    assert _plain([v for c in from_turns(records) for v in judge.judge(c)]) == want

    # the pytest fixture's assertion
    try:
        verdicts = assert_turns_pass(spec, turns, config=config)
    except TurnsFailedError as exc:
        verdicts = exc.verdicts
    assert _plain(verdicts) == want


def test_tool_results_reach_the_history_through_every_door(tmp_path: Path) -> None:
    """The τ² log's lookups return values the user never typed; the history must carry
    them (structured `tool_calls`) or UV fires on values the agent did read."""
    log = LOGS / "tau2-bench-airline-simulation.json"
    want = _cli(tmp_path, log, "tau-bench")
    (conv,) = _transcripts(log)
    spec = load_spec(AIRLINE)
    recs = ConversationJudge(spec, config="s1").turns(conv)
    assert any(h.tool_calls for r in recs for h in r.turn.history or [])
    assert sum(v["verdict"] == "failure" for v in want) == sum(
        v.verdict == "failure" for v in ConversationJudge(spec, config="s1").judge(conv))


def test_the_demo_gives_the_same_verdicts_from_the_cli_and_the_api(tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                            str(demo.turns_path()), "--out", str(out), "--config", "s1",
                            "--quiet"])
    assert r.exit_code == 0, r.output
    spec = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), spec).records
    judge = ConversationJudge(spec, config="s1")
    got = [v for c in from_turns(records) for v in judge.judge(c)]
    assert _plain(got) == _plain(read_verdicts(out))
