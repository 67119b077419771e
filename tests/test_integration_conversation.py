"""The one transcript -> turns mapping the DeepEval, Inspect and MLflow adapters share."""

from __future__ import annotations

import pytest

from sage_tod import Evaluator, InputError, demo, load_spec, load_turns
from sage_tod.integrations.conversation import (
    Conversation,
    ConversationJudge,
    Message,
    ToolCall,
    acceptable_share,
    from_turns,
    reason,
    to_turns,
)


@pytest.fixture(scope="module")
def demo_records():
    spec = load_spec(demo.spec_path())
    return spec, load_turns(demo.turns_path(), spec).records


def test_turns_file_round_trips_through_transcripts(demo_records):
    spec, records = demo_records
    convs = from_turns(records)
    assert len(convs) == len({r.turn.dialogue_id for r in records})
    back = [r for c in convs for r in to_turns(c, spec)]
    assert len(back) == len(records)
    for a, b in zip(records, back, strict=True):
        assert (b.turn.dialogue_id, b.turn.user, b.turn.agent) == (
            a.turn.dialogue_id, a.turn.user, a.turn.agent)
        assert b.turn.after() == a.turn.after() and b.turn.before() == a.turn.before()
        assert b.turn.agent_acts == a.turn.agent_acts and b.gold == a.gold
        assert b.turn.history == a.turn.history
    ev = Evaluator(spec, "s1")
    assert [v.verdict for v in ev.evaluate(back)] == [v.verdict for v in ev.evaluate(records)]


def test_tool_calls_write_slots_through_a_mapping(spec):
    conv = Conversation("tools-1", [
        Message("system", "You book tables."),
        Message("user", "Italian in the centre please."),
        Message("assistant", "", tool_calls=(ToolCall("search", {"food": "italian",
                                                                  "area": "centre"}),)),
        Message("tool", '{"results": ["Pizza Hut"]}'),
        Message("assistant", "Pizza Hut is an Italian place in the centre. Shall I book it?"),
        Message("user", "Yes, for 4 people."),
        Message("assistant", "Which time would you like?",
                tool_calls=(ToolCall("choose", {"name": "pizza hut"}),)),
        Message("user", "Thanks, bye"),  # no reply: a turn with an empty a_t, as in the CLI
    ], metadata={"workflow": "rest"})
    slots = {"search": {"food": "food", "area": "area"}, "choose": {"name": "name"},
             "book": {"people": "people"}}
    recs = to_turns(conv, spec, tool_slots=slots)
    assert [r.turn.user for r in recs] == ["Italian in the centre please.",
                                           "Yes, for 4 people.", "Thanks, bye"]
    assert recs[2].turn.agent == "" and recs[2].turn.after() == recs[1].turn.after()
    assert recs[0].turn.agent.startswith("Pizza Hut is")
    assert recs[0].turn.after() == {"food": "italian", "area": "centre"}
    assert recs[1].turn.before() == recs[0].turn.after()
    assert recs[1].turn.after() == {"food": "italian", "area": "centre", "name": "pizza hut"}
    assert recs[1].turn.history[0].user == "Italian in the centre please."
    verdicts = list(Evaluator(spec, "s1").evaluate(recs))
    # the agent never recorded the party size the user gave: IUV with the span
    assert verdicts[1].verdict == "failure" and "IUV" in verdicts[1].classes
    assert "'4'" in reason(verdicts) and "repair:" in reason(verdicts)
    assert acceptable_share(verdicts) == sum(v.verdict == "acceptable" for v in verdicts) / 3


def test_states_from_conversation_metadata_and_namespaced_keys(spec):
    conv = Conversation("meta-1", [Message("user", "Somewhere north."),
                                   Message("assistant", "North it is. Which food?")],
                        metadata={"sage_tod": {"workflow": "rest", "states": [{"area": "north"}],
                                               "initial_state": {"food": None}}})
    (rec,) = to_turns(conv, spec)
    assert rec.turn.after() == {"area": "north"} and rec.turn.state_before == {"food": None}


