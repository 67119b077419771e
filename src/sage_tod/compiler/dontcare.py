""""It doesn't matter", "no preference", "any will be fine": the user waives a slot.

A waiver is a value (`dontcare`) the state must record like any other, yet no
value reader sees it: it names no value, only a slot, and often not even that
("It doesn't matter to me." answers the agent's last question). This module
finds the waiver phrase and the slot it is about:

1. a slot named in the same clause ("Area doesn't matter", "I don't care about
   the star rating as long as it's expensive": the clause ends at "as long as",
   "but", "just", so "expensive" is not waived);
2. else the slot the agent just asked about (`agent_acts.request` of the last
   turn is not in a Turn, so the cue words of the last agent question in
   h_<t): "What area would you like?" -> "It doesn't matter to me.";
3. else the slot whose options the agent just listed ("a 0 star place and a
   4 star place. Which do you prefer?" -> "I don't care as long as it's cheap").

A waiver for the one slot the clause names, or the one slot the agent asked
about, is exact (S1 may decide it); several slots, or a waiver read from the
agent's question when the clause names something else, are left to S2.
Nothing is claimed from a question ("does it matter which area?") or for a
slot s_t already waives.
"""

from __future__ import annotations

import re

from sage_tod.compiler.assign import slot_words
from sage_tod.compiler.confidence import CERTAIN, GUESS, SPLIT
from sage_tod.compiler.cues import cue_tokens, slot_cues, stem
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.mentions import Mention
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.booleans import DONTCARE
from sage_tod.text.match import find_value
from sage_tod.text.sentences import sentences

# the phrase that waives; written on the folded text (lower case, "n't"/" nt" glued)
_WAIVER = re.compile(
    r"(?=[adeinsw])"  # its first letters (test_round16_screens)
    r"\b(?:"
    r"(?:does|do|did|would|will)(?: not|n't|nt| nt)(?: really)? (?:matter|make a difference)"
    r"|(?:do|did)(?: not|n't|nt| nt)(?: really)? care"
    r"|no (?:particular |real |specific |strong )?(?:preference|preferences)"
    # "no specific hour", "no particular area": the slot's own word after it
    r"|no (?:particular|specific|set|fixed) (?:time|hour|day|date|area|part of town|location"
    r"|price|price range|budget|cuisine|food|type|kind|star rating|rating)"
    r"|(?:not|n't|nt) (?:really )?(?:picky|particular|fussy|specific|important)"
    r"|(?:any|anything|anywhere|either|whichever|whatever)(?: one| of them| of those| time)?"
    r" (?:is|'s|would be|will be|should be|will|would|is just)? ?(?:fine|ok|okay|good|great|do"
    r"|work|works)"
    r"|(?:i'm|i am|we're|we are) (?:flexible|open)"
    # (not "for any price difference": a sum, no slot waived)
    r"|any (?:area|part of town|side of town|price|price range|pricerange|type|kind|cuisine"
    r"|food|star rating|rating|number of stars|time|day)"
    r"(?! (?:difference|differences|increase|change|changes|charge|charges|fee|fees)\b)"
    # "I am sparing no expense" (MultiWOZ MUL2119 turn 1): the price does not matter
    r"|spar(?:e|ing) no expense"
    # not before a time or day phrase ("any time after 5", "any day on the weekend"), though
    # "I am not specific on that" waives
    r")\b(?! (?:after|before|by|around|between|from|until|till|at)\b| on\b(?! (?:that|this|it)\b))")
# "As long as I arrive by 19:00 that's all I care about" (MUL1898 turn 5): what the agent
# asked about, unless the user named it, does not matter
_ONLY_CARE = re.compile(r"(?=[t])"  # its first letters (test_round16_screens)
                        r"\b(?:that's|that is|thats) all (?:i|we) (?:really )?care about\b")
# a bare "no" / "not really" answering "do you have a preference?" waives the asked slot
_BARE_NO = re.compile(r"^\s*(?:no|nope|not really|no,? not really|not particularly|none)"
                      r"\s*(?:[,.!]|$)")
_PREFERENCE_Q = re.compile(r"\b(?:preference|prefer|particular|specific|in mind|matter)\b")
# "Does price matter?" - "No, it doesn't.": the answer says the slot does not matter
_MATTER_Q = re.compile(r"\b(?:does|do|would|will) (?:the |it )?[a-z ]{0,30}matter\b")
# the waiver reaches to the end of its clause, not past a contrast or a condition
_CLAUSE_CUT = re.compile(r"\b(?:but|as long as|so long as|though|although|just|only|however"
                         r"|except|i want|i need|i would like|i'd like|we want|we need)\b"
                         r"|\band\b|[,.;!?]")
