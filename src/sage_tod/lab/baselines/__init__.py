"""LLM-as-judge baselines (G-Eval, FrugalGPT, single-call), transcript-only and state-aware."""

from sage_tod.lab.baselines.runner import (
    available_baselines,
    build_judge,
    iter_judgements,
    run_baseline,
)

__all__ = ["available_baselines", "build_judge", "iter_judgements", "run_baseline"]
