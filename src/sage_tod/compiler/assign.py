"""Which slot a value belongs to: the one slot-assignment function of the extractor.

A value read in u_t often fits several slots of the workflow (a station: departure or
destination; a date: pick-up or drop-off). The words just before it narrow them: a cue
word of a slot ("leaving from", "arrive by"), a preposition that points at the slot's
role ("from", "until"); and a slot whose name adds a qualifier the user did not say
loses ("my checking account" is `account_type`, not `recipient_account_type`). The
resolver narrows every mention whose reader did not (`resolve.resolve`), and readers
whose decision depends on the narrowing (a clock time is exact once narrowed to one
slot) call the same function, so there is one rule, not one per reader.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sage_tod.compiler.cues import cue_tokens, slot_cues
from sage_tod.contracts.spec import Derived, SlotSpec, Workflow
from sage_tod.text.normalize import tokens_before

# the preposition before a value -> the words of the slots it points at
PREP_HINTS: Mapping[str, frozenset[str]] = {
    "from": frozenset({"departure", "depart", "leave", "leaving", "origin", "originates",
                       "pickup", "from", "start"}),
    **{verb: frozenset({"departure", "depart", "leave", "leaving", "origin", "originates",
                         "pickup", "from"})
       for verb in ("leave", "leaves", "depart", "departs", "departing")},
    "leaving": frozenset({"departure", "depart", "leave", "leaving", "origin", "originates",
                          "pickup", "from"}),
    "to": frozenset({"destination", "going", "heading", "dropoff", "arrive", "to", "ends"}),
    "after": frozenset({"leave", "depart", "departure", "leaveat"}),
    "by": frozenset({"arrive", "arriveby", "arrival"}),
    "before": frozenset({"arrive", "arriveby", "arrival"}),
    "until": frozenset({"dropoff", "return", "end", "until", "checkout", "out", "drop"}),
    "till": frozenset({"dropoff", "return", "end", "until", "checkout", "out", "drop"}),
    "through": frozenset({"dropoff", "return", "end", "until", "checkout", "out", "drop"}),
    "starting": frozenset({"start", "pickup", "departure", "checkin", "in", "from"}),
    "back": frozenset({"dropoff", "return", "drop", "end", "returning", "inbound"}),
    "returning": frozenset({"return", "dropoff", "drop", "returning", "inbound"}),
}


def disambiguate(text: str, start: int, candidates: list[str], wf: Workflow,
                 prep_word: str | None = None) -> list[str]:
    """Narrow candidate slots with the words just before the value (`prep_word`: the
    preposition it depends on, when that is not the word just before: "out of")."""
    if len(candidates) < 2:
        return candidates
    before = tokens_before(text, start, 4)
    cues = slot_cues(wf)
    # past an article, as `role_decides` reads it: "to the Curry Prince"
    bare = before[:-1] if before and before[-1] in _ARTICLES else before
    last = prep_word or role_word(bare)
    run = _final_role_run(bare) if last in PREP_HINTS else len(bare)
    # the words of another value's phrase cue nothing here: in "departs from ely to
    # Cambridge" only "to" is Cambridge's (MultiWOZ val MUL0321 turn 4)
    hits = cues.slots_for(before[run:] if run < len(bare) else before)
    # the one entry keyed `last` (a loop over PREP_HINTS compared it with every key)
    hint_words = PREP_HINTS.get(last)
    if hint_words is not None:
        words = _SLOT_WORDS.of(wf)
        for c in candidates:
            if words[c] & hint_words:
                hits[c] = hits.get(c, 0) + 2
    scored = [(hits.get(c, 0), c) for c in candidates]
    best = max(s for s, _ in scored)
    return unqualified(text, [c for s, c in scored if s == best])


_ARTICLES = frozenset({"the", "a", "an"})
# a verb of arriving before "at"/"in" makes them "to" ("should arrive at cambridge",
# "arrives in Kings Lynn"); "out of" is "from" ("a train out of Cambridge")
_ARRIVING = frozenset({"arrive", "arrives", "arriving", "arrival", "arrived", "reach",
                       "reaches", "reaching", "land", "lands", "landing"})


# verbs of setting off: "for" after one names where to ("leaving friday for broxbourne",
# "departing Cambridge for Stevenage", "bound for Cambridge")
_SETTING_OFF = frozenset({"leave", "leaves", "leaving", "depart", "departs", "departing",
                          "bound", "headed", "heading", "travelling", "traveling"})
# nouns that name a role, and the role preposition they stand for when a copula joins
# them to the value ("my destination is Cambridge", "my departure site is Cambridge",
# "the pickup location will be the Copper Kettle", "my arrival time is 17:00")
_ROLE_NOUNS: Mapping[str, str] = {"destination": "to", "dropoff": "to", "arrival": "to",
                                  "departure": "from", "origin": "from", "pickup": "from"}
_COPULAS = frozenset({"is", "be", "'s", "was"})
_COMING = frozenset({"coming", "come", "comes"})
_FLYING = frozenset({"fly", "flies", "flying", "flew"})
_PICK = frozenset({"pick", "picks", "picked", "picking"})
_VEHICLES = frozenset({"taxi", "taxie", "cab", "car", "driver", "ride"})
_DROP = frozenset({"drop", "drops", "dropped", "dropping"})


def role_word(words: list[str]) -> str:
    """The role preposition that the last of `words` (the words right before a value,
    past its article) stands for: itself, or "to" / "from" for the forms of more words:
    "arrive at", "out of", "into", "leaving for", "my destination is"."""
    if not words:
        return ""
    last = words[-1]
    if last == "into" and not (len(words) > 1 and words[-2] in _COMING | _FLYING):
        # "a train into Cambridge", "heading into Leicester"; "I'm coming into Stansted
        # Airport and want to go to Cambridge" (MultiWOZ SNG0317) and "I'll be flying into
        # Stansted Airport and need to find a train to Cambridge" (MUL1678 turn 0) arrive
        # there before the trip, which leaves from it
        return "to"
    if len(words) > 1:
        if last in ("at", "in") and words[-2] in _ARRIVING:
            return "to"
        if last == "of" and words[-2] == "out":
            return "from"
        if last == "for" and any(w in _SETTING_OFF for w in words[-4:-1]):
            return "to"
        if (last == "to" and words[-2] in _COMING
                and any(w in _VEHICLES for w in words[-4:-2])):
            # "I need to book a taxi to come to Express by Holiday Inn Cambridge to take me
            # to The Oak Bistro" (MultiWOZ val SNG02260 turn 0): where the ride comes to
            # is where it picks the user up
            return "from"
        if last in ("at", "from", "in", "on") and len(words) > 2:
            # "pick me up at Bangkok City", "picked up from the museum", "drop us off at
            # the hotel": the particle says the role
            if words[-2] == "up" and any(w in _PICK for w in words[-4:-2]):
                return "from"
            if words[-2] == "off" and any(w in _DROP for w in words[-4:-2]):
                return "to"
        if last in _COPULAS:
            for w in reversed(words[-3:-1]):
                if w in _ROLE_NOUNS:
                    return _ROLE_NOUNS[w]
    return last


def _final_role_run(words: list[str]) -> int:
    """Where the value's own phrase starts in `words`, which end with a role word: the
    index after the last word of an earlier phrase that a role word of its own
    governs ("departs from ely to": 3), else len(words) (nothing to cut)."""
    i = len(words) - 1
    while i > 0 and (words[i - 1] in PREP_HINTS or words[i - 1] in _ARRIVING
                     or (words[i - 1] == "out" and words[i] == "of")):
        i -= 1  # the run of role words: "leaving from", "arrive at", "out of"
    head = words[:i]
    for j, w in enumerate(head):
        if w in PREP_HINTS and any(x not in PREP_HINTS and x not in _ARTICLES
                                   for x in head[j + 1:]):
            return i
    return len(words)


def slot_words(spec: SlotSpec) -> set[str]:
    """The words of a slot's name and description ("train-departure", "departure location
    of the train"): what a role word, a person role or a count cue is matched against."""
    return set(re.findall(r"[a-z]+", (spec.name + " " + spec.description).lower()))


