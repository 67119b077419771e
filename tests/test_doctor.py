"""`sage-tod doctor`: reports the resolved S2 model and every cache, never an API key, and
exits non-zero exactly when the recommended configuration (core) cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.nli import resolve
from sage_tod.outputs import doctor

runner = CliRunner()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No user model, no S2 env overrides, a private cache home, no LLM endpoint."""
    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAGE_TOD_CACHE_DIR", str(tmp_path / "home"))
    for var in (resolve.ENV_MODEL, "SAGE_TOD_NLI_CACHE", "SAGE_TOD_LLM_BASE_URL",
                "SAGE_TOD_LLM_MODEL", "SAGE_TOD_LLM_CACHE", "SAGE_TOD_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(resolve, "hub_reachable", lambda *a, **k: False)
    return tmp_path / "home"


def test_reports_the_packaged_model_and_passes(clean_env: Path) -> None:
    res = runner.invoke(app, ["doctor", "--json", "--no-load"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["core_ok"] is True
    model = next(c for c in rep["checks"] if c["name"] == "S2 model")
    assert model["status"] == "ok" and "packaged model" in model["detail"]
    assert str(resolve.packaged_model_dir()) in model["detail"]


def test_cache_sizes_are_measured(clean_env: Path) -> None:
    (clean_env / "onnx" / "k").mkdir(parents=True)
    (clean_env / "onnx" / "k" / "model.onnx").write_bytes(b"x" * 3072)
    rep = doctor.run_checks(load=False)
    onnx = rep.check("ONNX exports")
    assert onnx is not None and "3.0 KiB" in onnx.detail and str(clean_env / "onnx") in onnx.detail
    cache = rep.check("NLI score cache")
    assert cache is not None and "not created yet" in cache.detail


def test_a_missing_env_model_fails_with_what_to_do(clean_env: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(resolve.ENV_MODEL, str(tmp_path / "gone"))
    res = runner.invoke(app, ["doctor", "--no-load"])
    assert res.exit_code == 1
    assert "PROBLEM" in res.output and "cannot run" in res.output
    rep = doctor.run_checks(load=False)
    model = rep.check("S2 model")
    assert model is not None and model.status == "problem" and model.required
    assert str(tmp_path / "gone") in model.detail and resolve.ENV_MODEL in model.fix


def test_no_model_anywhere_fails(clean_env: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "packaged_model_dir", lambda: tmp_path / "not-installed")
    rep = doctor.run_checks(load=False)
    assert not rep.core_ok
    model = rep.check("S2 model")
    assert model is not None and str(tmp_path / "not-installed") in model.detail


def test_llm_config_is_shown_without_the_key(clean_env: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-do-not-print-4711"
    monkeypatch.setenv("SAGE_TOD_LLM_BASE_URL", "https://llm.example.invalid/v1")
    monkeypatch.setenv("SAGE_TOD_LLM_MODEL", "gpt-test")
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    res = runner.invoke(app, ["doctor", "--json", "--no-load"])
    assert res.exit_code == 0
    assert secret not in res.output
    llm = next(c for c in json.loads(res.output)["checks"] if c["name"] == "LLM endpoint (S3)")
    assert "llm.example.invalid" in llm["detail"] and "OPENAI_API_KEY: set" in llm["detail"]


def test_loading_checks_run_the_models(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With loading, the S2 model scores a pair and the encoder embeds a text."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    # the real cache home keeps the one-time ONNX exports between test runs
    monkeypatch.delenv("SAGE_TOD_HOME")
    monkeypatch.setenv("SAGE_TOD_NLI_CACHE", "off")
    rep = doctor.run_checks(load=True)
    loads = rep.check("S2 model loads")
    para = rep.check("paraphrase encoder")
    assert loads is not None and loads.status == "ok", loads
    assert para is not None and para.status == "ok", para
    assert rep.core_ok
