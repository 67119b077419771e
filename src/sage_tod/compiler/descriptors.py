"""Values said as a modifier: "some Chinese food", "it should include wifi".

Two kinds of value are stated by the shape of the phrase rather than by a
listed value:

* a free slot about food or cuisine (its value list, if any, is what the categorical
  step reads; a cuisine outside it is still a value of a free slot): the word(s) before
  "food", "cuisine", "restaurant(s)" or after "serves", "specialize in"
  ("a high-end Mexican restaurant" -> Mexican). Adjectives of quality, price
  and place are not cuisines ("a great restaurant", "a cheap restaurant").
  Such a value is likely, not sure, so S2 reads it.
* a yes/no amenity asked for with a verb of wanting or having ("include wifi",
  "has free parking", "I need internet"): the amenity slot is "yes". Bare
  "free wifi" is read by the categorical step already (its synonym "free");
  this adds the verb forms and every mention, not only the first.

Questions ("do they have free internet?") and negated phrases claim nothing, except a
question that searches for a cuisine ("How about Italian restaurants?"); a reply of one
or two words to the agent's question about the food ("British ?", "thai , please .") is
the cuisine.
"""

from __future__ import annotations

import re

from sage_tod.compiler.confidence import CERTAIN, LIKELY, SPLIT
from sage_tod.compiler.cues import cue_tokens, slot_cues
from sage_tod.compiler.mentions import Mention
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.criteria import EXACT
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.normalize import basic
from sage_tod.text.sentences import Sentence

_FOOD_SLOT = re.compile(r"\b(?:food|cuisine|cuisines)\b", re.IGNORECASE)
_BEFORE_HEAD = re.compile(r"\b([A-Za-z]+(?: [A-Za-z]+)?) (?:food|cuisine|restaurants?|dishes)\b")


def _has_before_head(text: str) -> bool:
    """`_BEFORE_HEAD.search(text) is not None`, the text first screened on the literal a
    match holds: a space, then its head word (the pattern has no flags, so the literal is
    a substring of every match; test_round16_screens)."""
    return ((" food" in text or " cuisine" in text or " restaurant" in text
             or " dishes" in text) and _BEFORE_HEAD.search(text) is not None)


_AFTER_VERB = re.compile(r"(?=[s])"  # its first letters (test_round16_screens)
                         r"\b(?:serves|serving|specializes in|specialize in|specialise in"
                         r"|specialises in|specializing in)\s+([A-Za-z]+(?: [A-Za-z]+)?)")
_NOT_FOOD = frozenset({
    "a", "an", "the", "some", "any", "good", "great", "nice", "fancy", "local", "best", "fine",
    "cheap", "expensive", "moderate", "moderately", "priced", "pricey", "high", "end", "low",
    "budget", "north", "south", "east", "west", "centre", "center", "central", "that", "this",
    "of", "for", "in", "to", "at", "other", "another", "same", "particular", "specific", "kind",
    "type", "sort", "what", "which", "their", "your", "my", "our", "its", "nearby", "popular",
    "decent", "tasty", "delicious", "new", "different", "serve", "serves", "and",
    "authentic", "traditional", "really", "very", "little", "small", "big", "lovely",
    "interesting", "eat", "real", "quality", "top", "rated", "star", "cambridge",
    "town", "city", "anniversary", "dinner", "lunch", "breakfast", "is", "are", "more",
    "about", "how", "there", "here",
    # a verb before the cuisine ("serving Welsh food", "I want Polynesian food")
    "serving", "offer", "offering", "offers", "having", "has", "have", "with", "want", "wants",
    "like", "prefer", "need", "try", "find", "get",
    # a naming verb introduces the name that follows ("its name is called restaurant
    # alimentum"), never a cuisine
    "called", "named", "titled",
    # the words of another slot or of a place ("a moderate price restaurant", "a centrally
    # located restaurant") and a pronoun ("a restaurant that serves it")
    "price", "range", "located", "situated", "it", "them", "one", "ones", "something",
    "anything", "or",
    })
# a question that searches for entities with the cuisine ("How about Italian restaurants?",
# "Are there any Japanese restaurants in the centre?"): its cuisine is a constraint
_SEARCHES = re.compile(r"^\s*(?:(?:ok|okay|well|hmm|then)\s*,?\s+)?(?:are there(?: any)?"
                       r"|is there(?: any| an?)?|do you have(?: any| an?)?|are any|how about"
                       r"|what about|any)\b", re.IGNORECASE)
