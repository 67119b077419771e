"""The pytest plugin in a team's own suite: a passing and a failing test."""

from __future__ import annotations

import json

import pytest

from sage_tod import demo

pytest_plugins = ["pytester"]


def _turns(pytester: pytest.Pytester, name: str, keys: set[str]) -> None:
    rows = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    chosen = [r for r in rows if r["dialogue_id"] in keys]
    (pytester.path / name).write_text("".join(json.dumps(r) + "\n" for r in chosen))


def test_passing_and_failing_suites(pytester: pytest.Pytester) -> None:
    _turns(pytester, "good.jsonl", {"demo-r02", "demo-t01"})
    _turns(pytester, "bad.jsonl", {"demo-r02", "demo-r06", "demo-r12"})
    pytester.makepyfile(test_agent=f"""
        SPEC = {str(demo.spec_path())!r}

        def test_good(assert_turns_pass):
            verdicts = assert_turns_pass(SPEC, "good.jsonl", config="s1")
            assert len(verdicts) == 6

        def test_bad(assert_turns_pass):
            assert_turns_pass(SPEC, "bad.jsonl", config="s1")

        def test_import_form():
            import pytest
            from sage_tod.testing import assert_turns_pass
            assert_turns_pass(SPEC, "good.jsonl", config="s1")
            with pytest.raises(AssertionError, match="no turns"):  # nothing checked: loud
                assert_turns_pass(SPEC, [], config="s1")
    """)
    result = pytester.runpytest()  # the plugin loads through its pytest11 entry point
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*2 of 8 turn(s) did not pass sage-tod checks (config s1):*",
        "*demo-r06:1 [[]restaurant_booking[]] FAILURE*",
        "*IUV user supplied '4' for restaurant-people, but s_t leaves it unfilled*",
        "*repair: record value '4'*",
        "*demo-r12:1*FAILURE*",
        "*PC  agent confirms while the outcome predicate is false in s_t*",
        "*repair: required slots {restaurant-day} still empty, do not confirm*",
    ])
