"""Conversation verdicts (`sage-tod conversations`, docs/formats.md §4) on a real log:
the two τ-bench GPT-4o airline trajectories of tests/fixtures/logs (task 0 reward 0,
task 1 reward 1), evaluated with the shipped airline spec under `s1`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.contracts.conversations import (
    ConversationVerdict,
    conversation_outcome,
    conversation_verdicts,
)
from sage_tod.contracts.verdicts import Verdict, read_verdicts
from sage_tod.lab.tool_agents_score import ScoredTurn, conversation_metrics

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "logs" / "tau-bench-gpt-4o-airline.json"
SPEC = ROOT / "examples" / "tau2-airline" / "spec.yaml"


@pytest.fixture(scope="module")
def verdicts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("conv")
    turns, verdicts = d / "turns.jsonl", d / "v.jsonl"
    r = runner.invoke(app, ["import", "tau-bench", str(LOG), "--spec", str(SPEC),
                            "--out", str(turns)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["evaluate", "--spec", str(SPEC), "--turns", str(turns),
                            "--out", str(verdicts), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    return verdicts


def test_outcome_order() -> None:
    assert conversation_outcome(["acceptable", "undecided", "failure"]) == "failure"
    assert conversation_outcome(["acceptable", "undecided"]) == "undecided"
    assert conversation_outcome(["acceptable", "acceptable"]) == "acceptable"
    assert conversation_outcome([]) == "acceptable"


def test_records_follow_the_turn_verdicts(verdicts_file: Path) -> None:
    vs = read_verdicts(verdicts_file)
    convs = conversation_verdicts(vs)
    assert [c.dialogue_id for c in convs] == list(dict.fromkeys(v.dialogue_id for v in vs))
    for c in convs:
        mine: list[Verdict] = [v for v in vs if v.dialogue_id == c.dialogue_id]
        assert c.turns == len(mine)
        assert c.failing_turns == [v.turn_id for v in mine if v.verdict == "failure"]
        assert c.undecided_turns == [v.turn_id for v in mine if v.verdict == "undecided"]
        assert c.verdict == conversation_outcome(v.verdict for v in mine)
        if c.failing_turns:
            assert c.first_failure is not None
            assert c.first_failure.turn_id == c.failing_turns[0]
            first = next(v for v in mine if v.turn_id == c.failing_turns[0])
            fired = [k for k in first.criteria if k.decision == "true"]
            assert c.first_failure.criterion == fired[0].id
            assert c.first_failure.repair == fired[0].repair
            assert set(c.classes) == {str(k) for v in mine if v.verdict == "failure"
                                      for k in v.classes}
        else:
            assert c.first_failure is None and c.classes == []
    # the reward-0 booking of task 0 is among the failures (its bag arithmetic)
    assert next(c for c in convs if c.dialogue_id == "task0-trial0").verdict == "failure"


def test_cli_writes_and_filters(verdicts_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "conv.jsonl"
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = [ConversationVerdict.model_validate(json.loads(line))
            for line in out.read_text().splitlines()]
    assert rows == conversation_verdicts(read_verdicts(verdicts_file))
    n_fail = sum(c.verdict == "failure" for c in rows)
    assert f"{len(rows)} conversation(s): {n_fail} failure" in r.output
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--only", "failure",
                            "--json"])
    assert r.exit_code == 0, r.output
    shown = [json.loads(line) for line in r.output.splitlines() if line.startswith("{")]
    assert shown and all(s["verdict"] == "failure" for s in shown)
    assert len(shown) == n_fail
    # an existing --out is not replaced silently; a bad --only is exit 2, one line
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--out", str(out)])
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--only", "maybe"])
    assert r.exit_code == 2 and "--only" in r.output
    header_only = tmp_path / "empty.jsonl"
    header_only.write_text(verdicts_file.read_text().splitlines()[0] + "\n")
    r = runner.invoke(app, ["conversations", str(header_only)])
    assert r.exit_code == 2 and "no verdicts" in r.output


def _turn(conv: str, n: int, verdict: str, reward: float) -> ScoredTurn:
    return ScoredTurn(file="f", domain="airline", conversation=conv, task=conv,
                      key=f"{conv}:{n}", label="unlabelled", verdict=verdict, reward=reward)


def test_bench_ranks_by_conversation_verdict() -> None:
    # failed a: one failing turn; failed b: undecided only; successful c: undecided only;
    # successful d: clean. Flagged-turn count ties b with c and d (AUC .75); the
    # conversation verdict puts b above d (AUC .875: b ties c only)
    turns = [_turn("a", 0, "failure", 0.0), _turn("a", 1, "acceptable", 0.0),
             _turn("b", 0, "undecided", 0.0), _turn("c", 0, "undecided", 1.0),
             _turn("d", 0, "acceptable", 1.0)]
    m = conversation_metrics(turns, n_boot=20)
    assert m["auc_flagged_turns"]["point"] == pytest.approx(0.75)
    assert m["auc_conversation_verdict"]["point"] == pytest.approx(0.875)


def test_formats_doc_example_is_what_the_command_writes(verdicts_file: Path) -> None:
    import re

    doc = (ROOT / "docs" / "formats.md").read_text()
    (block,) = re.findall(r"```json conversation-example\n(.*?)```", doc, re.S)
    documented = ConversationVerdict.model_validate(json.loads(block))
    mine = {c.dialogue_id: c for c in conversation_verdicts(read_verdicts(verdicts_file))}
    assert mine[documented.dialogue_id] == documented


def test_rewards_from_the_turns(verdicts_file: Path, tmp_path: Path) -> None:
    turns = verdicts_file.parent / "turns.jsonl"
    out = tmp_path / "conv.jsonl"
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--turns", str(turns),
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    got = {c["dialogue_id"]: c for c in map(json.loads, out.read_text().splitlines())}
    # the fixture's two trajectories: task 0 reward 0, task 1 reward 1 (its README)
    assert got["task0-trial0"]["reward"] == 0.0 and got["task1-trial1"]["reward"] == 1.0
    assert "verdict by the log's reward" in r.output
    # without --turns no reward is claimed
    assert all("reward" not in c for c in map(
        lambda c: c.model_dump(exclude_none=True),
        conversation_verdicts(read_verdicts(verdicts_file))))
    # a reward that is not a number is a located error, not a guess
    lines = turns.read_text().splitlines()
    first = json.loads(lines[0])
    first["meta"]["reward"] = "high"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    r = runner.invoke(app, ["conversations", str(verdicts_file), "--turns", str(bad)])
    assert r.exit_code == 2 and "meta.reward" in r.output and ":1" in r.output
