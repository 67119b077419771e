"""The comparison key of a typed value: what "the same value" means, once.

`normalize_typed(value, type)` is the key the state diff (`SlotSpec.normalize`),
the predicates (`Workflow.equals`), S1's support check and the extractor
compare: a time by `text.times.normalize_time`, a date by
`text.dates.date_key`, a count by `text.numbers.read_number`, a yes/no by
`text.booleans.normalize_boolean`, "don't care" in any spelling as one key.
"""

from __future__ import annotations

from collections.abc import Mapping

from sage_tod.text.booleans import DONTCARE, is_dontcare, normalize_boolean
from sage_tod.text.dates import date_key
from sage_tod.text.normalize import basic, strip_article
from sage_tod.text.numbers import read_number
from sage_tod.text.times import normalize_time


def normalize_typed(value: str, slot_type: str, table: Mapping[str, str] | None = None) -> str:
    """Canonical comparison key of `value` for a slot of `slot_type`.

    `table` is the categorical synonym table (`text.normalize.synonym_table`).
    Values that cannot be read for their type fall back to the basic form, so
    comparison never fails, it only becomes stricter.
    """
    if is_dontcare(value):
        return DONTCARE
    key: str | None = None
    if slot_type == "time":
        key = normalize_time(value)
    elif slot_type == "number":
        key = read_number(value)
    elif slot_type == "boolean":
        key = normalize_boolean(value)
    elif slot_type == "date":
        return date_key(value) or basic(value)
    if key is not None:
        return key
    b = basic(value)
    if table:
        b = basic(table.get(b, b))
    if slot_type == "free":
        # a free slot's catalogue (listed values) keeps its keys: "the copper kettle" is
        # "copper kettle" with a value list or without
        return strip_article(b)
    return b
