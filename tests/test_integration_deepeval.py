"""The DeepEval metric, with the real library, offline and without any LLM key.

Runs where the `deepeval` extra is installed (`make test-integrations`); skipped
elsewhere. Expected scores are computed from sage-tod's own verdicts of the
shipped demo dialogues, then compared with what DeepEval recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "NO")
pytest.importorskip("deepeval", reason="DeepEval is not installed: pip install "
                                       "'sage-tod[deepeval]' (make test-integrations)")

from deepeval import assert_test, evaluate
from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

from sage_tod import Evaluator, demo, load_spec, load_turns
from sage_tod.integrations.deepeval import SageTodMetric, to_test_cases


@pytest.fixture(scope="module")
def demo_cases():
    spec = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), spec).records
    by_dialogue: dict[str, list[str]] = {}
    for v in Evaluator(spec, "s1").evaluate(records):
        by_dialogue.setdefault(v.dialogue_id, []).append(v.verdict)
    return spec, {c.name: c for c in to_test_cases(records)}, by_dialogue


@pytest.fixture(autouse=True)
def _offline_cwd(tmp_path, monkeypatch):
    """DeepEval writes .deepeval/ into the working directory; keep it out of the repo."""
    monkeypatch.chdir(tmp_path)
    for key in ("OPENAI_API_KEY", "CONFIDENT_API_KEY", "DEEPEVAL_API_KEY"):
        monkeypatch.delenv(key, raising=False)


def _pick(by_dialogue: dict[str, list[str]], *, clean: bool) -> str:
    return next(d for d, vs in by_dialogue.items()
                if (all(v == "acceptable" for v in vs) if clean else "failure" in vs))


def test_score_is_the_share_of_acceptable_turns_and_reason_has_the_evidence(demo_cases):
    spec, cases, by_dialogue = demo_cases
    name = _pick(by_dialogue, clean=False)
    metric = SageTodMetric(spec, config="s1", threshold=1.0)
    score = metric.measure(cases[name])
    want = by_dialogue[name].count("acceptable") / len(by_dialogue[name])
    assert score == metric.score == pytest.approx(want)
    assert metric.success is False and metric.is_successful() is False
    bad = next(v for v in metric.verdicts if v.verdict == "failure")
    fired = next(c for c in bad.criteria if c.decision.value == "true")
    assert fired.evidence is not None
    assert f'"{fired.evidence.text}"' in metric.reason and fired.repair in metric.reason
    assert metric.score_breakdown[f"turn {bad.turn_id}"]["verdict"] == "failure"
    lenient = SageTodMetric(spec, config="s1", threshold=want)
    assert lenient.measure(cases[name]) == pytest.approx(want) and lenient.is_successful()


def test_strict_mode_is_all_or_nothing(demo_cases):
    spec, cases, by_dialogue = demo_cases
    strict = SageTodMetric(spec, config="s1", threshold=0.1, strict_mode=True)
    assert strict.threshold == 1.0
    assert strict.measure(cases[_pick(by_dialogue, clean=False)]) == 0.0
    assert strict.measure(cases[_pick(by_dialogue, clean=True)]) == 1.0 and strict.success


def test_assert_test_fails_with_the_fired_criteria_and_passes_clean_dialogues(demo_cases):
    spec, cases, by_dialogue = demo_cases
    metric = SageTodMetric(spec, config="s1", threshold=1.0)
    assert_test(cases[_pick(by_dialogue, clean=True)], [metric], run_async=False)
    with pytest.raises(AssertionError, match="SAGE-TOD workflow") as info:
        assert_test(cases[_pick(by_dialogue, clean=False)], [metric], run_async=False)
    assert "failure" in str(info.value)


def test_evaluate_records_scores_and_reasons_per_test_case(demo_cases):
    spec, cases, by_dialogue = demo_cases
    names = list(cases)[:4]
    result = evaluate([cases[n] for n in names], [SageTodMetric(spec, config="s1",
                                                                threshold=1.0)])
    got = {tr.name: tr.metrics_data[0] for tr in result.test_results}
    for n in names:
        want = by_dialogue[n].count("acceptable") / len(by_dialogue[n])
        assert got[n].score == pytest.approx(want)
        assert got[n].success is (want >= 1.0)
        assert got[n].reason.startswith(f"{by_dialogue[n].count('acceptable')} of "
                                        f"{len(by_dialogue[n])} turn(s) acceptable")


def test_tool_calls_in_deepeval_turns_feed_the_state(spec):
    case = ConversationalTestCase(name="tools", metadata={"workflow": "rest"}, turns=[
        Turn(role="user", content="Chinese food in the north, please."),
        Turn(role="assistant", content="Which restaurant would you like?",
             tools_called=[ToolCall(name="search", input_parameters={"food": "chinese"})]),
    ])
    metric = SageTodMetric(spec, config="s1", threshold=1.0,
                           tool_slots={"search": {"food": "food", "area": "area"}})
    assert metric.measure(case) == 0.0  # 'north' was never recorded
    (v,) = metric.verdicts
    assert v.classes == ["IUV"] and "'north'" in metric.reason


def test_deepeval_test_run_cli(demo_cases, tmp_path):
    _, _, by_dialogue = demo_cases
    clean, failing = _pick(by_dialogue, clean=True), _pick(by_dialogue, clean=False)
    test_file = tmp_path / "test_agent.py"
    test_file.write_text(f"""
