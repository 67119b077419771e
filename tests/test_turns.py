from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import load_turns, read_gold_labels


def _line(**over: Any) -> str:
    obj: dict[str, Any] = {"dialogue_id": "d", "turn_id": 0, "workflow": "rest",
                           "user": "hi", "agent": "hello", "state_before": {},
                           "state_after": {"area": "north"}}
    obj.update(over)
    return json.dumps({k: v for k, v in obj.items() if v is not ...})


def _write(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "turns.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


BAD_CASES = [
    ("malformed JSON", '{"dialogue_id": "d",', None, "malformed JSON"),
    ("missing field", _line(agent=...), "agent", "missing required field"),
    ("unknown workflow", _line(workflow="hotel"), "workflow", "unknown workflow id 'hotel'"),
    ("slot not in schema", _line(state_after={"stars": "4"}), "state_after.stars",
     "not in the schema"),
    ("non-string value", _line(state_after={"people": 4}), "state_after.people",
     "expected a string, got number"),
    ("non-string user", _line(user=["hi"]), "user", "expected a string, got list"),
    ("unknown key", _line(state_afer={}), "state_afer", "unknown field"),
    ("not an object", "[1, 2]", None, "JSON object"),
    ("bad gold", _line(gold={"label": "bad"}), "gold.label", ""),
    ("user_values slot", _line(user_values=[{"slot": "zz", "value": "x"}]),
     "user_values[0].slot", "not in the schema"),
]


@pytest.mark.parametrize(("name", "line", "field", "words"), BAD_CASES,
                         ids=[c[0] for c in BAD_CASES])
def test_bad_lines_name_file_line_and_field(tmp_path: Path, spec: SpecBundle, name: str,
                                            line: str, field: str | None, words: str) -> None:
    p = _write(tmp_path, _line(turn_id=5), line)
    with pytest.raises(InputError) as exc:
        load_turns(p, spec)
    prob = exc.value.problem
    assert prob.path == str(p) and prob.line == 2
    assert prob.field == field
    assert words in prob.message


def test_empty_file(tmp_path: Path, spec: SpecBundle) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        load_turns(p, spec)


def test_duplicate_turn(tmp_path: Path, spec: SpecBundle) -> None:
    p = _write(tmp_path, _line(), _line())
    with pytest.raises(InputError, match="duplicate turn d:0"):
        load_turns(p, spec)


def test_skip_invalid_keeps_the_rest(tmp_path: Path, spec: SpecBundle) -> None:
    p = _write(tmp_path, _line(turn_id=0), "{oops", _line(turn_id=1, workflow="x"),
               _line(turn_id=2))
    tf = load_turns(p, spec, skip_invalid=True)
    assert [r.turn.turn_id for r in tf.records] == [0, 2]
    assert [s.line for s in tf.skipped] == [2, 3]


def test_history_is_built_from_earlier_turns(tmp_path: Path, spec: SpecBundle) -> None:
    p = _write(tmp_path, _line(turn_id=0, user="u0", agent="a0"),
               _line(dialogue_id="other", user="x", agent="y"),
               _line(turn_id=1, user="u1", agent="a1"),
               _line(turn_id=2, history=[{"user": "given", "agent": "h"}]))
    recs = load_turns(p, spec).records
    assert recs[0].turn.history == ()
    assert [(h.user, h.agent) for h in recs[2].turn.history or ()] == [("u0", "a0")]
    assert [h.user for h in recs[3].turn.history or ()] == ["given"]


def test_gold_is_kept_beside_the_turn_not_inside(tmp_path: Path, spec: SpecBundle) -> None:
    p = _write(tmp_path, _line(gold={"label": "failure", "class": "UV"}, meta={"k": 1}))
    rec = load_turns(p, spec).records[0]
    assert rec.gold is not None and rec.gold.failure_class == "UV"
    assert not hasattr(rec.turn, "gold") and "gold" not in rec.turn.model_dump()
    assert read_gold_labels(p) == [("d:0", rec.gold)]


def test_unset_values_are_dropped(tmp_path: Path, spec: SpecBundle) -> None:
    p = _write(tmp_path, _line(state_after={"area": "north", "food": None, "name": "",
                                            "time": "not mentioned"}))
    assert load_turns(p, spec).records[0].turn.after() == {"area": "north"}
