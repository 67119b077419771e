"""The embedded demo is what the README promises: 15-30 gold-labelled dialogues."""

from __future__ import annotations

from collections import Counter

from sage_tod import demo
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import load_turns


def test_demo_dialogues_cover_every_class(demo_spec: SpecBundle) -> None:
    recs = load_turns(demo.turns_path(), demo_spec).records
    dialogues = {r.turn.dialogue_id for r in recs}
    assert 15 <= len(dialogues) <= 30
    classes = Counter(r.gold.failure_class for r in recs if r.gold and r.gold.label == "failure")
    assert all(classes[c] >= 2 for c in ("IUV", "WNF", "PC", "UV")), classes
    assert sum(1 for r in recs if r.gold and r.gold.label == "acceptable") > 20


def test_demo_states_are_continuous(demo_spec: SpecBundle) -> None:
    recs = load_turns(demo.turns_path(), demo_spec).records
    last: dict[str, dict[str, str]] = {}
    for r in recs:
        t = r.turn
        if t.dialogue_id in last:
            assert t.before() == last[t.dialogue_id], t.key
        last[t.dialogue_id] = t.after()
