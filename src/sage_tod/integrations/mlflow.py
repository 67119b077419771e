"""MLflow: log a sage-tod evaluation as a run, and score traced sessions turn by turn.

    import mlflow, sage_tod
    from sage_tod.integrations.mlflow import log_evaluation, session_scorer

    ev = sage_tod.Evaluator(sage_tod.load_spec("spec.yaml"), config="core")
    records = sage_tod.load_turns("turns.jsonl", ev.spec).records
    run_id = log_evaluation(list(ev.evaluate(records)), records=records, spec="spec.yaml")

    # GenAI: traces of a chat agent, one per turn, grouped by `mlflow.trace.session`
    mlflow.genai.evaluate(data=mlflow.search_traces(return_type="list"),
                          scorers=[session_scorer("spec.yaml")])

`log_evaluation` records parameters (config, stages, model, tau, spec hash),
metrics (failure/acceptable/undecided rates and counts, fired turns per class,
and precision/recall/F1 against gold when the records carry labels) and
artifacts (the verdicts JSONL with its run header, the HTML report, the score
JSON, which says when there was no gold), all written through sage-tod's own
output path (`write_artifacts`).

`session_scorer` is an MLflow session-level scorer: one call per session
(its traces in time order = the turns) returns a `sage_tod` feedback (share
of acceptable turns, rationale = fired criteria with evidence) and one
`sage_tod/turn_N` feedback per turn (verdict + rationale, metadata with the
turn's trace id and classes). Each trace's root span gives the turn's text:
inputs as a chat `messages` list or a `query`/`input`/`question`/... string,
outputs as a string, `content`/`response`/..., an OpenAI-style `choices`
list or `messages`. Its state is the trace metadata `sage_tod.state` (JSON
of s_t; set it with `mlflow.update_current_trace(metadata=...)`), a `state`
key in the outputs, or the arguments of TOOL spans through `tool_slots`;
`sage_tod.workflow` in the metadata names the workflow.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import mlflow
    from mlflow.entities import AssessmentError, Feedback, SpanStatusCode, Trace
    from mlflow.genai.scorers import Scorer, scorer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("sage_tod.integrations.mlflow needs MLflow: "
                      "pip install 'sage-tod[mlflow]'") from exc

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import TurnRecord
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.integrations.conversation import (
    Conversation,
    ConversationJudge,
    Message,
    ToolCall,
    ToolSlots,
    acceptable_share,
    reason,
    turn_reason,
)
from sage_tod.outputs.report_html import render_report
from sage_tod.outputs.scoring import CLASSES, score

STATE_KEY = "sage_tod.state"
WORKFLOW_KEY = "sage_tod.workflow"
SESSION_KEY = "mlflow.trace.session"


def spec_hash(spec: str | Path) -> str:
    """SHA-256 of the spec file's bytes: which exact spec produced a run."""
    p = Path(spec)
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(p, f"cannot read spec: {exc.strerror}") from None


def evaluation_metrics(verdicts: Sequence[Verdict],
                       records: Sequence[TurnRecord] | None = None) -> dict[str, float]:
    """The numbers a run records; P/R/F1 come from `sage_tod.outputs.scoring` when gold exists."""
    n = len(verdicts)
    counts = Counter(v.verdict for v in verdicts)
    fired = Counter(str(c) for v in verdicts for c in v.classes)
    out: dict[str, float] = {"turns": float(n)}
    for label in ("failure", "acceptable", "undecided"):
        out[f"{label}_turns"] = float(counts[label])
        out[f"{label}_rate"] = counts[label] / n if n else 0.0
    for cls in CLASSES:
        out[f"class_{cls}_turns"] = float(fired[cls])
    out["cost_usd"] = sum(v.cost_usd for v in verdicts)
    if records is not None:
        rep = score([(r.turn.key, r.gold) for r in records], verdicts)
        if rep.n:
            out.update({"gold_turns": float(rep.n), "precision": rep.full.precision,
                        "recall": rep.full.recall, "f1": rep.full.f1,
                        "decided_f1": rep.decided.f1, "coverage": rep.coverage,
                        "clean_fp_rate": rep.clean_fp_rate})
            for cls, (caught, total) in rep.class_recall.items():
                if total:
                    out[f"recall_{cls}"] = caught / total
    return out


def _stage_tau(evaluator: Evaluator | None) -> float | None:
    if evaluator is None:
        return None
    for stage in evaluator.cascade.stages:
        tau = getattr(stage, "tau", None)
        if isinstance(tau, float):
            return tau
    return None


