"""sage-tod: state-grounded, abstention-aware evaluation of task-oriented dialogue agents.

Three lines from a notebook::

    import sage_tod
    ev = sage_tod.Evaluator(sage_tod.load_spec("spec.yaml"), config="core")
    for v in ev.evaluate(sage_tod.load_turns("turns.jsonl", ev.spec).records): print(v.verdict)
"""

from sage_tod.contracts.criteria import Criterion, Decision, FailureClass, Outcome, Span
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SlotSpec, SpecBundle, Workflow, load_spec
from sage_tod.contracts.turns import Gold, Turn, TurnRecord, load_turns
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict, read_verdicts
from sage_tod._version import __version__
from sage_tod.evaluation.evaluator import Evaluator


__all__ = [
    "Criterion",
    "CriterionVerdict",
    "Decision",
    "Evaluator",
    "FailureClass",
    "Gold",
    "InputError",
    "Outcome",
    "SlotSpec",
    "Span",
    "SpecBundle",
    "Turn",
    "TurnRecord",
    "Verdict",
    "Workflow",
    "__version__",
    "load_spec",
    "load_turns",
    "read_verdicts",
]
