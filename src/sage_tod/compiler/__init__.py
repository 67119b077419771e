"""Compiler: one turn -> atomic criteria K_t.

`context` builds the turn context (states, Δ_t), `extract` finds the values the
user supplied, `detect` the agent's requests and confirmations, `compile`
states each criterion with its arguments and evidence span.
"""


from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import TurnContext, make_context

__all__ = ["TurnContext", "compile_turn", "make_context"]