def log_evaluation(verdicts: Sequence[Verdict], *, records: Sequence[TurnRecord] | None = None,
                   spec: str | Path | None = None, model: str | None = None,
                   tau: float | None = None, evaluator: Evaluator | None = None,
                   run_name: str | None = None, report: bool = True,
                   params: Mapping[str, Any] | None = None) -> str:
    """Log one evaluation to MLflow and return the run id.

    Logs into the active run when there is one, else starts (and ends) a run
    in the current experiment. `records` (the evaluated turns) add gold
    metrics and the utterances in the report; `evaluator` supplies tau when
    not given.
    """
    if not verdicts:
        raise InputError("<verdicts>", "no verdicts to log")
    configs = sorted({v.config for v in verdicts})
    stages = sorted({"+".join(v.stages) for v in verdicts})
    run_params: dict[str, Any] = {
        "config": ",".join(configs), "stages": ",".join(stages),
        "model": model or "default", "turns": len(verdicts),
        "workflows": ",".join(sorted({v.workflow for v in verdicts})),
    }
    tau = tau if tau is not None else _stage_tau(evaluator)
    if tau is not None:
        run_params["tau"] = tau
    if spec is not None:
        run_params["spec"] = Path(spec).name
        run_params["spec_hash"] = spec_hash(spec)
    run_params.update(params or {})
    active = mlflow.active_run()
    run = active if active is not None else _start_run(run_name)
    try:
        from sage_tod import __version__

        mlflow.set_tag("sage_tod.version", __version__)
        mlflow.log_params(run_params)
        mlflow.log_metrics(evaluation_metrics(verdicts, records))
        with tempfile.TemporaryDirectory() as tmp:
            write_artifacts(Path(tmp), verdicts, records=records, spec=spec,
                            evaluator=evaluator, report=report,
                            title=run_name or "sage-tod report")
            mlflow.log_artifacts(tmp, artifact_path="sage_tod")
        return str(run.info.run_id)
    finally:
        if active is None:
            mlflow.end_run()


def _start_run(run_name: str | None) -> Any:
    """`mlflow.start_run`, with a hint when the tracking URI is a folder MLflow refuses."""
    try:
        return mlflow.start_run(run_name=run_name)
    except Exception as exc:  # MLflow raises its own and OS errors for a bad store
        uri = str(mlflow.get_tracking_uri())
        if "://" not in uri or uri.startswith("file:"):
            raise InputError(uri, f"MLflow cannot use this folder as a tracking store "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
                             "set a database URI, e.g. mlflow.set_tracking_uri("
                             "'sqlite:///mlflow.db'), or a tracking server "
                             "(docs/integrations.md)") from None
        raise


def write_artifacts(folder: Path, verdicts: Sequence[Verdict], *,
                    records: Sequence[TurnRecord] | None = None,
                    spec: str | Path | None = None, evaluator: Evaluator | None = None,
                    report: bool = True, title: str = "sage-tod report") -> list[Path]:
    """The run's artifacts, written through sage-tod's one output path: the verdicts
    file with its run header (`outputs.sink.VerdictSink`), the score and the report
    (atomic writes). `score.json` is always written; without gold labels it says so
    and holds the verdict counts only."""
    from sage_tod.contracts.run_record import RunHeader
    from sage_tod.evaluation.run import RunSettings, run_header
    from sage_tod.outputs.files import write_atomic
    from sage_tod.outputs.sink import VerdictSink

    inputs: dict[str, Any] = {"spec_sha256": spec_hash(spec) if spec is not None else None}
    if evaluator is not None:
        header = run_header(evaluator, RunSettings(config=evaluator.config), inputs)
    else:  # verdicts made elsewhere: the header states what they say about themselves
        header = RunHeader(config=verdicts[0].config, stages=list(verdicts[0].stages),
                           missing=list(verdicts[0].missing), inputs=inputs)
    written = [folder / "verdicts.jsonl", folder / "score.json"]
    with VerdictSink(written[0], header, resume=False, overwrite=True) as sink:
        for v in verdicts:
            sink.write(v)
    rep = score([(r.turn.key, r.gold) for r in records], verdicts) if records else None
    if rep is not None and rep.n:
        body: dict[str, Any] = rep.to_dict()
    else:
        body = {"gold_turns": 0, "note": "no gold labels, so no precision, recall or F1; "
                                         "the counts are the verdicts'",
                **evaluation_metrics(verdicts)}
    write_atomic(written[1], json.dumps(body, indent=2) + "\n", overwrite=True)
    if report:
        turns = {r.turn.key: r.turn for r in records or ()}
        gold = {r.turn.key: r.gold for r in records or ()}
        page = render_report(verdicts, turns, gold if any(gold.values()) else None,
                             title=title)
        written.append(folder / "report.html")
        write_atomic(written[-1], page, overwrite=True)
    return written


# ------------------------------------------------------------------ GenAI sessions

_USER_KEYS = ("user", "query", "question", "input", "message", "prompt", "request")
_AGENT_KEYS = ("content", "response", "output", "answer", "text", "agent", "message")


