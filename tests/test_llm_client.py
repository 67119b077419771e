"""The LLM client against a real loopback HTTP server speaking the OpenAI protocol."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, Recorded, Reply, garbage, hang, not_json, ok, status
from sage_tod.llm import (
    ChatRequest,
    LLMClient,
    LLMConfig,
    LLMNotConfigured,
    ResponseCache,
    config_from_options,
    price_for,
)

KEY_ENV = "SAGE_TOD_TEST_KEY"
SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    for var in ("SAGE_TOD_LLM_BASE_URL", "SAGE_TOD_LLM_MODEL", "SAGE_TOD_LLM_API_KEY_ENV",
                "SAGE_TOD_LLM_CACHE"):
        monkeypatch.delenv(var, raising=False)


def cfg(fake: FakeOpenAI, tmp_path: Path, **kw: object) -> LLMConfig:
    base: dict[str, object] = {
        "llm_base_url": fake.base_url, "llm_model": "gpt-4.1", "llm_api_key_env": KEY_ENV,
        "llm_cache_path": str(tmp_path / "cache.sqlite3"), "llm_timeout_s": 0.5,
        "llm_max_retries": 2, "llm_backoff_s": 0.01, "llm_max_backoff_s": 0.05}
    base.update({f"llm_{k}": v for k, v in kw.items()})
    return config_from_options(base)


def req(text: str = "hello") -> ChatRequest:
    return ChatRequest.of("system", text)


def test_config_from_options_env_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LLMNotConfigured, match="SAGE_TOD_LLM_BASE_URL"):
        config_from_options({})
    monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SAGE_TOD_LLM_MODEL", "gpt-4.1-mini")
    c = config_from_options({"llm_concurrency": "3", "llm_cache_path": "none"})
    assert (c.model, c.concurrency, c.cache_path) == ("gpt-4.1-mini", 3, None)
    assert c.chat_url == "http://127.0.0.1:9/v1/chat/completions"
    az = config_from_options({"llm_base_url": "https://x.openai.azure.com",
                              "llm_azure_deployment": "dep41"})
    assert az.is_azure and az.azure_api_version
    assert az.chat_url == "https://x.openai.azure.com/openai/deployments/dep41/chat/completions"
    with pytest.raises(LLMNotConfigured, match="llm_timeout_s"):
        config_from_options({"llm_timeout_s": "soon"})


def test_describe_never_holds_the_key() -> None:
    c = LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env=KEY_ENV)
    d = c.describe()
    assert d["api_key_set"] is True and d["api_key_env"] == KEY_ENV
    assert SECRET not in repr(c) and SECRET not in repr(d)


@pytest.mark.parametrize(("model", "pin", "pout", "priced"), [
    ("gpt-4.1", 2.0, 8.0, True), ("gpt-4.1-2025-04-14", 2.0, 8.0, True),
    ("gpt-4.1-mini", 0.4, 1.6, True), ("gpt-4.1-mini-2025-04-14", 0.4, 1.6, True),
    ("smollm2-135m-instruct-q4_1", 0.0, 0.0, True), ("mystery-model", 0.0, 0.0, False),
])
def test_price_table(model: str, pin: float, pout: float, priced: bool) -> None:
    p = price_for(model)
    assert (p.per_mtok_in, p.per_mtok_out, p.priced) == (pin, pout, priced)
    assert price_for("mystery", price_in=1.0, price_out=2.0).cost(1_000_000, 500_000) == 2.0


def test_good_answer_usage_cost_and_auth_header(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: ok("true\nbecause")) as fake:
        client = LLMClient(cfg(fake, tmp_path))
        res = client.chat(req("x" * 400))
        client.close()
    assert res.ok and res.text == "true\nbecause" and not res.cached
    assert res.prompt_tokens > 100 and res.completion_tokens >= 1
    assert res.cost_usd == pytest.approx((res.prompt_tokens * 2 + res.completion_tokens * 8) / 1e6)
    sent = fake.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.body["temperature"] == 0.0 and sent.body["model"] == "gpt-4.1"


def test_azure_uses_deployment_url_api_version_and_api_key_header(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: ok("false")) as fake:
        c = cfg(fake, tmp_path, azure_deployment="dep41", azure_api_version="2024-10-21")
        with LLMClient(c) as client:
            assert client.chat(req()).ok
    sent = fake.requests[0]
    assert sent.path == "/v1/openai/deployments/dep41/chat/completions?api-version=2024-10-21"
    assert sent.headers["api-key"] == SECRET and "authorization" not in sent.headers


def test_retries_429_then_succeeds(tmp_path: Path) -> None:
    def script(r: Recorded) -> Reply:
        return status(429, retry_after="0") if fake.count("k") <= 2 else ok("false")
    with FakeOpenAI(script) as fake, LLMClient(cfg(fake, tmp_path)) as client:
        res = client.chat(req())
        assert client.stats.retries == 2 and client.stats.http_calls == 3
    assert res.ok and res.attempts == 3


@pytest.mark.parametrize(("reply", "words"), [
    (status(500), "HTTP 500"), (status(503), "HTTP 503"), (hang(3.0), "timeout"),
])
def test_retryable_failures_give_up_with_reason(tmp_path: Path, reply: Reply,
                                                words: str) -> None:
    with (FakeOpenAI(lambda r: reply) as fake,
          LLMClient(cfg(fake, tmp_path, timeout_s=0.2, max_retries=1)) as client):
        t0 = time.monotonic()
        res = client.chat(req())
        assert time.monotonic() - t0 < 2.0
        assert client.stats.errors == 1
    assert not res.ok and res.text is None and words in (res.error or "")
    assert "gave up after 2 attempts" in (res.error or "") and res.attempts == 2
    assert len(fake.requests) == 2


@pytest.mark.parametrize(("reply", "words"), [
    (status(400), "HTTP 400"), (status(401), "check the key in $SAGE_TOD_TEST_KEY"),
    (not_json(), "malformed response"), (Reply(text=None), "empty answer"),
])
def test_non_retryable_failures_fail_fast(tmp_path: Path, reply: Reply, words: str) -> None:
    with FakeOpenAI(lambda r: reply) as fake, LLMClient(cfg(fake, tmp_path)) as client:
        res = client.chat(req())
    assert not res.ok and words in (res.error or "") and len(fake.requests) == 1


def test_connection_refused_is_an_error_not_an_exception(tmp_path: Path) -> None:
    c = config_from_options({"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m",
                             "llm_max_retries": 1, "llm_backoff_s": 0.01,
                             "llm_cache_path": "none"})
    with LLMClient(c) as client:
        res = client.chat(req())
    assert not res.ok and "connection error" in (res.error or "")


def test_cache_makes_a_rerun_zero_calls_and_keeps_cost(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: ok("false\nok")) as fake:
        with LLMClient(cfg(fake, tmp_path)) as first:
            a = first.chat_many([req("a"), req("b")])
        with LLMClient(cfg(fake, tmp_path)) as second:
            b = second.chat_many([req("a"), req("b")])
            assert second.stats.http_calls == 0 and second.stats.cache_hits == 2
            assert second.stats.spent_usd == 0.0
    assert len(fake.requests) == 2
    assert [r.text for r in a] == [r.text for r in b] and all(r.cached for r in b)
    assert [r.cost_usd for r in a] == [r.cost_usd for r in b]
    # a different parameter (seed) is a different key
    assert ResponseCache(tmp_path / "cache.sqlite3").__len__() == 2


def test_errors_are_not_cached(tmp_path: Path) -> None:
    def script(r: Recorded) -> Reply:
        return status(400) if fake.count("k") == 1 else ok("true")
    with FakeOpenAI(script) as fake:
        with LLMClient(cfg(fake, tmp_path)) as c1:
            assert not c1.chat(req()).ok
        with LLMClient(cfg(fake, tmp_path)) as c2:
            assert c2.chat(req()).ok


def test_concurrency_limit_is_respected(tmp_path: Path) -> None:
    with (FakeOpenAI(lambda r: Reply(text="false", delay_s=0.15)) as fake,
          LLMClient(cfg(fake, tmp_path, concurrency=2, cache_path="none",
                        timeout_s=10.0)) as client):
        res = client.chat_many([req(str(i)) for i in range(6)])
    assert all(r.ok for r in res) and fake.max_in_flight == 2


def test_missing_usage_is_estimated(tmp_path: Path) -> None:
    with (FakeOpenAI(lambda r: Reply(text="false", usage=False)) as fake,
          LLMClient(cfg(fake, tmp_path)) as client):
        res = client.chat(req("y" * 80))
    assert res.ok and res.usage_estimated and res.prompt_tokens > 0 and res.cost_usd > 0


def test_key_echoed_by_a_server_is_redacted(tmp_path: Path) -> None:
    def script(r: Recorded) -> Reply:
        return Reply(status=400, raw=f"bad key {r.headers['authorization']}".encode())
    with FakeOpenAI(script) as fake, LLMClient(cfg(fake, tmp_path)) as client:
        res = client.chat(req())
    assert SECRET not in (res.error or "") and "***" in (res.error or "")


def test_garbage_is_returned_for_the_caller_to_judge(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: garbage()) as fake, LLMClient(cfg(fake, tmp_path)) as client:
        res = client.chat(req())
    assert res.ok and "hard to say" in (res.text or "")
    assert SECRET.encode() not in (tmp_path / "cache.sqlite3").read_bytes()


def test_every_setting_is_documented() -> None:
    from sage_tod.llm.config import _OPTIONS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    for key, (var, _) in _OPTIONS.items():
        assert f"`llm_{key}`" in doc or f"llm_{key}" in doc, key
        assert var in doc or var.rsplit("_", 1)[0] in doc, var