def _build_slot_words(wf: Workflow) -> Mapping[str, frozenset[str]]:
    return {name: frozenset(slot_words(spec)) for name, spec in wf.slots.items()}


def slot_words_of(wf: Workflow) -> Mapping[str, frozenset[str]]:
    """slot -> `slot_words` of it, for every slot of `wf` (built once per workflow)."""
    return _SLOT_WORDS.of(wf)


# slot -> `slot_words` of it, per workflow: `disambiguate` and `role_decides` ask for the
# words of every candidate at every value, and a slot's name and description never change
_SLOT_WORDS: Derived[Workflow, Mapping[str, frozenset[str]]] = Derived(
    "assign.slot_words", _build_slot_words)


def role_decides(text: str, start: int, slot: str, candidates: list[str], wf: Workflow
                 ) -> bool:
    """The word right before the value (past an article) is a role word (`PREP_HINTS`)
    that points at `slot` and at no other candidate: "departing from Cambridge and
    traveling to Peterborough" (MultiWOZ MUL1478 turn 4), "leaving cambridge". Then
    the narrowing is as sure as a slot named outright, and a value s_t holds only in a
    sibling slot (departure and destination swapped) is not recorded. A tool agent's
    workflow is left out: its user describes existing records as often as wishes ("change
    my return flight from Texas to Newark", τ-bench airline task 1)."""
    if wf.tools:
        return False
    before = tokens_before(text, start, 4)
    if before and before[-1] == "the":
        before = before[:-1]
    hint = PREP_HINTS.get(role_word(before))
    if hint is None:
        return False
    words = _SLOT_WORDS.of(wf)
    return [c for c in candidates if words[c] & hint] == [slot]


def unqualified(text: str, candidates: list[str]) -> list[str]:
    """Drop a slot whose name qualifies another candidate's with words the user did not
    say: "my checking account" is account_type, not recipient_account_type."""
    if len(candidates) < 2:
        return candidates
    said = set(cue_tokens(text))
    names = {c: set(re.findall(r"[a-z]+", c.lower())) for c in candidates}
    keep = [c for c in candidates
            if not any(names[o] < names[c] and not (names[c] - names[o]) & said
                       for o in candidates if o != c)]
    return keep or candidates
