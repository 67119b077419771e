"""Values the user supplied in u_t: (slot candidates, value, span, confidence).

The IUV criterion needs to know what the user said. An upstream NLU's
`user_values` are used as given; otherwise a schema-driven extractor finds
free values that the state records, categorical values and synonyms, clock
times, counts next to a slot cue, dates for date slots, place names for slots
that hold a city or area, and people's names after a role word. Each
extraction carries a confidence; below the floor (0.5, Appendix J) it is
dropped, and only unambiguous, exact extractions let S1 decide a failure (the
floor and the exactness threshold are the compiler-verifier contract, so they
live in `contracts.criteria`: `EXTRACTION_FLOOR`, `EXACT`). A
value found by its shape (a capitalised span after "in") is a guess and is
left to S2 unless the evidence is strong, and a value s_t may hold in another
spelling ("12th of march", "2 in the afternoon", "Santa Rosa, CA") is not
claimed at all: a clean turn wrongly flagged costs more than a missed failure.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from sage_tod.compiler.confidence import GUESS, LIKELY, SURE
from sage_tod.compiler.cues import SlotCues, cue_tokens, domain_words, slot_cues
from sage_tod.compiler.descriptors import clause_negated, find_descriptors
from sage_tod.compiler.dontcare import find_waivers, waived_value
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.names import find_typed_names
from sage_tod.compiler.offers import find_acceptance
from sage_tod.compiler.utterance import CLAUSE_END, UserTurn
from sage_tod.contracts.criteria import EXACT, EXTRACTION_FLOOR
from sage_tod.contracts.spec import Derived, SpecBundle, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.dates import date_key, same_day
from sage_tod.text.match import Found, find_value, is_negated
from sage_tod.text.normalize import basic, tokens_before, tokens_with_spans
from sage_tod.text.numbers import number_token
from sage_tod.text.places import find_places, is_place_slot, name_spans, same_place
from sage_tod.text.sentences import Sentence
from sage_tod.text.spans import Taken
from sage_tod.text.times import normalize_time

# how many further occurrences of one yes/no word are read ("free wifi and free parking")
_MAX_REPEATS = 8

# Sentences that ask about an entity rather than state a constraint.
_QUESTION_ABOUT_ENTITY = re.compile(
    r"^\s*(is|are|does|do|did|was|were|what'?s|what is|what are|could you tell me|can you tell me)"
    r"\b.*\?\s*$", re.IGNORECASE,
)
# ... but "is there / are there any ... in Phoenix?" searches, it does not verify
_SEARCH_QUESTION = re.compile(
    r"^\s*(is there|are there|is anything|are any|is anyone|do you have|does anyone|"
    r"do they have any)\b", re.IGNORECASE)
# "what's the weather in Cotati on the 7th?": asks about a value, yet the date and the
# place it names are constraints of the search
_WHAT_QUESTION = re.compile(r"^\s*(what'?s|what is|what are|what will|could you tell me|"
                            r"can you tell me)\b", re.IGNORECASE)
# values found by their shape rather than by a schema list may sit in a what-question
_SHAPE_SOURCES = frozenset({"date", "place", "name"})
# the source of a value the user asked about, for a slot whose spec records what is asked
# (`SlotSpec.recorded_when_asked`); its extraction reads "categorical"
_ASKED = "asked"
_PREP_HINTS = {"from": {"departure", "depart", "leave", "leaving", "origin", "originates",
                        "pickup", "from", "start"},
               "leaving": {"departure", "depart", "leave", "leaving", "origin", "originates",
                           "pickup", "from"},
               "to": {"destination", "going", "heading", "dropoff", "arrive", "to", "ends"},
               "after": {"leave", "depart", "departure", "leaveat"},
               "by": {"arrive", "arriveby", "arrival"},
               "before": {"arrive", "arriveby", "arrival"},
               "until": {"dropoff", "return", "end", "until", "checkout", "out", "drop"},
               "till": {"dropoff", "return", "end", "until", "checkout", "out", "drop"},
               "through": {"dropoff", "return", "end", "until", "checkout", "out", "drop"},
               "starting": {"start", "pickup", "departure", "checkin", "in", "from"},
               "back": {"dropoff", "return", "drop", "end", "returning", "inbound"},
               "returning": {"return", "dropoff", "drop", "returning", "inbound"}}
# "2 years ago", "one way", "one of them": a number word that counts nothing
_NOT_A_COUNT_AFTER = frozenset({"way", "of", "another", "more", "ago"})
# what may follow a bare "for 4" that counts the party ("a table for 4 at 7pm, please")
_AFTER_A_BARE_COUNT = frozenset({"at", "on", "and", "please", "in", "by", "this", "next",
                                 "tonight", "today", "tomorrow", "then", "thanks", "from",
                                 "to", "with", "pm", "am"})
_AGO = frozenset({"ago", "back", "before", "earlier", "old"})
_TIME_UNITS = frozenset({"year", "years", "month", "months", "week", "weeks", "day", "days",
                         "hour", "hours", "minute", "minutes"})
# free slots that hold a person's name, by the role their schema names
_PERSON_ROLES = frozenset({"director", "actor", "actors", "actress", "artist", "artists",
                           "singer", "band", "author", "writer", "starring", "performer",
                           "composer", "musician", "cast"})
_BY_ROLES = frozenset({"director", "artist", "artists", "author", "writer", "composer", "band",
                       "singer", "performer", "musician"})
_WITH_ROLES = frozenset({"actor", "actors", "actress", "starring", "cast"})
# prepositions after which a span with a state suffix is surely a place
_STRONG_PREPS = frozenset({"in", "to", "from", "around", "near", "into", "towards", "toward"})
_SEARCH_VERBS = frozenset({"look", "looking", "search", "searching", "find", "finding",
                           "hunting", "shopping"})
# a sentence that closes the dialogue or thanks ("that's all I need today, thanks")
_CLOSING = re.compile(r"\b(thank|thanks|help|helpful|assistance|appreciate|bye|goodbye|"
                      r"that'?s all|that is all|that will be all|all i need|everything|done)\b",
                      re.IGNORECASE)
# words before the end of a range of days
_RANGE_END = frozenset({"through", "thru", "until", "till", "til", "to"})
# contrast that makes a workflow's own name a real choice ("a hotel, not a guesthouse")
_CONTRAST = frozenset({"not", "rather", "instead", "than", "nt", "no"})


@dataclass(frozen=True)
class Extraction:
    """A value the user stated, with the slots it may belong to."""

    value: str
    candidates: tuple[str, ...]
    start: int | None
    end: int | None
    confidence: float
    source: str  # user_values | categorical | time | number | date | place | name | state
    alternatives: tuple[str, ...] = ()

    @property
    def readings(self) -> tuple[str, ...]:
        """Every value the utterance may mean (two clock readings for "at 7:30")."""
        return self.alternatives or (self.value,)

    @property
    def exact(self) -> bool:
        return len(self.candidates) == 1 and self.confidence >= EXACT


def _entity_question_spans(sents: Sequence[Sentence]) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in sents if _QUESTION_ABOUT_ENTITY.match(s.text)]


# "Are there any cheap guesthouses in the north?": a search for entities with these
# values, so its categorical values are constraints too (not sure ones: S2 reads them)
_SEARCH_FOR_ENTITIES = re.compile(
    r"^\s*(?:are there any|are there|is there any|is there an?|do you have any|do you have an?"
    r"|are any)\b", re.IGNORECASE)


def _entity_search_spans(sents: Sequence[Sentence], others: frozenset[str]
                         ) -> list[tuple[int, int]]:
    """Searches for this workflow's entities ("are there any attractions in the centre?"
    searches another workflow: `others` are its words, plural or not)."""
    return [(s.start, s.end) for s in sents
            if _SEARCH_FOR_ENTITIES.match(s.text) and s.text.endswith("?")
            and not {t[:-1] if t.endswith("s") else t for t in basic(s.text).split()} & others]


def _search_question_spans(sents: Sequence[Sentence]) -> list[tuple[int, int]]:
    """Questions that search ("is there anything in Phoenix?", "what's the weather on the
    7th?"): the dates, places and names they carry are constraints."""
    return [(s.start, s.end) for s in sents
            if (_WHAT_QUESTION.match(s.text) or _SEARCH_QUESTION.match(s.text))
            and s.text.endswith("?")]


# "a hotel, as opposed to a guesthouse", "rather than the north": the value is contrasted
_CONTRASTED = re.compile(r"\b(?:as opposed to|rather than|instead of|other than)"
                         r"\s+(?:an?\s+|the\s+)?$", re.IGNORECASE)


def _clause_start(ends: Sequence[int], at: int) -> int:
    """Where the clause holding offset `at` starts (`ends`: where the clause marks of the
    text end, read once per utterance: `UserTurn.clause_ends`)."""
    k = bisect_right(ends, at)  # clause marks that end at or before `at`
    return ends[k - 1] if k else 0


def _negated(text: str, start: int, ends: Sequence[int]) -> bool:
    """A negation among the three words before `start`, within the same clause (`ends`:
    where the clause marks of `text` end, read once per utterance by the caller), or a
    contrast right before it."""
    since = _clause_start(ends, start)
    if _CONTRASTED.search(text, max(since, start - 24), start):
        return True
    return is_negated(text, start, since=since)


def _inside(spans: list[tuple[int, int]], start: int) -> bool:
    return any(s <= start < e for s, e in spans)


def _disambiguate(text: str, start: int, candidates: list[str], wf: Workflow,
                  prep_word: str | None = None) -> list[str]:
    """Narrow candidate slots with the words just before the value (`prep_word`: the
    preposition it depends on, when that is not the word just before: "out of")."""
    if len(candidates) < 2:
        return candidates
    before = tokens_before(text, start, 4)
    cues = slot_cues(wf)
    hits = cues.slots_for(before)
    last = prep_word or (before[-1] if before else "")
    for prep, hint_words in _PREP_HINTS.items():
        if last == prep:
            for c in candidates:
                spec = wf.slots[c]
                words = set(re.findall(r"[a-z]+", (spec.name + " " + spec.description).lower()))
                if words & hint_words:
                    hits[c] = hits.get(c, 0) + 2
    scored = [(hits.get(c, 0), c) for c in candidates]
    best = max(s for s, _ in scored)
    return _unqualified(text, [c for s, c in scored if s == best])


def _unqualified(text: str, candidates: list[str]) -> list[str]:
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


def _confidence(n_candidates: int, narrowed: bool) -> float:
    if n_candidates == 1:
        return LIKELY if narrowed else SURE
    return 1.0 / n_candidates


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
    return [e for e in _extract_from_text(UserTurn(turn, after, before), wf, others)
            if e.confidence >= EXTRACTION_FLOOR]


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
            own = set(domain_words(wf)) | {w for w in basic(wf.id).split() if len(w) > 2}
            out = {w for other in spec.workflows.values() if other.id != wf.id
                   for w in (set(domain_words(other)) | set(basic(other.id).split()))
                   if len(w) > 2}
            got = self._by_id[wf.id] = frozenset(out - own)
        return got


_OTHER_WORDS: Derived[SpecBundle, _OtherWorkflowWords] = Derived(
    "extract.other_workflow_words", _OtherWorkflowWords)


def _extract_from_text(u: UserTurn, wf: Workflow, other_words: frozenset[str] = frozenset()
                       ) -> list[Extraction]:
    text = u.text
    sents = u.sentences
    skip = _entity_question_spans(sents)
    what = _search_question_spans(sents)
    searching = _entity_search_spans(sents, other_words)
    taken = Taken()  # claimed spans, searched in O(log n)
    out: list[Extraction] = []
    after = u.after
    clause_ends = u.clause_ends

    def free(s: int, e: int, source: str = "") -> bool:
        if taken.overlaps(s, e):
            return False
        # a name after a request cue asks for that entity, in a question too ("Do you have
        # information on the alpha - milton guest house?"), though not surely
        return (not _inside(skip, s) or (source in _SHAPE_SOURCES and _inside(what, s))
                or _inside(searching, s) or source in ("typed_name", _ASKED))

    def add(value: str, cands: list[str], s: int, e: int, source: str,
            alternatives: tuple[str, ...] = (), confidence: float | None = None,
            narrowed: list[str] | None = None, floor: float | None = None) -> None:
        if not cands or not free(s, e, source) or _negated(text, s, clause_ends):
            return
        if source == _ASKED:  # asked about, and the spec records what is asked: sure
            source, floor = "categorical", max(floor or 0.0, EXACT)
        elif _inside(skip, s):  # in a searching question: a constraint, but not a sure one
            floor = None
            confidence = min(confidence if confidence is not None else 1.0, LIKELY)
        if narrowed is None:
            narrowed = _disambiguate(text, s, cands, wf)
        conf = _confidence(len(narrowed), len(narrowed) < len(cands))
        if floor is not None:
            conf = max(conf, floor)
        if confidence is not None:
            conf = min(conf, confidence)
        taken.add(s, e)
        out.append(Extraction(value, tuple(narrowed), s, e, conf, source, alternatives))

    # 1. free values the state records (names, places): longest first
    recorded: dict[str, list[str]] = {}
    for state in (after, u.before):
        for slot, value in state.items():
            sspec = wf.slots.get(slot)
            if sspec is not None and sspec.type == "free" and slot not in recorded.get(value, []):
                recorded.setdefault(value, []).append(slot)
    for value in sorted(recorded, key=len, reverse=True):
        hit = find_value(text, value, wf.slots[recorded[value][0]])
        if hit:
            slots = recorded[value]
            # "leaving from the Ruskin gallery" while s_{t-1} had it as the destination:
            # the words before point at another free slot, so the slot is a guess
            others = [n for n, sp in wf.slots.items() if sp.type == "free" and n not in slots]
            pointed = _disambiguate(text, hit.start, [*slots, *others], wf) if others else slots
            weak = GUESS if not set(pointed) & set(slots) else None
            add(value, slots, hit.start, hit.end, "state", confidence=weak)

    # 2. categorical values and synonyms, longest surface form first
    _categorical(u, wf, add, free)

    # 3. clock times (a time s_t holds still keeps its words from being read as a count)
    taken.extend(_times(u, wf, add))

    # 4. counts next to a cue word ("4 people", "three nights")
    _counts(u, wf, add, free)

    # 5. dates for date slots: "March 12th", "the 11th", "tomorrow", "next Monday"
    taken.extend(_dates(u, wf, add))

    # 6. place names for free slots that hold a city, area or location
    _places(u, wf, add, free)

    # 7. people's names after a role word ("directed by Morton DaCosta", "stars X")
    _people(u, wf, add, free)

    # 7a. cuisines said as a modifier, amenities asked for with a verb ("include wifi")
    for d in find_descriptors(u.turn, wf, sents=sents):
        same = [i for i, ex in enumerate(out) if ex.candidates == d.slots
                and normalize_boolean(ex.value) is not None
                and normalize_boolean(ex.value) == normalize_boolean(d.value)]
        if same:
            # "include free wifi": the synonym "free" read it already; the verb makes it sure
            i = same[0]
            ex = out[i]
            out[i] = Extraction(ex.value, ex.candidates, ex.start, ex.end,
                                max(ex.confidence, d.confidence), ex.source, ex.alternatives)
            continue
        add(d.value, list(d.slots), d.start, d.end, "descriptor", confidence=d.confidence,
            narrowed=list(d.slots), floor=EXACT if d.confidence >= EXACT else None)

    # 7b. entity names after a naming cue or a request ("called X", "a table at X")
    for tn in find_typed_names(u.turn, wf, other_words, user=u):
        add(tn.value, [tn.slot], tn.start, tn.end, "typed_name", confidence=tn.confidence,
            narrowed=[tn.slot], floor=EXACT if tn.confidence >= EXACT else None)

    # 8. waivers: "it doesn't matter", "no preference" -> dontcare (compiler/dontcare.py)
    for w in find_waivers(u.turn, wf):
        if taken.overlaps(w.start, w.end):
            continue
        taken.add(w.start, w.end)
        out.append(Extraction(waived_value(), w.slots, w.start, w.end, w.confidence,
                              "dontcare"))

    # 9. an accepted offer: "Yes, book it" -> the name the agent offered (compiler/offers.py)
    acc = find_acceptance(u.turn, wf, user=u)
    if acc is not None and not any(acc.slot in ex.candidates for ex in out):
        out.append(Extraction(acc.value, (acc.slot,), acc.start, acc.end, acc.confidence,
                              "accepted_offer"))
    return _demote_competing(out, wf, text)


class _Add(Protocol):
    def __call__(self, value: str, cands: list[str], s: int, e: int, source: str,
                 alternatives: tuple[str, ...] = (), confidence: float | None = None,
                 narrowed: list[str] | None = None, floor: float | None = None) -> None: ...


class _Free(Protocol):
    def __call__(self, s: int, e: int, source: str = "") -> bool: ...


def _categorical(u: UserTurn, wf: Workflow, add: _Add, free: _Free) -> None:
    text = u.text
    after = u.after
    by_span: dict[tuple[int, int], tuple[str, list[str]]] = {}
    toks = u.tokens
    said = u.said
    bigrams = {t1 + t2: (s1, e2) for (t1, s1, _), (t2, _, e2) in pairwise(toks)}
    lex = lexicon(wf)
    # only the forms one of whose possible first tokens the text holds, or whose compact
    # spelling is one of its bigrams, can be in it (`Lexicon.candidates`)
    for i in lex.candidates(said, bigrams):
        vf = lex.forms[i]
        f, canon, spec, anchors, compact = vf.form, vf.canon, vf.spec, vf.anchors, vf.compact
        found = (vf.query.find(text) if anchors is None or not anchors.isdisjoint(said)
                 else None)
        hit = found[0] if found else None
        if hit is None and len(compact) >= 8 and compact in bigrams:
            # "swimming pool" for the value "swimmingpool" ("concert halls": "concerthalls")
            b_start, b_end = bigrams[compact]
            hit = Found(b_start, b_end, compact)
        found_at = [hit] if hit is not None else []
        if hit is not None and normalize_boolean(f) is not None:
            # "free wifi and free parking": every "free" may describe another amenity
            found_at += _later_hits(text, f, hit.end)
        for hit in found_at:
            if not free(hit.start, hit.end, _ASKED if spec.recorded_when_asked else ""):
                continue
            span = (hit.start, hit.end)
            if any(s < span[1] and span[0] < e for s, e in by_span if (s, e) != span):
                continue
            value, slots = by_span.setdefault(span, (canon, []))
            if spec.name not in slots and basic(value) == basic(canon):
                slots.append(spec.name)
    generic = domain_words(wf)
    cues = slot_cues(wf)
    for (s, e), (value, slots) in sorted(by_span.items()):
        near = [t for t, ts, te in toks if te <= s][-3:] + [t for t, ts, te in toks if ts >= e][:3]
        if basic(value) in generic and not (set(near) & _CONTRAST and _other_value_said(
                text, value, slots, wf)) and not _other_value_offered(u, value, slots, wf, s):
            # "book the hotel", "a cheap hotel": the workflow's own name refers to the
            # task, not to a slot, unless contrasted with another value ("a hotel, not a
            # guesthouse") or said against another value the agent offered
            # ("I really need a hotel in the west please." to "I found a guest house
            # listing", MultiWOZ PMUL2859 turn 4)
            continue
        if any(_compact(value) == _compact(after[c]) and basic(value) != basic(after[c])
               for c in slots if c in after):
            continue  # "nightclub" recorded as "night club"
        if _inside_recorded_name(text, s, e, value, after):
            continue  # "park" in "sheep's green and lammas land park"
        before = [t for t, ts, te in toks if te <= s][-1:]
        if before == ["how"]:
            continue  # "how expensive is it?": the degree asked about, no wish stated
        truth = normalize_boolean(value)
        if truth is not None:
            # a bare "yes"/"no"/"free" answers or describes; it is a slot value only next
            # to a word of the slot ("free wifi", "parking: no")
            hits = cues.slots_for(near)
            cued = [c for c in slots if hits.get(c)]
            # "free wifi and free parking": the word right after names the amenity
            nxt = [t for t, ts, te in toks if ts >= e][:1]
            right = [c for c in cued if cues.slots_for(nxt).get(c)]
            cued = right or cued
            if not cued:
                continue
            if any(normalize_boolean(after.get(c, "")) == truth for c in cued):
                continue  # "free wifi" recorded as internet=yes
            if clause_negated(text, s):
                continue  # "It doesn't need to have free parking": not a wish for it
            narrowed = _disambiguate(text, s, cued, wf) if len(cued) > 1 else cued
            asked = (len(narrowed) == 1 and wf.slots[narrowed[0]].recorded_when_asked
                     and _asks_yes_no(u.sentences, s))
            add(value, slots, s, e, _ASKED if asked else "categorical", narrowed=narrowed)
            continue
        add(value, slots, s, e, "categorical")


# a question whose answer is yes or no: "Do they have free internet?", "Can I check if it
# has free wifi?", "Is it cheap?"
_YES_NO_QUESTION = re.compile(
    r"^\s*(?:(?:and|also|so|ok|okay|great|oh|well)\s*,?\s+)?(?:do|does|did|is|are|was|were"
    r"|can|could|will|would|has|have|should)\b|\b(?:check if|know if|wondering if|tell me if"
    r"|whether)\b", re.IGNORECASE)


def _asks_yes_no(sents: Sequence[Sentence], at: int) -> bool:
    """The sentence of u_t holding offset `at` is a yes/no question."""
    return any(st.start <= at < st.end and st.text.rstrip().endswith("?")
               and _YES_NO_QUESTION.search(st.text) is not None for st in sents)


def _later_hits(text: str, form: str, start: int) -> list[Found]:
    """The occurrences of `form` in `text` after `start` (at most `_MAX_REPEATS`: a long
    utterance may repeat a word thousands of times)."""
    out: list[Found] = []
    while len(out) < _MAX_REPEATS:
        hit = find_value(text[start:], form, None)
        if hit is None:
            return out
        out.append(Found(start + hit.start, start + hit.end, hit.key))
        start += hit.end
    return out


def _compact(value: str) -> str:
    return basic(value).replace(" ", "")


def _inside_recorded_name(text: str, s: int, e: int, value: str,
                          state: Mapping[str, str]) -> bool:
    """The value is a word of a longer name the state records and the user says."""
    word = basic(value)
    toks = tokens_with_spans(text)
    said = {t for t, _, _ in toks}
    for recorded in state.values():
        rtoks = basic(recorded).split()
        if len(rtoks) < 3 or word not in rtoks or basic(recorded) == word:
            continue
        if sum(t in said for t in rtoks) * 2 >= len(rtoks):
            return True
    return False


def _other_value_said(text: str, value: str, slots: list[str], wf: Workflow) -> bool:
    """Another value of the same slot is named too ("a hotel rather than a guesthouse")."""
    for name in slots:
        spec = wf.slots[name]
        for other in spec.values:
            if basic(other) == basic(value):
                continue
            if any(find_value(text, f, None) or find_value(text, f + "s", None)
                   for f in spec.surface_forms(other)):
                return True  # "a hotel, no guesthouses"
    return False


def _other_value_offered(u: UserTurn, value: str, slots: list[str], wf: Workflow,
                         at: int) -> bool:
    """The agent's last turn names another value of the slot, and the user answers with
    this one alone, in a sentence that asks nothing: a choice between them ("I really
    need a hotel in the west please." to "I found a guest house listing for Rosa's Bed
    and Breakfast"). The word must ask for a kind ("a hotel"), not name the entity at
    hand ("book this hotel" to "Kirkwood House is a guesthouse", MultiWOZ PMUL4076 turn 1),
    and a sentence with a question mark is left alone: "I'm looking for a hotel that has a
    star rating of 2 as well, do any of those 14 hotels have a 2 star rating?" is no
    choice in the corpus (MUL1008 turn 2). A reply that opens with the value after the
    agent asked a question answers it, question mark or not ("Hotel would be better, can
    I get a phone number for one please?", MUL1276 turn 4)."""
    agent = u.last_agent
    if not agent or _other_value_said(u.text, value, slots, wf):
        return False
    if not tokens_before(u.text, at, 1) and "?" in agent[-200:]:
        # "Hotel would be better, can I get a phone number for one please?" to "There is
        # a guesthouse and hotel available which do you prefer?" (MUL1276 turn 4): a reply
        # that opens with the value answers the agent's question between the two
        return _other_value_said(agent, value, slots, wf)
    if tokens_before(u.text, at, 1) not in (["a"], ["an"]):
        return False  # "I would like to book this hotel": the entity at hand, no kind
    if any(s.start <= at < s.end and "?" in s.text for s in u.sentences):
        return False  # "Are there any hotels that are cheap ...?": a search, not a choice
    return _other_value_said(agent, value, slots, wf)


def _counts(u: UserTurn, wf: Workflow, add: _Add, free: _Free) -> None:
    number_slots = [s for s in wf.slots.values() if s.type == "number"]
    if not number_slots:
        return
    text = u.text
    toks = u.tokens
    cues = slot_cues(wf)
    party = [sp.name for sp in number_slots if cues.slots_for(["people"]).get(sp.name)]
    if len(party) == 1:
        _couple(u, party[0], add, free)
    for i, (tok, s, e) in enumerate(toks):
        n = number_token(tok)
        if n is None or not free(s, e):
            continue
        nxt = [t for t, _, _ in toks[i + 1:i + 3]]
        if (len(party) == 1 and nxt == ["of", "us"] and n != "1" and i > 0
                and toks[i - 1][0] in ("all", "the", "for")):
            # "a table for all 5 of us", "the two of us": the party itself ("one of us is
            # vegetarian", "two of us are driving" count no party)
            add(n, party, s, e, "number")
            continue
        if nxt and (nxt[0] in _NOT_A_COUNT_AFTER
                    or (nxt[0] in _TIME_UNITS and set(nxt[1:2]) & _AGO)):
            continue  # "one way", "one of them", "two years ago"
        if (text[s:e].lower() == "one" and i > 1 and toks[i - 1][0] == "for"
                and toks[i - 2][0] in _SEARCH_VERBS):
            continue  # "look for one in Anaheim": an item, not a count
        if i > 1 and toks[i - 1][0] == "the" and toks[i - 2][0] == "of":
            continue  # "Out of the 5, how many are expensive?": the results, not people
        window = nxt + [t for t, _, _ in toks[max(0, i - 2):i]]
        hits = cues.slots_for(window)
        for slot in _compound_hits(cues, nxt[:1]):
            hits[slot] = hits.get(slot, 0) + 1
        cands = [sp.name for sp in number_slots if hits.get(sp.name)]
        # the noun right after a count names what it counts: "4 stars for two nights"
        named = [c for c in cands if nxt and c in cues.slots_for(nxt[:1])]
        if named:
            cands = named
        if cands:
            add(n, cands, s, e, "number")
        elif (len(number_slots) == 1 and i > 0 and toks[i - 1][0] == "for"
              and (not nxt or nxt[0] in _AFTER_A_BARE_COUNT or number_token(nxt[0]))):
            # "for 3 days"/"for two nights" count no people, "a table for 4 at 7" does
            # "a table for 4": the only count slot, but no cue word: not exact
            add(n, [number_slots[0].name], s, e, "number", confidence=GUESS)


# the party of the user and one companion: "a room for me and my wife" (not "My husband
# and I are celebrating our anniversary ...", MultiWOZ val: the search states no party)
_RELATIVE = (r"(?:wife|husband|partner|girlfriend|boyfriend|friend|son|daughter|mother|father"
             r"|mom|mum|dad|brother|sister|colleague|fiance|fiancee|spouse)")
_COUPLE = re.compile(rf"\bfor (?:me|myself) and my {_RELATIVE}\b"
                     rf"|\bfor my {_RELATIVE} and (?:me|myself)\b", re.IGNORECASE)


def _couple(u: UserTurn, slot: str, add: _Add, free: _Free) -> None:
    """"For me and my wife" counts two people, for the workflow's one party-size slot;
    not in a negated clause, and only where no count is said beside it."""
    m = _COUPLE.search(u.text)
    if m is None or not free(m.start(), m.end()):
        return
    if any(number_token(t) is not None for t, _, _ in u.tokens):
        return  # "me and my wife and our 3 kids": the count is said otherwise
    add("2", [slot], m.start(), m.end(), "number")


# words before a time that say it is when the user gets there
_ARRIVAL = re.compile(r"\b(?:get|gets|getting|be|make it)\s+(?:me\s+|us\s+)?there\b",
                      re.IGNORECASE)


def _times(u: UserTurn, wf: Workflow, add: _Add) -> list[tuple[int, int]]:
    """Emit the clock times s_t does not hold; return the spans of those it holds."""
    time_slots = [s.name for s in wf.slots.values() if s.type == "time"]
    if not time_slots:
        return []
    after = u.after
    held = {slot: normalize_time(after[slot]) for slot in time_slots if slot in after}
    text = u.text
    recorded: list[tuple[int, int]] = []
    for tm in u.times:
        s, e, readings = tm.start, tm.end, tm.readings
        # s_t has this time in some time slot, in any spelling ("2 in the afternoon")
        if any(r is not None and r in readings for r in held.values()):
            recorded.append((s, e))
            continue
        cands = _disambiguate(text, s, list(time_slots), wf)
        if len(cands) > 1 and _ARRIVAL.search(text, _clause_start(u.clause_ends, s), s):
            # "whatever time that will get me there closest to 14:00" (MultiWOZ PMUL1420
            # turn 3): being there is arriving, whatever the preposition
            cands = _disambiguate(text, s, list(time_slots), wf, prep_word="by")
        if any(c in held and held[c] is None for c in cands):
            recorded.append((s, e))
            continue  # a candidate holds a time this reader cannot compare
        # no time slot holds any reading of it: the words before chose the slot, and were
        # they wrong the time would still be recorded nowhere, so the narrowing does not
        # make the value less sure ("I would like to get there by 09:00" with no time in
        # s_t, MultiWOZ PMUL4333 turn 5)
        floor = EXACT if len(cands) == 1 else None
        add(text[s:e], list(time_slots), s, e, "time", tuple(sorted(readings)), narrowed=cands,
            floor=floor)
    return recorded


def _has_range_slot(wf: Workflow, slots: list[str]) -> bool:
    """Some date slot of the workflow is the end of a range (return, drop-off, check-out)."""
    hint = _PREP_HINTS["until"]
    return any(set(re.findall(r"[a-z]+", (wf.slots[s].name + " " + wf.slots[s].description)
                              .lower())) & hint for s in slots)


def _compound_hits(cues: SlotCues, tokens: list[str]) -> set[str]:
    """Slots named by a word written as two of their cue words ("bedroom" for a slot
    described as "number of bed rooms")."""
    out: set[str] = set()
    for t in tokens:
        if not t.isalpha() or cues.slots_for([t]):
            continue
        for k in range(3, len(t) - 2):
            common = set(cues.slots_for([t[:k]])) & set(cues.slots_for([t[k:]]))
            out |= common
    return out


def _dates(u: UserTurn, wf: Workflow, add: _Add) -> list[tuple[int, int]]:
    """Emit the dates s_t does not hold; return the spans of those it may hold."""
    date_slots = [s.name for s in wf.slots.values() if s.type == "date"]
    if not date_slots:
        return []
    recorded: list[tuple[int, int]] = []
    after = u.after
    held = {slot: date_key(after[slot]) for slot in date_slots if slot in after}
    text = u.text
    closing: bool | None = None  # computed once: it reads the whole utterance
    for m in u.dates:
        if m.kind == "rel" and closing is None:
            closing = _CLOSING.search(re.sub(r"\s+'", "'", text)) is not None
        if m.kind == "rel" and (re.match(r"\s*(?:is|was|'s|will be)\b", text[m.end:m.end + 16])
                                or closing):
            # "Today is my anniversary", "That's all I need today, thanks": the day
            # talked about, not a date asked for
            continue
        before = tokens_before(text, m.start, 1)
        if before and before[0] in _RANGE_END and not _has_range_slot(wf, date_slots):
            continue  # "Saturday through Monday": the end of a stay the schema counts
        # s_t already has this day in some date slot ("12th of march" for "March 12th")
        if any(k is not None and same_day(m.key, k) for k in held.values()):
            recorded.append((m.start, m.end))
            continue
        cands = _disambiguate(text, m.start, list(date_slots), wf)
        # a candidate slot holds a date that cannot be compared with this one
        # ("tomorrow" vs "March 2nd", or a form this module does not read): s_t may
        # well record it, so nothing is claimed
        if any(c in held and (held[c] is None or same_day(m.key, held[c] or "") is None)
               for c in cands):
            recorded.append((m.start, m.end))
            continue
        # a date is a date: one slot named by the words before it ("until March
        # 13th" for the drop-off date) is as sure as the only date slot. Relative days
        # ("tomorrow") and numeric dates ("4/5") are not: many states keep only the
        # weekday, and 4/5 may be the 4th of May
        conf: float | None = EXACT if len(cands) == 1 else None
        if m.kind == "rel":
            conf = GUESS
        elif m.form == "num":
            conf = min(conf or 1.0, LIKELY)
        add(m.text, list(date_slots), m.start, m.end, "date", narrowed=cands,
            confidence=conf, floor=conf if conf == EXACT else None)
    return recorded


def _places(u: UserTurn, wf: Workflow, add: _Add, free: _Free) -> None:
    slots = [s.name for s in wf.slots.values() if is_place_slot(s)]
    if not slots:
        return
    text = u.text
    after = u.after
    last_agent = u.last_agent
    cues = slot_cues(wf)
    categorical = lexicon(wf).value_words
    generic = domain_words(wf)
    for m in find_places(text):
        if not free(m.start, m.end, "place"):
            continue
        core = basic(m.core)
        if not core or core in categorical or core in generic or core == basic(wf.id):
            continue  # a value of another slot, or the task's own name
        # s_t holds it somewhere (perhaps as "Santa Rosa, CA", or "NYC" as "New York City")
        if any(same_place(m.text, v) for v in after.values()):
            continue
        conf = m.confidence
        cands = list(slots)
        strong = False
        if m.context in {"answer", "reply"}:
            # a whole reply names the slot the agent just asked about
            asked = cues.slots_for(cue_tokens(last_agent))
            asked_places = [c for c in slots if asked.get(c)]
            if not asked_places:
                continue  # a bare name answers no place question: a pick, a title, ...
            best = max(asked[c] for c in asked_places)
            cands = [c for c in asked_places if asked[c] == best]
            if "?" in last_agent:
                conf = LIKELY
                strong = len(cands) == 1 and m.context == "answer"
            narrowed = cands
        else:
            narrowed = _disambiguate(text, m.start, cands, wf, m.context)
            # "to Fresno, CA": a state or country after the name makes it a place
            strong = m.context in _STRONG_PREPS and m.core != m.text
        # "over to BBQ ... the weather in Discovery Bay" with city=Discovery Bay: the
        # slot's value is stated here too, so the other span is something else
        if all(c in after and _states(text, after[c]) for c in narrowed):
            continue
        # the user repeats a place the agent offered: a reference to the offer, not a
        # new constraint, when s_t already has a value for the slot
        if _offered(u.turn, m.core):
            if any(c in after for c in narrowed):
                continue
            conf, strong = min(conf, GUESS), False
        if strong and len(narrowed) == 1:
            add(m.text, cands, m.start, m.end, "place", narrowed=narrowed, floor=EXACT)
        else:
            add(m.text, cands, m.start, m.end, "place", confidence=conf, narrowed=narrowed)


def _instead(text: str, ex: Extraction) -> bool:
    """The value is said as a correction: "instead" follows it in its clause."""
    if ex.end is None:
        return False
    rest = CLAUSE_END.split(text[ex.end:ex.end + 60], maxsplit=1)[0]
    return bool(re.match(r"\s*(?:\w+\s+){0,2}instead\b", rest, re.IGNORECASE))


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


def _states(text: str, value: str) -> bool:
    """`text` names `value` (or its part before a ", CA" suffix)."""
    return bool(find_value(text, value, None) or find_value(text, value.partition(",")[0], None))


def _offered(turn: Turn, value: str) -> bool:
    """The agent said `value` in one of its last two turns (the user may be echoing it)."""
    history = turn.history or ()
    return any(find_value(h.agent, value, None) for h in history[-2:])


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class _PersonSlots:
    """The workflow's free slots about people (slot -> its role words) and its name
    slots (built once per workflow: `_PERSON_SLOTS`)."""

    roles: Mapping[str, frozenset[str]]
    names: tuple[str, ...]

    @staticmethod
    def build(wf: Workflow) -> _PersonSlots:
        roles: dict[str, frozenset[str]] = {}
        for spec in wf.slots.values():
            if spec.type != "free" or spec.values or is_place_slot(spec):
                continue
            words = set(re.findall(r"[a-z]+", (spec.name + " " + spec.description).lower()))
            if words & _PERSON_ROLES:
                roles[spec.name] = frozenset(words & _PERSON_ROLES)
        names = tuple(sp.name for sp in wf.slots.values() if sp.type == "free"
                      and not sp.values and "name" in re.findall(r"[a-z]+", sp.name.lower())
                      and not is_place_slot(sp))
        return _PersonSlots(roles, names)


_PERSON_SLOTS: Derived[Workflow, _PersonSlots] = Derived("extract.person_slots",
                                                         _PersonSlots.build)


_NAMING_WORD = re.compile(r"\b(?:called|named|titled)\b", re.IGNORECASE)


def _people(u: UserTurn, wf: Workflow, add: _Add, free: _Free) -> None:
    people = _PERSON_SLOTS.of(wf)
    roles, names = people.roles, list(people.names)
    if not roles and not (names and _NAMING_WORD.search(u.text)):
        return  # without role slots only "called/named/titled X" can name someone
    after = u.after
    for span in name_spans(u.text):
        if not free(span.start, span.end, "name") or not span.before:
            continue
        prev = span.before[-1]
        conf = LIKELY if span.words > 1 else GUESS
        if prev in {"called", "named", "titled"}:
            # "an attraction called Jesus Green Outdoor Pool": the slot that names things
            cands = _disambiguate(u.text, span.start, names, wf) if names else []
        elif prev == "by":
            cands = [c for c, w in roles.items() if w & _BY_ROLES]
            verb = span.before[-2] if len(span.before) > 1 else ""
            # "directed by": the verb names the role
            named = [c for c in cands if any(_common_prefix(verb, r) >= max(4, len(verb) - 2)
                                             for r in roles[c])]
            cands = named or cands
        elif prev in {"with", "featuring"}:
            cands = [c for c, w in roles.items() if w & _WITH_ROLES]
            conf = min(conf, GUESS)
        else:
            # "stars Jeff Harding", "the director Ang Lee"
            cands = [c for c, w in roles.items()
                     if any(_common_prefix(prev, r) >= max(4, len(prev) - 2) for r in w)]
        if not cands:
            continue
        if any(same_place(span.text, v) for v in after.values()):
            continue  # s_t records the name (perhaps with more words)
        if all(c in after and _states(u.text, after[c]) for c in cands):
            continue
        if _offered(u.turn, span.text):
            if any(c in after for c in cands):
                continue
            conf = min(conf, GUESS)
        add(span.text, cands, span.start, span.end, "name", confidence=conf, narrowed=cands)
