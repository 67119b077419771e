"""A contracted "not" negates the value three words on (`text.match.is_negated`).

The tokeniser splits "don't" into "don" and "t", and MultiWOZ's own tokenisation "do
n't" into "do", "n" and "t", so a window of three *tokens* before "guesthouse" in "I
do n't want a guesthouse" held "t want a" and missed the negation: the extractor read
a wish for a guesthouse. The window counts words now, a contraction's pieces joined.
Utterances from MultiWOZ 2.1 validation dialogues (MIT licence), with their dialogue
and turn index.
"""

from __future__ import annotations

import pytest

from sage_tod.compiler.extract import extract_user_values
from sage_tod.text.match import is_negated
from test_extract_coverage import _turn, _wf


def _negated_before(text: str, word: str) -> bool:
    return is_negated(text, text.index(word))


@pytest.mark.parametrize(("text", "word"), [
    ("Are any of them a hotel ? I do n't want a guesthouse .", "guesthouse"),  # SNG1046 t1
    ("I don't want a guesthouse.", "guesthouse"),
    ("No , can you list all the hotels are on the east side that are n't expensive ?",
     "expensive"),  # MUL1003 t14
    ("There is n't any afghan places in the centre ?", "afghan"),  # MUL1503 t4
    ("I wouldn't want a cheap one.", "cheap"),
])
def test_a_contracted_not_negates_what_follows(text: str, word: str) -> None:
    assert _negated_before(text, word)


@pytest.mark.parametrize(("text", "word"), [
    ("I 'd like a cheap hotel please .", "cheap"),
    ("It 's a guesthouse in the north .", "guesthouse"),
    ("I 'm looking for a cheap place to stay .", "cheap"),
])
def test_other_contractions_negate_nothing(text: str, word: str) -> None:
    assert not _negated_before(text, word)


def test_the_extractor_reads_no_wish_for_a_refused_type() -> None:
    # SNG1046 turn 1: the user wants a hotel, not a guesthouse
    turn = _turn("hotel", "Are any of them a hotel ? I do n't want a guesthouse .",
                 "Is there a certain area of town you 'd like to stay in or a price range "
                 "you 're looking for ?")
    assert not [e for e in extract_user_values(turn, _wf("hotel")) if e.value == "guesthouse"]
