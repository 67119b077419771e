"""Values the user supplied in u_t: (slot candidates, value, span, confidence).

The IUV criterion needs to know what the user said. An upstream NLU's
`user_values` are used as given; otherwise a schema-driven extractor finds
free values that the state records, categorical values and synonyms, clock
times, counts next to a slot cue, dates for date slots, place names for slots
that hold a city or area, people's names after a role word, descriptors, typed
names, waivers, accepted offers and values said as another workflow's ("the same
area as the restaurant"). Each extraction carries a confidence; below
the floor (0.5, Appendix J) it is dropped, and only unambiguous, exact extractions
let S1 decide a failure (the floor and the exactness threshold are the
compiler-verifier contract, so they live in `contracts.criteria`:
`EXTRACTION_FLOOR`, `EXACT`). A value found by its shape (a capitalised span after
"in") is a guess and is left to S2 unless the evidence is strong, and a value s_t
may hold in another spelling ("12th of march", "2 in the afternoon", "Santa Rosa,
CA") is not claimed at all: a clean turn wrongly flagged costs more than a missed
failure.

The text extractor has four stages (docs/method.md, "The text extractor"): the turn
analysis (`utterance.UserTurn`, one per call), the workflow's lexicon
(`lexicon.Lexicon`, one per workflow), the readers (`READERS`: each returns
`mentions.Mention`s of the sources it declares) and the resolver (`resolve.py`: the
priority table `PRIORITY` and the one function that turns mentions into
extractions). This module only wires them.
"""

from __future__ import annotations

from collections.abc import Mapping

from sage_tod.compiler import values
from sage_tod.compiler.cues import naming_words
from sage_tod.compiler.descriptors import find_descriptors
from sage_tod.compiler.dontcare import find_waivers
from sage_tod.compiler.entity_words import entity_words
from sage_tod.compiler.mentions import Claims, Extraction, Mention
from sage_tod.compiler.name_heads import name_heads
from sage_tod.compiler.names import find_typed_names
from sage_tod.compiler.offers import find_acceptance
from sage_tod.compiler.references import find_references
from sage_tod.compiler.resolve import Reader, plan, resolve
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.criteria import EXTRACTION_FLOOR
from sage_tod.contracts.spec import Derived, SpecBundle, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.match import find_value

__all__ = ["READERS", "Extraction", "extract_user_values"]


def _descriptors(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    return find_descriptors(u, wf)


def _typed_names(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    return find_typed_names(u, wf)


def _waivers(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    return find_waivers(u, wf)


def _acceptance(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    acc = find_acceptance(u, wf)
    return [] if acc is None else [acc]


# Every reader of u_t and the sources its mentions have. The order of this table is not
# the priority: `resolve.plan` orders the readers by `resolve.PRIORITY`.
READERS: tuple[Reader, ...] = plan((
    Reader(values.recorded, ("state",)),
    Reader(values.categorical, ("categorical", "asked")),
    Reader(values.times, ("time", "time_held")),
    Reader(values.counts, ("number",)),
    Reader(values.dates, ("date", "date_held")),
    Reader(values.places, ("place",)),
    Reader(values.people, ("name",)),
    Reader(_descriptors, ("descriptor",)),
    Reader(_typed_names, ("typed_name",)),
    Reader(_waivers, ("dontcare",)),
    Reader(_acceptance, ("accepted_offer",)),
    Reader(find_references, ("same_as",)),
    Reader(name_heads, ("named_value",)),
))


def extract_user_values(turn: Turn, wf: Workflow, spec: SpecBundle | None = None, *,
                        after: Mapping[str, str] | None = None,
                        before: Mapping[str, str] | None = None) -> list[Extraction]:
    """What the user supplied in u_t.

    Declared `user_values` count for any slot of the spec's schema (a turn
    routed to the wrong intent of a service still must not drop them); the
    text extractor looks only for slots of `wf`, where it knows the cues.
    `after` and `before` are `turn.after()` and `turn.before()` when the caller has
    them (the turn context): the readers share them instead of rebuilding them.
    """
    if turn.user_values is not None:
        out = []
        for uv in turn.user_values:
            slot_spec = spec.slot(uv.slot, wf) if spec is not None else wf.slots.get(uv.slot)
            if slot_spec is None:
                continue
            start, end = uv.start, uv.end
            if start is None:
                hit = find_value(turn.user, uv.value, slot_spec)
                start, end = (hit.start, hit.end) if hit else (None, None)
            out.append(Extraction(uv.value, (uv.slot,), start, end, uv.confidence,
                                  "user_values"))
        return [e for e in out if e.confidence >= EXTRACTION_FLOOR]
    others = _OTHER_WORDS.of(spec).of(spec, wf) if spec is not None else frozenset()
    entities = entity_words(spec) if spec is not None else None
    u = UserTurn(turn, after, before, others, entities, spec)
    return [e for e in resolve(u, wf, READERS) if e.confidence >= EXTRACTION_FLOOR]


class _OtherWorkflowWords:
    """Per workflow id, the words that name the spec's other workflows ("attraction",
    "train") and not this one: a search that names one of them is not a search of this
    workflow. One per spec (`_OTHER_WORDS`), filled as its workflows are read."""

    __slots__ = ("_by_id",)

    def __init__(self, spec: SpecBundle) -> None:
        self._by_id: dict[str, frozenset[str]] = {}

    def of(self, spec: SpecBundle, wf: Workflow) -> frozenset[str]:
        got = self._by_id.get(wf.id)
        if got is None:
            out = {w for other in spec.workflows.values() if other.id != wf.id
                   for w in naming_words(other) if len(w) > 2}
            got = self._by_id[wf.id] = frozenset(out - naming_words(wf))
        return got


_OTHER_WORDS: Derived[SpecBundle, _OtherWorkflowWords] = Derived(
    "extract.other_workflow_words", _OtherWorkflowWords)