def _last(messages: Any, role: str) -> str | None:
    if not isinstance(messages, list):
        return None
    for m in reversed(messages):
        if isinstance(m, Mapping) and m.get("role") == role and isinstance(
                m.get("content"), str):
            return str(m["content"])
    return None


def _text(value: Any, keys: Sequence[str], role: str) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    found = _last(value.get("messages"), role)
    if found is not None:
        return found
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        msg = choices[0].get("message")
        if isinstance(msg, Mapping) and isinstance(msg.get("content"), str):
            return str(msg["content"])
    for k in keys:
        if isinstance(value.get(k), str):
            return str(value[k])
    strings = [v for v in value.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else None


def _turn_of(trace: Trace, where: str) -> tuple[Message, Message]:
    root = next((s for s in trace.data.spans if s.parent_id is None), None)
    if root is None:
        raise InputError(where, "trace has no root span", field=trace.info.trace_id)
    user = _text(root.inputs, _USER_KEYS, "user")
    agent = _text(root.outputs, _AGENT_KEYS, "assistant")
    tid = trace.info.trace_id
    if user is None:
        raise InputError(where, "no user message in the trace inputs (use a `messages` list "
                         "or a `query`/`input` string)", field=tid)
    if agent is None:
        raise InputError(where, "no assistant reply in the trace outputs (return a string, "
                         "`content`/`response`, or OpenAI-style `choices`)", field=tid)
    meta: dict[str, Any] = {"trace_id": tid}
    raw = (trace.info.trace_metadata or {}).get(STATE_KEY)
    if raw is not None:
        try:
            meta["state"] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(where, f"{STATE_KEY} is not JSON: {exc.msg}", field=tid) from None
    elif isinstance(root.outputs, Mapping) and isinstance(root.outputs.get("state"), Mapping):
        meta["state"] = dict(root.outputs["state"])
    calls = tuple(ToolCall(s.name, dict(s.inputs) if isinstance(s.inputs, Mapping) else {},
                           id=s.span_id,
                           output=None if s.outputs is None else json.dumps(s.outputs),
                           error=s.status.status_code == SpanStatusCode.ERROR)
                  for s in trace.data.spans if s.span_type == "TOOL")
    return Message("user", user), Message("assistant", agent, tool_calls=calls, metadata=meta)


def session_conversation(session: Sequence[Trace]) -> Conversation:
    """A session's traces (one per turn, ordered by request time) as a transcript."""
    traces = sorted(session, key=lambda t: (t.info.request_time, t.info.trace_id))
    if not traces:
        raise InputError("<mlflow session>", "empty session")
    meta = traces[0].info.trace_metadata or {}
    sid = meta.get(SESSION_KEY) or traces[0].info.trace_id
    where = f"<mlflow session {sid}>"
    msgs = [m for t in traces for m in _turn_of(t, where)]
    conv_meta = {"workflow": meta[WORKFLOW_KEY]} if meta.get(WORKFLOW_KEY) else {}
    return Conversation(str(sid), msgs, conv_meta)


def session_scorer(spec: SpecBundle | str | Path, *, config: str = "core",
                   workflow: str | None = None, tool_slots: ToolSlots | None = None,
                   name: str = "sage_tod", evaluator: Evaluator | None = None) -> Scorer:
    """An MLflow session-level scorer: overall feedback plus one feedback per turn."""
    judge = ConversationJudge(spec, config=config, workflow=workflow, tool_slots=tool_slots,
                              evaluator=evaluator)

    def sage_tod_session(session: list[Trace]) -> list[Feedback]:
        try:
            conv = session_conversation(session)
            verdicts = judge.judge(conv, source="mlflow session")
        except InputError as exc:
            return [Feedback(name=name, error=AssessmentError(
                error_code="SAGE_TOD_INPUT", error_message=str(exc)))]
        traces = [m.metadata["trace_id"] for m in conv.messages
                  if m.role == "assistant" and m.metadata]
        feedback = [Feedback(
            name=name, value=acceptable_share(verdicts), rationale=reason(verdicts),
            metadata={"config": judge.config, "turns": str(len(verdicts)),
                      "failures": str(sum(v.verdict == "failure" for v in verdicts))})]
        for v, tid in zip(verdicts, traces, strict=True):
            feedback.append(Feedback(
                name=f"{name}/turn_{v.turn_id}", value=v.verdict, rationale=turn_reason(v),
                metadata={"trace_id": tid, "classes": ",".join(str(c) for c in v.classes),
                          "confidence": f"{v.confidence:.3f}",
                          "repairs": " | ".join(v.repairs)}))
        return feedback

    made: Scorer = scorer(sage_tod_session, name=name)
    return made
