"""The time limits a user states for an option (compiler/time_limits.py), and the
schedule clock times they are compared with (contracts/tool_rules.clock_minutes, which
the CEL `minutes()` function reads too)."""

from __future__ import annotations

from sage_tod.compiler.time_limits import stated_time_limits
from sage_tod.contracts.tool_rules import clock_minutes


def _limits(*texts: str) -> list[tuple[str, str, int]]:
    return [(lim.event, lim.bound, lim.minutes) for lim in stated_time_limits(texts)]


def test_a_bound_after_the_event_word_is_a_limit() -> None:
    # τ²-bench airline (whissle) task 29, quoted
    assert _limits("I prefer early flights that arrive before 7 am at the destination.") == [
        ("arrive", "upper", 420)]
    assert _limits("I want to leave after 3 pm and arrive by 10 pm") == [
        ("depart", "lower", 900), ("arrive", "upper", 1320)]
    assert _limits("I need to land no later than 11:30 am") == [("arrive", "upper", 690)]
    assert _limits("leave no earlier than 8 am") == [("depart", "lower", 480)]


def test_no_event_or_an_ambiguous_time_is_no_limit() -> None:
    assert _limits("before 7 am please") == []  # which event?
    assert _limits("I want to depart before 7") == []  # 07:00 or 19:00
    # a later limit on the same event and bound replaces the earlier one
    assert _limits("arrive before 7 am", "actually I can arrive by 9 am") == [
        ("arrive", "upper", 540)]


def test_clock_minutes_reads_the_search_results_times() -> None:
    assert clock_minutes("06:00:00") == 360
    assert clock_minutes("02:00:00+1") == 1440 + 120
    assert clock_minutes("soon") is None and clock_minutes(None) is None