# a request put as a question, or a wish with "can you help me?" after it: it asks the
# agent to search, so its cuisine is a constraint too ("can you help me find an expensive
# russian restaurant ?", "Do you know where I may get some chinese food ?", MultiWOZ val
# MUL1379 turn 0 and PMUL0739 turn 4)
_REQUEST = re.compile(
    r"(?=[cdhiw])"  # its first letters (test_round16_screens)
    r"(?:\b(?:can|could|would|will) you(?: please)?(?: also)?(?: help me)?(?: to)?"
    r" (?:find|look|locate|search|get|recommend|suggest|tell me if|check if)\b"
    r"|\bdo you know (?:where|if|of)\b|\bhelp me (?:find|look|locate|search)\b"
    r"|\b(?:i am|i'm|i 'm) looking for\b)", re.IGNORECASE)
# a bare answer to the agent's question about the food: "British ?" or "thai , please ."
# to "what type of food are you hungry for?" (MultiWOZ PMUL4756 turn 3)
_BARE_ANSWER = re.compile(
    r"^\s*(?:(?:maybe|perhaps|um|hmm|oh)\s*,?\s+)?([A-Za-z]+(?: [A-Za-z]+)?)"
    r"\s*(?:,?\s*(?:please|thanks|thank you))?\s*[.!?]?\s*$", re.IGNORECASE)
_ASKS_FOOD = re.compile(
    r"(?=[cfw])"  # its first letters (test_round16_screens)
    r"(?:\b(?:food|cuisine|cuisines)\b[^.!?]*\?|\b(?:what|which) (?:type|kind|sort)"
    r" of (?:food|cuisine)\b)", re.IGNORECASE)
_WANT_AMENITY = re.compile(
    r"(?=[himnoprsw])"  # its first letters (test_round16_screens)
    r"\b(?:with|has|have|having|include|includes|including|included|offer|offers|offering"
    r"|need|needs|want|wants|require|requires|provide|provides|must have|should have)"
    r"\s+(?:free\s+|some\s+|a\s+)?(wifi|wi-fi|internet|parking|car park)\b", re.IGNORECASE)




def _descriptor(value: str, slots: tuple[str, ...], start: int, end: int, confidence: float
                ) -> Mention:
    """A value for `slots` said at [start, end) of u_t: exact when the phrase makes it
    sure; its slots are the ones the phrase chose."""
    return Mention(value, slots, start, end, "descriptor", confidence=confidence,
                   narrowed=slots, floor=EXACT if confidence >= EXACT else None)


