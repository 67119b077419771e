"""How sure a reading of u_t is: the extractor's one table of confidence levels.

Every reader of the text extractor (`values.py`, `offers.py`, `names.py`,
`dontcare.py`, `descriptors.py`) gives the value it reads one of these levels (the
resolver, `resolve.py`, derives one from the number of candidate slots), and
the level decides who judges the criterion it compiles into: at `EXACT` or above
(with one candidate slot) S1 decides IUV on the extraction alone; below it S2 reads
u_t; below `EXTRACTION_FLOOR` the value is dropped. The levels are named for what
makes a reading that sure, so that a new rule picks a level by its evidence, not a
number: raising a rule from `LIKELY` to `CERTAIN` hands its criteria from S2 to S1.
"""

from __future__ import annotations

from sage_tod.contracts.criteria import EXACT, EXTRACTION_FLOOR

# a listed value (or its synonym) found as written, for the one slot that lists it
SURE = 0.95
# a construction or a cue makes the reading sure: "called X", "No" to "does it matter?",
# a booking of the one entity the agent offered; S1 may decide it
CERTAIN = EXACT
# one slot, but the words around it chose the slot, or the reading may mean something
# else ("a table at 7": the time; a cuisine said as a modifier): S2 reads u_t
LIKELY = 0.8
# a guess S2 must confirm: a bare "no" to "any preference?", a name in lower case, a
# value the words before point away from
GUESS = 0.6
# the value may belong to several slots (a waiver of "area or price")
SPLIT = 0.5

assert EXTRACTION_FLOOR <= SPLIT < GUESS < LIKELY < CERTAIN < SURE <= 1.0