def test_missing_state_unknown_slot_and_ambiguous_workflow_are_located_errors(spec):
    msgs = [Message("user", "Hi"), Message("assistant", "Hello")]
    with pytest.raises(InputError, match=r"<conversation c1>:0: field 'state': turn 0 has no"):
        to_turns(Conversation("c1", msgs), spec, workflow="rest")
    bad = [Message("user", "Hi"), Message("assistant", "Hello", metadata={"state": {"x": "1"}})]
    with pytest.raises(InputError, match=r"<deepeval c2>:0: field 'state_after.x'"):
        to_turns(Conversation("c2", bad), spec, workflow="rest", source="deepeval")
    with pytest.raises(InputError, match="no workflow"):
        to_turns(Conversation("c3", bad), spec)
    with pytest.raises(InputError, match="no assistant reply"):
        to_turns(Conversation("c4", [Message("user", "Hi")]), spec, workflow="rest")


def test_judge_builds_its_evaluator_once(spec):
    judge = ConversationJudge(spec, config="s1", workflow="rest")
    conv = Conversation("j", [Message("user", "North please."),
                              Message("assistant", "Done.", metadata={"state": {"area": "north"}})])
    first = judge.judge(conv)
    ev = judge.evaluator
    again = judge.judge(conv)
    assert [v.criteria for v in again] == [v.criteria for v in first]
    assert judge.evaluator is ev
    assert first[0].config == "s1"


def test_core_imports_load_none_of_the_integration_libraries():
    """`import sage_tod`, the CLI and the gate stay free of MLflow, DeepEval and Inspect."""
    import subprocess
    import sys

    code = ("import sys, sage_tod, sage_tod.cli, sage_tod.integrations.gate, "
            "sage_tod.integrations.conversation; "
            "print(sorted(m for m in ('mlflow', 'deepeval', 'inspect_ai') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True)
    assert r.stdout.strip() == "[]"


TOOLS_SPEC = """
version: 1
workflows:
  - id: book_flight
    slots:
      - {name: user-id, description: user id of the customer}
      - {name: origin, description: origin airport of the flight}
      - {name: destination, description: destination airport of the flight}
    required: [user-id, origin, destination]
    order: [[user-id], [origin, destination]]
    tools:
      get_user_details: {args: {user_id: user-id}}
      book_reservation:
        confirms: true
        args: {user_id: user-id, origin: origin, destination: destination}
"""


@pytest.fixture(scope="module")
def tools_spec(tmp_path_factory):
    p = tmp_path_factory.mktemp("tools") / "spec.yaml"
    p.write_text(TOOLS_SPEC, encoding="utf-8")
    return load_spec(p)


def test_the_specs_tool_mapping_is_read_by_the_importers_rules(tools_spec):
    """No state given: the spec's `tools` fill s_t; a failed call writes nothing."""
    conv = Conversation("fl-1", [
        Message("assistant", "Hello! How can I help?"),  # greeting: history, not a turn
        Message("user", "I'm mia_123, I want to fly from JFK to SFO."),
        Message("assistant", "", tool_calls=(
            ToolCall("get_user_details", {"user_id": "mia_123"}, id="c1"),)),
        Message("tool", "{...}", call_id="c1"),
        Message("assistant", "Thanks Mia. Booking JFK to SFO now.", tool_calls=(
            ToolCall("book_reservation", {"user_id": "mia_123", "origin": "JFK",
                                          "destination": "SFO"},
                     output="Error: payment declined"),)),
        Message("user", "Great, thanks!"),
        Message("assistant", "Your flight is booked.", tool_calls=(
            ToolCall("book_reservation", {"user_id": "mia_123", "origin": "JFK",
                                          "destination": "SFO"}, output="ok"),)),
    ])
    recs = to_turns(conv, tools_spec)
    assert [r.turn.user for r in recs] == ["I'm mia_123, I want to fly from JFK to SFO.",
                                           "Great, thanks!"]
    assert recs[0].turn.history[0].agent == "Hello! How can I help?"
    # the failed booking wrote nothing: only the lookup's argument is recorded
    assert recs[0].turn.after() == {"user-id": "mia_123"}
    assert recs[1].turn.after() == {"user-id": "mia_123", "origin": "JFK",
                                    "destination": "SFO"}
    assert recs[1].turn.agent_acts is not None and recs[1].turn.agent_acts.confirm is True
    verdicts = list(Evaluator(tools_spec, "s1").evaluate(recs))
    # the booking is a committing call, judged where it happens: the user's "Great, thanks!"
    # to "Booking JFK to SFO now." is no yes to a read-back, so the confirmation check fires
    # (the refused first booking raised nothing)
    assert [c.id for c in verdicts[0].criteria] == []
    pc = {c.id: c.decision.value for c in verdicts[1].criteria if str(c.failure_class) == "PC"}
    assert pc == {"PC:call0:confirmation": "true"}
