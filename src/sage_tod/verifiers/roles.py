"""Which slot a mention of a value is about: role words around it, from the schema.

"3" is stated by "for 3 nights" and by "for 3 people", "cambridge" by "from
cambridge" and by "to cambridge"; only one of each supports a given slot. The
word nearest to a mention that points at slots of the workflow (cue words
derived from slot names and descriptions, `compiler.cues`) decides its role:
after a count ("3 *nights*") or before any value ("*arrive by* 11:15", "*from*
cambridge"). A mention whose deciding word points only at *other* slots of the
same value type is that other slot's value, not this one's; a mention with no
role word says nothing either way (it still supports, as before).

Directional prepositions are the one generic addition to the schema cues:
"from X" names the origin and "to X" the destination whenever a workflow has
slots whose names or descriptions say departure/destination (origin, pickup,
dropoff, ... through `cues.CONCEPTS`), so SGD and user specs get them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sage_tod.compiler.cues import CONCEPTS, SlotCues, domain_words, slot_cues
from sage_tod.compiler.lexicon import value_keys
from sage_tod.contracts.spec import Derived, Workflow

# directional prepositions -> the concept whose slots they point at
_PREPOSITIONS = {"from": "departure", "to": "destination", "towards": "destination"}
# a place right after these words is where the trip starts ("leave cambridge")
_STARTS = frozenset({"leave", "leaving", "depart", "departing"})
_DIRECTIONAL = frozenset(_PREPOSITIONS) | CONCEPTS["departure"] | CONCEPTS["destination"]
_ARTICLES = frozenset({"the", "a", "an"})
_PUNCT = re.compile(r"[,.;:!?()]")
_BEFORE = 3  # words before a mention that may carry its role
_TOKEN = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Role:
    """The slots the deciding word around a mention points at, and that word."""

    slots: frozenset[str]
    word: str


@dataclass(frozen=True)
class _Tables:
    """What the role rules read of a workflow whatever the mention: built once per
    workflow and kept with it (`Derived`), not again for every mention of every value."""

    concepts: Mapping[str, frozenset[str]]  # concept -> the slots its cue words point at
    trip: frozenset[str]  # the departure and destination slots
    words: frozenset[str]  # `workflow_words`
    role: Mapping[str, tuple[str, ...]]  # slot -> `_slot_role` of its name


def _build_tables(wf: Workflow) -> _Tables:
    cues = slot_cues(wf)
    concepts = {c: frozenset(cues.slots_for(sorted(members))) for c, members in CONCEPTS.items()}
    domain = domain_words(wf)
    return _Tables(
        concepts=concepts, trip=concepts["departure"] | concepts["destination"],
        words=frozenset(_stem_word(w) for w in _TOKEN.findall(wf.id.lower()) + sorted(domain)
                        if len(w) > 2),
        role={n: _slot_role(n, domain) for n in wf.slots})


_TABLES: Derived[Workflow, _Tables] = Derived("roles.tables", _build_tables)


def _points(cues: SlotCues, wf: Workflow, word: str, *, place: bool = False) -> frozenset[str]:
    if word in _PREPOSITIONS:
        return _TABLES.of(wf).concepts[_PREPOSITIONS[word]]
    if place and word in _STARTS:
        return _TABLES.of(wf).concepts["departure"]
    return frozenset(s for s in cues.slots_for([word]) if s in wf.slots)


def mention_role(text: str, start: int, end: int, wf: Workflow, *, kind: str) -> Role | None:
    """The role of the mention text[start:end] in workflow `wf`, or None when no word says.

    By the value's `kind` (slot type): a count's role is the word right after
    it ("3 nights"); a time's is a cue word up to three words before it within
    its clause ("arrive by 11:15"); any other value's is a directional word
    before it ("from the hotel", "going to cambridge"). Other words before a
    value ("looking for the cotto", "area with a moderate price") are too loose
    to decide a role, and measured so on the natural slice.
    """
    cues = slot_cues(wf)
    if kind == "number":
        after = _TOKEN.search(text[end:].lower())
        if after is not None and not text[end:end + after.start()].strip(" "):
            slots = _points(cues, wf, after.group())
            if slots:
                return Role(slots, after.group())
        return None
    before = text[:start]
    pos = start
    nearer: list[str] = []
    for word, m_start, m_end in reversed(_last_words(before)):
        if _PUNCT.search(before[m_end:pos]):
            break  # another clause
        near = not nearer or all(w in _ARTICLES for w in nearer)
        if kind == "time":
            slots = _points(cues, wf, word)
        elif word in _PREPOSITIONS or word in _STARTS:
            # "to"/"from" only right before the place ("going to the hotel"), not the
            # "to" of "I'd like to leave cambridge"
            slots = _points(cues, wf, word, place=True) if near else frozenset()
        else:
            slots = _points(cues, wf, word) if word in _DIRECTIONAL else frozenset()
        if slots:
            return Role(slots, word)
        if word in ("and", "but", "or"):
            break
        nearer.append(word)
        pos = m_start
    return None


_WINDOW = 96  # characters before a mention read first for its last `_BEFORE` words


def _last_words(before: str) -> list[tuple[str, int, int]]:
    """The last `_BEFORE` matches of `_TOKEN` in `before.lower()` (word, start, end), as
    `list(_TOKEN.finditer(before.lower()))[-_BEFORE:]` gives them, read from a window
    at the end of a long ASCII text: the window starts where no letter precedes it, so
    no word runs across its start, and the pattern (letters, no look-around) matches
    there as in the whole text; with fewer than `_BEFORE` words in it, the whole text is
    read."""
    o = len(before) - _WINDOW
    if o > 0 and before.isascii():
        while o > 0 and before[o - 1].isalpha():
            o -= 1
        got = [(m.group(), m.start() + o, m.end() + o)
               for m in _TOKEN.finditer(before[o:].lower())][-_BEFORE:]
        if len(got) == _BEFORE or o == 0:
            return got
    return [(m.group(), m.start(), m.end())
            for m in _TOKEN.finditer(before.lower())][-_BEFORE:]


def other_role(text: str, start: int, end: int, slot: str, wf: Workflow) -> Role | None:
    """The role, when it makes this mention another slot's value of the same type.

    None when the mention is this slot's, or when no word around it decides.
    """
    spec = wf.slots.get(slot)
    if spec is None:
        return None
    role = mention_role(text, start, end, wf, kind=spec.type)
    if role is None or slot in role.slots:
        return None
    rivals = frozenset(s for s in role.slots if wf.slots[s].type == spec.type)
    return Role(rivals, role.word) if rivals else None


_SENTENCE_END = re.compile(r"[.!?]+(\s|$)")


def _stem_word(w: str) -> str:
    return w[:-1] if len(w) > 4 and w.endswith("s") else w


def workflow_words(wf: Workflow) -> frozenset[str]:
    """Words that name a workflow: its id's words and the words in most of its slot names
    ("hotel"; SGD's "Restaurants_1" gives "restaurant")."""
    return _TABLES.of(wf).words


def _slot_role(name: str, domain: frozenset[str]) -> tuple[str, ...]:
    """A slot name without its workflow's words: "hotel-bookpeople" -> ("bookpeople",)."""
    return tuple(w for w in _TOKEN.findall(name.lower()) if w not in domain)


def other_domain(text: str, start: int, end: int, slot: str, wf: Workflow,
                 workflows: Iterable[Workflow], value: str) -> Role | None:
    """The other workflow a mention's sentence is about, when it names only that one.

    "I need a table at the restaurant for 3" states 3 for the restaurant's party, not the
    hotel's: a sentence that names another workflow with the same slot (the slot name
    without the workflow's words: hotel-bookpeople / restaurant-bookpeople) that can hold
    the value, and not the slot's own workflow, does not support the slot. Only for specs
    whose slot names carry their workflow's words (MultiWOZ-style `domain-slot`): in SGD
    "Media" and "Movies" both speak of movies, so a workflow word says too little. Days
    and times carry over between workflows by design ("the same day"), and so do the
    places of a trip ("a taxi to the hotel"):
    those are not checked (measured on the natural slice: UV false alarms 39 -> 61 when
    every type was).
    """
    spec = wf.slots.get(slot)
    if spec is None or spec.type in ("date", "time"):
        return None
    tables = _TABLES.of(wf)
    if slot in tables.trip:
        return None
    a = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    m = _SENTENCE_END.search(text, end)
    sentence = {_stem_word(w) for w in _TOKEN.findall(text[a:m.start() if m else len(text)]
                                                     .lower())}
    if not domain_words(wf) or sentence & tables.words:
        return None
    role = tables.role[slot]
    for other in workflows:
        theirs = _TABLES.of(other)
        if other.id == wf.id or not domain_words(other) or not sentence & theirs.words:
            continue
        rivals = frozenset(n for n, sp in other.slots.items() if sp.type == spec.type and (
            theirs.role[n] == role) and (
            not sp.values or sp.normalize(value) in value_keys(other, n)))
        if rivals:
            return Role(rivals, sorted(sentence & theirs.words)[0])
    return None


__all__ = ["Role", "mention_role", "other_domain", "other_role", "workflow_words"]
