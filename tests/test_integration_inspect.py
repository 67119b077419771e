"""The Inspect scorer, with the real inspect_ai: in-memory TaskState, a tiny offline
eval on the `mockllm/model` provider, and re-scoring its log (Python API and the
`inspect score` CLI through the entry point). Skipped without the `inspect` extra.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="Inspect is not installed: pip install "
                                         "'sage-tod[inspect]' (make test-integrations)")

from inspect_ai import Task, eval
from inspect_ai import score as rescore
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import Target
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall

from sage_tod import Evaluator, demo, load_spec, load_turns
from sage_tod.integrations.conversation import from_turns, to_turns
from sage_tod.integrations.inspect import to_conversation, workflow_scorer


def _state(messages, metadata, sample_id="s") -> TaskState:
    return TaskState(model="mockllm/model", sample_id=sample_id, epoch=1, input="",
                     messages=messages, metadata=metadata)


def test_scores_demo_dialogues_like_sage_tod_does(spec_path):
    spec = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), spec).records
    ev = Evaluator(spec, "s1")
    score_fn = workflow_scorer(str(demo.spec_path()), config="s1")
    for conv in from_turns(records)[:8]:
        msgs = [ChatMessageUser(content=m.content) if m.role == "user"
                else ChatMessageAssistant(content=m.content, metadata=dict(m.metadata or {}))
                for m in conv.messages]
        got = asyncio.run(score_fn(_state(msgs, dict(conv.metadata or {}), conv.id),
                                   Target("")))
        want = list(ev.evaluate(to_turns(conv, spec)))
        share = sum(v.verdict == "acceptable" for v in want) / len(want)
        assert got.value == pytest.approx(share)
        turns = got.metadata["sage_tod"]["turns"]
        assert [t["verdict"] for t in turns] == [v.verdict for v in want]
        assert got.metadata["sage_tod"]["conversation"] == (
            "failure" if any(v.verdict == "failure" for v in want)
            else "undecided" if any(v.verdict == "undecided" for v in want) else "acceptable")
        for t, v in zip(turns, want, strict=True):
            assert [f["class"] for f in t["fired"]] == [
                str(c.failure_class) for c in v.criteria if c.decision.value == "true"]
        assert got.explanation.startswith(
            f"{sum(v.verdict == 'acceptable' for v in want)} of {len(want)}")


def test_tool_calls_and_sample_metadata_states(spec_path):
    score_fn = workflow_scorer(str(spec_path), config="s1", workflow="rest",
                               tool_slots={"search": {"food": "food"}})
    msgs = [ChatMessageSystem(content="You are a booking agent."),
            ChatMessageUser(content="Chinese food in the north, please."),
            ChatMessageAssistant(content="", tool_calls=[
                ToolCall(id="c1", function="search", arguments={"food": "chinese"})]),
            ChatMessageTool(content="[]", tool_call_id="c1", function="search"),
            ChatMessageAssistant(content="Which restaurant would you like?")]
    got = asyncio.run(score_fn(_state(msgs, {}), Target("")))
    (turn,) = got.metadata["sage_tod"]["turns"]
    assert turn["verdict"] == "failure" and turn["classes"] == ["IUV"]
    assert "'north'" in turn["fired"][0]["rationale"]
    # without a state anywhere the sample is unscored, with the located reason
    plain = workflow_scorer(str(spec_path), config="s1", workflow="rest")
    bad = asyncio.run(plain(_state(msgs, {}), Target("")))
    assert bad.reason == "scoring_failed" and "turn 0 has no workflow state" in bad.explanation
    ok = asyncio.run(plain(_state(msgs, {"states": [{"food": "chinese", "area": "north"}]}),
                           Target("")))
    assert ok.metadata["sage_tod"]["turns"][0]["verdict"] == "acceptable" and ok.value == 1.0


@solver
def replay_user_turns():
    """Play the sample's user turns one by one; the model answers each."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages = []
        for text in state.metadata["user_turns"]:
            state.messages.append(ChatMessageUser(content=text))
            state = await generate(state)
        return state
    return solve


