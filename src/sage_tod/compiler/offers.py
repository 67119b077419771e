"""Accepting an offer: "Yes, book that one" gives the value the agent just offered.

The value is in h_<t, not in u_t, so no reader of u_t finds it, yet the state
must record it ("I recommend the Autumn House. Shall I book it?" -> "Yes
please." -> the hotel's name). This module reads

1. whether u_t accepts: a reply that opens with assent ("yes", "sure",
   "sounds great", "let's go with that") or asks to book what was offered
   ("can you book it?"), and does not turn it down ("no", "something else");
2. what the agent's last turn offered for the workflow's name slot: the span
   after an offering phrase ("I recommend", "how about", "called", "we only
   have") up to the next clause word, or a capitalised span. Delexicalised
   placeholders (`[value_name]`, `[name]`, the outputs of many MultiWOZ systems)
   are not values and are skipped, as are values of other slots and the
   workflow's own words ("guesthouse", "restaurant").

Exactly one name offered and a plain acceptance is exact (S1 may decide);
anything less sure is left to S2. The evidence span is the acceptance in u_t.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from sage_tod.compiler.confidence import CERTAIN, GUESS
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.mentions import Mention
from sage_tod.compiler.utterance import UserTurn
from sage_tod.contracts.spec import Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.match import find_value
from sage_tod.text.normalize import basic
from sage_tod.text.numbers import number_token
from sage_tod.text.places import name_spans
from sage_tod.text.sentences import sentences

_ASSENT = re.compile(
    r"^\s*(?:yes|yeah|yep|yup|sure|ok|okay|alright|great|perfect|excellent|wonderful|fantastic"
    r"|that (?:sounds|would be|will be|works|will work|is|'s)|that's|sounds|let's|lets"
    r"|i'?ll take|i will take|please book|go ahead|book it|book that|book me)\b",
    re.IGNORECASE)
_BOOK_IT = re.compile(r"\b(?:book|reserve|booking for|reservation for|reservation at)"
                      r" (?:it|that|this|that one|this one|them|there)\b", re.IGNORECASE)
_REFUSE = re.compile(r"(?=[acdeinor])"  # its first letters (test_round16_screens)
                     r"\b(?:no|not|n't|nt|another|different|else|other|instead|rather"
                     r"|actually|cancel|never mind|nevermind)\b", re.IGNORECASE)
_OFFERING = re.compile(
    r"(?=[bcfhimnrstw])"  # its first letters (test_round16_screens)
    r"\b(?:recommend|recommending|suggest|suggesting|how about|what about|try|called|named"
    r"|i have|we have|we only have|there is|there's|i found|found|book you (?:a table |a room )?at"
    r"|check out|would love|will love|would enjoy|might like|might enjoy|really like"
    # "I have booked the lensfield hotel for you": what the agent booked
    r"|(?:booked|reserved)(?: you)?(?: a table| a room| rooms)?(?: for you)?(?: at| in| with)?)"
    # "I recommend going to the X", "I suggest visiting X": the verb is not the name
    r"\s+(?:(?:going to|visiting|trying|checking out|staying at|eating at)\s+)?(?:the\s+)?",
    re.IGNORECASE)
# the verb after an entity that opens the agent's sentence: "chiquito restaurant bar is an
# expensive restaurant", "Fitzbillies Restaurant meets your criteria", "the autumn house does
# have free wifi", "Cambridge Artworks would be a great museum to visit"
_SUBJECT = re.compile(
    r"^(?:(?:yes|sure|ok|okay|well|great|alright|actually|certainly|absolutely)\s*,?\s+)?"
    r"(?:the\s+)?(?P<name>[^\s,.;:!?()]+(?:\s+[^\s,.;:!?()]+){0,5}?)\s+"
    r"(?:is|has|does|would be|will be|meets|fits|matches|serves|offers|sounds|looks|might be"
    r"|may be|could be|should be)\b", re.IGNORECASE)
# words that open a sentence's subject that is not an entity: pronouns, attributes of one
# ("the travel time", "the entrance fee", "their phone number"), the system's own acts
_NOT_A_SUBJECT = frozenset({"it", "its", "they", "their", "there", "this", "that", "these",
                            "those", "which", "what", "who", "he", "she", "we", "i", "you",
                            "my", "our", "your", "everything", "nothing", "one", "each",
                            "both", "either", "neither", "all", "address", "phone", "number",
                            "postcode", "post", "entrance", "fee", "price", "cost", "ticket",
                            "tickets", "travel", "time", "trip", "reference", "booking",
                            "reservation", "train", "taxi", "car", "area", "location", "rating",
                            "stars", "star", "wifi", "internet", "parking", "total", "fare",
                            "here", "today", "tomorrow", "unfortunately", "sorry", "also",
                            "now", "next", "first", "last", "only", "another", "other",
                            "table", "room", "rooms", "seat", "seats", "cab", "stay"})
# the agent's turn proposes something the user can take (not "anything else?")
_OFFER_QUESTION = re.compile(
    r"(?=[cdhilmrsw])"  # its first letters (test_round16_screens)
    r"\b(?:would you like|shall i|should i|can i book|may i book|do you want|want me to"
    r"|does that|would that|will that|is that|how about|what about|interested|sound good"
    r"|sounds good|recommend|suggest|like me to|like to book|like to reserve|care to"
    r"|can we book|shall we|should we|would love|will love|would enjoy)\b",
    re.IGNORECASE)
# a proposal the user can take as it stands: "how about X?", "would that work for you?"
_PROPOSAL = re.compile(r"\b(?:how about|what about|would that|does that|will that|is that ok"
                       r"|sound|work for you)\b", re.IGNORECASE)
# a recommendation is taken by an assent that judges it ("That sounds great"), not by a
# "yes" that may answer the agent's last question ("Anything else?" - "Yes, a train")
_RECOMMENDS = re.compile(r"\b(?:recommend|suggest|would love|will love|would enjoy)\b",
                         re.IGNORECASE)
_JUDGES = re.compile(r"^\s*(?:(?:okay|ok|yes|great|oh)\s*,?\s*)?(?:that|this|it|which)?\s*(?:'s|is|"
                     r"sounds|would be|will be|seems)\s+(?:really\s+|very\s+|just\s+)?"
                     r"(?:great|good|perfect|fine|lovely|wonderful|nice|excellent|fantastic"
                     r"|amazing|interesting|fun)\b", re.IGNORECASE)
# the agent reports a booking it made
_BOOKED = re.compile(r"(?=[birsy])"  # its first letters (test_round16_screens)
                     r"\b(?:booking was successful|booking is complete|successfully booked"
                     r"|i have booked|i've booked|i booked|you are booked|you're booked"
                     r"|i have reserved|i've reserved|reservation is confirmed)\b", re.IGNORECASE)
_BOOKING_WORDS = re.compile(r"(?=[brt])"  # its first letters (test_round16_screens)
                            r"\b(?:book|reserve|reservations?|bookings?|table for|room for)\b",
                            re.IGNORECASE)
# a capitalised span that names a street, a code or a sum, not an entity
_NOT_AN_ENTITY = re.compile(r"\b(?:road|street|st|lane|way|avenue|ave|hill|square|park street"
                            r"|gbp|pounds|postcode|tr\d+)\b", re.IGNORECASE)
_STOP = frozenset({"in", "on", "at", "is", "it", "its", "which", "that", "located", "for",
                   "with", "serving", "serves", "they", "would", "has", "offers",
                   "near", "does", "do", "if", "as", "but", "or", "to", "you", "can", "will",
                   "could", "should", "there", "are", "was", "by", "from", "of",
                   "matching", "meeting", "meets", "fitting", "fits", "available", "then"})
_NOT_A_NAME = frozenset({"a", "an", "some", "several", "many", "one", "two", "three", "no",
                         "any", "lots", "plenty", "options", "option", "listing", "listings",
                         "place", "places", "information", "info", "reference", "booking",
                         "free", "more", "other", "another", "your", "you", "it", "that",
                         "them", "this", "these", "those", "nothing", "none", "all", "each",
                         "available", "great", "good", "nice", "i", "to", "booked", "book",
                         "reservation", "stay", "what", "which", "who", "how", "number", "for",
                         "shorter", "found", "located", "just", "only", "either", "neither",
                         "both", "and", "also", "into", "earliest", "latest", "cheapest",
                         "nearest", "closest"})
_NEXT_NAME = re.compile(r"\s+(?:and|or)\s+the\s+", re.IGNORECASE)
# a list of names after an offering phrase: two commas or more, the last item joined by
# "or"/"and", within one sentence
_LIST = re.compile(r"[^,.;:!?()]+(?:,[^,.;:!?()]+){2,}", re.IGNORECASE)
_LIST_JOIN = re.compile(r"^\s*(?:or|and)\s+", re.IGNORECASE)
# "I have just one place available. It is Pizza Hut Cherry Hinton.": a sentence that opens
# with a pronoun and a capitalised span names the one entity the turn presents (mixed case
# only: in lower case "it is located ..." and "it is pizza hut" read alike)
_IT_IS = re.compile(r"^(?:it|that|this) (?:is|'s) (?:the |called )?(?=(?-i:[A-Z]))",
                    re.IGNORECASE)
_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                       "sunday"})
_MAX_OFFERS = 8  # offering phrases read per agent turn
_TOWNS = frozenset({"cambridge", "london", "city centre", "centre"})
_PLACEHOLDER = re.compile(r"\[[^\]]*\]")
_CLAUSE = re.compile(r"[,.;:!?()]")


def _accepted(slot: str, value: str, start: int, end: int, confidence: float) -> Mention:
    """u_t accepts `value`, which the last agent turn offered for `slot`; [start, end) is
    the acceptance in u_t."""
    return Mention(value, (slot,), start, end, "accepted_offer", confidence=confidence)


def accepts(user: str) -> tuple[int, int] | None:
    """The span of u_t that accepts an offer, or None."""
    first = _CLAUSE.split(user, maxsplit=1)[0]
    m = _ASSENT.match(user)
    if m and not _REFUSE.search(first[m.end():]):
        return m.start(), m.end()
    b = _BOOK_IT.search(user)
    if b and not _REFUSE.search(user[max(0, b.start() - 30):b.start()]):
        return b.start(), b.end()
    return None


def name_slot(wf: Workflow) -> str | None:
    """The workflow's free slot that names the entity ("hotel-name", "restaurant_name")."""
    return lexicon(wf).name_slot


