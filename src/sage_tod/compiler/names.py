"""Names the user types: "a restaurant called Dojo Noodle Bar", "book a table at Royal Spice".

An entity's name is a free value no schema lists (unless the spec carries a
catalogue, which `values.categorical` reads), so it is found by the
words that introduce it: a naming cue ("called", "named", "the name is"), or
a request about one place ("information on", "directions to", "a reservation
at", "let's go with"). What follows the cue, up to the clause's end or a word
that starts a new constituent ("for 2 people", "on Sunday", "please"), is the
name. In mixed-case text the span must start with a capital: that is what
makes "at Royal Spice" a name and "at the moment" not. Lower-cased text (the
output of many MultiWOZ pipelines) has no such evidence, so there only the
naming cues count, and never exactly.

A name the agent's last turn wrote as one (capitalised, or offered) and the user says
back outside a question about it is picked in any case ("give me information on
cherry hinton hall and grounds" after the agent listed "Cherry Hinton Hall and
Grounds"): the agent's capitals are the evidence the user's text lacks.

The name goes to the workflow's one free slot whose name says "name"; a name
the state holds anywhere (in any spelling that shares a word) is not claimed,
nor a value another slot lists ("a cheap guesthouse"), nor a town.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from sage_tod.compiler.confidence import CERTAIN, GUESS, LIKELY
from sage_tod.compiler.cues import domain_words
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.mentions import Mention
from sage_tod.compiler.offers import name_slot, offered_in, overlaps
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.criteria import EXACT
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.match import find_value
from sage_tod.text.normalize import basic, spellings, token_text
from sage_tod.text.places import name_spans

# a question about an entity, not a request put as one ("could you get me a table ... at
# the Travellers Rest?" picks it)
_ASKS_ABOUT = re.compile(r"^\s*(?:is|are|does|do|did|was|were|has|have|what|what's|how|which"
                         r"|where|when|who|whats)\b.*\?\s*$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\[[^\]]*\]")
_TOWNS = frozenset({"cambridge", "london", "city centre", "centre"})
_REFUSE = re.compile(r"\b(?:no|not|n't|nt|another|different|other|instead|rather)\b",
                     re.IGNORECASE)

# naming cues: what follows is a name whatever its case
# ("Its name is called restaurant alimentum": the verb after "the name is" is no name)
_NAMING = re.compile(r"(?=[cint])"  # its first letters (test_round16_screens)
                     r"\b(?:called|named|(?:the name is|its name is|name of it is|it's name is)"
                     r"(?:\s+(?:called|named))?)\s+(?:the\s+)?", re.IGNORECASE)
# requests about one place: what follows is a name when it is capitalised
_ABOUT = re.compile(
    r"(?=[abdefghilprstv])"  # its first letters (test_round16_screens)
    r"\b(?:information (?:on|about|for)|info (?:on|about)|directions to|details (?:on|about|of)"
    r"|tell me (?:about|more about)|(?:looking|look) for|find me|find|reservation (?:at|for)"
    r"|table at|booking at|book(?: me)?(?: a table| a room)? at|go with|try|address (?:of|for)"
    r"|postcode (?:of|for)|phone number (?:of|for)|heard (?:of|about)|interested in"
    r"|stay at|eat at|visit|is there an?)\s+(?:the\s+)?", re.IGNORECASE)
_END = frozenset({"for", "on", "at", "in", "please", "and", "with", "that", "which", "near",
                  "this", "today", "tonight", "tomorrow", "to", "from", "by", "i", "it", "is",
                  "are", "was", "there", "as", "also", "so", "but", "or", "if", "because",
                  "located", "attraction", "restaurant", "hotel", "guesthouse", "a", "an"})
_NOT_A_NAME = frozenset({"a", "an", "some", "any", "something", "somewhere", "place", "one",
                         "it", "that", "this", "them", "me", "information", "info", "more",
                         "you", "your", "my", "train", "taxi", "cab", "hotel", "restaurant",
                         "attraction", "guesthouse", "table", "room", "reservation", "ticket",
                         "tickets", "options", "other", "another", "all", "everything",
                         "there", "i", "cambridge", "town", "the"})
_CLAUSE = re.compile(r"[,.;:!?()]")
# the head noun a capitalised word modifies: "Crossover food" names a cuisine, no entity
_MODIFIER_OF = re.compile(r"\s+(?:food|cuisine|cuisines|dishes)\b", re.IGNORECASE)
_WINDOW = 120  # characters a name may span after its cue
_MAX_NAMES = 8  # names read per utterance (a long utterance may repeat a cue many times)
# a reply's first word that answers rather than names ("Yes.", "Thanks.", "Great,")
_REPLY_WORDS = frozenset({"yes", "no", "yeah", "yep", "nope", "sure", "ok", "okay", "thanks",
                          "thank", "great", "perfect", "hello", "hi", "please", "alright",
                          "excellent", "wonderful", "fine", "good", "awesome", "cool", "well",
                          "actually", "oh", "um", "hmm", "sorry", "that", "sounds", "lets",
                          "let"})
# words that keep a span going though they are lower case ("Bed and Breakfast", "of")
_JOINERS = frozenset({"and", "of", "the", "de", "la", "'s", "s", "&"})
_POSSESSIVE = frozenset({"'s", "s"})
# task words that end a name ("the Gonville hotel") but may open one a naming cue introduces
_TASK_WORDS = frozenset({"restaurant", "hotel", "guesthouse", "attraction"})


def _typed(slot: str, value: str, start: int, end: int, confidence: float) -> Mention:
    """A name said at [start, end) of u_t for `slot`: exact when the cue makes it sure."""
    return Mention(value, (slot,), start, end, "typed_name", confidence=confidence,
                   narrowed=(slot,), floor=EXACT if confidence >= EXACT else None)


def _span_after(text: str, at: int, capitalised: bool, named: bool = False
                ) -> tuple[int, int] | None:
    """The name starting at `at`: up to the clause's end or an ending word; in mixed-case
    text, only capitalised words (and joiners between them). After a naming cue (`named`)
    the name may open with a task word ("called restaurant alimentum"); elsewhere such a
    word ends it ("the Gonville hotel")."""
    rest = _CLAUSE.split(text[at:at + _WINDOW], maxsplit=1)[0]
    words_in = list(re.finditer(r"\S+", rest))
    end = at
    n_words = 0
    for k, m in enumerate(words_in):
        word = m.group(0)
        low = word.lower()
        if capitalised:
            if not word[0].isupper() and not (n_words and low in _JOINERS):
                if (n_words and words_in[k - 1].group(0).lower() in _POSSESSIVE
                        and low not in _END):
                    # "People 's portraits exhibition": the capitals stop inside the name
                    # (its head noun follows the possessive), so no part of it is the name
                    return None
                break
        elif n_words and low in _END:
            break
        if low in _END and not n_words and not (
                named and low in _TASK_WORDS and len(words_in) > 1):
            return None
        n_words += 1
        end = at + m.end()
        if n_words >= 6:
            break
    if not n_words:
        return None
    # trailing joiners ("Bed and") are not part of the name
    span = text[at:end]
    words = span.split()
    while words and words[-1].lower() in _JOINERS:
        words.pop()
    if not words:
        return None
    return at, at + len(" ".join(words))


def find_typed_names(turn: UserTurn | Turn, wf: Workflow) -> list[Mention]:
    """Names u_t types for the workflow's name slot (`typed_name` mentions), read once
    per turn (`UserTurn.typed`)."""
    u = UserTurn.of(turn)
    got = u.typed.get(wf.id)
    if got is None:
        got = u.typed[wf.id] = _typed_names(u, wf)
    return got


def _typed_names(u: UserTurn, wf: Workflow) -> list[Mention]:
    slot = name_slot(wf)
    if slot is None:
        return []
    text = u.text
    mixed = any(c.isupper() for c in text)
    others = lexicon(wf).others
    held = [v for v in (*u.after.values(), *u.before.values()) if v]
    out: list[Mention] = []
    seen: set[str] = set()
    for cue, naming in ((_NAMING, True), (_ABOUT, False)):
        for m in cue.finditer(text):
            if len(out) >= _MAX_NAMES:
                break
            # after a naming cue the name runs to the clause's end whatever its case
            span = (_span_after(text, m.end(), capitalised=mixed and not naming, named=naming)
                    if naming or mixed else None)
            headed = False
            if span is None and not naming:
                # lower case after a request: a name only as "the X <type>" ("information
                # on the alpha - milton guest house"); "looking for a cheap place" is none
                span = _headed(text, m, wf, others)
                headed = span is not None
            if span is None:
                continue
            value = text[span[0]:span[1]]
            if _MODIFIER_OF.match(text, span[1]):
                continue  # "looking for Crossover food": a cuisine, said as a modifier
            key = basic(value)
            words = key.split()
            # "the Cambridge Punter", "called all saints church": a word that alone is no
            # name ("cambridge", "all") may open one of several words that a naming cue
            # introduces or that are written as a name
            opener_ok = len(words) > 1 and (naming or _titled(value))
            if (not words or (words[0] in _NOT_A_NAME and not opener_ok) or key in others
                    or key in seen
                    or any(ch.isdigit() for ch in key)
                    or (len(words) <= 2 and all(w in others for w in words))):
                continue
            if any(overlaps(h, value) for h in held):
                continue  # the state holds it, perhaps spelt otherwise
            seen.add(key)
            # a capitalised name after a naming cue is sure; after a request it is likely;
            # a lower-case span after a naming cue is a guess
            capital = value[:1].isupper()
            conf = (CERTAIN if (naming and capital) or headed
                    else LIKELY if capital or naming else GUESS)
            if u.agent_said(value):
                conf = CERTAIN  # "Let's go with the Copper Kettle" from the agent's list
            out.append(_typed(slot, value, span[0], span[1], conf))
    picked = _picked(u, others)
    if picked is not None and basic(picked[0]) not in seen and not any(
            overlaps(h, picked[0]) for h in held):
        out.append(_typed(slot, picked[0], picked[1], picked[2], CERTAIN))
        seen.add(basic(picked[0]))
    if not out:
        said = _said_back(u, wf, others)
        if said is not None and not any(overlaps(h, said[0]) for h in held):
            out.append(_typed(slot, *said, CERTAIN))
    return out


def _agent_names(agent: str, wf: Workflow, others: AbstractSet[str], u: UserTurn
                 ) -> list[str]:
    """The names the agent's turn wrote as names: what it offered (`offers.offered_names`)
    and its capitalised spans of two words or more that are no value, town or task word."""
    # an offered name of one lower-case word may be a verb the offering phrase caught
    # ("i hope i have been of help")
    found = {basic(n): n for n in offered_in(agent, wf, u)
             if len(n.split()) > 1 or n[:1].isupper()}
    for span in name_spans(_PLACEHOLDER.sub(" , ", agent)):
        key = basic(span.text)
        words = key.split()
        if (span.words < 2 or not _titled(span.text) or key in others or key in found
                or any(w.isdigit() for w in words) or key in _TOWNS
                or all(w in others or w in _NOT_A_NAME for w in words)):
            continue
        found[key] = span.text
    return list(found.values())


# words a user and an agent share that name nothing
_COMMON = _END | _NOT_A_NAME | _REPLY_WORDS | frozenset({
    "the", "and", "you", "can", "for", "would", "like", "need", "want", "book", "booking",
    "get", "have", "has", "what", "how", "about", "there", "that", "this", "they", "them",
    "number", "phone", "address", "postcode", "area", "price", "range", "star", "stars",
    "people", "time", "day", "night", "nights", "free", "any", "also", "more", "one",
    "town", "centre", "center", "north", "south", "east", "west", "not", "thank", "thanks",
    "will", "could", "should", "just", "all", "some", "info", "information", "please",
    "yes", "no", "are", "was", "were", "with", "from", "your", "our", "its", "too", "do"})


def _singular(words: Iterable[str]) -> set[str]:
    """The words and, for a plural, its singular ("movies" -> "movie")."""
    return {v for w in words for v in (w, w[:-1] if len(w) > 3 and w.endswith("s") else w)}


def _said_back(u: UserTurn, wf: Workflow, others: AbstractSet[str]
               ) -> tuple[str, int, int] | None:
    """One of the names the agent's last turn wrote, said again by the user in any case and
    outside a question ("give me information on cherry hinton hall and grounds" after
    "Cherry Hinton Hall and Grounds and Funky Fun House both located in the east"): the
    user picks it. The agent's capitals are the evidence that it is a name, which the
    user's lower case is not; two names said leave the pick open, and so does a list of
    another workflow's entities ("I have 4 movies to recommend" in a restaurant turn, SGD
    dialogue 24_00098)."""
    history = u.turn.history or ()
    if not history:
        return None
    agent = history[-1].agent[-600:]
    # a name said back shares a word with the agent's turn that is no function word or
    # value (checked first: most turns share none, and reading the agent's names is dear).
    # The user's such words are first looked for in the agent's string: a token of a text
    # is spelt in its `token_text` as one of its `spellings`, so where none is there the
    # agent's turn holds none of them and is never tokenised
    mine = {w for w in basic(u.text).split()
            if len(w) > 2 and w not in others and w not in _COMMON}
    if not mine:
        return None
    folded = token_text(agent)
    if not any(sp in folded for w in mine for sp in spellings(w)):
        return None
    agent_words = basic(agent).split()
    if not mine & set(agent_words):
        return None
    said = _singular(agent_words)
    own = _singular([*domain_words(wf), *basic(wf.id).split()])
    if said & _singular(u.others) and not said & own:
        return None
    hits: list[tuple[str, int, int]] = []
    for name in _agent_names(agent, wf, others, u):
        hit = find_value(u.text, name, wf.slots.get(name_slot(wf) or ""))
        if hit is None:
            continue
        if any(x.start <= hit.start < x.end and _ASKS_ABOUT.match(x.text)
               for x in u.sentences):
            continue  # "Is the Gonville Hotel in the same price range ...?": asked about
        if _REFUSE.search(u.text[max(0, hit.start - 30):hit.start]):
            continue  # "not the Cambridge Punter"
        hits.append((u.text[hit.start:hit.end], hit.start, hit.end))
    return hits[0] if len(hits) == 1 else None


def _build_heads(wf: Workflow) -> frozenset[str]:
    """What ends an entity's name in this workflow: each value of a slot about the
    entity's type, in every surface form ("guest house", "college"), and the workflow's
    own words ("restaurant"). Built once per workflow (`_HEADS`)."""
    out = set(domain_words(wf))
    for spec in wf.slots.values():
        if spec.values and "type" in f"{spec.name} {spec.description}".lower():
            out |= {basic(f) for v in spec.values for f in spec.surface_forms(v) if basic(f)}
    return frozenset(out)


_HEADS: Derived[Workflow, frozenset[str]] = Derived("names.heads", _build_heads)


def _heads(wf: Workflow) -> frozenset[str]:
    return _HEADS.of(wf)


def _headed(text: str, cue: re.Match[str], wf: Workflow, others: AbstractSet[str]
            ) -> tuple[int, int] | None:
    """A lower-case "the X <type>" after a request cue, whose X is no value."""
    if not cue.group(0).lower().rstrip().endswith("the"):
        return None
    span = _span_after(text, cue.end(), capitalised=False)
    if span is None:
        return None
    key = basic(text[span[0]:span[1]])
    head = max((h for h in _heads(wf) if key.endswith(" " + h)), key=len, default=None)
    if head is None:
        return None
    rest = key[:-len(head)].split()
    if all(w in others or w in _NOT_A_NAME for w in rest):
        return None  # "the cheap guest house": values and the type, no name
    return span


def _titled(value: str) -> bool:
    """Every word but a joiner is capitalised ("All Saint 's Church", "Cambridge Punter")."""
    words = [w for w in value.split() if w.lower() not in _JOINERS]
    return len(words) > 1 and all(w[:1].isupper() for w in words)


def _picked(u: UserTurn, others: AbstractSet[str]) -> tuple[str, int, int] | None:
    """A reply that opens with a name the agent's last turn listed ("Varsity Restaurant.
    Please make a reservation ..."): the user picks it."""
    history = u.turn.history or ()
    if not history:
        return None
    m = re.match(r"\s*(?:the\s+)?([^,.;:!?]+?)\s*[,.;:!]", u.text[:_WINDOW])
    if m is None:
        return None
    value = m.group(1)
    words = basic(value).split()
    if (not words or len(words) > 6 or words[0] in _NOT_A_NAME or basic(value) in others
            or words[0] in _REPLY_WORDS or len(basic(value)) < 3
            or all(w in others for w in words) or not value[:1].isalpha()):
        return None
    hit = find_value(history[-1].agent, value, None)
    if hit is None or not history[-1].agent[hit.start:hit.start + 1].isupper():
        return None  # only a name the agent wrote as one (capitalised)
    return value, m.start(1), m.end(1)
