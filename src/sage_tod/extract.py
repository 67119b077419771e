"""Values the user supplied in u_t: (slot candidates, value, span, confidence).

The IUV criterion needs to know what the user said. An upstream NLU's
`user_values` are used as given; otherwise a schema-driven extractor finds
categorical values and synonyms, clock times, counts next to a slot cue,
weekdays, and free values that the state records. Each extraction carries a
confidence; below the floor (0.5, Appendix J) it is dropped, and only
unambiguous, exact extractions let S1 decide a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.cues import domain_words, slot_cues
from sage_tod.normalize import WEEKDAYS, basic, normalize_number, tokens_with_spans
from sage_tod.spec import SlotSpec, SpecBundle, Workflow
from sage_tod.textmatch import find_times, find_value, is_negated
from sage_tod.turns import Turn

EXTRACTION_FLOOR = 0.5
EXACT = 0.9

# Sentences that ask about an entity rather than state a constraint.
_QUESTION_ABOUT_ENTITY = re.compile(
    r"^\s*(is|are|does|do|did|was|were|what'?s|what is|what are|could you tell me|can you tell me)"
    r"\b.*\?\s*$", re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]*")
_PREP_HINTS = {"from": {"departure", "depart", "leave", "origin", "pickup", "from", "start"},
               "to": {"destination", "going", "heading", "dropoff", "arrive", "to"},
               "after": {"leave", "depart", "departure", "leaveat"},
               "by": {"arrive", "arriveby", "arrival"},
               "before": {"arrive", "arriveby", "arrival"}}


@dataclass(frozen=True)
class Extraction:
    """A value the user stated, with the slots it may belong to."""

    value: str
    candidates: tuple[str, ...]
    start: int | None
    end: int | None
    confidence: float
    source: str  # user_values | categorical | time | number | date | state
    alternatives: tuple[str, ...] = ()

    @property
    def readings(self) -> tuple[str, ...]:
        """Every value the utterance may mean (two clock readings for "at 7:30")."""
        return self.alternatives or (self.value,)

    @property
    def exact(self) -> bool:
        return len(self.candidates) == 1 and self.confidence >= EXACT


def _entity_question_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _SENTENCE_RE.finditer(text)
            if _QUESTION_ABOUT_ENTITY.match(m.group())]


def _inside(spans: list[tuple[int, int]], start: int) -> bool:
    return any(s <= start < e for s, e in spans)


def _disambiguate(text: str, start: int, candidates: list[str], wf: Workflow) -> list[str]:
    """Narrow candidate slots with the words just before the value."""
    if len(candidates) < 2:
        return candidates
    before = [t for t, _, e in tokens_with_spans(text) if e <= start][-4:]
    cues = slot_cues(wf)
    hits = cues.slots_for(before)
    for prep, hint_words in _PREP_HINTS.items():
        if before and before[-1] == prep:
            for c in candidates:
                spec = wf.slots[c]
                words = set(re.findall(r"[a-z]+", (spec.name + " " + spec.description).lower()))
                if words & hint_words:
                    hits[c] = hits.get(c, 0) + 2
    scored = [(hits.get(c, 0), c) for c in candidates]
    best = max(s for s, _ in scored)
    if best == 0:
        return candidates
    return [c for s, c in scored if s == best]


def _confidence(n_candidates: int, narrowed: bool) -> float:
    if n_candidates == 1:
        return 0.8 if narrowed else 0.95
    return 1.0 / n_candidates


def extract_user_values(turn: Turn, wf: Workflow, spec: SpecBundle | None = None
                        ) -> list[Extraction]:
    """What the user supplied in u_t.

    Declared `user_values` count for any slot of the spec's schema (a turn
    routed to the wrong intent of a service still must not drop them); the
    text extractor looks only for slots of `wf`, where it knows the cues.
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
    return [e for e in _extract_from_text(turn, wf) if e.confidence >= EXTRACTION_FLOOR]


