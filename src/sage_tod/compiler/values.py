"""The readers of values said in u_t: what the state records, listed values, times,
counts, dates, places and people's names.

Each reader takes the turn analysis (`utterance.UserTurn`), the workflow, and a
read-only view of the spans the resolver has claimed for higher-ranked sources
(`mentions.Claims`), and returns `Mention`s in the order it read them; the resolver
(`resolve.py`) decides which survive. A reader consults the claims only where the old
blackboard did so while reading (why the results are the same: `resolve.py`):

- `categorical` must, and sees what it saw then (every higher-ranked mention
  resolved): a form whose span is claimed (by a value s_t records) is not entered, so
  a shorter form that overlaps it may be, which changes what it reads;
- `counts`, `places` and `people` skip a claimed span only to save work: the resolver
  drops a mention on a claimed span anyway, their own earlier mentions included.

A clock time or a date s_t may hold is returned as a claim-only mention
(`time_held`, `date_held`): its words must not be read again as a count, and the
resolver claims them after the reader's values, as the old reader did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from sage_tod.compiler.assign import PREP_HINTS, disambiguate, role_decides, slot_words
from sage_tod.compiler.confidence import CERTAIN, GUESS, LIKELY
from sage_tod.compiler.cues import SlotCues, cue_tokens, domain_words, slot_cues
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.mentions import Claims, Mention
from sage_tod.compiler.names import find_typed_names
from sage_tod.compiler.utterance import UserTurn, inside
from sage_tod.contracts.criteria import EXACT
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.dates import date_key, same_day
from sage_tod.text.match import Found, find_value
from sage_tod.text.normalize import basic, tokens_before, tokens_with_spans
from sage_tod.text.numbers import number_token
from sage_tod.text.party import SCREEN as PARTY_SCREEN
from sage_tod.text.party import party_phrases
from sage_tod.text.places import find_places, is_place_slot, name_spans, same_place
from sage_tod.text.times import normalize_time

# how many further occurrences of one yes/no word are read ("free wifi and free parking")
_MAX_REPEATS = 8

# "2 years ago", "one way", "one of them": a number word that counts nothing
_NOT_A_COUNT_AFTER = frozenset({"way", "of", "another", "more", "ago"})
# what may follow a bare "for 4" that counts the party ("a table for 4 at 7pm, please")
_AFTER_A_BARE_COUNT = frozenset({"at", "on", "and", "please", "in", "by", "this", "next",
                                 "tonight", "today", "tomorrow", "then", "thanks", "from",
                                 "to", "with", "pm", "am", "for"})
# what is booked "for N": a bare count after it is the party ("a table for 2")
_BOOKED_FOR = frozenset({"table", "tables", "reservation", "reservations", "book", "booking",
                         "reserve", "booked", "reserved", "seat", "seats", "ticket", "tickets"})
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


def categorical(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Listed values and synonyms of categorical, boolean and listed free slots, longest
    surface form first (`lexicon.Lexicon`)."""
    text = u.text
    out: list[Mention] = []
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
        # a slot that records what is asked, and the name slot (a name the user brings up
        # in a question: below), may be read inside a question
        asked_ok = spec.recorded_when_asked or spec.name == lex.name_slot
        for hit in found_at:
            if not claims.free(hit.start, hit.end, "asked" if asked_ok else ""):
                continue
            span = (hit.start, hit.end)
            if any(s < span[1] and span[0] < e for s, e in by_span if (s, e) != span):
                continue
            value, slots = by_span.setdefault(span, (canon, []))
            if spec.name not in slots and basic(value) == basic(canon):
                slots.append(spec.name)
    generic = domain_words(wf)
    cues = slot_cues(wf)
    named = find_typed_names(u, wf) if by_span else []
    for (s, e), (value, slots) in sorted(by_span.items()):
        preceding = [t for t, ts, te in toks if te <= s]
        near = preceding[-3:] + [t for t, ts, te in toks if ts >= e][:3]
        if basic(value) in generic and not _predicated(preceding[-4:]) and not any(
                wf.slots[c].recorded_from_task_word for c in slots) and not (
                set(near) & _CONTRAST and _other_value_said(
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
        if any(n.start <= s and e <= n.end and (n.start, n.end) != (s, e) for n in named):
            continue  # "park" in "it's called Wandlebury Country Park": part of the name
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
            if len(cued) == 1 and not u.clause_negated(s):
                out.extend(_conjoined_amenity(u, wf, value, cued[0], e))
            if any(normalize_boolean(after.get(c, "")) == truth for c in cued):
                continue  # "free wifi" recorded as internet=yes
            if u.clause_negated(s):
                continue  # "It doesn't need to have free parking": not a wish for it
            narrowed = disambiguate(text, s, cued, wf) if len(cued) > 1 else cued
            asked = (len(narrowed) == 1 and wf.slots[narrowed[0]].recorded_when_asked
                     and _asks_yes_no(u, s))
            # "free wifi": the word right after names the amenity, as sure as the slot
            # said outright; a cue word further off ("wifi that is free") only narrows,
            # and a question asks ("do they have free parking?", MultiWOZ val MUL0637
            # turn 2: the gold records none of 9 such)
            said_with = len(right) == 1 and narrowed == right and not _asked_at(u, s)
            out.append(Mention(value, tuple(slots), s, e, "asked" if asked else "categorical",
                               narrowed=tuple(narrowed), floor=CERTAIN if said_with else None))
            continue
        if (lex.name_slot in slots and inside(u.entity_questions, s)
                and not inside(u.entity_searches, s)):
            # "Is the mumford theatre still in operation?", "Can you tell me where Clare
            # Hall is located?": an entity the user brings up by name is the one wanted,
            # question or not (MultiWOZ validation: the gold records all 23 such names);
            # one the agent has just offered is only asked about (11 of 22 recorded)
            if u.agent_said(value):
                continue
            out.append(Mention(value, tuple(slots), s, e, "asked"))
            continue
        out.append(Mention(value, tuple(slots), s, e, "categorical"))
    return out


def _asked_at(u: UserTurn, at: int) -> bool:
    """The clause holding offset `at` asks: its sentence ends with "?" and the clause
    (from the last comma, "and" or "but" of the sentence before `at`) opens with an
    auxiliary or a wh-word. "do they have free parking?" asks; "I need to book an
    expensive hotel that has free wifi, can you help me?" states the wifi, its question
    is the tag (MultiWOZ val MUL0046 turn 3); "I need one that is moderately priced and
    does it have free parking?" asks about the parking."""
    st = u.sentence_at(at)
    if st is None or not st.text.rstrip().endswith("?"):
        return False
    if _TAG_QUESTION.search(st.text):
        return True  # "and they have free wifi, right?"
    before = u.text[st.start:at]
    cut = max((m.end() for m in _CLAUSE_BREAK.finditer(before)), default=0)
    return _QUESTION_OPENER.match(before[cut:]) is not None


_CLAUSE_BREAK = re.compile(r"[,;]|\b(?:and|but)\b", re.IGNORECASE)
_TAG_QUESTION = re.compile(r"\b(?:right|correct|yes|no|yeah|true)\s*\?\s*$", re.IGNORECASE)
_QUESTION_OPENER = re.compile(
    r"\s*(?:(?:so|and|also|oh|ok|okay|well|then|great|thanks|yes|no)\s*,?\s+)*"
    r"(?:do|does|did|is|are|was|were|can|could|would|will|have|has|what|which|how|where"
    r"|when|who|any|anything|if|whether)\b", re.IGNORECASE)


def _conjoined_amenity(u: UserTurn, wf: Workflow, value: str, slot: str, end: int
                       ) -> list[Mention]:
    """"free wifi and parking": the yes/no word before the first amenity describes the
    one joined to it by "and" too (MultiWOZ val PMUL3396 turn 1, "free wifi and
    parking" with parking = yes). `end` is where the yes/no word ends; the amenity
    right after it is `slot`'s cue, and the word after "and" must cue another slot of
    the workflow that takes the same value, and nothing else."""
    after_word = [(t, ts, te) for t, ts, te in u.tokens if ts >= end][:3]
    if len(after_word) < 3 or after_word[1][0] != "and":
        return []
    word, ws, we = after_word[2]
    truth = normalize_boolean(value)
    others = [c for c in slot_cues(wf).slots_for([word]) if c != slot and c in wf.slots
              and any(normalize_boolean(v) == truth for v in wf.slots[c].values)]
    if len(others) != 1 or normalize_boolean(u.after.get(others[0], "")) == truth:
        return []
    canon = next(v for v in wf.slots[others[0]].values if normalize_boolean(v) == truth)
    return [Mention(canon, (others[0],), ws, we, "categorical", narrowed=(others[0],))]


# a question whose answer is yes or no: "Do they have free internet?", "Can I check if it
# has free wifi?", "Is it cheap?"
_YES_NO_QUESTION = re.compile(
    r"^\s*(?:(?:and|also|so|ok|okay|great|oh|well)\s*,?\s+)?(?:do|does|did|is|are|was|were"
    r"|can|could|will|would|has|have|should)\b|\b(?:check if|know if|wondering if|tell me if"
    r"|whether)\b", re.IGNORECASE)


def _asks_yes_no(u: UserTurn, at: int) -> bool:
    """The sentence of u_t holding offset `at` is a yes/no question."""
    st = u.sentence_at(at)
    return (st is not None and st.text.rstrip().endswith("?")
            and _YES_NO_QUESTION.search(st.text) is not None)


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


def _predicated(before: list[str]) -> bool:
    """The words before the workflow's own name make it a property of the entity, not
    the task: "I would like it to be a hotel", "it does need to be a hotel", "an actual
    hotel" (MultiWOZ validation MUL0032, MUL0706, SNG0942). "A type of hotel" is left
    out: it is as often the attribute asked for ("the type of hotel, phone number")."""
    if not before:
        return False
    if before[-1] in ("a", "an"):
        before = before[:-1]
    if not before:
        return False
    if before[-1] in ("actual", "real", "proper"):
        return True
    return before[-1] == "be" and len(before) > 1 and before[-2] in _PREDICATING


# the words before "be" that make "be a hotel" say what the place is: "to be", "should
# be", "must be"; not "will be a hotel in the north?" of a search, nor "would be a hotel"
_PREDICATING = frozenset({"to", "should", "must", "needs", "need", "has", "have"})


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
    if (st := u.sentence_at(at)) is not None and "?" in st.text:
        return False  # "Are there any hotels that are cheap ...?": a search, not a choice
    return _other_value_said(agent, value, slots, wf)


def counts(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Counts next to a cue word of a number slot ("4 people", "three nights")."""
    number_slots = [s for s in wf.slots.values() if s.type == "number"]
    if not number_slots:
        return []
    out: list[Mention] = []
    text = u.text
    toks = u.tokens
    cues = slot_cues(wf)
    party = [sp.name for sp in number_slots if cues.slots_for(["people"]).get(sp.name)]
    for i, (tok, s, e) in enumerate(toks):
        n = number_token(tok)
        if n is None or not claims.free(s, e):
            continue
        nxt = [t for t, _, _ in toks[i + 1:i + 3]]
        if len(party) == 1 and n != "1" and (_party_of_us(toks, i) or (
                i > 1 and toks[i - 1][0] == "of" and toks[i - 2][0] in ("group", "party"))):
            # "a table for all 5 of us", "There will be three of us staying", "for a group
            # of 6": the party itself ("one of us is vegetarian", "two of us are driving"
            # count no party)
            out.append(Mention(n, tuple(party), s, e, "number"))
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
            out.append(Mention(n, tuple(cands), s, e, "number"))
        elif (not _NUMERIC_GOES_ON.match(text, e)
              and (answered := u.answered(wf, s, [sp.name for sp in number_slots])) is not None):
            # "Just one, thank you." to "How many tickets would you like?": a bare answer
            # to the agent's question for one count
            out.append(Mention(n, (answered,), s, e, "number", narrowed=(answered,)))
        elif (len(number_slots) == 1 and i > 0 and toks[i - 1][0] == "for"
              and (not nxt or nxt[0] in _AFTER_A_BARE_COUNT or number_token(nxt[0]))):
            # "for 3 days"/"for two nights" count no people, "a table for 4 at 7" does
            # "for 4 at 17:15": the only count slot, but no cue word: not exact; what is
            # booked for it ("a table for 2", "book it for 4", "a reservation for 7 at
            # 14:00") is a party (MultiWOZ val: ~120 such counts the gold records)
            # ("Yes, please, for one." to "Would you like me to book that for you?": the
            # booking the agent proposed)
            booked = (any(t in _BOOKED_FOR for t, _, _ in toks[max(0, i - 4):i - 1])
                      or _AGENT_BOOKS.search(u.last_agent) is not None)
            out.append(Mention(n, (number_slots[0].name,), s, e, "number",
                               confidence=1.0 if booked else GUESS))
    if len(party) == 1:
        out.extend(_party_phrase(u, party[0], claims,
                                 any(party[0] in m.slots for m in out)))
    return out


# a digit that goes on as a date, a time or a decimal ("4/5/2018", "4:30", "4.5")
_NUMERIC_GOES_ON = re.compile(r"[/:.\-]\d")
# an agent's turn about a booking, or asking for a count: "for 4" in the reply is the party
_AGENT_BOOKS = re.compile(r"\b(?:book|booking|reserve|reservation|how many|tickets?)\b",
                          re.IGNORECASE)


# what a subset of the party does ("two of us are driving", "three of us want fish"):
# after these, "N of us" counts no party
_SUBSET_VERBS = frozenset({"is", "are", "was", "were", "will", "would", "have", "has", "had",
                           "want", "wants", "need", "needs", "can", "could", "do", "does",
                           "don", "prefer", "like", "eat", "drive", "driving", "may", "might",
                           "should", "must"})


def _party_of_us(toks: Sequence[tuple[str, int, int]], i: int) -> bool:
    """The count at token `i` is "N of us" and the words after do not make it a subset
    of the party ("There 's 4 of us", "8 of us staying 5 nights", MultiWOZ val PMUL1650
    turn 8 and MUL1174 turn 2)."""
    if [t for t, _, _ in toks[i + 1:i + 3]] != ["of", "us"]:
        return False
    after = toks[i + 3][0] if i + 3 < len(toks) else ""
    return after not in _SUBSET_VERBS


def _party_phrase(u: UserTurn, slot: str, claims: Claims, counted: bool) -> list[Mention]:
    """A party said in words (`text.party`): "just me", "I'll be traveling alone" count
    one person, "for me and my wife" two, for the workflow's one party-size slot; not in
    a negated clause ("it won't be just me"). A couple is the party one books for only
    after "for" (MultiWOZ val: "My husband and I are celebrating our anniversary ..."
    states no party) and where no number is said ("me and my wife and our 3 kids"); the
    user alone, where no count of the party is read beside it (`counted`)."""
    out: list[Mention] = []
    text = u.text
    if u.said.isdisjoint(PARTY_SCREEN):
        return out
    for p in party_phrases(text):
        if not claims.free(p.start, p.end) or u.clause_negated(p.start):
            continue
        if p.count == "2" and (not text[:p.start].lower().rstrip().endswith("for") or any(
                number_token(t) is not None for t, _, _ in u.tokens)):
            continue
        if p.count == "1" and counted:
            continue
        out.append(Mention(p.count, (slot,), p.start, p.end, "number"))
        break  # the first party the user states
    return out


# words before a time that say it is when the user gets there
_ARRIVAL = re.compile(r"\b(?:get|gets|getting|be|make it)\s+(?:me\s+|us\s+)?there\b",
                      re.IGNORECASE)


# a pick-up said in the clause before a time: the time is when the ride leaves
_PICKUP = re.compile(r"\b(?:pick(?:s|ed|ing)?(?: me| us| them)? up|pickup)\b", re.IGNORECASE)
# "I need to leave the restaurant by 19:30": the latest departure, not an arrival
_LEAVE_VERB = re.compile(r"\b(?:leave|leaves|leaving|depart|departs|departing|"
                         r"picked up|pick me up|pick us up)\b", re.IGNORECASE)
_ARRIVE_VERB = re.compile(r"\b(?:arrive|arrives|arriving|arrival|get there|be there|"
                          r"get to|reach)\b", re.IGNORECASE)


def _leave_by(u: UserTurn, at: int) -> bool:
    """The time at `at` follows "by" and a leave verb governs it in its clause, with no
    arrive verb between them ("I want to leave the museum by 02:45", MultiWOZ val
    MUL2693 turn 6, taxi leave time 02:45): "by" bounds the departure then."""
    if tokens_before(u.text, at, 1) != ["by"]:
        return False
    since = u.clause_start(at)
    leave = [m.end() for m in _LEAVE_VERB.finditer(u.text, since, at)]
    return bool(leave) and _ARRIVE_VERB.search(u.text, leave[-1], at) is None


def times(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """The clock times s_t does not hold (`time`), and those it may hold (`time_held`: a
    time s_t holds still keeps its words from being read as a count)."""
    time_slots = [s.name for s in wf.slots.values() if s.type == "time"]
    if not time_slots:
        return []
    out: list[Mention] = []
    after = u.after
    held = {slot: normalize_time(after[slot]) for slot in time_slots if slot in after}
    text = u.text
    for tm in u.times:
        s, e, readings = tm.start, tm.end, tm.readings
        # s_t has this time in some time slot, in any spelling ("2 in the afternoon")
        if any(r is not None and r in readings for r in held.values()):
            out.append(Mention(text[s:e], (), s, e, "time_held"))
            continue
        cands = disambiguate(text, s, list(time_slots), wf,
                             "after" if _leave_by(u, s) else None)
        if len(cands) > 1 and _ARRIVAL.search(text, u.clause_start(s), s):
            # "whatever time that will get me there closest to 14:00" (MultiWOZ PMUL1420
            # turn 3): being there is arriving, whatever the preposition
            cands = disambiguate(text, s, list(time_slots), wf, prep_word="by")
        elif len(cands) > 1 and _PICKUP.search(text, u.clause_start(s), s) and not (
                _ARRIVE_VERB.search(text, u.clause_start(s), s)):
            # "I need the taxi to pick me up at the park at 17:00" (MultiWOZ val MUL1128
            # turn 8): the pick-up is when the ride leaves
            cands = disambiguate(text, s, list(time_slots), wf, prep_word="after")
        if any(c in held and held[c] is None for c in cands):
            out.append(Mention(text[s:e], (), s, e, "time_held"))
            continue  # a candidate holds a time this reader cannot compare
        # no time slot holds any reading of it: the words before chose the slot, and were
        # they wrong the time would still be recorded nowhere, so the narrowing does not
        # make the value less sure ("I would like to get there by 09:00" with no time in
        # s_t, MultiWOZ PMUL4333 turn 5)
        floor = EXACT if len(cands) == 1 else None
        out.append(Mention(text[s:e], tuple(time_slots), s, e, "time", tuple(sorted(readings)),
                           narrowed=tuple(cands), floor=floor))
    return out


def _has_range_slot(wf: Workflow, slots: list[str]) -> bool:
    """Some date slot of the workflow is the end of a range (return, drop-off, check-out)."""
    hint = PREP_HINTS["until"]
    return any(slot_words(wf.slots[s]) & hint for s in slots)


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


def dates(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Dates for date slots ("March 12th", "the 11th", "tomorrow", "next Monday") that s_t
    does not hold (`date`), and those it may hold (`date_held`)."""
    date_slots = [s.name for s in wf.slots.values() if s.type == "date"]
    if not date_slots:
        return []
    out: list[Mention] = []
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
            out.append(Mention(m.text, (), m.start, m.end, "date_held"))
            continue
        cands = disambiguate(text, m.start, list(date_slots), wf)
        # a candidate slot holds a date that cannot be compared with this one
        # ("tomorrow" vs "March 2nd", or a form this module does not read): s_t may
        # well record it, so nothing is claimed
        if any(c in held and (held[c] is None or same_day(m.key, held[c] or "") is None)
               for c in cands):
            out.append(Mention(m.text, (), m.start, m.end, "date_held"))
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
        out.append(Mention(m.text, tuple(date_slots), m.start, m.end, "date",
                           narrowed=tuple(cands), confidence=1.0 if conf is None else conf,
                           floor=conf if conf == EXACT else None))
    return out


def places(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Place names for free slots that hold a city, area or location."""
    slots = [s.name for s in wf.slots.values() if is_place_slot(s)]
    if not slots:
        return []
    out: list[Mention] = []
    text = u.text
    after = u.after
    last_agent = u.last_agent
    cues = slot_cues(wf)
    categorical = lexicon(wf).value_words
    generic = domain_words(wf)
    for m in find_places(text):
        if not claims.free(m.start, m.end, "place"):
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
            narrowed = disambiguate(text, m.start, cands, wf, m.context)
            # "to Fresno, CA": a state or country after the name makes it a place
            strong = m.context in _STRONG_PREPS and m.core != m.text
        # "over to BBQ ... the weather in Discovery Bay" with city=Discovery Bay: the
        # slot's value is stated here too, so the other span is something else
        if all(c in after and _states(text, after[c]) for c in narrowed):
            continue
        # the user repeats a place the agent offered: a reference to the offer, not a
        # new constraint, when s_t already has a value for the slot
        if u.agent_said(m.core):
            if any(c in after for c in narrowed):
                continue
            conf, strong = min(conf, GUESS), False
        if strong and len(narrowed) == 1:
            out.append(Mention(m.text, tuple(cands), m.start, m.end, "place",
                               narrowed=tuple(narrowed), floor=EXACT))
        else:
            out.append(Mention(m.text, tuple(cands), m.start, m.end, "place", confidence=conf,
                               narrowed=tuple(narrowed)))
    return out



def _states(text: str, value: str) -> bool:
    """`text` names `value` (or its part before a ", CA" suffix)."""
    return bool(find_value(text, value, None) or find_value(text, value.partition(",")[0], None))


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
            words = slot_words(spec)
            if words & _PERSON_ROLES:
                roles[spec.name] = frozenset(words & _PERSON_ROLES)
        names = tuple(sp.name for sp in wf.slots.values() if sp.type == "free"
                      and not sp.values and "name" in re.findall(r"[a-z]+", sp.name.lower())
                      and not is_place_slot(sp))
        return _PersonSlots(roles, names)


_PERSON_SLOTS: Derived[Workflow, _PersonSlots] = Derived("extract.person_slots",
                                                         _PersonSlots.build)


_NAMING_WORD = re.compile(r"(?=[cnt])"  # its first letters (test_round16_screens)
                          r"\b(?:called|named|titled)\b", re.IGNORECASE)


def people(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """People's names after a role word ("directed by Morton DaCosta", "stars X")."""
    person = _PERSON_SLOTS.of(wf)
    roles, names = person.roles, list(person.names)
    if not roles and not (names and _NAMING_WORD.search(u.text)):
        return []  # without role slots only "called/named/titled X" can name someone
    out: list[Mention] = []
    after = u.after
    for span in name_spans(u.text):
        if not claims.free(span.start, span.end, "name") or not span.before:
            continue
        prev = span.before[-1]
        conf = LIKELY if span.words > 1 else GUESS
        if prev in {"called", "named", "titled"}:
            # "an attraction called Jesus Green Outdoor Pool": the slot that names things
            cands = disambiguate(u.text, span.start, names, wf) if names else []
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
        if u.agent_said(span.text):
            if any(c in after for c in cands):
                continue
            conf = min(conf, GUESS)
        out.append(Mention(span.text, tuple(cands), span.start, span.end, "name",
                           confidence=conf, narrowed=tuple(cands)))
    return out


def recorded(u: UserTurn, wf: Workflow, claims: Claims) -> list[Mention]:
    """Free values s_t or s_{t-1} records (names, places) said in u_t, longest first."""
    text = u.text
    slots_of: dict[str, list[str]] = {}
    for state in (u.after, u.before):
        for slot, value in state.items():
            sspec = wf.slots.get(slot)
            if sspec is not None and sspec.type == "free" and slot not in slots_of.get(value, []):
                slots_of.setdefault(value, []).append(slot)
    out: list[Mention] = []
    for value in sorted(slots_of, key=len, reverse=True):
        hit = find_value(text, value, wf.slots[slots_of[value][0]])
        if hit:
            slots = slots_of[value]
            # "leaving from the Ruskin gallery" while s_{t-1} had it as the destination:
            # the words before point at another free slot, so the slot is a guess
            others = [n for n, sp in wf.slots.items() if sp.type == "free" and n not in slots]
            pointed = disambiguate(text, hit.start, [*slots, *others], wf) if others else slots
            if not set(pointed) & set(slots):
                if len(pointed) == 1 and role_decides(text, hit.start, pointed[0],
                                                      [*slots, *others], wf):
                    # "I need to leave Charlie Chan by 11:15" with Charlie Chan held as the
                    # destination (MultiWOZ val MUL1357 turn 6, where the user swaps the
                    # two): a role word decides the sibling, as surely as for a value no
                    # state holds, and that sibling must hold it itself
                    out.append(Mention(value, (pointed[0],), hit.start, hit.end, "state",
                                       narrowed=(pointed[0],), role_decided=True))
                    continue
                out.append(Mention(value, tuple(slots), hit.start, hit.end, "state",
                                   confidence=GUESS))
                continue
            out.append(Mention(value, tuple(slots), hit.start, hit.end, "state"))
    return out
