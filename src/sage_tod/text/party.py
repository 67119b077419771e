"""How people state a party size without a number: "just me", "for me and my wife".

One definition for the two sides that need it: S1's support of a count value
(`match.ValueQuery` finds "1" in "I'll be traveling alone" for a party-size slot, so a
state that records 1 is supported) and the extractor's count reader
(`compiler.values.counts`, which reads the same phrases as the party the user books
for, with its own context rules: a couple only after "for", a count said beside it
wins).

The forms are those of MultiWOZ users (validation split) and SGD's: the user alone
("just me", "only for myself", "a ticket for myself", "I'm traveling alone", "dining
alone"), the user and one companion ("me and my wife", "my husband and I", "the two of
us", "both of us"). The user alone is not read when a companion follows ("just me and my
wife"), nor is "by myself" without a verb of the trip or meal ("I will book it by
myself"), nor "leave me alone".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.text.normalize import fold

# a companion after the user ("just me and my wife", "only me plus two kids")
_COMPANY = (r"(?!\s*,?\s*(?:and|&|plus|with)\s+(?:my|our|a|an|the|his|her|their|some|\d"
            r"|one|two|three|four|five|six|seven|eight|nine|ten|family|friends?|kids"
            r"|children|colleagues?)\b)")
RELATIVES = (r"(?:wife|husband|partner|girlfriend|boyfriend|friend|son|daughter|mother"
             r"|father|mom|mum|dad|brother|sister|colleague|fiance|fiancee|spouse)")
ALONE = re.compile(
    r"(?=[abcdegijorst])"  # its first letters (test_round16_screens)
    rf"(?:\b(?:just|only)\s+(?:for\s+)?(?:me|myself)\b{_COMPANY}"
    r"|\b(?:i ?'?m|i am|i will be|i ?'?ll be|traveling|travelling|dining|eating|staying"
    r"|going|coming|be|am)\s+(?:alone|by myself|on my own|solo)\b"
    rf"|\b(?:tickets?|seats?|table|rooms?|reservation|booking)\s+(?:just\s+)?for\s+myself\b"
    rf"{_COMPANY}"
    r"|\ba person (?:eating|dining|travell?ing) alone\b)")
COUPLE = re.compile(
    r"(?=[bmt])"  # its first letters (test_round16_screens)
    rf"(?:\b(?:the two of us|both of us|me and my {RELATIVES}|myself and my {RELATIVES}"
    rf"|my {RELATIVES} and (?:i|me|myself)|me and a (?:friend|colleague|partner))\b)")


# every phrase holds one of these tokens: a text without them says no party in words
SCREEN = frozenset({"me", "myself", "my", "alone", "solo", "us"})


@dataclass(frozen=True)
class PartyPhrase:
    """A party size said in words: the count and where in the text it is said."""

    count: str
    start: int
    end: int


def party_phrases(text: str) -> list[PartyPhrase]:
    """Every party size `text` says in words, in reading order (module docstring). The
    spans are the text's own (case folding keeps an ASCII text's offsets; a folded text
    of another length is matched in lower case)."""
    folded = fold(text)
    if len(folded) != len(text):
        folded = text.lower()
    out = [PartyPhrase("1", m.start(), m.end()) for m in ALONE.finditer(folded)]
    out += [PartyPhrase("2", m.start(), m.end()) for m in COUPLE.finditer(folded)]
    return sorted(out, key=lambda p: p.start)
