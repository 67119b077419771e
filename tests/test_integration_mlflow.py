"""MLflow, with the real library and a local sqlite tracking store in tmp_path:
what a logged run stores (params, metrics, artifacts), and what the session-level
scorer attaches to traced conversations through `mlflow.genai.evaluate`.
Skipped without the `mlflow` extra.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="MLflow is not installed: pip install "
                                     "'sage-tod[mlflow]' (make test-integrations)")
pytest.importorskip("sqlalchemy", reason="the sqlite tracking store needs sqlalchemy")

import mlflow
from mlflow import MlflowClient

from sage_tod import Evaluator, InputError, demo, load_spec, load_turns, read_verdicts
from sage_tod.integrations.conversation import from_turns
from sage_tod.integrations.mlflow import (
    log_evaluation,
    session_scorer,
    spec_hash,
)
from sage_tod.outputs.scoring import score


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory):
    """One sqlite tracking store for the module (its schema migration takes seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def store(tracking_uri, tmp_path, monkeypatch, request):
    """A private experiment (and artifact root) in the file-backed tracking store."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    mlflow.set_tracking_uri(tracking_uri)
    exp = mlflow.create_experiment(request.node.name,
                                   artifact_location=(tmp_path / "art").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    yield MlflowClient(tracking_uri)
    if mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def demo_eval():
    spec = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), spec).records
    ev = Evaluator(spec, "s1")
    return spec, records, list(ev.evaluate(records))


def test_log_evaluation_stores_params_metrics_and_artifacts(store, demo_eval, tmp_path):
    _, records, verdicts = demo_eval
    run_id = log_evaluation(verdicts, records=records, spec=demo.spec_path(),
                            model="my-nli", tau=0.2, run_name="demo")
    run = store.get_run(run_id)
    p, m = run.data.params, run.data.metrics
    assert p["config"] == "s1" and p["stages"] == "S1" and p["model"] == "my-nli"
    assert p["tau"] == "0.2" and p["spec"] == "spec.yaml"
    assert p["spec_hash"] == spec_hash(demo.spec_path()) and len(p["spec_hash"]) == 64
    counts = Counter(v.verdict for v in verdicts)
    assert m["turns"] == len(verdicts)
    assert m["failure_rate"] == pytest.approx(counts["failure"] / len(verdicts))
    assert m["undecided_rate"] == pytest.approx(counts["undecided"] / len(verdicts))
    fired = Counter(str(c) for v in verdicts for c in v.classes)
    assert {k: m[f"class_{k}_turns"] for k in fired} == {k: float(n) for k, n in fired.items()}
    rep = score([(r.turn.key, r.gold) for r in records], verdicts)
    assert m["f1"] == pytest.approx(rep.full.f1) and m["precision"] == pytest.approx(
        rep.full.precision) and m["recall"] == pytest.approx(rep.full.recall)
    assert run.data.tags["sage_tod.version"]
    names = sorted(a.path for a in store.list_artifacts(run_id, "sage_tod"))
    assert names == ["sage_tod/report.html", "sage_tod/score.json", "sage_tod/verdicts.jsonl"]
    local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="sage_tod",
                                                dst_path=str(tmp_path / "dl"))
    got = tmp_path / "dl" / "sage_tod" / "verdicts.jsonl"
    assert read_verdicts(got) == verdicts  # the run header, then the verdicts
    assert json.loads(got.read_text().splitlines()[0])["record"] == "sage-tod run"
    assert "<!doctype html>" in (tmp_path / "dl" / "sage_tod" / "report.html").read_text()
    assert local.endswith("sage_tod")


def test_log_evaluation_without_gold_logs_no_f1_and_joins_an_active_run(store, demo_eval):
    _, _, verdicts = demo_eval
    with mlflow.start_run() as run:
        got = log_evaluation(verdicts[:5], report=False)
    assert got == run.info.run_id
    stored = store.get_run(got)
    assert "f1" not in stored.data.metrics and "spec_hash" not in stored.data.params
    assert [a.path for a in store.list_artifacts(got, "sage_tod")] == [
        "sage_tod/score.json", "sage_tod/verdicts.jsonl"]
    local = mlflow.artifacts.download_artifacts(run_id=got, artifact_path="sage_tod/score.json")
    body = json.loads(Path(local).read_text())
    assert body["gold_turns"] == 0 and "no gold" in body["note"] and body["turns"] == 5


def test_a_folder_tracking_uri_that_mlflow_refuses_gets_a_hint(demo_eval, tmp_path,
                                                              monkeypatch):
    _, _, verdicts = demo_eval

    def refuse(*a, **k):
        raise OSError("unsupported tracking store")

    monkeypatch.setattr(mlflow, "start_run", refuse)
    mlflow.set_tracking_uri(str(tmp_path / "runs"))
    try:
        with pytest.raises(InputError, match=r"sqlite:///mlflow\.db"):
            log_evaluation(verdicts[:2], report=False)
    finally:
        mlflow.set_tracking_uri(None)


@mlflow.trace
def _agent_turn(messages: list[dict[str, str]], reply: str) -> dict[str, str]:
    """Stands in for a chat agent: the trace records inputs, outputs and s_t."""
    return {"content": reply}


def _record_session(conv) -> None:
    history: list[dict[str, str]] = []
    msgs = conv.messages
    for user, agent in zip(msgs[::2], msgs[1::2], strict=True):
        history.append({"role": "user", "content": user.content})
        state = json.dumps((agent.metadata or {})["state"])

        @mlflow.trace(name="turn")
        def turn(messages: list[dict[str, str]], reply: str = agent.content,
                 state: str = state) -> dict[str, str]:
            mlflow.update_current_trace(metadata={"mlflow.trace.session": conv.id,
                                                  "sage_tod.state": state,
                                                  "sage_tod.workflow": "restaurant_booking"})
            return {"content": reply}

        turn(list(history))
        history.append({"role": "assistant", "content": agent.content})


def test_session_scorer_gives_session_and_per_turn_feedback(store, demo_eval):
    spec, records, verdicts = demo_eval
    convs = {c.id: c for c in from_turns(records)}
    by_dialogue: dict[str, list[str]] = {}
    for v in verdicts:
        by_dialogue.setdefault(v.dialogue_id, []).append(v.verdict)
    chosen = [d for d in by_dialogue
              if d.startswith("demo-r") and "failure" in by_dialogue[d]][:2]
    chosen.append(next(d for d in by_dialogue if d.startswith("demo-r")
                       and set(by_dialogue[d]) == {"acceptable"}))
    for d in chosen:
        _record_session(convs[d])
    traces = mlflow.search_traces(return_type="list")
    assert len(traces) == sum(len(by_dialogue[d]) for d in chosen)
    sc = session_scorer(spec, config="s1")
    assert sc.is_session_level_scorer
    result = mlflow.genai.evaluate(data=traces, scorers=[sc])
    assert result.run_id
    stored = mlflow.search_traces(return_type="list", run_id=None)
    feedback: dict[str, dict[str, object]] = {}
    for t in stored:
        sid = t.info.trace_metadata["mlflow.trace.session"]
        for a in t.info.assessments:
            feedback.setdefault(sid, {})[a.name] = a
    for d in chosen:
        got = feedback[d]
        want = by_dialogue[d]
        overall = got["sage_tod"]
        assert overall.value == pytest.approx(want.count("acceptable") / len(want))
        assert [got[f"sage_tod/turn_{i}"].value for i in range(len(want))] == want
        bad = [i for i, v in enumerate(want) if v == "failure"]
        for i in bad:
            fb = got[f"sage_tod/turn_{i}"]
            assert fb.rationale.startswith(f"turn {i}: failure - ")
            assert "repair:" in fb.rationale and fb.metadata["classes"]
        if bad:
            assert "failure" in overall.rationale
    assert result.metrics  # MLflow aggregated the numeric feedback


def test_session_without_state_is_an_error_feedback_not_a_crash(store, spec):
    @mlflow.trace
    def chat(query: str) -> str:
        mlflow.update_current_trace(metadata={"mlflow.trace.session": "nostate"})
        return "Sure."

    chat("A table in the north, please.")
    traces = mlflow.search_traces(return_type="list")
    (fb,) = session_scorer(spec, config="s1", workflow="rest")(session=traces)
    assert fb.error is not None and "no workflow state" in fb.error.error_message
