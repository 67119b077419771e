"""S2 caches and model files that cannot lie: keys that cover what determines a score,
rows and exports that heal themselves. docs/guarantees.md names these tests."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from sage_tod.nli.backend import model_fingerprint
from sage_tod.nli.cache import ScoreCache

REPO_MODEL = Path(__file__).resolve().parents[1] / "models" / "nli-minilm-sgd-adapted"


def _model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"id2label": {"0": "entailment"}}))
    (d / "model.safetensors").write_bytes(b"weights")
    return d


def test_fingerprint_covers_the_shipped_graph_not_the_claim_design(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    base = model_fingerprint(str(d))
    (d / "model.onnx").write_bytes(b"graph one")
    one = model_fingerprint(str(d))
    (d / "model.onnx").write_bytes(b"graph two")
    two = model_fingerprint(str(d))
    assert len({base, one, two}) == 3  # swapping the graph never reuses old scores
    (d / "sage_tod_claims.json").write_text('{"tau": 0.3}')
    assert model_fingerprint(str(d)) == two  # no new export per claims edit


def test_score_cache_namespace_covers_backend_and_length(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from sage_tod.nli import runtime

    class Tok:
        max_length = 77

    class FakeBackend:
        model_key, name, threads, tokenizer = "abc123", "onnx-int8", 1, Tok()

    d = _model_dir(tmp_path)
    monkeypatch.setattr(runtime, "load_backend", lambda *a, **k: FakeBackend())
    runtime._SCORERS.clear()
    sc, why = runtime.get_scorer(model=str(d), cache_path="off")
    assert why is None and sc is not None
    assert sc.cache.namespace == "abc123:onnx-int8:len77"
    runtime._SCORERS.clear()


@pytest.mark.parametrize("bad", ["'abc'", "X'00'", "2.0", "-0.5"])
def test_a_bad_cache_row_is_recomputed(tmp_path: Path, bad: str) -> None:
    db_path = tmp_path / "scores.sqlite"
    pair = ("premise", "hypothesis")
    c = ScoreCache("ns", db_path)
    c.put_many({pair: (0.7, 0.2, 0.1)})
    c.close()
    db = sqlite3.connect(db_path)
    db.execute(f"UPDATE scores SET ent = {bad}")
    db.commit()
    db.close()
    c = ScoreCache("ns", db_path)
    assert c.get_many([pair]) == {} and c.bad_rows == 1  # a miss, not a wrong score
    c.put_many({pair: (0.6, 0.3, 0.1)})
    c.close()
    c = ScoreCache("ns", db_path)
    assert c.get_many([pair]) == {pair: (0.6, 0.3, 0.1)}
    c.close()


def test_nan_rows_are_misses(tmp_path: Path) -> None:
    c = ScoreCache("ns", tmp_path / "s.sqlite")
    c.put_many({("a", "b"): (math.nan, 0.5, 0.5)})
    c._mem.clear()
    assert c.get_many([("a", "b")]) == {}


def test_a_corrupt_score_cache_degrades_to_memory(tmp_path: Path) -> None:
    p = tmp_path / "s.sqlite"
    p.write_bytes(b"not a database at all" * 50)
    c = ScoreCache("ns", p)
    c.put_many({("a", "b"): (0.5, 0.25, 0.25)})
    assert c.get_many([("a", "b")]) == {("a", "b"): (0.5, 0.25, 0.25)}


@pytest.mark.skipif(not (REPO_MODEL / "config.json").is_file(), reason="no repository model")
def test_a_corrupt_cached_export_is_rebuilt_once(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from sage_tod.nli.backend import OnnxBackend
    from sage_tod.nli.onnx import onnx_dir

    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path))
    key = model_fingerprint(str(REPO_MODEL))
    bad = onnx_dir(key) / "model.onnx"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"truncated graph")
    be = OnnxBackend(str(REPO_MODEL), threads=1)
    (p_ent, p_neu, p_con), = be.score([("I want Italian food.", "Someone wants Italian.")])
    assert abs(p_ent + p_neu + p_con - 1) < 1e-6
    assert bad.stat().st_size > 1_000_000  # a real graph replaced the truncated one
