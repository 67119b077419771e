"""sage-tod: state-grounded, abstention-aware evaluation of task-oriented dialogue agents.

Three lines from a notebook::

    import sage_tod
    ev = sage_tod.Evaluator(sage_tod.load_spec("spec.yaml"), config="core")
    for v in ev.evaluate(sage_tod.load_turns("turns.jsonl", ev.spec).records): print(v.verdict)

or what `sage-tod evaluate` does, files in and a verdicts file out::

    sage_tod.evaluate_files(sage_tod.EvaluateRequest(spec=Path("spec.yaml"),
        turns=Path("log.json"), out=Path("verdicts.jsonl"), log_format="tau-bench"))
"""

from typing import Any

from sage_tod._version import __version__
from sage_tod.contracts.criteria import Criterion, Decision, FailureClass, Outcome, Span
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader
from sage_tod.contracts.spec import SlotSpec, SpecBundle, Workflow, load_spec
from sage_tod.contracts.turns import Gold, Turn, TurnRecord, load_turns
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict, read_header, read_verdicts
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.evaluation.run import RunSettings

_LAZY = {"evaluate_files": "sage_tod.pipeline", "EvaluateRequest": "sage_tod.pipeline"}


def __getattr__(name: str) -> Any:
    """The whole-run API loads the importers and writers only when it is used."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sage_tod' has no attribute {name!r}")


__all__ = [
    "Criterion",
    "CriterionVerdict",
    "Decision",
    "EvaluateRequest",
    "Evaluator",
    "FailureClass",
    "Gold",
    "InputError",
    "Outcome",
    "RunHeader",
    "RunSettings",
    "SlotSpec",
    "Span",
    "SpecBundle",
    "Turn",
    "TurnRecord",
    "Verdict",
    "Workflow",
    "__version__",
    "evaluate_files",
    "load_spec",
    "load_turns",
    "read_header",
    "read_verdicts",
]
