"""Counts, the one reader: digits and number words, in a value and in a text.

A count is written "2", "two", "2.0", "a couple", "twenty two" or "a single";
the state diff, the extractor and S1 must agree that these are one value. This
module is the lowest of the readers: the tokenizer (`text.normalize`) folds
number words to digits with its table, so it imports nothing from `text`.

Digit strings are compared as strings (leading zeros dropped), never through
`int()`, so a value of any length reads in bounded time and cannot raise
(Python refuses to convert digit strings longer than 4300 characters).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

NUMBER_WORDS: Mapping[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "single": 1, "couple": 2, "pair": 2,
}
# words that count only in a phrase ("a couple", "a single room"): the tokenizer keeps
# them as words so "pair" in "a pair of shoes" is no digit in every other comparison
COUNT_NOUNS = frozenset({"single", "couple", "pair"})
_TENS = frozenset({20, 30, 40, 50, 60, 70, 80, 90})
_WORD_RE = re.compile(r"[a-z0-9]+")


def number_token(tok: str) -> str | None:
    """The digits one token of text stands for ("two", "02", "couple" -> "2"), or None.

    `tok` is a token as `text.normalize.tokens_with_spans` yields it (lowercase,
    number words other than `COUNT_NOUNS` already digits). The extractor and
    `find_value` both read counts in a text token by token through here.
    """
    if tok.isdigit() and tok.isascii():
        return tok.lstrip("0") or "0"
    n = NUMBER_WORDS.get(tok)
    return None if n is None else str(n)


def read_number_tokens(toks: Sequence[str]) -> str | None:
    """The count a whole token sequence states, or None ("a few", "two people")."""
    if len(toks) == 1:
        return number_token(toks[0])
    if len(toks) == 2:
        first, second = number_token(toks[0]), number_token(toks[1])
        if first is not None and toks[0].isdigit() and toks[1].isdigit() and second == "0":
            return first  # "2.0" tokenises as 2, 0
        if toks[0] in {"a", "an"} and second is not None and not toks[1].isdigit():
            return second  # "a couple", "a single"
        if (first is not None and second is not None and not toks[0].isdigit()
                and not toks[1].isdigit() and int(first) in _TENS and len(second) == 1
                and second != "0"):
            return str(int(first) + int(second))  # "twenty two", "twenty-two"
    if len(toks) == 3 and toks[0] in {"a", "an"} and toks[2] == "of":
        return read_number_tokens(toks[:2])  # "a couple of"
    return None


def read_number(value: str) -> str | None:
    """Digits for a count written as digits or words ("two" -> "2"), else None."""
    folded = unicodedata.normalize("NFKC", value).lower()
    return read_number_tokens(_WORD_RE.findall(folded))