def _comparative(word: str) -> bool:
    """"cheaper", "nicest", "certain", "centrally": a degree of an adjective, a determiner
    or an adverb, not a cuisine. A degree is an adjective's stem with "er" or "est"
    ("cheap", "nic(e)", "bigg" → "big", "fanci" → "fancy"), so "kosher" and
    "crossover", which end alike, stay cuisines."""
    w = word.lower()
    if w in {"certain", "particular"} or (len(w) > 4 and w.endswith("ly")):
        return True
    for suffix in ("est", "er"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            stem = w[:-len(suffix)]
            forms = {stem, stem + "e", stem[:-1] + "y"}
            if len(stem) > 2 and stem[-1] == stem[-2]:
                forms.add(stem[:-1])  # "bigger"
            return bool(forms & _GRADED)
    return False


# adjectives whose degrees a request may use ("a cheaper restaurant", "the nearest one")
_GRADED = frozenset({"cheap", "nice", "good", "great", "fancy", "pricy", "pricey", "big",
                     "small", "close", "near", "far", "high", "low", "fine", "late", "early",
                     "quick", "fast", "quiet", "busy", "tasty", "healthy", "fresh", "new",
                     "posh", "classy", "swanky", "upscale", "lovely", "decent", "popular"})


def _bare_cuisine(u: UserTurn, first: Sentence) -> tuple[str, int] | None:
    """The cuisine a reply of one or two words gives to the agent's question about the
    food ("British ?   My favorite ." to "what type of food are you suddenly hungry for?"),
    with its offset; None when the agent asked no such thing or the words are no cuisine."""
    if not _agent_asked_food(u):
        return None
    m = _BARE_ANSWER.match(first.text)
    if m is None:
        return None
    words = m.group(1).split()
    if any(w.lower() in _NOT_FOOD or w.lower() in _NOT_AN_ANSWER or _comparative(w)
           for w in words):
        return None
    return m.group(1), first.start + m.start(1)


def _agent_asked_food(u: UserTurn) -> bool:
    """The end of the agent's last turn asks about the food."""
    history = u.turn.history or ()
    return bool(history) and _ASKS_FOOD.search(history[-1].agent[-300:]) is not None


# replies that answer but name no cuisine ("Yes.", "Anything.", "Not really.")
_NOT_AN_ANSWER = frozenset({"yes", "no", "yeah", "nope", "sure", "ok", "okay", "anything",
                            "any", "whatever", "none", "not", "really", "thanks", "thank",
                            "please", "hello", "hi", "bye", "goodbye", "great", "perfect",
                            "fine", "either", "both", "neither", "you", "it", "that", "this",
                            "i", "me", "we", "food", "cuisine", "restaurant", "doesn", "don",
                            "matter", "care", "preference", "surprise"})


def _food_slots(wf: Workflow) -> list[str]:
    return [s.name for s in wf.slots.values() if s.type == "free"
            and _FOOD_SLOT.search(f"{s.name} {s.description}")]


def _yes_slots(wf: Workflow) -> list[str]:
    return [s.name for s in wf.slots.values()
            if s.values and {normalize_boolean(v) for v in s.values} >= {"true", "false"}]


_SLOTS: Derived[Workflow, tuple[list[str], list[str]]] = Derived(
    "descriptors.slots", lambda wf: (_food_slots(wf), _yes_slots(wf)))


def find_descriptors(turn: UserTurn | Turn, wf: Workflow) -> list[Mention]:
    """Cuisines and wanted amenities stated in u_t (not in its questions, except those
    that search for a cuisine)."""
    u = UserTurn.of(turn)
    foods, yes = _SLOTS.of(wf)
    text = u.text
    # a phrase matched inside a sentence matches in the whole text (a sentence ends after
    # its punctuation, or at the text's end): where none does, no sentence needs reading,
    # and a bare answer needs the agent's food question (`tests/test_lexicon.py` compares
    # with `_read_descriptors`)
    if ((not foods or (not _has_before_head(text) and _AFTER_VERB.search(text) is None
                       and not _agent_asked_food(u)))
            and (not yes or _WANT_AMENITY.search(text) is None)):
        return []
    return _read_descriptors(u, wf)


def _read_descriptors(turn: UserTurn | Turn, wf: Workflow) -> list[Mention]:
    """`find_descriptors` without its screen."""
    u = UserTurn.of(turn)
    text = u.text
    out: list[Mention] = []
    foods, yes = _SLOTS.of(wf)
    cues = slot_cues(wf)
    read = u.sentences
    if foods and read:
        bare = _bare_cuisine(u, read[0])
        if bare is not None:
            value, start = bare
            out.append(_descriptor(basic(value), (foods[0],), start, start + len(value),
                                   LIKELY if len(foods) == 1 else SPLIT))
    for sent in read:
        if len(out) >= 8:
            break  # a long utterance may repeat a phrase thousands of times
        asks = sent.text.rstrip().endswith("?")
        if asks and not (foods and (_SEARCHES.match(sent.text)
                                    or _REQUEST.search(sent.text))):
            continue
        if foods:
            for pattern in (_BEFORE_HEAD, _AFTER_VERB):
                for m in pattern.finditer(text, sent.start, sent.end):
                    words = m.group(1).split()
                    while words and words[0].lower() in _NOT_FOOD:
                        words.pop(0)
                    if pattern is _AFTER_VERB:
                        # what a verb serves ends at a function word ("serving barbeque
                        # in the centre"); the words before a head noun run up to it
                        cut = next((i for i, w in enumerate(words) if w.lower() in _NOT_FOOD),
                                   len(words))
                        words = words[:cut]
                    if not words or any(w.lower() in _NOT_FOOD or _comparative(w)
                                        for w in words):
                        continue
                    value = " ".join(words)
                    start = m.start(1) + m.group(1).rfind(value)
                    if u.clause_negated(start):
                        continue
                    out.append(_descriptor(basic(value), (foods[0],), start,
                                           start + len(value),
                                           CERTAIN if len(foods) == 1 else SPLIT))
        if yes and not asks:
            for m in _WANT_AMENITY.finditer(text, sent.start, sent.end):
                if u.clause_negated(m.start()):
                    continue  # "it doesn't need to have free parking"
                hits = cues.slots_for(cue_tokens(m.group(1)))
                slots = tuple(s for s in yes if hits.get(s))
                if len(slots) == 1:
                    out.append(_descriptor("yes", slots, m.start(1), m.end(1), CERTAIN))
    return out
