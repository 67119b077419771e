"""The resolver: which of the readers' mentions become extractions, by one declared priority.

Two readers may read the same words ("free" is the internet's synonym and the start of
"free parking"; "Cambridge" a place and part of a recorded name), so each character of
u_t goes to at most one value. `PRIORITY` says who wins, one row per rank (a source, or
the two one reader reads in span order), highest first, with the reason; the resolver
claims spans in that order and nothing else decides it (the old extractor's call order
did, implicitly).

`resolve` runs the readers (`extract.READERS`, each with the sources it yields) in the
rank of their sources, and resolves each reader's mentions, sorted by rank (stable: a
reader's own order within one source), before the next reader runs. A reader gets a
read-only view of the claims so far (`mentions.Claims`).

Why this is the old blackboard's behaviour exactly. The old readers called `free()`
while reading and `add()` as they went; a reader now returns its whole batch first. (1)
`values.categorical` checked `free()` only before its first `add()`, so it sees the same
claims (those of higher-ranked sources) either way, and it must see them: a form on a
claimed span is not entered, so a shorter overlapping form may be. (2) `counts`,
`places` and `people` checked `free()` on a mention's span just before adding it, and
kept no state from one mention to the next; a check that no longer sees the reader's
own earlier mentions lets such a mention through, and the resolver, checking the same
predicate against the same claims at the same point of the sequence (the source they
passed reads as the source they add under), drops it. (3) `times` and `dates` claimed
the spans of the values s_t may hold after all their values; these are now claim-only
mentions ranked right after the reader's values, so the batch's sort claims them at
the same point. (4) The descriptor merge, the waiver and the acceptance rule read the
extractions and claims the readers before them left, which is what the resolver holds
when their batches come. `tests/test_golden.py` and the bench slices are identical.

Each source has one step (`_STEPS`):

- `_add` (values): dropped when its span is claimed, inside a question about an entity
  (unless the source may be read there), or negated; its slots narrowed by the words
  before it (`assign.disambiguate`) unless the reader narrowed them; its confidence
  from the number of slots left (`_confidence`), raised to the mention's floor and
  capped by its confidence; its span claimed;
- `_claim` (`time_held`, `date_held`): the span is claimed, nothing is extracted;
- `_describe` (`descriptor`): an amenity wanted with a verb that an earlier value read
  by its synonym already ("include free wifi") makes that value as sure as the verb;
  anything else is `_add`ed;
- `_waive` (`dontcare`): kept when its span is unclaimed, as the reader found it (a
  waiver reads its own clause, negation included);
- `fill_open` (`accepted_offer`, `same_as`, `named_value`): kept only when no
  extraction holds its slot (a name the user types wins over the one the agent offered;
  a value said wins over "the same day" and over the type a name ends with); it claims
  nothing (its span is the assent, the reference or the name, not the value alone).

Last, `_drop_alternatives`: of values of one slot joined by "or", one of which s_t
records, only that one stays ("Italian or Indian" with food = indian); and
`_demote_competing`: two different values for one slot leave none exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from sage_tod.compiler.assign import disambiguate, role_decides
from sage_tod.compiler.confidence import GUESS, LIKELY, SURE
from sage_tod.compiler.mentions import SOURCES, Claims, Extraction, Mention, Source
from sage_tod.compiler.utterance import CLAUSE_END, UserTurn, inside
from sage_tod.contracts.criteria import EXACT
from sage_tod.contracts.spec import Workflow
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.normalize import basic
from sage_tod.text.spans import Taken


@dataclass(frozen=True)
class Priority:
    """One row of the priority table: a source, and why it ranks where it does."""

    sources: tuple[Source, ...]  # sources of one rank (read by one reader, in its order)
    why: str


# Highest first. A mention whose span overlaps one claimed by a higher row is dropped.
PRIORITY: tuple[Priority, ...] = (
    Priority(("state",), "a value s_t or s_{t-1} records, found as written: the surest reading"
             " of its words, and the longest (\"Cambridge\" in a recorded name is no place)"),
    Priority(("categorical", "asked"), "a listed value or synonym as written, the schema's own"
             " forms; one reader, in span order, so one rank"),
    Priority(("time",), "a clock time has a shape no other value has; before counts, so"
             " \"at 7\" counts nobody"),
    Priority(("time_held",), "a time s_t may hold extracts nothing but still keeps its digits"
             " from counts; claimed after the reader's times, as it always was"),
    Priority(("number",), "a count needs a cue word beside it; after times, whose digits it"
             " would misread"),
    Priority(("date",), "a date is read by its shape (\"the 11th\") after counts and times"),
    Priority(("date_held",), "a date s_t may hold: claimed, so no place or name reads it"),
    Priority(("place",), "a place is a capitalised span after a preposition: a guess from"
             " shape, so after every listed or shaped value"),
    Priority(("name",), "a person's name after a role word: a capitalised span, like a place,"
             " of slots that rarely share a workflow with places"),
    Priority(("descriptor",), "a value said by the phrase around it (\"Mexican food\", \"include"
             " wifi\"): it may only raise what an earlier reader read by its form"),
    Priority(("typed_name",), "an entity's name after a naming cue: read after every value"
             " reader, so \"a cheap guesthouse\" is no name"),
    Priority(("dontcare",), "a waiver names no value: it takes only words no value claimed"),
    Priority(("accepted_offer",), "the value is in the agent's turn, not in u_t: taken only"
             " when nothing the user said fills its slot"),
    Priority(("same_as",), "the value is in another workflow's slot, said as \"the same"
             " area\": taken only when nothing the user said or took fills its slot"),
    Priority(("named_value",), "a value a name ends with (\"Clare College\"), where the spec"
             " records it: read from the names already extracted, so last; taken only when"
             " nothing else fills its slot"),
)

RANK: Mapping[Source, int] = {src: rank for rank, row in enumerate(PRIORITY)
                              for src in row.sources}
assert set(RANK) == set(SOURCES) and sum(len(r.sources) for r in PRIORITY) == len(SOURCES)

# values found by their shape rather than by a schema list may sit in a what-question
_SHAPE_SOURCES = frozenset({"date", "place", "name"})
# sources read in any question: a name after a request cue asks for that entity ("Do you
# have information on the alpha - milton guest house?"); a value asked about, for a slot
# whose spec records what is asked
_IN_QUESTIONS = frozenset({"typed_name", "asked"})


class Reader:
    """A reader of u_t and the sources its mentions have (a row of `extract.READERS`)."""

    __slots__ = ("read", "sources")

    def __init__(self, read: Callable[[UserTurn, Workflow, Claims], Iterable[Mention]],
                 sources: tuple[Source, ...]) -> None:
        self.read = read
        self.sources = frozenset(sources)

    def __repr__(self) -> str:
        return f"Reader({getattr(self.read, '__name__', self.read)!r})"


def plan(readers: Sequence[Reader]) -> tuple[Reader, ...]:
    """The readers in the rank of their sources. Each reader's sources must be ranked
    together (no other reader's source between them) and no source read by two readers:
    otherwise no order of readers resolves the mentions in rank order (that every source
    has a reader is `tests/test_resolver.py`'s to check)."""
    seen: dict[Source, Reader] = {}
    for r in readers:
        for src in r.sources:
            if src in seen:
                raise ValueError(f"source {src!r} is read by {seen[src]!r} and {r!r}")
            seen[src] = r
    ordered = sorted(readers, key=lambda r: min(RANK[s] for s in r.sources))
    for a, b in pairwise(ordered):
        if max(RANK[s] for s in a.sources) >= min(RANK[s] for s in b.sources):
            raise ValueError(f"the sources of {a!r} and {b!r} interleave in PRIORITY")
    return tuple(ordered)


def _confidence(n_candidates: int, narrowed: bool) -> float:
    """0.95 for one slot as written, 0.8 when words narrowed it to one, 1/n for n."""
    if n_candidates == 1:
        return LIKELY if narrowed else SURE
    return 1.0 / n_candidates


class _Resolution(Claims):
    """The claimed spans and the extractions of one turn, as the readers' mentions are
    resolved (readers see it as `Claims` only)."""

    __slots__ = ("out", "taken", "u", "wf")

    def __init__(self, u: UserTurn, wf: Workflow) -> None:
        self.u = u
        self.wf = wf
        self.taken = Taken()  # claimed spans, searched in O(log n)
        self.out: list[Extraction] = []

    def free(self, start: int, end: int, source: str = "") -> bool:
        if self.taken.overlaps(start, end):
            return False
        u = self.u
        return (not inside(u.entity_questions, start)
                or (source in _SHAPE_SOURCES and inside(u.search_questions, start))
                or inside(u.entity_searches, start) or source in _IN_QUESTIONS)

    def extracted(self) -> tuple[Extraction, ...]:
        return tuple(self.out)

    def add(self, m: Mention) -> None:
        u, s = self.u, m.start
        if not m.slots or not self.free(s, m.end, m.source) or u.negated(s):
            return
        source: str = m.source
        floor, confidence = m.floor, m.confidence
        if source == "asked":  # asked about, and the spec records what is asked: sure
            source, floor = "categorical", max(floor or 0.0, EXACT)
        elif inside(u.entity_questions, s) and not inside(u.entity_searches, s):
            # in a question about an entity, a value the reader may read there is a
            # constraint at most, not sure; in a search for this workflow's entities
            # ("Are there any restaurants in the Centre that serve British food?") it is
            # stated as surely as in "I want a restaurant in the centre"
            floor = None
            confidence = min(confidence, LIKELY)
        cands = list(m.slots)
        by_role = m.role_decided  # a reader that narrowed by a role word says so
        if m.narrowed is not None:
            narrowed = list(m.narrowed)
        else:
            narrowed = disambiguate(u.text, s, cands, self.wf)
            by_role = len(narrowed) == 1 < len(cands) and role_decides(
                u.text, s, narrowed[0], cands, self.wf)
            if len(narrowed) > 1 and (answered := u.answered(self.wf, s, narrowed)) is not None:
                # a bare answer to the agent's question for one of them ("And what is
                # your destination?" - "London Liverpool Street."): as sure as a role word
                narrowed, by_role = [answered], True
        conf = _confidence(len(narrowed), len(narrowed) < len(cands) and not by_role)
        if floor is not None:
            conf = max(conf, floor)
        conf = min(conf, confidence)  # every confidence is at most 1.0, the default cap
        self.taken.add(s, m.end)
        self.out.append(Extraction(m.value, tuple(narrowed), s, m.end, conf, source,
                                   m.alternatives, by_role))

    def claim(self, m: Mention) -> None:
        self.taken.add(m.start, m.end)

    def describe(self, m: Mention) -> None:
        truth = normalize_boolean(m.value)
        if truth is not None:
            for i, ex in enumerate(self.out):
                if ex.candidates == m.slots and normalize_boolean(ex.value) == truth:
                    # "include free wifi": the synonym "free" read it already; the verb
                    # makes it sure
                    self.out[i] = Extraction(ex.value, ex.candidates, ex.start, ex.end,
                                             max(ex.confidence, m.confidence),
                                             ex.source, ex.alternatives)
                    return
        self.add(m)

    def waive(self, m: Mention) -> None:
        if self.taken.overlaps(m.start, m.end):
            return
        self.taken.add(m.start, m.end)
        self.out.append(Extraction(m.value, m.slots, m.start, m.end, m.confidence,
                                   "dontcare"))

    def fill_open(self, m: Mention) -> None:
        """A value from outside u_t (an accepted offer, the same value as another
        workflow's): kept only when no extraction holds its slot; it claims nothing."""
        if not any(m.slot in ex.candidates for ex in self.out):
            self.out.append(Extraction(m.value, m.slots, m.start, m.end, m.confidence,
                                       m.source, role_decided=m.role_decided))


_Step = Callable[[_Resolution, Mention], None]
# what the resolver does with a mention of each source (the module docstring)
_STEPS: Mapping[Source, _Step] = {
    **{src: _Resolution.add for src in SOURCES},
    "time_held": _Resolution.claim,
    "date_held": _Resolution.claim,
    "descriptor": _Resolution.describe,
    "dontcare": _Resolution.waive,
    "accepted_offer": _Resolution.fill_open,
    "same_as": _Resolution.fill_open,
    "named_value": _Resolution.fill_open,
}


def _by_rank(m: Mention) -> int:
    return RANK[m.source]


def resolve(u: UserTurn, wf: Workflow, readers: Sequence[Reader]) -> list[Extraction]:
    """Read u_t with `readers` (ordered by `plan`) and resolve their mentions by
    `PRIORITY` (module docstring)."""
    res = _Resolution(u, wf)
    for reader in readers:
        batch = list(reader.read(u, wf, res))
        if not batch:
            continue
        for m in batch:
            if m.source not in reader.sources:
                raise ValueError(f"{reader!r} yields a {m.source!r} mention, which it does"
                                 " not declare")
        if len(reader.sources) > 1:
            batch.sort(key=_by_rank)
        for m in batch:
            _STEPS[m.source](res, m)
    return _demote_competing(_drop_alternatives(res.out, wf, u.text, u.after), wf, u.text)


def _instead(text: str, ex: Extraction) -> bool:
    """The value is said as a correction: "instead" follows it in its clause."""
    if ex.end is None:
        return False
    rest = CLAUSE_END.split(text[ex.end:ex.end + 60], maxsplit=1)[0]
    return bool(re.match(r"\s*(?:\w+\s+){0,2}instead\b", rest, re.IGNORECASE))


_OR_BETWEEN = re.compile(r"^\s*(?:,\s*)?(?:or|or maybe|or perhaps|or else)\s+$", re.IGNORECASE)


def _drop_alternatives(found: list[Extraction], wf: Workflow, text: str,
                       after: Mapping[str, str]) -> list[Extraction]:
    """Values of one slot joined by "or", one of which s_t records: the user offered
    alternatives and s_t took one ("preferably Italian or Indian cuisine" with food =
    indian, MultiWOZ PMUL3785 turn 3), so the others are no ignored values."""
    by_slot: dict[str, list[Extraction]] = {}
    for ex in found:
        if len(ex.candidates) == 1 and ex.start is not None and ex.end is not None:
            by_slot.setdefault(ex.candidates[0], []).append(ex)
    drop: set[int] = set()
    for slot, exs in by_slot.items():
        spec = wf.slots.get(slot)
        held = after.get(slot)
        if spec is None or held is None or len(exs) < 2:
            continue
        for a, b in pairwise(sorted(exs, key=lambda x: x.start or 0)):
            if not _OR_BETWEEN.match(text[a.end or 0:b.start or 0]):
                continue
            recorded = [x for x in (a, b) if spec.normalize(x.value) == spec.normalize(held)]
            if recorded:
                drop.update(id(x) for x in (a, b) if x is not recorded[0])
    return [ex for ex in found if id(ex) not in drop]


def _demote_competing(found: list[Extraction], wf: Workflow, text: str = ""
                      ) -> list[Extraction]:
    """Two different values for one slot in one utterance ("north of the centre",
    "not Friday, Saturday") leave it open which one the user meant: none is exact,
    unless exactly one is said as the correction ("I said cheap, but I want something
    expensive instead"). Two spellings of one value ("7pm, so 19:00") are one value."""
    per_slot: dict[str, set[str]] = {}
    for ex in found:
        if len(ex.candidates) == 1:
            spec = wf.slots.get(ex.candidates[0])
            key = spec.normalize(ex.value) if spec is not None else basic(ex.value)
            per_slot.setdefault(ex.candidates[0], set()).add(key)
    corrections: dict[str, list[Extraction]] = {}
    for ex in found:
        if len(ex.candidates) == 1 and len(per_slot[ex.candidates[0]]) > 1 and _instead(text, ex):
            corrections.setdefault(ex.candidates[0], []).append(ex)
    out = []
    for ex in found:
        if len(ex.candidates) == 1 and corrections.get(ex.candidates[0]) == [ex]:
            out.append(ex)
            continue
        if len(ex.candidates) == 1 and len(per_slot[ex.candidates[0]]) > 1:
            ex = Extraction(ex.value, ex.candidates, ex.start, ex.end,
                            min(ex.confidence, GUESS), ex.source, ex.alternatives)
        out.append(ex)
    return out