_ASKED_CLAUSE = re.compile(r"[^.!?,]*\?")
_TIME_WORDS = frozenset({"when", "time", "times", "leave", "arrive", "depart", "departure"})


def _waiver(slots: tuple[str, ...], start: int, end: int, confidence: float) -> Mention:
    """A waiver of `slots` said at [start, end) of u_t."""
    return Mention(waived_value(), slots, start, end, "dontcare", confidence=confidence)


_GLUED = re.compile(r" (?=n't|'s|'re|'m)")


def _glue(text: str) -> tuple[str, list[int]]:
    """`text` lower-cased with " n't" -> "n't" and " 's" -> "'s"; and for each character of
    the result the offset it came from in `text`."""
    low = text.lower()
    where: list[int] = []
    prev = 0
    for m in _GLUED.finditer(low):  # each dropped space
        where.extend(range(prev, m.start()))
        prev = m.end()
    where.extend(range(prev, len(low)))
    return _GLUED.sub("", low), where


def _last_agent(u: UserTurn) -> str:
    """The end of the agent's last turn, where its questions and options are (bounded: a
    turn may be very long)."""
    history = u.turn.history or ()
    return history[-1].agent[-400:] if history else ""


# an agent's request for a value put without a question mark: "if you tell me what kind of
# cuisine you're interested in, I can narrow it down" (MultiWOZ PMUL2433 turn 3), "Please
# tell me your price range." It asks which, what or whether: "let me know when you have
# the reservation ID" asks for no preference (τ-bench airline gpt-4o task 7)
_TELL_ME = re.compile(r"\b(?:tell me|let me know) (?:what|which|whether|if|your)\b[^.!?]*")


def _last_questions(u: UserTurn) -> str:
    """The clauses of the agent's last turn that end in a question mark; without one, what
    its request to be told ("if you tell me what kind of cuisine ...") asks for."""
    agent = _last_agent(u).lower()
    asked = " ".join(m.group(0) for m in _ASKED_CLAUSE.finditer(agent))
    if asked:
        return asked
    return " ".join(m.group(0) for m in _TELL_ME.finditer(agent))


_COUNTED = re.compile(r"\b(\d{1,2})\s*-?\s*([a-z]+)")


def _alternatives(wf: Workflow, agent: str, waivable: set[str]) -> tuple[str, ...]:
    """The slot the agent's last turn offers a choice of, when its question names none
    ("One is rather expensive and the other more moderately priced. Do you prefer one
    over the other?", "a 0 star place, and a 4 star place. Which do you prefer?"): the
    slot two or more of whose values it names, values of a closed set or counts
    written with the slot's own word ("4 star")."""
    if not agent:
        return ()
    cues = slot_cues(wf)
    named: dict[str, set[str]] = {}
    entity = lexicon(wf).name_slot
    for name in waivable:
        if name == entity:
            # "Either one would be fine." to two offered restaurants (MultiWOZ val MUL1463
            # turn 3, with the name catalogue): the agent is to pick the entity, whose
            # name is no search constraint to waive
            continue
        spec = wf.slots[name]
        if spec.values:
            got = {spec.normalize(v) for v in spec.values if find_value(agent, v, spec)}
        elif spec.type == "number":
            got = {m[1] for m in _COUNTED.finditer(agent.lower())
                   if name in cues.index.get(stem(m[2]), ())}
        else:
            continue
        if len(got) >= 2:
            named[name] = got
    if not named:
        return ()
    most = max(len(v) for v in named.values())
    return tuple(sorted(s for s, v in named.items() if len(v) == most))


def _pointed(wf: Workflow, text: str, waivable: set[str]) -> tuple[str, ...]:
    """The slots `text` names most strongly; time slots only when it speaks of time, and of
    two time slots the one whose own word it says ("when I leave" -> the leave-at slot)."""
    toks = cue_tokens(text)
    named = {s: n for s, n in slot_cues(wf).slots_for(toks).items() if s in waivable}
    timed = {s: n for s, n in named.items() if wf.slots[s].type == "time"}
    if timed and set(toks) & _TIME_WORDS:
        named = timed
        own = {s for s in timed
               if set(re.findall(r"[a-z]+", f"{s} {wf.slots[s].description}".lower()))
               & {t[:5] for t in toks if len(t) >= 5} | set(toks) & {"arrive", "leave"}}
        named = {s: n for s, n in named.items() if s in own} or named
    else:
        named = {s: n for s, n in named.items() if wf.slots[s].type != "time"} or named
    if not named:
        return ()
    best = max(named.values())
    return tuple(sorted(s for s, n in named.items() if n == best))


def _waivable(wf: Workflow) -> set[str]:
    """Slots a user may waive: constraints, not counts of people or stays."""
    return set(_WAIVABLE.of(wf))