import pytest
from deepeval import assert_test
from sage_tod import load_spec, load_turns
from sage_tod.integrations.deepeval import SageTodMetric, to_test_cases

SPEC = load_spec({str(demo.spec_path())!r})
CASES = {{c.name: c for c in to_test_cases(load_turns({str(demo.turns_path())!r}, SPEC).records)}}
METRIC = SageTodMetric(SPEC, config="s1", threshold=1.0)

@pytest.mark.parametrize("name", [{clean!r}, {failing!r}])
def test_dialogue(name):
    assert_test(CASES[name], [METRIC])
""", encoding="utf-8")
    env = {**os.environ, "DEEPEVAL_RESULTS_FOLDER": str(tmp_path / "results"),
           "DEEPEVAL_TELEMETRY_OPT_OUT": "YES"}
    deepeval_cli = Path(sys.executable).parent / "deepeval"
    r = subprocess.run([str(deepeval_cli), "test", "run", str(test_file)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out  # one dialogue fails
    assert "1 passed" in out and "1 failed" in out, out[-3000:]
    saved = list((tmp_path / "results").glob("*.json"))
    assert saved, out[-2000:]
    run = json.loads(saved[0].read_text(encoding="utf-8"))
    text = json.dumps(run)
    assert "SAGE-TOD workflow" in text and failing in text


def test_tool_calls_with_inline_results_go_through_the_specs_tool_mapping(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("""
workflows:
  - id: book_flight
    slots:
      - {name: user-id, description: user id of the customer}
      - {name: origin, description: origin airport of the flight}
    required: [user-id, origin]
    tools:
      book: {confirms: true, confirmation: none, args: {user_id: user-id, origin: origin}}
""", encoding="utf-8")
    booking = {"user_id": "mia_1", "origin": "JFK"}
    case = ConversationalTestCase(name="fl", turns=[
        Turn(role="user", content="I am mia_1, flying from JFK."),
        Turn(role="assistant", content="Your flight is booked.", tools_called=[
            ToolCall(name="book", input_parameters=booking, output="Error: card declined")]),
        Turn(role="user", content="Please try again."),
        Turn(role="assistant", content="Your flight is booked.", tools_called=[
            ToolCall(name="book", input_parameters=booking, output="ok")]),
    ])
    metric = SageTodMetric(spec, config="s1", threshold=1.0)
    metric.measure(case)
    first, second = metric.verdicts
    # the first 'booked' came after a refused call: nothing committed, a confirmation
    # nothing backs (the per-call criteria judge the second, successful call)
    assert first.verdict == "failure" and "PC" in first.classes
    assert "PC" not in second.classes


LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"
AIRLINE = Path(__file__).resolve().parents[1] / "examples" / "tau-bench-airline" / "spec.yaml"


@pytest.mark.parametrize("name", ["tau2-bench-airline-simulation.json",
                                  "tau-bench-gpt-4o-airline.json"])
@pytest.mark.parametrize("config", ["s1", "core"])
def test_a_tool_agent_log_gives_the_cli_verdicts(tmp_path, name, config):
    """The τ² airline log (tool results, an error flag, ###STOP###) as DeepEval test cases:
    the metric's verdicts are the CLI's (`evaluate --format tau-bench`)."""
    from typer.testing import CliRunner

    from sage_tod import read_verdicts
    from sage_tod.cli.app import app
    from sage_tod.importers import import_file

    out = tmp_path / "cli.jsonl"
    r = CliRunner().invoke(app, ["evaluate", "--spec", str(AIRLINE), "--turns",
                                 str(LOGS / name), "--format", "tau-bench", "--out", str(out),
                                 "--config", config, "-q"])
    assert r.exit_code == 0, r.output
    want = [v.model_copy(update={"latency_ms": 0.0}) for v in read_verdicts(out)]
    spec = load_spec(AIRLINE)
    records = import_file("tau-bench", LOGS / name, spec).records(spec).records
    metric = SageTodMetric(spec, config=config)
    got = []
    for case in to_test_cases(records):
        assert any(t.tools_called for t in case.turns)
        metric.measure(case)
        got += [v.model_copy(update={"latency_ms": 0.0}) for v in metric.verdicts]
    assert got == want