def _clean(span: str, others: AbstractSet[str]) -> str | None:
    words = span.split()
    while words and (words[-1].lower() in _STOP or not any(c.isalnum() for c in words[-1])):
        words.pop()  # "the la margherita - it 's cheap": a dash ends the name
    if words and not any(c.isalnum() for c in words[0]):
        return None  # '" whale of a time "': a quoted title, read from its quote
    if words and words[0][:1].islower() and any(w[:1].isupper() for w in words[1:]):
        # "the moderately priced Carolina Bed and Breakfast": in a text that capitalises
        # names, the name starts at its first capital, after words that describe it (not
        # "a restaurant that serves British cuisine": no name at all)
        cap = next(i for i, w in enumerate(words) if w[:1].isupper())
        if not {w.lower() for w in words[:cap]} & (_STOP | _NOT_A_NAME | others):
            words = words[cap:]
    # "All Saints Church", "One Seven Seven": a name written as one, every word capitalised,
    # may open with a word that otherwise counts or quantifies
    titled = len(words) > 1 and all(w[:1].isupper() for w in words)
    if not words or (words[0].lower() in _NOT_A_NAME and not titled) or len(words) > 6:
        return None
    if words[0].lower() in _STOP:
        return None  # "found in the center": a place phrase, no name
    if any(ch.isdigit() for ch in " ".join(words)) or words[0].lower().endswith("ing"):
        return None  # an address, a code, "checking out the architecture"
    if number_token(words[0].lower()) is not None and not titled:
        return None  # "i have four such types", "four places fitting that criteria"
    if len(words) == 1 and words[0].islower() and words[0].endswith("ly") and len(words[0]) > 4:
        return None  # "I booked successfully for you": an adverb
    if all(basic(w) in others for w in words):
        return None  # "the architecture", "cheap guesthouse": values of other slots
    value = " ".join(words)
    return None if basic(value) in others or not basic(value) else value