def _build_waivable(wf: Workflow) -> frozenset[str]:
    out = set()
    for name, spec in wf.slots.items():
        words = slot_words(spec)
        if spec.type == "number" and words & {"people", "person", "stay", "nights", "guests"}:
            continue
        out.add(name)
    return frozenset(out)


_WAIVABLE: Derived[Workflow, frozenset[str]] = Derived("dontcare.waivable", _build_waivable)


_TIME_OF_DAY = frozenset({"early", "earlier", "late", "later", "morning", "afternoon",
                          "evening", "night", "noon", "midday"})


def _qualified(wf: Workflow, slots: tuple[str, ...], rest: str) -> bool:
    """The words after "but" speak of the waived slot again: its cue words, or a time of
    day for a time slot."""
    toks = cue_tokens(rest)
    hits = slot_cues(wf).slots_for(toks)
    if any(hits.get(s) for s in slots):
        return True
    return bool(set(toks) & _TIME_OF_DAY) and all(wf.slots[s].type == "time" for s in slots)


def find_waivers(turn: UserTurn | Turn, wf: Workflow) -> list[Mention]:
    """The slots u_t waives, with the waiver's span (`dontcare` mentions)."""
    u = UserTurn.of(turn)
    text = _GLUED.sub("", u.text.lower())
    if "no" not in text and _WAIVER.search(text) is None and _ONLY_CARE.search(text) is None:
        # no waiver phrase anywhere (a match inside a sentence is one in the whole text:
        # no sentence ends inside a phrase or before the words its look-ahead reads), and
        # every bare answer `_BARE_NO` reads opens with "no": nothing to read sentence by
        # sentence (`tests/test_lexicon.py` compares with `_read_waivers`)
        return []
    return _read_waivers(u, wf)


def _read_waivers(turn: UserTurn | Turn, wf: Workflow) -> list[Mention]:
    """`find_waivers` without its screen: u_t sentence by sentence."""
    u = UserTurn.of(turn)
    text, where = _glue(u.text)
    waivable = _waivable(wf)
    asked = _last_questions(u)
    out: list[Mention] = []
    for sent in sentences(text):
        if sent.text.rstrip().endswith("?"):
            continue  # "does the area matter?", "is any of them fine?": asked, not waived
        for m in _WAIVER.finditer(text, sent.start, sent.end):
            if len(out) >= 8:
                break
            before = text[max(sent.start, m.start() - 120):m.start()]
            cut_before = max((c.end() for c in _CLAUSE_CUT.finditer(before)), default=0)
            after = text[m.end():min(sent.end, m.end() + 120)]
            cut_after = _CLAUSE_CUT.search(after)
            clause = (before[cut_before:] + " " + m.group(0) + " "
                      + (after[:cut_after.start()] if cut_after else after))
            # the phrase itself may name the slot ("sparing no expense": the price, though
            # the clause names the stars too)
            slots = (_pointed(wf, m.group(0), waivable) or _pointed(wf, clause, waivable)
                     or _pointed(wf, asked, waivable)
                     or _alternatives(wf, _last_agent(u), waivable))
            if not slots:
                continue
            if cut_after and cut_after.group(0) == "but" and _qualified(
                    wf, slots, after[cut_after.end():]):
                # "It doesn't really matter but early would be nice" (MultiWOZ val PMUL1712):
                # the same slot gets a preference at once, so the waiver is not claimed;
                # "Area doesn't matter, but I'd like it moderate" waives the area
                continue
            conf = CERTAIN
            out.append(_waiver(slots, where[m.start()], where[m.end() - 1] + 1,
                               conf if len(slots) == 1 else SPLIT))
        only = _ONLY_CARE.search(text, sent.start, sent.end)
        if only and not out:
            named = set(_pointed(wf, text[sent.start:only.start()], waivable))
            slots = tuple(s for s in _pointed(wf, asked, waivable) if s not in named)
            if slots:
                out.append(_waiver(slots, where[only.start()], where[only.end() - 1] + 1,
                                   CERTAIN if len(slots) == 1 else SPLIT))
        bare = _BARE_NO.match(sent.text)  # "No, it doesn't." to "Does price matter?" too
        if bare and not out and _PREFERENCE_Q.search(asked):
            slots = _pointed(wf, asked, waivable)
            if slots:
                s0 = sent.start + bare.start()
                # "No." to "any preference?" waives, yet many annotations keep nothing; to
                # "does it matter?" the answer says so
                sure = CERTAIN if _MATTER_Q.search(asked) else GUESS
                out.append(_waiver(slots, where[s0], where[sent.start + bare.end() - 1] + 1,
                                   sure if len(slots) == 1 else SPLIT))
    return out


def waived_value() -> str:
    """The value a waiver writes (the MultiWOZ/SGD convention)."""
    return DONTCARE
