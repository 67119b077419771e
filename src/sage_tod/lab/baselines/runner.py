"""LLM-as-judge baselines (paper, "Baselines"; Appendix D), transcript-only and state-aware.

    >>> from sage_tod.lab.baselines.runner import BASELINES, run_baseline
    >>> verdicts = run_baseline("geval_st", spec, records, {"llm_model": "gpt-4.1",
    ...                          "llm_base_url": "https://api.openai.com/v1"})  # doctest: +SKIP

Names are `<family>_<mode>`: families geval, frugal, single; modes `tr`
(transcript-only) and `st` (state-aware). `client_config` is an `LLMConfig`
or an options dict (`llm_*` keys and env fallbacks as for S3, docs/llm.md,
plus the baseline keys below). docs/baselines.md has the prompts and protocol.

Baseline option keys: geval_samples (6), geval_threshold (3.0; fix it on the
dev split with `calibrate_threshold`), frugal_threshold (0.8), llm_cheap_model
/ llm_cheap_base_url / llm_cheap_azure_deployment (FrugalGPT's cheap stage;
default: the same endpoint and model), baseline_history (6 exchanges),
batch_size (16 turns per parallel batch).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from sage_tod.compiler.context import TurnContext, make_context
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import Turn, TurnRecord, as_turn
from sage_tod.contracts.verdicts import Verdict
from sage_tod.lab.baselines.context import DEFAULT_HISTORY, Mode
from sage_tod.lab.baselines.judges import (
    FRUGAL_THRESHOLD,
    GEVAL_SAMPLES,
    GEVAL_THRESHOLD,
    FrugalJudge,
    GEvalJudge,
    Judge,
    Judgement,
    SingleJudge,
    calibrate_threshold,
    parse_geval_score,
    parse_judge_json,
)
from sage_tod.llm.client import LLMClient
from sage_tod.llm.config import LLMConfig, config_from_options

FAMILIES: tuple[str, ...] = ("geval", "frugal", "single")
MODES: tuple[Mode, ...] = ("st", "tr")
BASELINES: tuple[str, ...] = tuple(f"{f}_{m}" for f in FAMILIES for m in MODES)

__all__ = [
    "BASELINES",
    "FrugalJudge",
    "GEvalJudge",
    "Judgement",
    "SingleJudge",
    "available_baselines",
    "build_judge",
    "calibrate_threshold",
    "iter_judgements",
    "parse_geval_score",
    "parse_judge_json",
    "run_baseline",
]


def available_baselines() -> list[str]:
    return list(BASELINES)


def _split(name: str) -> tuple[str, Mode]:
    fam, _, mode = name.partition("_")
    if fam not in FAMILIES or mode not in MODES:
        raise ValueError(f"unknown baseline {name!r}; available: {', '.join(BASELINES)}")
    return fam, "st" if mode == "st" else "tr"


def _cheap_config(strong: LLMConfig, opts: Mapping[str, Any]) -> LLMConfig:
    def get(key: str) -> Any:
        return opts.get(f"llm_cheap_{key}") or os.environ.get(f"SAGE_TOD_LLM_CHEAP_{key.upper()}")
    model, base, dep = get("model"), get("base_url"), get("azure_deployment")
    if not (model or base or dep):
        return strong
    return replace(strong, model=model or strong.model, base_url=base or strong.base_url,
                   azure_deployment=dep or (None if model else strong.azure_deployment))


def build_judge(name: str, client_config: LLMConfig | Mapping[str, Any],
                clients: Mapping[str, LLMClient] | None = None) -> tuple[Judge, list[LLMClient]]:
    """The judge for `name` and the clients it created (the caller closes those).

    `clients` may supply ready clients under "strong" and "cheap" (tests use
    this to count calls; a benchmark uses it to share one cache and pool).
    """
    fam, mode = _split(name)
    opts: Mapping[str, Any] = {} if isinstance(client_config, LLMConfig) else client_config
    strong_cfg = (client_config if isinstance(client_config, LLMConfig)
                  else config_from_options(client_config))
    given = dict(clients or {})
    made: list[LLMClient] = []

    def client(role: str, cfg: LLMConfig) -> LLMClient:
        if role not in given:
            given[role] = LLMClient(cfg)
            made.append(given[role])
        return given[role]

    history = int(opts.get("baseline_history", DEFAULT_HISTORY))
    strong = client("strong", strong_cfg)
    judge: Judge
    if fam == "geval":
        judge = GEvalJudge(mode, strong, history=history,
                           samples=int(opts.get("geval_samples", GEVAL_SAMPLES)),
                           threshold=float(opts.get("geval_threshold", GEVAL_THRESHOLD)))
    elif fam == "single":
        judge = SingleJudge(mode, strong, history=history)
    else:
        cheap_cfg = _cheap_config(strong_cfg, opts)
        cheap = strong if cheap_cfg == strong_cfg and "cheap" not in given else client(
            "cheap", cheap_cfg)
        judge = FrugalJudge(mode, cheap, strong, history=history,
                            threshold=float(opts.get("frugal_threshold", FRUGAL_THRESHOLD)))
    return judge, made


def _contexts(spec: SpecBundle, records: Iterable[Turn | TurnRecord | Mapping[str, Any]]
              ) -> Iterator[TurnContext]:
    for rec in records:
        yield make_context(spec, as_turn(rec, spec))


def iter_judgements(name: str, spec: SpecBundle | str | Path,
                    records: Iterable[Turn | TurnRecord | Mapping[str, Any]],
                    client_config: LLMConfig | Mapping[str, Any], *,
                    clients: Mapping[str, LLMClient] | None = None) -> Iterator[Judgement]:
    """Judgements (verdict + scores/escalation/reasons) in input order, batch by batch."""
    bundle = spec if isinstance(spec, SpecBundle) else load_spec(spec)
    opts = {} if isinstance(client_config, LLMConfig) else client_config
    batch_size = max(1, int(opts.get("batch_size", 16)))
    judge, made = build_judge(name, client_config, clients)
    try:
        batch: list[TurnContext] = []
        for ctx in _contexts(bundle, records):
            batch.append(ctx)
            if len(batch) >= batch_size:
                yield from judge.judge(batch)
                batch = []
        if batch:
            yield from judge.judge(batch)
    finally:
        for c in made:
            c.close()


def run_baseline(name: str, spec: SpecBundle | str | Path,
                 records: Iterable[Turn | TurnRecord | Mapping[str, Any]],
                 client_config: LLMConfig | Mapping[str, Any], *,
                 clients: Mapping[str, LLMClient] | None = None) -> Iterator[Verdict]:
    """One `Verdict` per turn (config=`name`, criteria=[], stages=[]), in input order."""
    for j in iter_judgements(name, spec, records, client_config, clients=clients):
        yield j.verdict
