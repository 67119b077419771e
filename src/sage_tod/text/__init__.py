"""Text: one reader per value type, normalisation, matching, places, sentences.

The lowest layer: pure functions of strings (and of anything shaped like a
slot, `text.slot.SlotLike`). Everything above reads values through here, so
"the same value" means one thing everywhere: `times` (clock times), `dates`,
`numbers` (counts), `booleans` (yes/no and "don't care"), `sentences` (the one
splitter), and `keys.normalize_typed`, the comparison key built from them.
"""


from sage_tod.text.booleans import is_dontcare, normalize_boolean
from sage_tod.text.dates import date_key, find_dates
from sage_tod.text.keys import normalize_typed
from sage_tod.text.match import find_dontcare, find_value, is_negated
from sage_tod.text.normalize import is_unset
from sage_tod.text.numbers import read_number
from sage_tod.text.sentences import sentences
from sage_tod.text.slot import SlotLike
from sage_tod.text.times import find_times, normalize_time

__all__ = [
    "SlotLike",
    "date_key",
    "find_dates",
    "find_dontcare",
    "find_times",
    "find_value",
    "is_dontcare",
    "is_negated",
    "is_unset",
    "normalize_boolean",
    "normalize_time",
    "normalize_typed",
    "read_number",
    "sentences",
]
