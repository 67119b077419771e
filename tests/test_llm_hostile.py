"""The LLM client against a misbehaving OpenAI-compatible server (tests/fake_openai.py):
a total deadline, a size cap, a key that never gets written, a self-healing cache.
docs/guarantees.md names these tests."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, drip, echo_key, error_with_key, garbage_json, huge, ok
from sage_tod.contracts.errors import InputError
from sage_tod.llm import ChatRequest, LLMClient, config_from_options
from sage_tod.llm.cache import cache_key
from sage_tod.llm.redact import Redactor

KEY_ENV = "SAGE_TOD_TEST_KEY"
SECRET = "sk-live-7Hq2Zx9Lm4Pw8Rt6Yv3Nc1Kb5"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    for var in ("SAGE_TOD_LLM_BASE_URL", "SAGE_TOD_LLM_MODEL", "SAGE_TOD_LLM_API_KEY_ENV",
                "SAGE_TOD_LLM_CACHE", "SAGE_TOD_LLM_TIMEOUT", "SAGE_TOD_LLM_BACKOFF"):
        monkeypatch.delenv(var, raising=False)


def client(fake: FakeOpenAI, tmp_path: Path, **kw: object) -> LLMClient:
    opts: dict[str, object] = {
        "llm_base_url": fake.base_url, "llm_model": "gpt-4.1", "llm_api_key_env": KEY_ENV,
        "llm_cache_path": str(tmp_path / "cache.sqlite3"), "llm_timeout_s": 1.0,
        "llm_max_retries": 0, "llm_backoff_s": 0.01, "llm_max_backoff_s": 0.05}
    opts.update({f"llm_{k}": v for k, v in kw.items()})
    return LLMClient(config_from_options(opts))


def _everything_written(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_dripping_server_hits_the_total_deadline(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: drip(0.2)) as fake, client(fake, tmp_path) as c:
        t0 = time.perf_counter()
        res = c.chat(ChatRequest.of(None, "hi"))
        elapsed = time.perf_counter() - t0
    assert res.error is not None and "timeout" in res.error
    assert elapsed < 3.0  # 1 s deadline; the body would take ~40 s at 0.2 s a byte


def test_a_huge_answer_is_refused_not_buffered(tmp_path: Path) -> None:
    import tracemalloc

    with FakeOpenAI(lambda r: huge(64 * 1024 * 1024)) as fake, \
            client(fake, tmp_path, timeout_s=30, max_response_bytes=1 << 20) as c:
        tracemalloc.start()  # the client's allocations (the fake streams from a block)
        res = c.chat(ChatRequest.of(None, "hi"))
        grown_mb = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    assert res.error is not None and "too large" in res.error
    assert grown_mb < 16  # the 64 MB body was never held


def test_garbage_json_is_a_recorded_abstention(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: garbage_json()) as fake, client(fake, tmp_path) as c:
        res = c.chat(ChatRequest.of(None, "hi"))
    assert res.error is not None and res.error.startswith("malformed response")


@pytest.mark.parametrize("how", ["whole", "fragment", "reversed"])
def test_an_echoed_key_is_never_returned_or_cached(tmp_path: Path, how: str) -> None:
    with FakeOpenAI(lambda r: echo_key(how)) as fake, client(fake, tmp_path) as c:
        res = c.chat(ChatRequest.of(None, "hi"))
        again = c.chat(ChatRequest.of(None, "hi"))
    assert res.ok and again.cached
    for text in (res.text or "", again.text or ""):
        assert "***" in text
        assert not _has_fragment(text)
    assert not _has_fragment(_everything_written(tmp_path).decode("utf-8", "replace"))


@pytest.mark.parametrize("how", ["whole", "fragment", "reversed"])
def test_an_error_body_quoting_the_key_is_redacted(tmp_path: Path, how: str) -> None:
    with FakeOpenAI(lambda r: error_with_key(401, how)) as fake, client(fake, tmp_path) as c:
        res = c.chat(ChatRequest.of(None, "hi"))
    assert res.error is not None and "HTTP 401" in res.error
    assert not _has_fragment(res.error)


def _has_fragment(text: str) -> bool:
    for form in (SECRET, SECRET[::-1]):
        for i in range(len(form) - 7):
            if form[i:i + 8] in text:
                return True
    return False


def test_redactor_masks_fragments_and_leaves_other_text() -> None:
    r = Redactor(SECRET)
    assert r.redact(f"key {SECRET[2:12]} and {SECRET[::-1][5:20]}!") == "key *** and ***!"
    assert r.redact("nothing secret here") == "nothing secret here"
    assert Redactor("short").redact("a short key, trohs") == "a *** key, ***"


def test_cache_is_keyed_by_endpoint(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    a = cache_key("gpt-4.1", msgs, {}, endpoint="https://api.openai.com/v1/chat/completions")
    b = cache_key("gpt-4.1", msgs, {}, endpoint="http://127.0.0.1:8080/v1/chat/completions")
    assert a != b
    with FakeOpenAI(lambda r: ok("true\none")) as f1, FakeOpenAI(lambda r: ok("false\ntwo")) \
            as f2:
        with client(f1, tmp_path) as c1:
            assert c1.chat(ChatRequest.of(None, "q")).text == "true\none"
        with client(f2, tmp_path) as c2:  # same cache file, same model name, other server
            res = c2.chat(ChatRequest.of(None, "q"))
    assert res.text == "false\ntwo" and not res.cached


def test_a_corrupt_cache_file_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / "cache.sqlite3").write_bytes(b"this is not a database" * 100)
    with FakeOpenAI(lambda r: ok("true\nfine")) as fake, client(fake, tmp_path) as c:
        assert c.chat(ChatRequest.of(None, "q")).ok
        assert c.chat(ChatRequest.of(None, "q")).cached
    assert (tmp_path / "cache.sqlite3.corrupt").is_file()


def test_a_bad_cache_row_is_recomputed(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: ok("true\nfine")) as fake:
        with client(fake, tmp_path) as c:
            assert c.chat(ChatRequest.of(None, "q")).ok
        db = sqlite3.connect(tmp_path / "cache.sqlite3")
        db.execute("UPDATE responses SET texts = '{not json'")
        db.commit()
        db.close()
        with client(fake, tmp_path) as c:
            res = c.chat(ChatRequest.of(None, "q"))
            assert res.ok and not res.cached and res.text == "true\nfine"
            assert c.chat(ChatRequest.of(None, "q")).cached  # replaced


@pytest.mark.parametrize(("var", "value", "words"), [
    ("SAGE_TOD_LLM_BACKOFF", "-1", "backoff"), ("SAGE_TOD_LLM_TIMEOUT", "nan", "finite"),
    ("SAGE_TOD_LLM_TIMEOUT", "inf", "finite"), ("SAGE_TOD_LLM_MAX_RETRIES", "1.5", "whole"),
    ("SAGE_TOD_LLM_CONCURRENCY", "0", "concurrency"),
    ("SAGE_TOD_LLM_BASE_URL", "not a url", "base url"),
    ("SAGE_TOD_LLM_BASE_URL", "ftp://host/v1", "base url"),
    ("SAGE_TOD_LLM_BASE_URL", "http://h:notaport/v1", "base url")])
def test_invalid_settings_are_input_errors(monkeypatch: pytest.MonkeyPatch, var: str,
                                           value: str, words: str) -> None:
    monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SAGE_TOD_LLM_MODEL", "m")
    monkeypatch.setenv(var, value)
    with pytest.raises(InputError) as exc:
        config_from_options({})
    assert words in str(exc.value).lower()
