"""Text: one reader per value type, normalisation, matching, places, dates, clock times.

The lowest layer: pure functions of strings (and of anything shaped like a
slot, `text.slot.SlotLike`). Everything above reads values through here, so
"the same value" means one thing everywhere.
"""


from sage_tod.text.match import find_dontcare, find_times, find_value, is_negated
from sage_tod.text.normalize import (
    is_dontcare,
    is_unset,
    normalize_boolean,
    normalize_date,
    normalize_number,
    normalize_time,
    normalize_typed,
)
from sage_tod.text.slot import SlotLike

__all__ = [
    "SlotLike",
    "find_dontcare",
    "find_times",
    "find_value",
    "is_dontcare",
    "is_negated",
    "is_unset",
    "normalize_boolean",
    "normalize_date",
    "normalize_number",
    "normalize_time",
    "normalize_typed",
]
