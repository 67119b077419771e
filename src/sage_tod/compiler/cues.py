"""Words that point at a slot, derived from the schema alone.

Request detection (WNF) and the value extractor need to know which slot a
phrase like "how many people" or "leaving from" refers to. Specs are written
by users and held-out specs will not carry hand-made cue lists, so cues are
derived from each slot's name and description, widened by a small generic
lexicon of dialogue concepts. A cue shared by several slots of a workflow
points at all of them (the rules then decide on the whole candidate set).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.text.normalize import basic

STOPWORDS = frozenset({
    "a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "from", "and",
    "or", "is", "are", "be", "been", "being", "was", "were", "this", "that", "these",
    "those", "it", "its", "user", "users", "wants", "want", "would", "like", "should",
    "which", "what", "who", "whom", "whose", "when", "where", "how", "do", "does", "did",
    "can", "could", "will", "shall", "may", "might", "must", "has", "have", "had", "not",
    "no", "yes", "please", "booking", "book", "reservation", "reserve", "value", "slot",
    "number", "name", "type", "amount", "kind", "some", "any", "you", "your", "yours",
    "i", "me", "my", "we", "us", "our", "they", "them", "their", "he", "she", "him",
    "her", "there", "here", "other", "also", "just", "then", "so", "if", "as", "than",
})
# Tokens kept despite STOPWORDS when the slot name itself is one of them (e.g. "name").
_NAME_KEEP = frozenset({"name", "type", "number", "book"})

# Generic dialogue concepts: a slot whose name/description contains any member
# gets all members as cues. Keys are only labels.
CONCEPTS: Mapping[str, frozenset[str]] = {
    "people": frozenset({"people", "person", "persons", "guests", "guest", "party", "diners",
                         "adults", "travellers", "travelers", "passengers", "tickets", "seats"}),
    "area": frozenset({"area", "part", "side", "location", "neighbourhood", "neighborhood",
                       "district", "region"}),
    "price": frozenset({"price", "pricerange", "budget", "cost", "priced", "pricey", "range",
                        "expense"}),
    "time": frozenset({"time", "clock", "hour"}),
    "day": frozenset({"day", "date", "weekday"}),
    "food": frozenset({"food", "cuisine", "dish", "dishes"}),
    "stay": frozenset({"stay", "nights", "night", "long"}),
    "stars": frozenset({"stars", "star", "rating"}),
    "departure": frozenset({"departure", "depart", "departing", "leaving", "origin", "pickup",
                            "pick", "from", "start"}),
    "destination": frozenset({"destination", "going", "heading", "dropoff", "drop", "bound"}),
    "leave": frozenset({"leave", "leaving", "leaveat", "depart", "departure"}),
    "arrive": frozenset({"arrive", "arrival", "arriveby", "arriving", "get"}),
    "phone": frozenset({"phone", "telephone", "contact"}),
    "internet": frozenset({"internet", "wifi"}),
    "parking": frozenset({"parking", "park"}),
    "email": frozenset({"email", "mail"}),
    "address": frozenset({"address", "street"}),
}

_SPLIT_RE = re.compile(r"[a-z]+")


def _words(text: str) -> list[str]:
    return _SPLIT_RE.findall(text.lower())


def cue_tokens(text: str) -> list[str]:
    """Words of an utterance as cue matching sees them: lowercase, no spelling folding.

    Folding would split "guesthouse" into "guest house" and make "guest" look
    like a request for the party size.
    """
    return _words(text)


def stem(word: str) -> str:
    """The cue stem of a word ("stars" -> "star"), as the cue index is keyed."""
    return _stem(word)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    for suf in ("ing", "es", "s"):
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            return word[: -len(suf)]
    return word


@dataclass(frozen=True)
class SlotCues:
    """For one workflow: cue stem -> slots it points at."""

    index: Mapping[str, frozenset[str]]

    def unique_hits(self, tokens: list[str]) -> set[str]:
        """Slots named by a cue that points at that slot alone."""
        out: set[str] = set()
        for t in tokens:
            slots = self.index.get(_stem(t), frozenset())
            if len(slots) == 1:
                out |= slots
        return out

    def slots_for(self, tokens: list[str]) -> dict[str, int]:
        """Slots pointed at by `tokens`, with how many distinct cues point at each."""
        # a plain dict, not a Counter: the same keys in the same (first-hit) order and the
        # same counts, without Counter's Python-level `__missing__` per new slot
        # (test_round16_screens checks it against the Counter form)
        hits: dict[str, int] = {}
        seen: set[str] = set()
        index = self.index
        for t in tokens:
            st = _stem(t)
            if st in seen:
                continue
            slots = index.get(st)
            if slots is None:
                continue
            seen.add(st)
            for slot in slots:
                hits[slot] = hits.get(slot, 0) + 1
        return hits


def _slot_words(name: str, description: str, domain_words: frozenset[str]) -> set[str]:
    words = set()
    for w in _words(name):
        if w not in domain_words and (w not in STOPWORDS or w in _NAME_KEEP):
            words.add(w)
    for w in _words(description):
        if w not in domain_words and w not in STOPWORDS:
            words.add(w)
    for members in CONCEPTS.values():
        if words & members or any(m in _words(name) for m in members):
            words |= members
    return words


def _build_slot_cues(workflow: Workflow) -> SlotCues:
    # words in most slot names of a workflow ("restaurant", "book") name the
    # workflow, not a slot
    domain = domain_words(workflow)
    index: dict[str, set[str]] = {}
    for spec in workflow.slots.values():
        for w in _slot_words(spec.name, spec.description, domain):
            index.setdefault(_stem(w), set()).add(spec.name)
    concept_stems = {_stem(m) for members in CONCEPTS.values() for m in members}
    # a description word shared by many slots ("table" in "time of the table
    # booking") says nothing about which one is meant
    return SlotCues({k: frozenset(v) for k, v in index.items()
                     if len(v) <= 2 or k in concept_stems})


def _build_domain_words(workflow: Workflow) -> frozenset[str]:
    names = tuple(workflow.slots)
    counts: Counter[str] = Counter(w for n in names for w in set(_words(n)))
    return frozenset(w for w, c in counts.items() if c >= max(2, len(names) // 2 + 1))


# built once per workflow and kept with it (`contracts.spec.Derived`)
_SLOT_CUES: Derived[Workflow, SlotCues] = Derived("cues.slot_cues", _build_slot_cues)
_DOMAIN_WORDS: Derived[Workflow, frozenset[str]] = Derived("cues.domain_words",
                                                           _build_domain_words)


def domain_words(workflow: Workflow) -> frozenset[str]:
    """Words in most slot names of a workflow ("hotel" in hotel-area, hotel-stars, ...)."""
    return _DOMAIN_WORDS.of(workflow)


def _build_naming_words(workflow: Workflow) -> frozenset[str]:
    return domain_words(workflow) | {w for w in basic(workflow.id).split() if len(w) > 2}


_NAMING_WORDS: Derived[Workflow, frozenset[str]] = Derived("cues.naming_words",
                                                           _build_naming_words)


def naming_words(workflow: Workflow) -> frozenset[str]:
    """The words a user names a workflow by: its domain words and the longer words of its
    id ("hotel", "restaurant"; "attraction" from the id alone)."""
    return _NAMING_WORDS.of(workflow)


def slot_cues(workflow: Workflow) -> SlotCues:
    return _SLOT_CUES.of(workflow)
