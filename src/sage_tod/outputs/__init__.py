"""Outputs: what users read — console tables, the HTML report, scores, the pytest helpers."""


from sage_tod.outputs.scoring import ScoreReport, score
from sage_tod.outputs.testing import TurnsFailedError, assert_turns_pass

__all__ = ["ScoreReport", "TurnsFailedError", "assert_turns_pass", "score"]