def _run_eval(spec_path: Path, log_dir: Path):
    replies = ["Sure, north it is. What food would you like?",
               "Which restaurant would you like?"]
    outputs = [ModelOutput.from_content(model="mockllm/model", content=r) for r in replies]
    for o in outputs:  # with usage given, mockllm does not count tokens (tiktoken downloads)
        o.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = Task(
        dataset=[Sample(input="", id="booking-1", metadata={
            "workflow": "rest",
            "user_turns": ["Somewhere in the north.", "Chinese food for 3 people, please."],
            "states": [{"area": "north"}, {"area": "north", "food": "chinese"}]})],
        solver=replay_user_turns(),
        scorer=workflow_scorer(str(spec_path), config="s1"))
    (log,) = eval(task, model=model, log_dir=str(log_dir), display="none")
    return log


def test_offline_eval_logs_the_score_and_inspect_score_rescores_it(spec_path, tmp_path):
    log = _run_eval(spec_path, tmp_path / "logs")
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    (sample,) = log.samples
    sc = next(iter(sample.scores.values()))
    turns = sc.metadata["sage_tod"]["turns"]
    assert [t["turn_id"] for t in turns] == [0, 1]
    # turn 1: the user gave a party size (3) the state does not record -> IUV
    assert turns[1]["verdict"] == "failure" and "IUV" in turns[1]["classes"]
    assert sc.value == pytest.approx(sum(t["verdict"] == "acceptable" for t in turns) / 2)
    metrics = next(iter(log.results.scores)).metrics
    assert metrics["mean"].value == pytest.approx(sc.value)

    # re-score the stored log with a different configuration (Python API) ...
    again = rescore(log, workflow_scorer(str(spec_path), config="s1", workflow="rest"),
                    action="overwrite", display="none")
    sc2 = next(iter(again.samples[0].scores.values()))
    assert sc2.metadata["sage_tod"]["turns"] == turns

    # ... and from the command line, resolving the scorer by its registered name
    env = {**os.environ, "INSPECT_DISPLAY": "none", "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    inspect_cli = Path(sys.executable).parent / "inspect"
    out_log = tmp_path / "rescored.eval"
    r = subprocess.run([str(inspect_cli), "score", log.location, "--scorer",
                        "sage_tod/workflow_scorer", "-S", f"spec_file={spec_path}",
                        "-S", "config=s1",
                        "--action", "overwrite", "--output-file", str(out_log)],
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    cli_log = read_eval_log(str(out_log))
    sc3 = next(iter(cli_log.samples[0].scores.values()))
    assert json.dumps(sc3.metadata["sage_tod"]["turns"]) == json.dumps(turns)


def test_the_specs_tool_mapping_reads_inspect_tool_calls_and_errors(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("""
workflows:
  - id: book_flight
    slots:
      - {name: user-id, description: user id of the customer}
      - {name: origin, description: origin airport of the flight}
    required: [user-id, origin]
    tools:
      book: {confirms: true, args: {user_id: user-id, origin: origin}}
""", encoding="utf-8")
    from inspect_ai.tool import ToolCallError

    msgs = [ChatMessageUser(content="I am mia_1, flying from JFK."),
            ChatMessageAssistant(content="Booking.", tool_calls=[
                ToolCall(id="b1", function="book", arguments={"user_id": "mia_1",
                                                              "origin": "JFK"})]),
            ChatMessageTool(content="", tool_call_id="b1", function="book",
                            error=ToolCallError("unknown", "payment declined")),
            ChatMessageUser(content="Try again please."),
            ChatMessageAssistant(content="Done, you are booked.", tool_calls=[
                ToolCall(id="b2", function="book", arguments={"user_id": "mia_1",
                                                              "origin": "JFK"})]),
            ChatMessageTool(content="ok", tool_call_id="b2", function="book")]
    recs = to_turns(to_conversation(msgs, "fl", {}), load_spec(spec))
    # the failed call wrote and confirmed nothing; the retried one did both
    assert recs[0].turn.after() == {} and recs[0].turn.agent_acts is None
    assert recs[1].turn.after() == {"user-id": "mia_1", "origin": "JFK"}
    assert recs[1].turn.agent_acts is not None and recs[1].turn.agent_acts.confirm
    got = asyncio.run(workflow_scorer(str(spec), config="s1")(_state(msgs, {}), Target("")))
    turns = got.metadata["sage_tod"]["turns"]
    want = list(Evaluator(load_spec(spec), "s1").evaluate(recs))
    assert [t["verdict"] for t in turns] == [v.verdict for v in want]


LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"
AIRLINE = Path(__file__).resolve().parents[1] / "examples" / "tau-bench-airline" / "spec.yaml"


def _inspect_messages(raw):
    """τ²-bench messages as Inspect holds them (tool results as ChatMessageTool)."""
    from inspect_ai.tool import ToolCallError

    out = []
    for m in raw:
        text = m.get("content") or ""
        if m["role"] == "user":
            out.append(ChatMessageUser(content=text))
        elif m["role"] == "tool":
            out.append(ChatMessageTool(content=text, tool_call_id=m["id"],
                                       error=ToolCallError("unknown", text)
                                       if m.get("error") else None))
        else:
            calls = [ToolCall(id=c["id"], function=c["name"], arguments=c["arguments"])
                     for c in m.get("tool_calls") or []]
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None))
    return out


@pytest.mark.parametrize("config", ["s1", "core"])
def test_a_tau2_log_scores_as_the_cli_judges_it(tmp_path, config):
    """No workflow in the metadata, tool results, a closing ###STOP###: the scorer's
    per-turn verdicts are the CLI's, and none of the samples is left unscored."""
    from typer.testing import CliRunner

    from sage_tod import read_verdicts
    from sage_tod.cli.app import app

    log = LOGS / "tau2-bench-airline-simulation.json"
    out = tmp_path / "cli.jsonl"
    r = CliRunner().invoke(app, ["evaluate", "--spec", str(AIRLINE), "--turns", str(log),
                                 "--format", "tau-bench", "--out", str(out), "--config",
                                 config, "-q"])
    assert r.exit_code == 0, r.output
    want = read_verdicts(out)
    sim = json.loads(log.read_text())["simulations"][0]
    score_fn = workflow_scorer(str(AIRLINE), config=config)
    got = asyncio.run(score_fn(_state(_inspect_messages(sim["messages"]), {},
                                      f"task{sim['task_id']}-trial{sim['trial']}"),
                               Target("")))
    assert got.value is not None and "error" not in got.metadata["sage_tod"]
    turns = got.metadata["sage_tod"]["turns"]
    assert [t["verdict"] for t in turns] == [v.verdict for v in want]
    assert [t["key"] for t in turns] == [v.key for v in want]
    share = sum(v.verdict == "acceptable" for v in want) / len(want)
    assert got.value == pytest.approx(share)


def test_a_closing_user_message_is_a_turn_as_in_the_cli(spec_path):
    msgs = [ChatMessageUser(content="Somewhere north please."),
            ChatMessageAssistant(content="North it is.", metadata={"state": {"area": "north"}}),
            ChatMessageUser(content="And cheap.")]
    got = asyncio.run(workflow_scorer(str(spec_path), config="s1", workflow="rest")(
        _state(msgs, {}), Target("")))
    assert len(got.metadata["sage_tod"]["turns"]) == 2


def test_a_missing_workflow_fails_the_scorer_instead_of_leaving_samples_unscored(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("""
workflows:
  - id: a
    slots: [{name: x, description: x}]
  - id: b
    slots: [{name: y, description: y}]
""", encoding="utf-8")
    from sage_tod.integrations.conversation import NoWorkflow

    msgs = [ChatMessageUser(content="hi"),
            ChatMessageAssistant(content="hello", metadata={"state": {}})]
    with pytest.raises(NoWorkflow, match="no workflow"):
        asyncio.run(workflow_scorer(str(spec), config="s1")(_state(msgs, {}), Target("")))
