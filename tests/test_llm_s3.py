"""S3 (focused LLM stage) end to end through the cascade, against the loopback fake."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_openai import FakeOpenAI, Recorded, Reply, garbage, hang, ok, status
from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import Outcome
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import Turn
from sage_tod.contracts.verdicts import Verdict, write_verdicts
from sage_tod.evaluation.cascade import Cascade
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.verifiers.base import StageUnavailable, build_stage
from sage_tod.verifiers.llm import build_prompt, parse_answer

KEY_ENV = "SAGE_TOD_TEST_KEY"
SECRET = "sk-test-SECRET-s3-987654"
AGENT = "Great, I have noted that. AGENT-ONLY-PHRASE. What food would you like?"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    for var in ("SAGE_TOD_LLM_BASE_URL", "SAGE_TOD_LLM_MODEL", "SAGE_TOD_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)


def options(fake: FakeOpenAI, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    o: dict[str, Any] = {
        "llm_base_url": fake.base_url, "llm_model": "gpt-4.1", "llm_api_key_env": KEY_ENV,
        "llm_cache_path": str(tmp_path / "cache.sqlite3"), "llm_timeout_s": 0.3,
        "llm_max_retries": 1, "llm_backoff_s": 0.01, "llm_max_backoff_s": 0.02}
    o.update(kw)
    return o


@pytest.fixture
def paraphrase_turn(make_turn: Callable[..., Turn]) -> Turn:
    """Two UV criteria S1 cannot settle ('middle of town', 'inexpensive'): both go to S3."""
    return make_turn(user="Somewhere in the middle of town, and inexpensive please.",
                     agent=AGENT, after={"area": "centre", "pricerange": "cheap"})


def evaluate(spec: SpecBundle, turn: Turn, opts: dict[str, Any]) -> Verdict:
    ev = Evaluator(spec, cascade=Cascade.from_config("no_s2", opts))
    assert ev.missing_stages == {} and ev.cascade.stage_names == ["S1", "S3"]
    return ev.evaluate_turn(turn)


def by_value(r: Recorded) -> Reply:
    if "'centre'" in r.prompt:
        return ok("false\nthe middle of town is the centre")
    return ok("True.\nthe user never gave a price range")


def test_s3_decides_undecided_open_class_criteria(spec: SpecBundle, paraphrase_turn: Turn,
                                                 tmp_path: Path) -> None:
    with FakeOpenAI(by_value) as fake:
        v = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
    crit = {c.id: c for c in v.criteria}
    assert crit["UV:area"].decision is Outcome.FALSE and crit["UV:area"].decided_by == "S3"
    assert crit["UV:pricerange"].decision is Outcome.TRUE
    assert [s.stage for s in crit["UV:area"].trace] == ["S1", "S3"]
    assert crit["UV:area"].margin == 0.5 and "middle of town" in crit["UV:area"].rationale
    assert v.verdict == "failure" and v.cost_usd > 0
    assert len(fake.requests) == 2  # only the two criteria S1 abstained on


def test_s3_prompt_is_criterion_local(spec: SpecBundle, paraphrase_turn: Turn,
                                      tmp_path: Path) -> None:
    with FakeOpenAI(by_value) as fake:
        evaluate(spec, paraphrase_turn, options(fake, tmp_path))
    prompt = next(r.prompt for r in fake.requests if "'centre'" in r.prompt)
    assert "middle of town" in prompt and "true = " in prompt and "abstain" in prompt
    assert "AGENT-ONLY-PHRASE" not in prompt  # UV evidence is h_<t and u_t, not a_t
    assert "pricerange" not in prompt  # one criterion per prompt


@pytest.mark.parametrize(("reply", "why"), [
    (garbage(), "unparseable answer"), (ok("yes"), "unparseable answer"),
    (ok("abstain\nnot enough evidence"), "abstained: not enough evidence"),
    (status(500), "HTTP 500"), (status(429, "0"), "HTTP 429"), (hang(2.0), "timeout"),
])
def test_bad_answers_abstain_with_reason(spec: SpecBundle, paraphrase_turn: Turn,
                                         tmp_path: Path, reply: Reply, why: str) -> None:
    with FakeOpenAI(lambda r: reply) as fake:
        v = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
    uv = [c for c in v.criteria if c.id.startswith("UV:")]
    assert uv and all(c.decision is Outcome.ABSTAIN and c.decided_by is None for c in uv)
    assert all(why in c.trace[-1].rationale for c in uv)
    assert v.verdict == "undecided"
    if reply.status == 200 and not reply.delay_s:
        assert v.cost_usd > 0  # the call was paid for even though its answer is unusable


def test_rerun_from_cache_makes_zero_calls(spec: SpecBundle, paraphrase_turn: Turn,
                                           tmp_path: Path) -> None:
    with FakeOpenAI(by_value) as fake:
        first = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
        n = len(fake.requests)
        second = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
        assert len(fake.requests) == n == 2
    assert first.verdict == second.verdict and first.cost_usd == second.cost_usd
    assert "cached" in second.criteria[0].rationale


def test_calls_run_in_parallel(spec: SpecBundle, paraphrase_turn: Turn, tmp_path: Path) -> None:
    def slow(r: Recorded) -> Reply:
        rep = by_value(r)
        rep.delay_s = 0.2
        return rep
    with FakeOpenAI(slow) as fake:
        evaluate(spec, paraphrase_turn, options(fake, tmp_path, llm_timeout_s=2.0))
    assert fake.max_in_flight == 2


def test_key_never_reaches_output_files(spec: SpecBundle, paraphrase_turn: Turn,
                                        tmp_path: Path) -> None:
    def echo(r: Recorded) -> Reply:  # a hostile server echoing the credentials back
        return Reply(status=400, raw=f"denied for {r.headers.get('authorization')}".encode())
    with FakeOpenAI(echo) as fake:
        v1 = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
    with FakeOpenAI(by_value) as fake:
        v2 = evaluate(spec, paraphrase_turn, options(fake, tmp_path))
    buf = io.StringIO()
    write_verdicts([v1, v2], buf)
    (tmp_path / "verdicts.jsonl").write_text(buf.getvalue())
    assert "Bearer ***" in buf.getvalue()
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_missing_endpoint_is_stage_unavailable_with_how_to() -> None:
    with pytest.raises(StageUnavailable) as exc:
        build_stage("S3", {})
    assert "SAGE_TOD_LLM_BASE_URL" in str(exc.value) and "docs/llm.md" in str(exc.value)
    cas = Cascade(stages=[build_stage("S1")], missing={"S3": str(exc.value)})
    assert "S3" in cas.missing


@pytest.mark.parametrize(("text", "outcome"), [
    ("true", Outcome.TRUE), ("FALSE.\nbecause", Outcome.FALSE), ("**true**", Outcome.TRUE),
    ("Answer: false", Outcome.FALSE), ('{"answer": "abstain", "reason": "x"}', Outcome.ABSTAIN),
    ("abstain", Outcome.ABSTAIN), ("yes", None), ("true or false", None), ("", None),
    ("It is true that the user said so", None), (None, None), ('{"answer": "maybe"}', None),
])
def test_parse_answer_is_strict(text: str | None, outcome: Outcome | None) -> None:
    assert parse_answer(text)[0] is outcome


def test_every_class_gets_a_true_means_failure_prompt(
        spec: SpecBundle, make_turn: Callable[..., Turn],
        ctx_of: Callable[[Turn], TurnContext]) -> None:
    turn = make_turn(user="Italian food please, for 4 people.",
                     agent="Your table is booked. Which area and what time?",
                     after={"area": "centre"})
    ctx = ctx_of(turn)
    for c in compile_turn(ctx):
        p = build_prompt(c, ctx)
        assert "(a failure)" in p.true_means and p.question.endswith("?")
