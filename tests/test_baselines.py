"""The LLM-judge baselines against the loopback fake: parse, abstain, retry, cost, cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_openai import FakeOpenAI, Recorded, Reply, garbage, hang, ok, status
from sage_tod.contracts.criteria import FailureClass
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import Turn
from sage_tod.contracts.verdicts import Verdict
from sage_tod.lab.baselines.runner import (
    BASELINES,
    available_baselines,
    calibrate_threshold,
    iter_judgements,
    parse_geval_score,
    parse_judge_json,
    run_baseline,
)
from sage_tod.llm import LLMClient, config_from_options

KEY_ENV = "SAGE_TOD_TEST_KEY"
SECRET = "sk-test-SECRET-baselines-42"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    for var in ("SAGE_TOD_LLM_BASE_URL", "SAGE_TOD_LLM_MODEL", "SAGE_TOD_LLM_CHEAP_MODEL"):
        monkeypatch.delenv(var, raising=False)


def options(fake: FakeOpenAI, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    o: dict[str, Any] = {
        "llm_base_url": fake.base_url, "llm_model": "gpt-4.1", "llm_api_key_env": KEY_ENV,
        "llm_cheap_model": "gpt-4.1-mini", "llm_cache_path": str(tmp_path / "c.sqlite3"),
        "llm_timeout_s": 0.3, "llm_max_retries": 1, "llm_backoff_s": 0.01,
        "llm_max_backoff_s": 0.02, "batch_size": 2}
    o.update(kw)
    return o


@pytest.fixture
def turns(make_turn: Callable[..., Turn]) -> list[Turn]:
    return [
        make_turn(user="Italian in the centre.", agent="What time?", dialogue_id="good",
                  after={"area": "centre", "food": "italian"}),
        make_turn(user="Chinese please.", agent="Your table is booked!", dialogue_id="bad",
                  before={"area": "north"}, after={"area": "north"}),
        make_turn(user="Cheap, in the south.", agent="Which food?", dialogue_id="doubt",
                  after={"area": "south", "pricerange": "cheap"}),
    ]


def good_script(r: Recorded) -> Reply:
    """A competent judge: 'bad' is a premature confirmation, the others are fine;
    the cheap model is unsure about 'doubt'."""
    bad = "Your table is booked!" in r.prompt
    doubt = "Cheap, in the south." in r.prompt
    if "Acceptability (1-5):" in r.prompt:  # G-Eval form
        return ok(f"Values given by the user: ...\nReasoning: ...\n"
                  f"Acceptability (1-5): {1 if bad else 4}")
    if '"clean"' in r.prompt:
        return ok(json.dumps({"verdict": "failure" if bad else "clean",
                              "class": "PC" if bad else None}))
    conf = 0.3 if (doubt and r.model == "gpt-4.1-mini") else 0.95
    return ok("```json\n" + json.dumps({"verdict": "failure" if bad else "acceptable",
                                        "class": "PC" if bad else None,
                                        "confidence": conf}) + "\n```")


def test_names() -> None:
    assert set(available_baselines()) == set(BASELINES) == {
        "geval_st", "geval_tr", "frugal_st", "frugal_tr", "single_st", "single_tr"}
    with pytest.raises(ValueError, match="unknown baseline"):
        next(run_baseline("nope_st", SpecBundle("x", {}), [], {}))


@pytest.mark.parametrize("name", BASELINES)
def test_every_baseline_parses_good_answers(name: str, spec: SpecBundle, turns: list[Turn],
                                            tmp_path: Path) -> None:
    with FakeOpenAI(good_script) as fake:
        vs = list(run_baseline(name, spec, turns, options(fake, tmp_path)))
    assert [v.dialogue_id for v in vs] == ["good", "bad", "doubt"]
    assert [v.verdict for v in vs] == ["acceptable", "failure", "acceptable"]
    for v in vs:
        assert isinstance(v, Verdict) and v.config == name
        assert v.criteria == [] and v.stages == [] and v.cost_usd > 0 and v.latency_ms >= 0
    if not name.startswith("geval"):
        assert vs[1].classes == [FailureClass.PC]
    per_turn = {"geval": 6, "single": 1, "frugal": 1}[name.split("_")[0]]
    extra = 1 if name.startswith("frugal") else 0  # 'doubt' escalates
    assert len(fake.requests) == 3 * per_turn + extra


def test_state_aware_and_transcript_only_differ_only_in_context(
        spec: SpecBundle, turns: list[Turn], tmp_path: Path) -> None:
    prompts: dict[str, str] = {}
    for name in ("single_st", "single_tr"):
        with FakeOpenAI(good_script) as fake:
            list(run_baseline(name, spec, turns[:1], options(fake, tmp_path / name)))
        prompts[name] = fake.requests[0].prompt
    st, tr = prompts["single_st"], prompts["single_tr"]
    assert "State before the turn" in st and "State before the turn" not in tr
    assert "area*" in st and "area*" not in tr
    head = tr.split("Dialogue so far:")[0]
    tail = tr.split("Agent: What time?")[1]
    assert st.startswith(head) and st.endswith(tail)


def test_geval_samples_mean_threshold_and_confidence(spec: SpecBundle, turns: list[Turn],
                                                     tmp_path: Path) -> None:
    scores = iter([5, 4, 3, 2, 2, 2])  # mean 3.0
    def script(r: Recorded) -> Reply:
        return ok(f"Reasoning: hm\n**Acceptability (1-5):** {next(scores)}")
    with FakeOpenAI(script) as fake:
        js = list(iter_judgements("geval_tr", spec, turns[:1],
                                  options(fake, tmp_path, llm_concurrency=1)))
    j = js[0]
    assert sorted(j.scores) == [2, 2, 2, 3, 4, 5] and j.mean_score == 3.0
    assert j.verdict.verdict == "acceptable" and j.verdict.confidence == 0.0  # at threshold
    assert sorted(r.body["seed"] for r in fake.requests) == [0, 1, 2, 3, 4, 5]


def test_frugal_escalates_low_confidence_to_the_strong_model(
        spec: SpecBundle, turns: list[Turn], tmp_path: Path) -> None:
    with FakeOpenAI(good_script) as fake:
        js = list(iter_judgements("frugal_st", spec, turns, options(fake, tmp_path)))
    models = [r.model for r in fake.requests]
    assert models.count("gpt-4.1-mini") == 3 and models.count("gpt-4.1") == 1
    assert [j.escalated for j in js] == [False, False, True]
    assert "cheap confidence 0.30 < 0.80" in js[2].reasons[0]
    # the escalated turn paid for both calls, at both prices
    assert js[2].verdict.cost_usd > js[0].verdict.cost_usd


@pytest.mark.parametrize("name", BASELINES)
@pytest.mark.parametrize("reply", [garbage(), status(500), status(429, "0"), hang(2.0),
                                   ok('{"verdict": "maybe"}')])
def test_unusable_answers_are_undecided_never_a_crash(name: str, reply: Reply, spec: SpecBundle,
                                                      turns: list[Turn], tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: reply) as fake:
        js = list(iter_judgements(name, spec, turns[:1], options(
            fake, tmp_path, geval_samples=2, llm_timeout_s=0.15 if reply.delay_s else 0.3)))
    j = js[0]
    assert j.verdict.verdict == "undecided" and j.verdict.confidence == 0.0
    assert j.reasons and j.verdict.classes == []
    if reply.status == 200 and not reply.delay_s:
        assert j.verdict.cost_usd > 0
    if reply.status in (500, 429):
        assert len(fake.requests) == 2 * j.calls  # each call retried once
    if name.startswith("frugal"):
        assert j.escalated


def test_rerun_from_cache_makes_zero_calls(spec: SpecBundle, turns: list[Turn],
                                           tmp_path: Path) -> None:
    with FakeOpenAI(good_script) as fake:
        a = list(run_baseline("geval_st", spec, turns, options(fake, tmp_path)))
        n = len(fake.requests)
        cfg = config_from_options(options(fake, tmp_path))
        client = LLMClient(cfg)
        b = list(run_baseline("geval_st", spec, turns, options(fake, tmp_path),
                              clients={"strong": client}))
        assert len(fake.requests) == n == 18 and client.stats.http_calls == 0
        client.close()
    assert [v.verdict for v in a] == [v.verdict for v in b]
    assert [v.cost_usd for v in a] == [v.cost_usd for v in b]


def test_key_never_in_verdicts_traces_or_cache(spec: SpecBundle, turns: list[Turn],
                                               tmp_path: Path) -> None:
    def echo(r: Recorded) -> Reply:
        if fake.count("k") % 2:
            return Reply(status=400, raw=f"bad {r.headers.get('authorization')}".encode())
        return good_script(r)
    out = tmp_path / "out"
    out.mkdir()
    with FakeOpenAI(echo) as fake:
        for name in BASELINES:
            with (out / f"{name}.jsonl").open("w") as fh:
                for j in iter_judgements(name, spec, turns, options(fake, tmp_path)):
                    fh.write(j.verdict.to_json() + "\n" + json.dumps(j.to_dict()) + "\n")
    text = "".join(p.read_text() for p in out.iterdir())
    assert "Bearer ***" in text
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.parametrize(("text", "score"), [
    ("Acceptability (1-5): 4", 4.0), ("**Acceptability (1–5):** 2\n", 2.0),
    ("Acceptability: 3.5", 3.5), ("Acceptability (1-5): 4\n...\nAcceptability (1-5): 1", 1.0),
    ("Acceptability (1-5): 7", None), ("Score: 4", None), ("", None),
])
def test_parse_geval_score(text: str, score: float | None) -> None:
    assert parse_geval_score(text) == score


def test_parse_judge_json() -> None:
    ans, _ = parse_judge_json('Sure! {"verdict": "failure", "class": "uv"}', clean_word="clean")
    assert ans is not None and ans.label == "failure" and ans.failure_class is FailureClass.UV
    ans, note = parse_judge_json('{"verdict": "clean", "class": "XYZ"}', clean_word="clean")
    assert ans is not None and ans.label == "acceptable" and "XYZ" in note
    ans, _ = parse_judge_json('{"verdict": "acceptable", "confidence": 85}',
                              clean_word="acceptable", need_confidence=True)
    assert ans is not None and ans.confidence == 0.85
    assert parse_judge_json('{"verdict": "acceptable"}', clean_word="acceptable",
                            need_confidence=True)[0] is None
    assert parse_judge_json("failure", clean_word="clean")[0] is None


def test_calibrate_threshold() -> None:
    means = [1.0, 1.5, 2.5, 4.0, 4.5, 5.0, None]
    gold = [True, True, True, False, False, False, True]
    t = calibrate_threshold(means, gold)
    assert 2.5 < t <= 4.0
    assert calibrate_threshold([4.0], [False]) == 3.0