def _list_items(text: str, at: int, others: AbstractSet[str]) -> list[str]:
    """The names of a list that starts at `at`: three items or more between commas, the
    last joined by "or"/"and", each a name ("We have acorn guest house , arbury lodge
    guesthouse , ... , or limehouse ?", MultiWOZ val MUL0128 turn 3); [] for anything
    else ("X , it has free wifi , and parking")."""
    m = _LIST.match(text, at)
    if m is None:
        return []
    raw = m.group().split(",")
    if not _LIST_JOIN.match(raw[-1]):
        return []
    items = [_clean(" ".join(_until_stop(_LIST_JOIN.sub("", r).split())), others) for r in raw]
    if any(v is None or len(v.split()) > 5 for v in items):
        return []
    return [v for v in items if v is not None]


def _until_stop(words: Sequence[str]) -> list[str]:
    """The words of an offered span up to the first clause word after its first word
    ("pizza hut cherry hinton located at ..." -> "pizza hut cherry hinton")."""
    out: list[str] = []
    for w in words:
        if w.lower() in _STOP and out:
            break
        out.append(w)
    return out


def offered_names(agent: str, wf: Workflow) -> list[str]:
    """The names the agent's turn offers, in order, each once."""
    text = _PLACEHOLDER.sub(" , ", agent)
    # values of other slots and the task's own words, never a name alone
    others = lexicon(wf).others
    found: dict[str, str] = {}
    for n, m in enumerate(_OFFERING.finditer(text)):
        if n >= _MAX_OFFERS:
            break
        rest = _CLAUSE.split(text[m.end():m.end() + 120], maxsplit=1)[0]
        # "I have the Ashley Hotel and the Lovell Lodge": two names ("Bed and Breakfast",
        # "Hall and Grounds" are one)
        parts = _NEXT_NAME.split(rest)[:_MAX_OFFERS]
        items = _list_items(text, m.end(), others)
        if items:
            for item in items:
                found.setdefault(basic(item), item)
            continue
        values = [_clean(" ".join(_until_stop(part.split())), others) for part in parts]
        if len(parts) > 1 and None in values:
            continue  # "2 hotels the ashley hotel or the lovell lodge": a list half read
        for value in values:
            if value:
                found.setdefault(basic(value), value)

    def add_new(value: str | None) -> None:
        """Add `value` unless a name found already holds it or is part of it."""
        if value and not any(basic(value) in k or k in basic(value) for k in found):
            found.setdefault(basic(value), value)

    for sent in sentences(text)[:_MAX_OFFERS]:
        add_new(_subject(sent.text, others))
        add_new(_named_after_pronoun(sent.text, others))
    for span in name_spans(text)[:_MAX_OFFERS]:
        value = _clean(span.text, others)
        # a capitalised span counts only as "the X" ("the Autumn House is ...")
        if (value and span.before and span.before[-1] == "the" and len(value) > 2
                and not value.isupper() and not _NOT_AN_ENTITY.search(value)
                and basic(value) not in _TOWNS):
            add_new(value)
    return list(found.values())


