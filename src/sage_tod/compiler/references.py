"""Values said by reference to another task: "in the same area as the restaurant".

A user who books a second thing rarely repeats what the first one holds: "a hotel in the
same area as the restaurant", "tickets for the same group of people", "a table on the
same day". The words name no value; the value is the one another workflow's slot of the
same kind holds in the dialogue state. The reading is general, derived from the spec
alone:

- the words right after "same" must point (by the schema's own cue words,
  `cues.slot_cues`) at exactly one slot of the turn's workflow, which s_{t-1} leaves
  unset (when it holds a value, "the same day" keeps it, and the carry-over rule judges a
  drop);
- the slots of the other workflows those words point at, of the same value type, are the
  referents; "as the restaurant" (a word of one workflow) keeps that workflow's only;
- the referents must hold one value between them, in s_{t-1} (or s_t, when the user sets
  both at once); none or two ("the same day" after a train on Friday and a hotel from
  Sunday) is no reading;
- not negated ("not in the same area"), and not inside a question about an entity ("Is
  the Gonville Hotel in the same price range as the Curry Garden?", `Claims.free`).

The same holds for an entity named by its kind: "a taxi from the restaurant to the
hotel" names, for the taxi's departure and destination, the entities the restaurant and
hotel workflows hold (`find_entity_references`): the word after "the" (or "my", "our")
must describe the entities of exactly one other workflow (`entity_words`), whose name
slot holds one value in s_{t-1} (or s_t); the candidate slots are those of the turn's
workflow that list that name among their values (a catalogue), and the role word before
the article must decide one of them (`assign.role_decides`: "from", "to", "leave"), which
s_{t-1} leaves unset.

The mention's span is the reference itself ("same area as the restaurant", "the
restaurant"), its source `same_as`, and the resolver keeps it only when nothing the user
said fills the slot (`resolve.PRIORITY`). It is as sure as an accepted offer
(`confidence.CERTAIN`): S2 reads u_t alone and cannot see the value the words refer to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sage_tod.compiler.assign import disambiguate, role_decides
from sage_tod.compiler.confidence import CERTAIN
from sage_tod.compiler.cues import cue_tokens, naming_words, slot_cues
from sage_tod.compiler.entity_words import entity_words
from sage_tod.compiler.lexicon import lexicon, value_keys
from sage_tod.compiler.mentions import Claims, Mention
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.text.normalize import basic

# "same" and up to three words after it, then an optional "as (the|my|...) <word>"
_SAME = re.compile(
    r"(?=[sS])\bsame\s+(?P<what>(?!as\b)[a-z]+(?:\s+(?:of\s+)?(?!as\b)[a-z]+){0,2})"
    r"(?:\s+as\s+(?:the\s+|my\s+|our\s+|that\s+|this\s+|your\s+)?(?P<ref>[a-z]+))?",
    re.IGNORECASE)
# value types whose values mean the same across workflows ("centre" is an area of a hotel
# and of a restaurant alike); names and free text are not carried by "the same"
_KINDS = frozenset({"categorical", "number", "date", "time"})


def _one_slot(wf: Workflow, words: list[str]) -> str | None:
    """The one slot of `wf` that `words` point at most, of a carried type, or None."""
    hits = slot_cues(wf).slots_for(words)
    hits = {s: n for s, n in hits.items() if s in wf.slots and wf.slots[s].type in _KINDS}
    if not hits:
        return None
    top = max(hits.values())
    best = [s for s, n in hits.items() if n == top]
    return best[0] if len(best) == 1 else None


def _last_cue_end(m: re.Match[str], wf: Workflow) -> int:
    """Where the last word after "same" that cues a slot of `wf` ends: the span of
    "the same area with a 4 star rating" is "same area"."""
    cues = slot_cues(wf)
    end = m.end("what")
    for w in reversed(list(re.finditer(r"[a-z]+", m.group("what"), re.IGNORECASE))):
        if cues.slots_for(cue_tokens(w.group(0))):
            return m.start("what") + w.end()
    return end


def referents(spec: SpecBundle, wf: Workflow, slot: str, reference: str,
              before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """The other workflows' slots that `reference` ("same area as the restaurant", "the
    museum") points at for `slot`, with the value each holds (s_{t-1}, else s_t), keyed
    by slot; what the readers read a value from and what the repair hint names."""
    if slot not in wf.slots:
        return {}
    m = _SAME.search(reference)
    if m is not None:
        return _referents(m, spec, wf, slot, before, after)
    words = basic(reference).split()
    held = _entity_held(spec, wf, words[-1], before, after) if words else None
    return {} if held is None else {held[0]: held[1]}


def _entity_held(spec: SpecBundle, wf: Workflow, word: str, before: Mapping[str, str],
                 after: Mapping[str, str]) -> tuple[str, str] | None:
    """The name slot, and its value, of the one other workflow whose entities `word`
    describes ("museum": the attraction's), or None."""
    owners = entity_words(spec).owners.get(word)
    if owners is None or len(owners) != 1:
        return None
    (owner,) = owners
    other = spec.workflows.get(owner)
    name_slot = lexicon(other).name_slot if other is not None and owner != wf.id else None
    held = (before.get(name_slot) or after.get(name_slot)) if name_slot else None
    return (name_slot, held) if name_slot and held else None


def _referents(m: re.Match[str], spec: SpecBundle, wf: Workflow, slot: str,
               before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """`referents` of one match of `_SAME`."""
    words = cue_tokens(m.group("what"))
    ref = (m.group("ref") or "").lower()
    others = [w for w in spec.workflows.values() if w.id != wf.id]
    if ref:
        if ref in naming_words(wf):
            return {}  # "the same area as the hotel" in the hotel's own workflow
        others = [w for w in others if ref in naming_words(w)] or others
    kind = wf.slots[slot]
    out: dict[str, str] = {}
    for other in others:
        s2 = _one_slot(other, words)
        if s2 is None or other.slots[s2].type != kind.type:
            continue
        held = before.get(s2) or after.get(s2)
        if held:
            out[s2] = held
    return out


def find_references(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Every value u_t says by reference to another workflow (module docstring)."""
    return find_same_as(u, wf, claims) + find_entity_references(u, wf, claims)


_DETERMINERS = frozenset({"the", "my", "our"})


def find_entity_references(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """The entities u_t names by their kind for a slot of `wf` that lists such names:
    "a taxi from the restaurant to the hotel" (module docstring)."""
    spec = u.spec
    if spec is None or u.entities is None or len(spec.workflows) < 2:
        return []
    listing = [s for s in wf.slots.values() if s.values and s.type in {"free", "categorical"}]
    if not listing:
        return []
    out: list[Mention] = []
    toks = u.tokens
    for i in range(1, len(toks)):
        word, _, end = toks[i]
        found = (_entity_held(spec, wf, word, u.before, u.after)
                 if toks[i - 1][0] in _DETERMINERS else None)
        if found is None:
            continue
        held = found[1]
        cands = [s.name for s in listing if s.normalize(held) in value_keys(wf, s.name)]
        the = toks[i - 1][1]
        if not cands or not claims.free(the, end) or u.negated(the):
            continue
        narrowed = disambiguate(u.text, the, cands, wf) if len(cands) > 1 else cands
        if len(narrowed) != 1 or narrowed[0] in u.before or (
                len(cands) > 1 and not role_decides(u.text, the, narrowed[0], cands, wf)):
            continue
        # the role word chose the slot: a name s_t holds only in the sibling (departure
        # and destination swapped) is not recorded (`compile._may_hold`)
        out.append(Mention(held, (narrowed[0],), the, end, "same_as", confidence=CERTAIN,
                           narrowed=(narrowed[0],), role_decided=len(cands) > 1))
    return out


def find_same_as(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """The values u_t says by "the same X (as the Y)" (module docstring)."""
    spec = u.spec
    text = u.text
    if spec is None or len(spec.workflows) < 2 or "same" not in text.lower():
        return []
    out: list[Mention] = []
    for m in _SAME.finditer(text):
        slot = _one_slot(wf, cue_tokens(m.group("what")))
        if slot is None or slot in u.before:
            continue
        start, end = m.start(), m.end() if m.group("ref") else _last_cue_end(m, wf)
        if u.negated(start) or not claims.free(start, end):
            continue
        kind = wf.slots[slot]
        held = _referents(m, spec, wf, slot, u.before, u.after)
        values = {kind.normalize(v): v for v in held.values()}
        if len(values) != 1:
            continue  # none, or two ("the same day" after a train on Friday, a hotel Sunday)
        (value,) = values.values()
        if kind.type == "categorical" and kind.values and kind.normalize(
                value) not in value_keys(wf, slot):
            continue  # the other slot's value is no value of this one
        out.append(Mention(value, (slot,), start, end, "same_as", confidence=CERTAIN,
                           narrowed=(slot,)))
    return out
