"""Sentences, the one splitter: a text cut at ".", "!" and "?" (and ";" on request).

Request and confirmation detection read the agent's turn sentence by sentence,
the extractor skips the user's questions about an entity, and the place finder
keeps a name within its sentence: all of them cut a text here, so a sentence
is one span everywhere. Each span starts and ends on a visible character and
keeps its closing punctuation ("Is it free?"). A decimal point cuts too
("6.30pm"); callers only look for words and question marks in a sentence.

The place finder also cuts at ";" ("Phoenix; a hotel in Napa"), where a name
ends as surely as at a full stop; the other readers cut at sentence ends only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sage_tod.text.memo import memo_list

_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]*")
_SENTENCE_OR_CLAUSE_RE = re.compile(r"[^.!?;]+[.!?;]*")


@dataclass(frozen=True)
class Sentence:
    """A sentence of a text: `text[start:end] == sentence`."""

    start: int
    end: int
    text: str


@memo_list(maxsize=4096)
def sentences(text: str, *, semicolons: bool = False) -> list[Sentence]:
    """The sentences of `text` in order; blank pieces are dropped.

    `semicolons` also cuts at ";" (see the module docstring). Memoised per text: the
    extractor's readers each cut the same utterance.
    """
    pattern = _SENTENCE_OR_CLAUSE_RE if semicolons else _SENTENCE_RE
    out = []
    for m in pattern.finditer(text):
        raw = m.group()
        said = raw.strip()
        if not said:
            continue
        # `said` starts on the piece's first visible character: no earlier place in `raw`
        # holds it (everything before is white space), so `find` gives the lead, and the
        # end is the lead plus its length (what `len(raw) - len(raw.rstrip())` cut off)
        start = m.start() + raw.find(said)
        out.append(Sentence(start, start + len(said), said))
    return out
