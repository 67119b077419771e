"""What the extractor's readers say about u_t (`Mention`) and what it concludes (`Extraction`).

Every reader of the text extractor (`values.py`, `descriptors.py`, `names.py`,
`dontcare.py`, `offers.py`) returns `Mention`s: a value it read, the slots it may
belong to, where it was said, and the evidence (`source`) it was read by. No reader
decides whether its mention survives: the resolver (`resolve.py`) claims spans in the
priority its table gives each source, applies the free / question / negation checks
and the confidence rules, and turns the survivors into `Extraction`s, the records the
compiler (`compile._iuv`) and the tool-call reader use.

The sources are a closed set (`Source`): the resolver's priority table ranks each once,
and `tests/test_resolver.py` checks that it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from sage_tod.contracts.criteria import EXACT

# The evidence a mention was read by. Its rank (which reader wins a span) is declared in
# `resolve.PRIORITY`; what each reads, in the module of its reader.
Source = Literal[
    "state",           # a free value s_t or s_{t-1} records, said in u_t
    "categorical",     # a listed value or synonym of a slot
    "asked",           # a listed value asked about, for a slot that records what is asked
    "time",            # a clock time no time slot of s_t holds
    "time_held",       # a clock time s_t may hold: claimed, extracts nothing
    "number",          # a count next to a cue word of a number slot
    "date",            # a date no date slot of s_t holds
    "date_held",       # a date s_t may hold: claimed, extracts nothing
    "place",           # a place name for a slot holding a city, area or location
    "name",            # a person's name after a role word ("directed by X")
    "descriptor",      # a cuisine said as a modifier, an amenity wanted with a verb
    "typed_name",      # an entity's name after a naming cue or a request
    "dontcare",        # a waiver of a slot
    "accepted_offer",  # the one name the agent offered, taken by the user
    "same_as",         # another workflow's value, by reference: "the same area as the
                       # hotel", "from the restaurant"
    "named_value",     # a value a name the user says ends with ("Clare College": college),
                       # for a slot whose spec records it (`recorded_from_names`)
]
SOURCES: tuple[Source, ...] = get_args(Source)


@dataclass(frozen=True, slots=True)
class Mention:
    """A value a reader found at [start, end) of u_t for one of `slots`.

    `confidence` caps the extraction's confidence (1.0: no cap) and `floor` raises it
    (the resolver computes it from the number of candidate slots left:
    `resolve._confidence`);
    `narrowed` are the slots the reader already chose among `slots` (else the resolver
    narrows them by the words before the value). For a waiver and an accepted offer the
    reader's `confidence` is the extraction's as it stands.
    """

    value: str
    slots: tuple[str, ...]
    start: int
    end: int
    source: Source
    alternatives: tuple[str, ...] = ()
    confidence: float = 1.0
    narrowed: tuple[str, ...] | None = None
    floor: float | None = None
    # a value from outside u_t whose slot a role word chose among siblings ("from the
    # restaurant"): its extraction is `role_decided` (the resolver's `fill_open`)
    role_decided: bool = False

    @property
    def slot(self) -> str:
        """The first candidate slot: the only one of an offer or a typed name."""
        return self.slots[0]


class Claims(Protocol):
    """The spans the resolver has claimed so far, read-only: what a reader sees of the
    mentions of higher-ranked sources (`resolve.resolve`)."""

    def free(self, start: int, end: int, source: str = "") -> bool:
        """No claimed span overlaps [start, end), and the offset is not inside a
        question about an entity, unless `source` may be read there."""
        ...

    def extracted(self) -> tuple[Extraction, ...]:
        """The extractions the mentions of higher-ranked sources have become."""
        ...


@dataclass(frozen=True)
class Extraction:
    """A value the user stated, with the slots it may belong to."""

    value: str
    candidates: tuple[str, ...]
    start: int | None
    end: int | None
    confidence: float
    source: str  # user_values, or the `Source` it was read by ("asked" reads "categorical")
    alternatives: tuple[str, ...] = ()
    # the word right before the value chose its slot among siblings sharing its values
    # ("from Cambridge": departure, not destination; `assign.role_decides`): the value is
    # recorded only in that slot, not in a sibling
    role_decided: bool = False

    @property
    def readings(self) -> tuple[str, ...]:
        """Every value the utterance may mean (two clock readings for "at 7:30")."""
        return self.alternatives or (self.value,)

    @property
    def exact(self) -> bool:
        return len(self.candidates) == 1 and self.confidence >= EXACT
