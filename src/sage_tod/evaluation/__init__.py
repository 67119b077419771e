"""Evaluation: the cascade of stages, the aggregator, and the Evaluator that runs both."""


from sage_tod.evaluation.aggregate import repair_signal, turn_verdict
from sage_tod.evaluation.cascade import Cascade, CriterionResult
from sage_tod.evaluation.evaluator import Evaluator

__all__ = ["Cascade", "CriterionResult", "Evaluator", "repair_signal", "turn_verdict"]
