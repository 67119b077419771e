"""The time windows a user states for the option they want: "arrive before 7 am".

A preference such as "the cheapest" ranks the options a search listed; the user's
own limits decide which of them count. "I prefer early flights that arrive before 7
am ... the cheapest Economy options" (τ²-bench airline, task 29) asks for the
cheapest flight *among those arriving before 7*: a cheaper flight landing at 17:00 is
no better choice. This module reads such limits from the user's messages: a clock
time after a bound word ("before", "by", "no later than"; "after", "no earlier than")
whose clause names the event ("arrive", "land", "get there"; "depart", "leave").
A time with two readings ("before 7" is 07:00 or 19:00) is no limit, nor is a bound
with no event word before it in the clause ("before 7 am" alone may bound either).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from sage_tod.contracts.tool_rules import clock_minutes
from sage_tod.text.times import find_times

Event = Literal["arrive", "depart"]

_UPPER = frozenset({"before", "by", "until", "till", "earlier"})
_LOWER = frozenset({"after", "from", "later"})
_ARRIVE = re.compile(r"\b(?:arrive|arrives|arriving|arrival|land|lands|landing|get there"
                     r"|get in|be there|reach)\b", re.IGNORECASE)
_DEPART = re.compile(r"\b(?:depart|departs|departing|departure|leave|leaves|leaving"
                     r"|take off|takes off|fly out)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[.!?;]|\b(?:and|but|or)\b", re.IGNORECASE)
_THAN = re.compile(r"(?:\b(?:no|not) )?\b(later|earlier) than\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class TimeLimit:
    """The user wants `event` at or before (`bound` "upper") or at or after ("lower")
    `minutes` after midnight, as they said at [start, end) of `text`."""

    event: Event
    bound: Literal["upper", "lower"]
    minutes: int
    text: str
    start: int
    end: int

    def admits(self, minutes: int) -> bool:
        return minutes <= self.minutes if self.bound == "upper" else minutes >= self.minutes


def stated_time_limits(texts: Iterable[str]) -> list[TimeLimit]:
    """The limits the texts state, in order; a later limit on the same event and bound
    replaces an earlier one (the user changed their mind)."""
    latest: dict[tuple[str, str], TimeLimit] = {}
    for text in texts:
        for tm in find_times(text):
            if len(tm.readings) != 1:
                continue
            bound: Literal["upper", "lower"]
            than = _THAN.search(text, max(0, tm.start - 24), tm.start)
            if than is not None:  # "no later than 11:30", "earlier than 9"
                later = than[1].lower() == "later"
                negated = than[0].lower().startswith(("no ", "not "))
                bound = "upper" if later == negated else "lower"
            elif tm.relation in _UPPER:
                bound = "upper"
            elif tm.relation in _LOWER:
                bound = "lower"
            else:
                continue
            before = text[max(0, tm.start - 60):tm.start]
            clause = _CLAUSE.split(before)[-1]
            arrive, depart = _ARRIVE.search(clause), _DEPART.search(clause)
            if (arrive is None) == (depart is None):
                continue  # no event named, or both: the bound's event is not said
            event: Event = "arrive" if arrive is not None else "depart"
            minutes = clock_minutes(next(iter(tm.readings)))
            if minutes is None:
                continue
            latest[(event, bound)] = TimeLimit(event, bound, minutes, text, tm.start, tm.end)
    return list(latest.values())