def _extract_from_text(turn: Turn, wf: Workflow) -> list[Extraction]:
    text = turn.user
    skip = _entity_question_spans(text)
    taken: list[tuple[int, int]] = []
    out: list[Extraction] = []

    def free(s: int, e: int) -> bool:
        return not any(s < te and ts < e for ts, te in taken) and not _inside(skip, s)

    def add(value: str, cands: list[str], s: int, e: int, source: str,
            alternatives: tuple[str, ...] = (), confidence: float | None = None) -> None:
        if not cands or not free(s, e) or is_negated(text, s):
            return
        narrowed = _disambiguate(text, s, cands, wf)
        conf = _confidence(len(narrowed), len(narrowed) < len(cands))
        if confidence is not None:
            conf = min(conf, confidence)
        taken.append((s, e))
        out.append(Extraction(value, tuple(narrowed), s, e, conf, source, alternatives))

    # 1. free values the state records (names, places): longest first
    recorded: dict[str, list[str]] = {}
    for state in (turn.after(), turn.before()):
        for slot, value in state.items():
            spec = wf.slots.get(slot)
            if spec is not None and spec.type == "free" and slot not in recorded.get(value, []):
                recorded.setdefault(value, []).append(slot)
    for value in sorted(recorded, key=len, reverse=True):
        hit = find_value(text, value, wf.slots[recorded[value][0]])
        if hit:
            add(value, recorded[value], hit.start, hit.end, "state")

    # 2. categorical values and synonyms, longest surface form first
    forms: list[tuple[int, str, str, SlotSpec]] = []
    for spec in wf.slots.values():
        if spec.type in {"categorical", "boolean"} or (spec.values and spec.type == "free"):
            for canon in spec.values:
                for f in spec.surface_forms(canon):
                    forms.append((len(basic(f)), f, canon, spec))
    by_span: dict[tuple[int, int], tuple[str, list[str]]] = {}
    for _, f, canon, spec in sorted(forms, key=lambda x: -x[0]):
        hit = find_value(text, f, None)
        if hit is None or not free(hit.start, hit.end):
            continue
        span = (hit.start, hit.end)
        if any(s < span[1] and span[0] < e for s, e in by_span if (s, e) != span):
            continue
        value, slots = by_span.setdefault(span, (canon, []))
        if spec.name not in slots and basic(value) == basic(canon):
            slots.append(spec.name)
    generic = domain_words(wf)
    for (s, e), (value, slots) in sorted(by_span.items()):
        # "book the hotel": a value that is also the workflow's own name is
        # usually a reference to the task, not a constraint on a slot
        weak = 0.6 if basic(value) in generic else None
        add(value, slots, s, e, "categorical", confidence=weak)

    # 3. clock times
    time_slots = [s.name for s in wf.slots.values() if s.type == "time"]
    if time_slots:
        for s, e, readings in find_times(text):
            add(text[s:e], list(time_slots), s, e, "time", tuple(sorted(readings)))

    # 4. counts next to a cue word ("4 people", "three nights")
    number_slots = [s for s in wf.slots.values() if s.type == "number"]
    if number_slots:
        toks = tokens_with_spans(text)
        cues = slot_cues(wf)
        for i, (tok, s, e) in enumerate(toks):
            n = normalize_number(tok)
            if n is None or not free(s, e):
                continue
            window = [t for t, _, _ in toks[i + 1:i + 3]] + [t for t, _, _ in toks[max(0, i - 2):i]]
            hits = cues.slots_for(window)
            cands = [sp.name for sp in number_slots if hits.get(sp.name)]
            if cands:
                add(n, cands, s, e, "number")
            elif len(number_slots) == 1 and i > 0 and toks[i - 1][0] == "for":
                # "a table for 4": the only count slot, but no cue word: not exact
                add(n, [number_slots[0].name], s, e, "number", confidence=0.6)

    # 5. weekdays for date slots
    date_slots = [s.name for s in wf.slots.values() if s.type == "date"]
    if date_slots:
        for tok, s, e in tokens_with_spans(text):
            if tok in WEEKDAYS:
                add(tok, list(date_slots), s, e, "date")
    return _demote_competing(out)


def _demote_competing(found: list[Extraction]) -> list[Extraction]:
    """Two different values for one slot in one utterance ("north of the centre",
    "not Friday, Saturday") leave it open which one the user meant: none is exact."""
    per_slot: dict[str, set[str]] = {}
    for ex in found:
        if len(ex.candidates) == 1:
            per_slot.setdefault(ex.candidates[0], set()).add(basic(ex.value))
    out = []
    for ex in found:
        if len(ex.candidates) == 1 and len(per_slot[ex.candidates[0]]) > 1:
            ex = Extraction(ex.value, ex.candidates, ex.start, ex.end,
                            min(ex.confidence, 0.6), ex.source, ex.alternatives)
        out.append(ex)
    return out
