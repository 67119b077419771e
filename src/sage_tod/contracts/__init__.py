"""Contracts: the public formats — workflow spec, outcome predicate, turns, verdicts, errors.

What users write (spec, turns) and read (verdicts), documented in
docs/formats.md and changed only compatibly. Everything else imports these.
"""


from sage_tod.contracts.criteria import (
    Criterion,
    CriterionArgs,
    Decision,
    FailureClass,
    IUVArgs,
    Outcome,
    PCArgs,
    Span,
    UVArgs,
    WNFArgs,
)
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SlotSpec, SpecBundle, Workflow, load_spec, parse_spec
from sage_tod.contracts.turns import Gold, Turn, TurnRecord, load_turns, parse_turn
from sage_tod.contracts.verdicts import CriterionVerdict, Verdict, read_verdicts, write_verdicts

__all__ = [
    "Criterion",
    "CriterionArgs",
    "CriterionVerdict",
    "Decision",
    "FailureClass",
    "Gold",
    "IUVArgs",
    "InputError",
    "Outcome",
    "PCArgs",
    "SlotSpec",
    "Span",
    "SpecBundle",
    "Turn",
    "TurnRecord",
    "UVArgs",
    "Verdict",
    "WNFArgs",
    "Workflow",
    "load_spec",
    "load_turns",
    "parse_spec",
    "parse_turn",
    "read_verdicts",
    "write_verdicts",
]
