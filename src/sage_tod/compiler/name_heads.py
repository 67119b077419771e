"""Values an entity's name states by its last words: "Clare College" is a college.

A corpus convention, off by default (`SlotSpec.recorded_from_names`). Where a spec
switches it on for a slot, a name the user says whose last word or words are one of
that slot's values or synonyms ("the Cambridge Arts Theatre", "Vue Cinema") states
that value too, as an annotator who records the type of a named attraction reads it.
Switched on for MultiWOZ's hotel and attraction types, the gold validation states hold
21 of the 70 values it reads surely, so the MultiWOZ spec leaves it off
(docs/results-natural.md, round 20).

The reader reads no words of its own: it reads the names the readers before it
extracted from u_t's words for the workflow's name slot (a recorded name said again, a
catalogued or a typed one; not an offer the user accepts, whose name the agent said), so
a name no reader took states nothing, and a value read this way is as
sure as its name. Its mentions are `named_value`s, which the resolver keeps only where
nothing the user said fills the slot, and which claim nothing (the span is the name's).
"""

from __future__ import annotations

from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.mentions import Claims, Mention
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.text.normalize import basic

# (slot, canonical value, basic form), for each slot that records a value from names:
# longest form first, so "concert hall" wins over "hall"
_Heads = tuple[tuple[str, str, str], ...]


def _build_heads(wf: Workflow) -> _Heads:
    heads = [(spec.name, value, form) for spec in wf.slots.values()
             if spec.recorded_from_names
             for value in spec.values
             for form in dict.fromkeys(basic(f) for f in spec.surface_forms(value)) if form]
    return tuple(sorted(heads, key=lambda h: -len(h[2])))


# the sources of a name the user says: not an offer taken ("Yes, please book me a room.")
# nor a name by reference, whose span holds other words
_SAID = frozenset({"state", "categorical", "typed_name"})

_HEADS: Derived[Workflow, _Heads] = Derived("name_heads.heads", _build_heads)


def name_heads(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """The values of `recorded_from_names` slots that the names extracted so far for the
    workflow's name slot end with, one per slot and name."""
    heads = _HEADS.of(wf)
    name_slot = lexicon(wf).name_slot if heads else None
    if name_slot is None:
        return []
    out: list[Mention] = []
    for ex in claims.extracted():
        if (ex.candidates != (name_slot,) or ex.source not in _SAID or ex.start is None
                or ex.end is None):
            continue
        name = basic(ex.value)
        said = u.text[ex.start:ex.end]
        taken: set[str] = set()
        for slot, value, form in heads:
            if slot in taken or not name.endswith(" " + form):
                continue
            taken.add(slot)
            # the value's words at the end of the span, where the text ends with them
            tail = len(form)
            start = ex.end - tail if basic(said[-tail:]) == form else ex.start
            out.append(Mention(value, (slot,), start, ex.end, "named_value",
                               confidence=ex.confidence, narrowed=(slot,)))
    return out
