"""The turn context: one turn with its workflow, cleaned states and state diff.

Built once per turn and read by the compiler and every verifier, so Δ_t and
the unset-stripped states are computed in one place (never gold).
"""

from __future__ import annotations

from dataclasses import dataclass

from sage_tod.compiler.diff import SlotChange, state_diff
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.contracts.turns import Turn


@dataclass(frozen=True)
class TurnContext:
    """Everything about one turn that compiler and verifiers may read (never gold)."""

    turn: Turn
    workflow: Workflow
    spec: SpecBundle
    before: dict[str, str]
    after: dict[str, str]
    diff: tuple[SlotChange, ...]


def make_context(spec: SpecBundle, turn: Turn) -> TurnContext:
    wf = spec.workflow(turn.workflow)
    if wf is None:
        raise KeyError(f"unknown workflow id {turn.workflow!r}")
    before, after = turn.before(), turn.after()
    return TurnContext(turn, wf, spec, before, after, state_diff(spec, wf, before, after))
