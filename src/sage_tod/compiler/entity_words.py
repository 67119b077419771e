"""Which workflow an entity belongs to, read from the words that describe it.

A spec with several workflows that each name an entity (MultiWOZ's hotel, restaurant
and attraction) lets an agent offer one workflow's entity while the user's turn is
routed to another: "The archway guesthouse is moderately priced. Would you like to book
a room?" - "Yes. I am looking for an indian restaurant in the cheap price range."
(MultiWOZ val MUL0013 turn 3, a restaurant turn). The "yes" takes the guesthouse, which
is no value of the restaurant's name slot.

`EntityWords` maps each word that describes an entity to the workflows whose entities
it can describe: the listed values of their categorical and listed free slots (types,
cuisines, and a name catalogue where the spec lists one), and their own words (the
workflow id, `cues.domain_words`). Only workflows with a name slot take part: an entity
is offered by name, and a travel workflow's values (stations, towns) describe a trip,
not the entity (the Cambridge in "a restaurant in Cambridge"). Yes/no values are left
out ("free" describes wifi and entrance alike).

`elsewhere(wf, name)` is true when the offered name is another workflow's: the spec
lists it for another workflow and not for `wf` (a name catalogue), or its head, its
last words, is a describing word of exactly one other workflow ("the archway
guesthouse", "University Arms Hotel"; not "Hotel du Vin and Bistro"). Words several
such workflows share ("moderate", "centre") decide nothing. The words around the name
decide nothing either: "located at Cambridge retail park" gives an address, not an
attraction (MultiWOZ val PMUL0690 turn 5, "the pizza hut fen ditton is located at
...").
"""

from __future__ import annotations

from collections.abc import Mapping

from sage_tod.compiler.cues import naming_words
from sage_tod.compiler.lexicon import lexicon
from sage_tod.contracts.spec import Derived, SpecBundle, Workflow
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.normalize import basic

_LONGEST = 3  # words in the longest head looked for ("guest house")


class EntityWords:
    """The describing words of one spec's entity workflows (module docstring)."""

    __slots__ = ("entity_workflows", "owners")

    def __init__(self, spec: SpecBundle) -> None:
        owners: dict[str, set[str]] = {}
        for wf in spec.workflows.values():
            if lexicon(wf).name_slot is None:
                continue
            words = set(naming_words(wf))
            for slot in wf.slots.values():
                if not slot.values or slot.type not in {"categorical", "free"}:
                    continue
                for value in slot.values:
                    for form in slot.surface_forms(value):
                        if normalize_boolean(form) is None and basic(form):
                            words.add(basic(form))
                            if slot.type == "categorical" and " " not in basic(form):
                                words.add(basic(form) + "s")  # "museums", "guesthouses"
            for w in words:
                owners.setdefault(w, set()).add(wf.id)
        self.owners: Mapping[str, frozenset[str]] = {w: frozenset(ids)
                                                    for w, ids in owners.items()}
        self.entity_workflows = frozenset(i for ids in owners.values() for i in ids)

    def elsewhere(self, wf: Workflow, name: str) -> bool:
        """`name`, offered by the agent, is an entity of another workflow."""
        if wf.id not in self.entity_workflows:
            return False  # `wf` names no entity the spec describes
        words = basic(name).split()
        listed = self.owners.get(" ".join(words))
        if listed is not None:  # a name the spec lists (a catalogue)
            return wf.id not in listed
        for n in range(min(_LONGEST, len(words) - 1), 0, -1):
            # the name's head, its last words: "the archway guesthouse", "University
            # Arms Hotel" (not "Hotel du Vin and Bistro", a restaurant)
            ids = self.owners.get(" ".join(words[-n:]))
            if ids is not None:
                return len(ids) == 1 and wf.id not in ids
        return False


_ENTITY_WORDS: Derived[SpecBundle, EntityWords] = Derived("entity_words", EntityWords)


def entity_words(spec: SpecBundle) -> EntityWords:
    """The spec's entity words, built the first time they are asked for."""
    return _ENTITY_WORDS.of(spec)