def _named_after_pronoun(sentence: str, others: AbstractSet[str]) -> str | None:
    """The capitalised name a sentence gives after "It is" / "That's" ("It is Pizza Hut
    Cherry Hinton."), when it is no town, weekday, address or value of another slot."""
    opened = _IT_IS.match(sentence.lstrip())
    if opened is None:
        return None
    rest = _CLAUSE.split(sentence.lstrip()[opened.end():], maxsplit=1)[0]
    value = _clean(" ".join(_until_stop(rest.split())), others)
    if (value is None or not value[:1].isupper() or basic(value) in _TOWNS
            or basic(value).split()[0] in _WEEKDAYS or _NOT_AN_ENTITY.search(value)):
        return None
    return value


def _subject(sentence: str, others: AbstractSet[str]) -> str | None:
    """The entity a sentence of the agent opens with, in any case ("the fez club is at 8
    market passage"), when its words are no pronoun, attribute or value of another slot."""
    m = _SUBJECT.match(sentence)
    if m is None:
        return None
    name = m.group("name")
    words = [w.lower() for w in name.split()]
    if (set(words) & _NOT_A_SUBJECT or set(words) & _STOP or words[0] in _NOT_A_NAME
            or words[-1] in _JOINERS or _NOT_AN_ENTITY.search(name)):
        return None
    value = _clean(name, others)
    if value is None or len(basic(value)) < 3 or basic(value) in _TOWNS:
        return None
    return value


