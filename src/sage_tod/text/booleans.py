"""Yes/no values and "don't care", the one reader of each.

A boolean slot is written "yes"/"true"/"free"/"included" and "no"/"false"/
"none"; a slot the user leaves open is written "dontcare", "don't care", "do
n't care" (tokenised corpora), "any" or "no preference". The state diff, the
predicates, S1 and the NLI claims all ask here, so "don't care" is one value
everywhere. `DONTCARE_CUES` are the wider set of words that say it in a text
("whatever", "anywhere", "not fussy"); every value form is a cue too.
"""

from __future__ import annotations

import re

from sage_tod.text.normalize import basic, fold

DONTCARE = "dontcare"
DONTCARE_FORMS = frozenset({
    "dontcare", "dont care", "don t care", "do nt care", "do n t care", "do not care",
    "doesnt matter", "doesn t matter", "does not matter", "no preference", "any",
})
DONTCARE_CUES = ("any", "anything", "anywhere", "anytime", "doesn't matter", "does not matter",
                 "don't care", "do not care", "dont care", "no preference", "not fussy",
                 "whatever", "either", "not picky", "open to", "dontcare", "doesnt matter",
                 "do n't care", "doesn 't matter")
_CUE_RES = tuple(re.compile(rf"\b{re.escape(c)}\b") for c in DONTCARE_CUES)

TRUE_FORMS = frozenset({"yes", "true", "y", "1", "free", "included", "available"})
FALSE_FORMS = frozenset({"no", "false", "n", "0", "none", "not included"})


def normalize_boolean(value: str) -> str | None:
    """"true"/"false" for a yes/no value, else None."""
    b = basic(value)
    if b in TRUE_FORMS:
        return "true"
    if b in FALSE_FORMS:
        return "false"
    return None


def is_dontcare(value: str) -> bool:
    """The value says the user does not mind ("dontcare", "don't care", "any")."""
    return basic(value) in DONTCARE_FORMS


def dontcare_span(text: str) -> tuple[int, int] | None:
    """Where `text` says the user does not mind: the first cue of `DONTCARE_CUES` it
    contains (in that order), or None."""
    folded = fold(text)
    for cue in _CUE_RES:
        m = cue.search(folded)
        if m:
            return m.start(), m.end()
    return None
