"""The local path end to end: llama.cpp's server with the SmolLM2 GGUF, S3 through the cascade.

Slow (model load plus CPU generation) and optional: it skips, saying why,
when llama-cpp-python[server] or the GGUF package is not installed
(docs/llm.md has the pip commands). SmolLM2-135M is a plumbing check: the
assertion is that every S3 criterion gets a parsed decision *or* a recorded
abstention, never a crash or a silent guess.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sage_tod.contracts.criteria import Outcome
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import Turn
from sage_tod.evaluation.cascade import Cascade
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.lab.local_llm import (
    LLAMA_CPP_PIP,
    MODEL_HINTS,
    LocalServer,
    llama_cpp_server_available,
    smollm2_path,
)


@pytest.mark.slow
def test_s3_through_a_local_llama_cpp_server(spec: SpecBundle, make_turn: Callable[..., Turn],
                                              tmp_path: Path) -> None:
    if not llama_cpp_server_available():
        pytest.skip(f"llama-cpp-python[server] not installed: {LLAMA_CPP_PIP}")
    if smollm2_path() is None:
        pytest.skip(f"SmolLM2 GGUF not installed: {MODEL_HINTS['smollm2']}")
    turn = make_turn(user="Somewhere in the middle of town, and inexpensive please.",
                     agent="Noted. What food would you like?",
                     after={"area": "centre", "pricerange": "cheap"})
    log = tmp_path / "llama-server.log"
    with LocalServer(model="smollm2", n_ctx=1024, log_path=log) as server:
        opts = {"llm_base_url": server.base_url, "llm_model": server.alias,
                "llm_cache_path": str(tmp_path / "cache.sqlite3"), "llm_timeout_s": 120,
                "llm_max_retries": 1, "llm_concurrency": 1}
        ev = Evaluator(spec, cascade=Cascade.from_config("no_s2", opts))
        v = ev.evaluate_turn(turn)
        again = ev.evaluate_turn(turn)  # from the cache
    s3 = [c for c in v.criteria if any(s.stage == "S3" for s in c.trace)]
    assert s3, "no criterion reached S3"
    for c in s3:
        step = next(s for s in c.trace if s.stage == "S3")
        assert step.rationale.startswith("S3")
        if step.decision is Outcome.ABSTAIN:
            assert ("unparseable" in step.rationale or "abstained" in step.rationale
                    or "failed" in step.rationale)
        else:
            assert c.decided_by == "S3" and step.margin == 0.5
    assert v.cost_usd == 0.0  # a local model is free
    assert [c.decision for c in again.criteria] == [c.decision for c in v.criteria]
