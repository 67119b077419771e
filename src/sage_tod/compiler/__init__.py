"""Compiler: one turn -> atomic criteria K_t.

`context` builds the turn context (states, Δ_t), `extract` finds the values the
user supplied (the turn analysis in `utterance`, the readers in `values`,
`descriptors`, `names`, `dontcare` and `offers` return `mentions.Mention`s (an
offer of another workflow's entity is told by `entity_words`), and
`resolve` turns them into extractions by one priority table, with `assign` the slot
assignment), `detect` the agent's requests and confirmations, `compile`
states each criterion with its arguments and evidence span, `kinds` holds the
registry of criterion classes (built-in and plugin).
"""

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import TurnContext, make_context
from sage_tod.compiler.detect import detect_confirmation, detect_requests
from sage_tod.compiler.kinds import CRITERIA, CriterionKind

__all__ = [
    "CRITERIA",
    "CriterionKind",
    "TurnContext",
    "compile_turn",
    "detect_confirmation",
    "detect_requests",
    "make_context",
]
