"""Evaluation: named configurations, the cascade of stages, the aggregator, and the
Evaluator that runs them."""

from sage_tod.evaluation.aggregate import repair_signal, turn_verdict
from sage_tod.evaluation.cascade import Cascade, CriterionResult
from sage_tod.evaluation.configs import CONFIGS, StageConfig, config_names, get_config
from sage_tod.evaluation.evaluator import Evaluator

__all__ = [
    "CONFIGS",
    "Cascade",
    "CriterionResult",
    "Evaluator",
    "StageConfig",
    "config_names",
    "get_config",
    "repair_signal",
    "turn_verdict",
]
