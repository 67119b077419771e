"""Corpus conventions a spec switches on (issue 23 item 3): a value stated by the word the
task is named by ("a hotel" for hotel-type = hotel) and by the last words of a name
("Clare College" for attraction-type = college), each off by default.

Utterances are quoted from MultiWOZ 2.1 (MIT licence) validation dialogues, the
development split, each named by dialogue and turn index; MultiWOZ's own annotation
records these values for some of them only, which is why both conventions are off in
the MultiWOZ spec (docs/results-natural.md, round 20).
"""

from __future__ import annotations

import copy

import pytest

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import extract_user_values
from sage_tod.contracts.criteria import EXACT, FailureClass, IUVArgs
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import parse_turn
from test_extract_natural import SPEC


def _spec(**options: bool) -> SpecBundle:
    """The test spec with `options` set on hotel-type and attraction-type."""
    doc = copy.deepcopy(SPEC)
    for wf in doc["workflows"]:
        for slot in wf["slots"]:
            if slot["name"] in ("hotel-type", "attraction-type"):
                slot.update(options)
    return parse_spec(doc)


def _iuv(spec: SpecBundle, wf: str, user: str, state: dict[str, str] | None = None
         ) -> list[tuple[str, str, bool]]:
    """(slot, value, decided by S1) of the IUV criteria the turn raises."""
    turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": wf, "user": user,
                       "agent": "", "state_before": state or {},
                       "state_after": state or {}}, spec).turn
    ctx = make_context(spec, turn)
    return [(c.args.slot, c.args.value, c.args.confidence >= EXACT) for c in compile_turn(ctx)
            if c.failure_class is FailureClass.IUV and isinstance(c.args, IUVArgs)]


# MUL0012 turn 0: the gold state records hotel-type = hotel for it
_A_HOTEL = "I need information on a hotel that includes free parking please ."


def test_the_task_word_states_the_value_only_where_the_spec_says_so() -> None:
    on = _iuv(_spec(recorded_from_task_word=True), "hotel", _A_HOTEL)
    off = _iuv(_spec(), "hotel", _A_HOTEL)
    assert ("hotel-type", "hotel", True) in on
    assert not [c for c in off if c[0] == "hotel-type"]
    # recorded: nothing ignored
    assert not [c for c in _iuv(_spec(recorded_from_task_word=True), "hotel", _A_HOTEL,
                                {"hotel-type": "hotel", "hotel-parking": "yes"})
                if c[0] == "hotel-type"]


def test_a_recorded_name_states_its_type_where_the_spec_says_so() -> None:
    # PMUL1018 turn 4: the name is recorded, the type is not
    user = "i also need information on an attraction called the fitzwilliam museum ."
    state = {"attraction-name": "the fitzwilliam museum"}
    on = _iuv(_spec(recorded_from_names=True), "attraction", user, state)
    assert on == [("attraction-type", "museum", True)]  # as sure as the recorded name
    assert _iuv(_spec(), "attraction", user, state) == []
    # the type recorded too: nothing ignored
    assert _iuv(_spec(recorded_from_names=True), "attraction", user,
                {**state, "attraction-type": "museum"}) == []


def test_a_typed_name_states_its_type_as_surely_as_the_name() -> None:
    # PMUL2623 turn 4: a name typed after a request, no catalogue
    user = ("You know what , come to think of it we 'll find a restaurant later . Can you "
            "tell me some information on Clare College ?")
    spec = _spec(recorded_from_names=True)
    turn = parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": "attraction", "user": user,
                       "agent": "", "state_before": {}, "state_after": {}}, spec).turn
    wf = spec.workflow("attraction")
    assert wf is not None
    got = {e.candidates: e for e in extract_user_values(turn, wf, spec)}
    name, kind = got[("attraction-name",)], got[("attraction-type",)]
    assert kind.value == "college" and kind.source == "named_value"
    assert kind.confidence == name.confidence
    assert user[kind.start or 0:kind.end] == "College"
    off = _spec()
    wf_off = off.workflow("attraction")
    assert wf_off is not None
    assert ("attraction-type",) not in {e.candidates for e in extract_user_values(
        parse_turn({"dialogue_id": "d", "turn_id": 1, "workflow": "attraction", "user": user,
                    "agent": "", "state_before": {}, "state_after": {}}, off).turn,
        wf_off, off)}


def test_a_name_whose_last_word_is_no_value_states_nothing() -> None:
    # PMUL4850 turn 0: "gallery" is no attraction type of the spec
    user = "Can you find a place called lynne strover gallery ."
    found = _iuv(_spec(recorded_from_names=True), "attraction", user)
    assert ("attraction-name", "lynne strover gallery") in {c[:2] for c in found}
    assert not [c for c in found if c[0] == "attraction-type"]


def test_the_conventions_are_booleans_in_the_spec() -> None:
    doc = copy.deepcopy(SPEC)
    doc["workflows"][0]["slots"][1]["recorded_from_names"] = "sometimes"
    with pytest.raises(InputError, match="recorded_from_names"):
        parse_spec(doc)
