from __future__ import annotations

import pytest

from sage_tod.contracts.predicate import (
    PredicateSyntaxError,
    evaluate,
    expand_all_required,
    parse_predicate,
    render,
)


def _eq(state: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda s, v: state.get(s) == v


@pytest.mark.parametrize(("expr", "state", "expected"), [
    ("filled(a)", {"a": "x"}, True),
    ("filled(a)", {}, False),
    ("filled(a) and filled(b)", {"a": "x"}, False),
    ("filled(a) or filled(b)", {"a": "x"}, True),
    ("not filled(a)", {}, True),
    ("a == x", {"a": "x"}, True),
    ("a != x", {"a": "x"}, False),
    ("a == 'city centre'", {"a": "city centre"}, True),
    ("filled(a) and (b == y or not filled(c))", {"a": "1", "c": "2"}, False),
    ("filled(a) and (b == y or not filled(c))", {"a": "1", "b": "y", "c": "2"}, True),
    ("true", {}, True),
    ("NOT false AND true", {}, True),
    ("`book people` == 2", {"book people": "2"}, True),
    ("filled(book people)", {"book people": "2"}, True),
])
def test_evaluate(expr: str, state: dict[str, str], expected: bool) -> None:
    assert evaluate(parse_predicate(expr), state, _eq(state)) is expected


def test_and_binds_tighter_than_or() -> None:
    node = parse_predicate("filled(a) or filled(b) and filled(c)")
    assert evaluate(node, {"a": "1"}, _eq({})) is True
    assert evaluate(node, {"b": "1"}, _eq({})) is False


@pytest.mark.parametrize("bad", [
    "", "filled(a", "a ==", "filled(a) and", "a & b", "(filled(a)", "filled(a))",
    "__import__('os').system('true')", "1 == 2",
])
def test_syntax_errors_are_reported_not_evaluated(bad: str) -> None:
    with pytest.raises(PredicateSyntaxError):
        parse_predicate(bad)


def test_all_required_expands_and_unmet_lists_what_is_missing() -> None:
    node = expand_all_required(parse_predicate("all_required and (filled(x) or filled(y))"),
                               ("a", "b"))
    assert node.slots() == {"a", "b", "x", "y"}
    unmet = node.unmet(lambda s: s == "a", lambda s, v: False)
    assert unmet == {"b", "x", "y"}
    assert "filled(a)" in render(node)
