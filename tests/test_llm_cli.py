"""`sage-tod llm ...` commands (mounted by the main CLI) against the loopback fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fake_openai import FakeOpenAI, Recorded, Reply, ok, status
from sage_tod import demo
from sage_tod.cli.llm import llm_app
from sage_tod.contracts.verdicts import read_verdicts

SECRET = "sk-test-SECRET-cli-555"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SAGE_TOD_TEST_KEY", SECRET)
    monkeypatch.setenv("SAGE_TOD_LLM_API_KEY_ENV", "SAGE_TOD_TEST_KEY")
    monkeypatch.setenv("SAGE_TOD_LLM_MODEL", "gpt-4.1")
    monkeypatch.setenv("SAGE_TOD_LLM_CACHE", str(tmp_path / "cache.sqlite3"))
    monkeypatch.setenv("SAGE_TOD_LLM_MAX_RETRIES", "0")


def judge(r: Recorded) -> Reply:
    booked = "booked" in r.prompt.split("Turn to evaluate:")[-1].lower()
    return ok("Reasoning: ...\nAcceptability (1-5): " + ("1" if booked else "5"))


def test_ping_shows_config_but_not_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(lambda r: ok("true")) as fake:
        monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", fake.base_url)
        res = runner.invoke(llm_app, ["ping"])
    assert res.exit_code == 0, res.output
    assert '"api_key_set": true' in res.output and SECRET not in res.output
    with FakeOpenAI(lambda r: status(401)) as fake:
        monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", fake.base_url)
        res = runner.invoke(llm_app, ["ping"])
    assert res.exit_code == 1 and "SAGE_TOD_TEST_KEY" in res.output


def test_ping_without_endpoint_says_how(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGE_TOD_LLM_BASE_URL", raising=False)
    res = runner.invoke(llm_app, ["ping"])
    assert res.exit_code == 2 and "SAGE_TOD_LLM_BASE_URL" in res.output


def test_baseline_writes_verdicts_and_trace_then_calibrates(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    turns = tmp_path / "turns.jsonl"
    lines = (demo.spec_path().parent / "turns.jsonl").read_text().splitlines()[:6]
    turns.write_text("\n".join(lines) + "\n")
    out, trace = tmp_path / "v.jsonl", tmp_path / "t.jsonl"
    with FakeOpenAI(judge) as fake:
        monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", fake.base_url)
        res = runner.invoke(llm_app, ["baseline", "geval_tr", "--spec", str(demo.spec_path()),
                                      "--turns", str(turns), "--out", str(out),
                                      "--trace", str(trace), "-o", "geval_samples=2"])
    assert res.exit_code == 0, res.output
    vs = read_verdicts(out)
    assert len(vs) == 6 and {v.config for v in vs} == {"geval_tr"}
    rows = [json.loads(x) for x in trace.read_text().splitlines()]
    assert all(len(r["scores"]) == 2 for r in rows)
    res = runner.invoke(llm_app, ["calibrate-geval", "--trace", str(trace), "--turns",
                                  str(turns)])
    assert res.exit_code == 0 and "geval_threshold=" in res.output
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes()


def test_serve_local_without_model_says_what_to_install(tmp_path: Path) -> None:
    res = runner.invoke(llm_app, ["serve-local", "--model", str(tmp_path / "none.gguf")])
    assert res.exit_code == 2 and ("no GGUF file" in res.output or "pip install" in res.output)