_JOINERS = frozenset({"and", "of", "the", "&"})


def overlaps(held: str, offered: str) -> bool:
    """The held value and the offered one share a word, or one is the other unspaced."""
    a, b = basic(held), basic(offered)
    generic = {"the", "restaurant", "hotel", "guest", "house", "guesthouse", "college", "of",
               "and", "cambridge"}
    return (a.replace(" ", "") in b.replace(" ", "") or b.replace(" ", "") in a.replace(" ", "")
            or bool((set(a.split()) & set(b.split())) - generic))


def _lists_others(agent: str, name: str) -> bool:
    """The agent's turn writes names of several words besides `name` ("Finches Bed and
    Breakfast, Hobsons House, ... and The Cambridge Belfry are available"): a list, of
    which the offer reader may have caught one only."""
    key = basic(name)
    for span in name_spans(_PLACEHOLDER.sub(" , ", agent)):
        words = span.text.split()
        other = basic(span.text)
        if (len(words) > 1 and all(w[:1].isupper() or w.lower() in {"and", "of", "the"}
                                   for w in words)
                and words[0].lower() not in _NOT_A_NAME | _ANSWERS
                and not _NOT_AN_ENTITY.search(span.text)  # "8 Norfolk Street": an address
                and not _AT_ADDRESS.search(" ".join(span.before[-3:]))
                and other not in key and key not in other):
            return True
    return False


_ANSWERS = frozenset({"yes", "no", "sure", "ok", "okay", "great", "well", "yeah"})
# the words before an address: "located at G4 Cambridge Leisure Park", "is on 8 Norfolk"
_AT_ADDRESS = re.compile(r"\b(?:located|address|situated)\b|\d", re.IGNORECASE)


def offered_in(agent: str, wf: Workflow, user: UserTurn | None) -> list[str]:
    """`offered_names(agent, wf)`, read once per turn (`UserTurn.offers`)."""
    if user is None:
        return offered_names(agent, wf)
    key = (agent, wf.id)
    got = user.offers.get(key)
    if got is None:
        got = user.offers[key] = tuple(offered_names(agent, wf))
    return list(got)


