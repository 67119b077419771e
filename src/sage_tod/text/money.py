"""Money amounts as agents write them ("$1,194", "$597.50", "45 dollars", "30 USD").

A tool rule compares what a change charged with what the agent told the user it would
cost (the shipped specs' `amount-read-back`), and a verdict points at the sentence that
said so: both need the amounts of a message with their places, and which of them the
message presents as a charge or refund rather than a price in a list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONEY = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?|"
                    r"\b(\d+)(\.\d{1,2})?\s?(?:dollars|USD)\b", re.IGNORECASE)

# words that present an amount as what the user pays or gets back ("the additional cost
# will be $597", "a refund of $38", "Total refund: $14,190"), not a price in a list
_CHARGE_CUE = re.compile(r"\b(?:charge[ds]?|charging|refund(?:ed|s)?|cost|costs|total|"
                         r"difference|pay|paying|paid|payment|fee|additional|owe|due|"
                         r"credit(?:ed)?|saving|savings|save)\b", re.IGNORECASE)

_SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")


@dataclass(frozen=True)
class Money:
    """One amount a text states: its value, where it stands, and the start of its
    sentence."""

    value: float
    start: int
    end: int
    sentence_start: int
    quoted: bool  # a charge word leads to it in its sentence, within 120 characters


def money_mentions(text: str) -> list[Money]:
    """Every money amount the text states, in order."""
    out: list[Money] = []
    for m in _MONEY.finditer(text):
        window = max(0, m.start() - 120)
        head = text[window:m.start()]
        ends = list(_SENTENCE_END.finditer(head))
        sentence = window + ends[-1].end() if ends else window
        if not ends and window > 0:  # the sentence began before the window: find it
            before = list(_SENTENCE_END.finditer(text, 0, m.start()))
            sentence = before[-1].end() if before else 0
        # searched in the slice, as a word cut by the window still begins one there
        quoted = _CHARGE_CUE.search(text[max(window, sentence):m.start()]) is not None
        whole, cents = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        out.append(Money(float(whole.replace(",", "") + (cents or "")), m.start(), m.end(),
                         sentence, quoted))
    return out


def money_amounts(text: str, quoted: bool = False) -> list[float]:
    """Every money amount the text states, as numbers (a rule compares them with the
    amounts the results hold: "the change charges what the agent read back"); with
    `quoted`, only those a charge word ("cost", "refund", "difference", "total") leads
    to in the same sentence, within 120 characters."""
    return [m.value for m in money_mentions(text) if m.quoted or not quoted]


def quoted_span(text: str, limit: int = 300) -> tuple[int, int] | None:
    """(start, end) of the part of `text` that quotes charges: from the sentence of the
    first quoted amount to the end of the last one that fits in `limit` characters; None
    when the text quotes none."""
    quoted = [m for m in money_mentions(text) if m.quoted]
    if not quoted:
        return None
    start = quoted[0].sentence_start
    while start < quoted[0].start and text[start].isspace():
        start += 1
    end = quoted[0].end
    for m in quoted[1:]:
        if m.end - start > limit:
            break
        end = m.end
    return start, end
