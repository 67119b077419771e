"""Coverage rules of issue 23 item 3, each on a real utterance.

Utterances are quoted from MultiWOZ 2.1 (MIT licence) dialogues among the 199 set
aside for development in `$SAGE_TOD_DATA/mwzeval/dev_dialogues.json`, as the
natural-failure slice carries them (the user turn, and the published system's agent
turn before it: the slice's history is the system's own output). Each test names its
dialogue and turn index, and each fails without the rule it is about; the clean-turn
tests pin what a rule must not claim.
"""

from __future__ import annotations

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.contracts.criteria import EXACT, FailureClass, IUVArgs
from sage_tod.contracts.spec import SpecBundle, Workflow, parse_spec
from sage_tod.contracts.turns import Turn, parse_turn
from test_extract_natural import SPEC


def _spec() -> SpecBundle:
    return parse_spec(SPEC)


def _wf(name: str) -> Workflow:
    wf = _spec().workflow(name)
    assert wf is not None
    return wf


def _turn(wf: str, user: str, agent_before: str = "", state: dict[str, str] | None = None,
          before: dict[str, str] | None = None) -> Turn:
    history = [{"user": "", "agent": agent_before}] if agent_before else []
    return parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": wf, "user": user,
                       "agent": "", "state_before": before if before is not None else state or {},
                       "state_after": state or {}, "history": history}, _spec()).turn


def _iuv(turn: Turn) -> list[IUVArgs]:
    ctx = make_context(_spec(), turn)
    return [c.args for c in compile_turn(ctx)
            if c.failure_class is FailureClass.IUV and isinstance(c.args, IUVArgs)]


# -- 1. a waiver is recorded only in its own slot ---------------------------------------------

def test_a_waiver_is_not_recorded_by_another_slots_dontcare() -> None:
    # MUL0014 turn 1 (DAMD, MinTL): the parking was waived the turn before; the star
    # rating is waived now and s_t drops it
    state = {"hotel-area": "south", "hotel-parking": "dontcare", "hotel-pricerange": "expensive"}
    turn = _turn("hotel", "I do n't care about the star rating as long as it 's expensive .",
                 "There are 4 hotels that are in the area you are looking for . Would you "
                 "prefer a 3 or 4 star rated hotel ?", state)
    found = [(a.slot, a.value, a.confidence >= EXACT) for a in _iuv(turn)]
    assert ("hotel-stars", "dontcare", True) in found


def test_a_value_inside_another_slots_value_still_counts_as_recorded() -> None:
    # MUL1898 turn 1 (DOTS): "college" in "magdalene college": not ignored (the labels
    # call the turn clean)
    turn = _turn("attraction", "What 's the postcode ? I need to send a letter there . It 's a "
                 "college , right ?", "Yes , Magdalene College is on Magdalene Street and is "
                 "in the West side of town .", {"attraction-name": "magdalene college"})
    assert not _iuv(turn)