def find_acceptance(turn: UserTurn | Turn, wf: Workflow) -> Mention | None:
    """The name u_t accepts from the last agent turn (an `accepted_offer` mention), or
    None."""
    u = UserTurn.of(turn)
    user = u.text
    history = u.turn.history or ()
    slot = name_slot(wf)
    if not history or slot is None:
        return None
    agent = history[-1].agent
    reported = _BOOKED.search(agent) is not None
    booking = _BOOKING_WORDS.search(user)
    if booking is not None and _REFUSE.search(user):
        booking = None
    if not _OFFER_QUESTION.search(agent) and not reported and booking is None:
        return None  # nothing proposed ("Is there anything else?")
    names = offered_in(agent, wf, u)
    if len(names) != 1:
        return None  # nothing offered, or several: which one is taken is not said
    if u.entities is not None and u.entities.elsewhere(wf, names[0]):
        # "The archway guesthouse is moderately priced. Would you like to book a room?"
        # - "Yes. I am looking for an indian restaurant": the "yes" takes another
        # workflow's entity, no value of this one (`entity_words`)
        return None
    held = u.after.get(slot)
    if held and overlaps(held, names[0]):
        return None  # s_t records it, in another spelling ("pizza hut fenditton")
    span = accepts(user)
    if reported and span is not None:
        # "Sure the Autumn House is a personal favorite. Your booking was successful." -
        # "Great. What was the reference number?": the user takes the booking of the one
        # entity the agent named
        return _accepted(slot, names[0], span[0], span[1], CERTAIN)
    if not _OFFER_QUESTION.search(agent):
        if booking is not None and not _lists_others(agent, names[0]):
            # "OK, can you reserve a table for the six of us?" to "Fitzbillies Restaurant
            # meets your criteria.": a booking asked for right after one entity was
            # presented books that entity, proposed or not
            return _accepted(slot, names[0], booking.start(), booking.end(), CERTAIN)
        return None
    plain = span is not None
    if span is None:
        # "Please book it for Saturday, 2 people" after "Would you like to book it?": an
        # acceptance too, but the user may be booking something else
        b = _BOOKING_WORDS.search(user)
        if b is None or not _BOOKING_WORDS.search(agent) or _REFUSE.search(user):
            return _named_back(u, names[0], wf, slot)
        span = b.start(), b.end()
    # a plain "yes" to booking the one name offered, or to a proposal ("How about X?",
    # "Would that work for you?"): sure. Anything less ("Would you like the address?" -
    # "Yes"; a booking request that does not say yes) is not claimed: S2 reads u_t
    # alone, which cannot show what was offered
    booked = bool(_BOOK_IT.search(user)) and not _REFUSE.search(user[:span[0]])
    proposal = (_BOOKING_WORDS.search(agent) or _PROPOSAL.search(agent)
                or (_RECOMMENDS.search(agent) and _JUDGES.match(user)))
    if not plain:
        # "I want to book a table for 4 people at 16:00 on friday." to "the Royal Standard
        # is in the east. I would be happy to book a table for you": the booking the agent
        # offered, of the one entity it named (a name u_t types instead is read first and
        # wins: an offer is taken only for a slot nothing else fills)
        return _accepted(slot, names[0], span[0], span[1], CERTAIN)
    if not proposal and not booked:
        if (booking is not None and _RECOMMENDS.search(agent)
                and not _lists_others(agent, names[0])):
            # "Okay I need a reservation for Friday, 4 people at 14:15." to "I would
            # recommend Panahar": a booking asked for right after the one entity the agent
            # recommended books it, as after one it presented
            return _accepted(slot, names[0], booking.start(), booking.end(), CERTAIN)
        return None  # "Can you book it please?" takes "You would love the X" too
    conf = CERTAIN
    return _accepted(slot, names[0], span[0], span[1], conf)


# a reply that names the entity back ("The Oak Bistro sounds fabulous. Can I get a table
# there?") takes it, though no assent opens it; only S2 decides it (a question about the
# place, "Is the Oak Bistro expensive?", names it too)
NAMED_BACK_CONFIDENCE = GUESS


def _named_back(u: UserTurn, name: str, wf: Workflow, slot: str) -> Mention | None:
    """u_t says `name`, the one name the agent's last turn offered, not to turn it down."""
    user = u.text
    hit = find_value(user, name, wf.slots.get(slot), fuzzy=True)
    if hit is None:
        return None
    if (st := u.sentence_at(hit.start)) is not None and st.text.rstrip().endswith("?"):
        return None  # "Is there an entrance fee for Ballare?" asks about it, takes nothing
    clause = _CLAUSE.split(user[hit.end:], maxsplit=1)[0]
    if _REFUSE.search(user[max(0, hit.start - 30):hit.start]) or _REFUSE.search(clause):
        return None  # "not the Oak Bistro", "the Oak Bistro is not what I want"
    return _accepted(slot, name, hit.start, hit.end, NAMED_BACK_CONFIDENCE)
