"""Policy rules over tool calls and tool results, written in CEL.

A tool agent's policy says what must hold before a write ("only a pending order
can be cancelled", "basic economy cannot be modified", "the non-free bags are
the total minus the allowance"). Those are conditions over the call's
arguments and the results of earlier reads, with comparisons, list operations
and arithmetic: the Common Expression Language (CEL, cel-python) says all of
that in one well-specified, side-effect-free grammar, so the spec does not
grow one of its own.

Names a rule can use (docs/formats.md §1, *Tool rules*):
- `args`: the arguments of the write call being judged;
- `target`: the entity `args[target.arg]` names as last seen: the latest
  successful result of a `target.read` tool, or of a committing call, whose
  `target.key` field equals it (absent when none was read);
- `results`: tool name -> its latest successful result before the call;
- `reads`: tool name -> every successful result before the call, oldest first;
- `calls`: every earlier successful call of the conversation, `{name, arguments}`;
- `context`: the spec's `context` constants (e.g. the policy's current time);
- `result`: what this call returned (the change as the backend made it);
- `transcript`: the conversation up to the user's message before the call,
  `{role: "user" | "agent", text, amounts, quoted}` oldest first (CEL's `matches`
  is RE2; `amounts`: the money amounts the message states, as doubles; `quoted`:
  those a charge word — cost, refund, difference, total — leads to);
- `user_calls`: in a dual-control log, the user's own tool calls before the call,
  `{name, arguments, result}` oldest first (`user_tool_calls` of the turns: what
  the user's phone showed them), `[]` elsewhere.
Rules of a hand-off tool (`handoff: true`) are judged at each successful hand-off
with the same names (`args` its arguments): a runbook's "before you transfer,
check ..." steps.
A rule that cannot be evaluated (a field the log does not hold, a type error)
is an abstention, never a guess.

Beyond CEL's standard functions, `minutes(date, time)` gives the minutes from
1970-01-01 00:00 to a date ("2024-05-27") and a clock time ("17:00:00", "02:30",
"02:00:00+1" for the next day, as flight schedules write it): a duration is the
difference of two. Text it cannot read is an error, so the rule abstains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RULE_NAMES = frozenset({"args", "target", "results", "reads", "calls", "context", "result",
                        "transcript", "user_calls"})
# a preference's `key` and `available` also see `item`: one record of an option, and a
# key `over: option` sees `option`: the option's records, in order
PREFERENCE_NAMES = RULE_NAMES | {"item", "option"}


class ToolTarget(BaseModel):
    """Which argument names the entity a write acts on, and which reads describe it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arg: str = Field(min_length=1)
    read: tuple[str, ...] = Field(min_length=1)
    key: str | None = None  # the result field holding the id (default: `arg`)

    @property
    def result_key(self) -> str:
        return self.key or self.arg


class ToolRule(BaseModel):
    """One precondition of a write: `check` must be true when `when` is (CEL)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    check: str = Field(min_length=1)
    when: str | None = None
    message: str = ""
    # the policy sends the user to a human when the rule is false ("if any portion of the
    # flight has already been flown, transfer"): a hand-off is then right, not a failure
    handoff: bool = False

    @property
    def args_read(self) -> frozenset[str]:
        """The top-level argument names `when` and `check` read (`args.cabin`)."""
        return frozenset(re.findall(r"\bargs\.([A-Za-z_]\w*)",
                                    f"{self.when or ''} {self.check}"))


class ToolPreference(BaseModel):
    """A choice the user can ask for among the options earlier reads listed ("the
    cheapest", "a nonstop one"): when a user message matches `cue`, the option the call
    commits must have the lowest `key` among the available options of the same read.

    An option is one element of a result of an `options` tool: a record, or a list of
    records (a connection of two flights). The call's `items` argument list holds the
    chosen records, matched to the result's by the `same` fields. An option's key is the
    sum of `key` over its records (CEL, with `item` bound to one record): a price sums
    to the fare, `1` counts the legs. `available` (CEL over `item`, optional) keeps the
    options that could have been chosen. With `over: option` the key is evaluated once
    for the whole option, `option` bound to its records in order (a travel time runs from
    the first departure to the last arrival, layovers included). `rank` n asks for the
    option with the n-th lowest distinct key ("the second cheapest": `rank: 2`). `times`
    names the fields of an option's departure and arrival; an option outside the time
    limits the user stated is no choice they asked for.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    cue: str = Field(min_length=1)  # a regular expression, matched case-insensitively
    # a message that matches `cue` and also `unless` asks for something else ("the second
    # cheapest, since the cheapest one is usually not great")
    unless: str | None = None
    options: tuple[str, ...] = Field(min_length=1)
    items: str = Field(min_length=1)
    same: tuple[str, ...] = Field(min_length=1)
    key: str = Field(min_length=1)
    over: Literal["item", "option"] = "item"
    # the place the user asked for in key order: 1 the lowest ("the cheapest"), 2 the
    # next distinct key ("the second cheapest")
    rank: int = Field(default=1, ge=1, le=5)
    available: str | None = None
    message: str = ""
    # the record fields that hold an option's clock times ("06:00:00", "02:00:00+1"): the
    # departure of its first record and the arrival of its last. The limits the user
    # stated ("arrive before 7 am", `compiler.time_limits`) then decide which options
    # count: a cheaper flight that lands at 17:00 is no better choice for that user
    times: dict[Literal["arrive", "depart"], str] = Field(default_factory=dict)


class RuleSyntaxError(ValueError):
    """A CEL expression that does not compile; the message says where."""


@dataclass(frozen=True)
class RuleResult:
    """True/False, or None with the reason it could not be evaluated."""

    value: bool | None
    reason: str = ""


@lru_cache(maxsize=1)
def _env() -> Any:
    import celpy  # imported on first use: specs without rules never pay for it

    return celpy.Environment()


_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*\+(\d+))?$")


def clock_minutes(clock: Any) -> int | None:
    """Minutes after midnight of a schedule's clock time: "06:00", "06:00:00", or
    "02:00:00+1" (a day later, 1,560); None for anything else."""
    m = _CLOCK.match(str(clock).strip()) if clock is not None else None
    if m is None:
        return None
    hours, mins, _, plus = m.groups()
    return 1440 * int(plus or 0) + int(hours) * 60 + int(mins)


def _minutes(date: Any, clock: Any) -> Any:
    """CEL `minutes(date, time)`: minutes since 1970-01-01 00:00 (see the module doc)."""
    from datetime import date as Date

    from celpy import celtypes
    from celpy.evaluation import CELEvalError

    at = clock_minutes(clock)
    try:
        day = Date.fromisoformat(str(date).strip()[:10])
    except ValueError:
        day = None
    if at is None or day is None:
        return CELEvalError(f"minutes: cannot read {str(date)!r}, {str(clock)!r} as a date "
                            "and a clock time")
    return celtypes.IntType((day - Date(1970, 1, 1)).days * 1440 + at)


_FUNCTIONS = {"minutes": _minutes}


@lru_cache(maxsize=4096)
def _program(expr: str) -> Any:
    env = _env()
    return env.program(env.compile(expr), functions=_FUNCTIONS)


@lru_cache(maxsize=4096)
def _names_used(expr: str) -> frozenset[str]:
    """The binding names `expr` mentions: only those are converted to CEL values (the
    conversion of every result and message of a long conversation cost more than the
    rule), and a name it never mentions cannot change its value."""
    return frozenset(n for n in PREFERENCE_NAMES if re.search(rf"\b{n}\b", expr))


def compile_rule(expr: str, names: frozenset[str] = RULE_NAMES) -> None:
    """Raise `RuleSyntaxError` unless `expr` is a CEL expression over the known names."""
    from celpy.celparser import CELParseError

    try:
        ast = _env().compile(expr)
    except CELParseError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        raise RuleSyntaxError(first) from None
    unknown = sorted(_free_names(ast) - names)
    if unknown:
        raise RuleSyntaxError(f"unknown name {unknown[0]!r} (a rule can use "
                              f"{', '.join(sorted(names))})")
    calls = sorted(_called(ast) - _known_functions())
    if calls:
        raise RuleSyntaxError(f"unknown function {calls[0]!r} (a rule can call "
                              f"{', '.join(sorted(_known_functions()))})")


@lru_cache(maxsize=1)
def _known_functions() -> frozenset[str]:
    """The global functions a rule may call: CEL's (as cel-python defines them), its
    macros, and this module's (`minutes`). Without the check a misspelt function
    compiles and abstains at every call."""
    from celpy.evaluation import base_functions

    cel = frozenset(n for n in base_functions if n.isidentifier() and not n.startswith("_"))
    return cel | {"has", "dyn"} | frozenset(_FUNCTIONS)


def _called(tree: Any) -> set[str]:
    """Names of the global function calls of a CEL parse tree (`size(x)`, not `x.size()`)."""
    from lark import Token, Tree

    out: set[str] = set()
    for node in tree.iter_subtrees():
        if isinstance(node, Tree) and node.data == "ident_arg" and node.children:
            first = node.children[0]
            if isinstance(first, Token):
                out.add(str(first))
    return out


def _free_names(tree: Any) -> set[str]:
    """Top-level identifiers of a CEL parse tree (macro variables excluded)."""
    from lark import Token, Tree

    names: set[str] = set()
    bound: set[str] = set()

    def walk(node: Any, top: bool) -> None:
        if isinstance(node, Tree):
            if node.data == "member_dot_arg":
                # `x.all(v, ...)`, `x.exists(v, ...)`: the first argument is a bound variable
                for child in node.children:
                    if isinstance(child, Tree) and child.data == "exprlist" and child.children:
                        first = child.children[0]
                        for tok in first.scan_values(lambda v: isinstance(v, Token)):
                            if tok.type == "IDENT":
                                bound.add(str(tok))
                            break
            if node.data == "ident" and top:
                for tok in node.children:
                    if isinstance(tok, Token) and tok.type == "IDENT":
                        names.add(str(tok))
            for child in node.children:
                walk(child, True)

    walk(tree, True)
    return names - bound - {"true", "false", "null"}


def evaluate_rule(expr: str, bindings: Mapping[str, Any]) -> RuleResult:
    """Evaluate a compiled-at-load rule on JSON-like `bindings`."""
    from celpy import celtypes

    out, reason = _evaluate(expr, bindings)
    if reason:
        return RuleResult(None, reason)
    if isinstance(out, bool | celtypes.BoolType):
        return RuleResult(bool(out))
    return RuleResult(None, f"the rule gave {type(out).__name__}, not a boolean")


def evaluate_number(expr: str, bindings: Mapping[str, Any]) -> tuple[float | None, str]:
    """A preference key: (number, "") or (None, why it could not be evaluated)."""
    from celpy import celtypes

    out, reason = _evaluate(expr, bindings)
    if reason:
        return None, reason
    if isinstance(out, bool | celtypes.BoolType) or not isinstance(out, int | float):
        return None, f"the key gave {type(out).__name__}, not a number"
    return float(out), ""


def _evaluate(expr: str, bindings: Mapping[str, Any]) -> tuple[Any, str]:
    """(value, "") or (None, the reason the log cannot give a value)."""
    from celpy.adapter import json_to_cel
    from celpy.evaluation import CELEvalError

    names = PREFERENCE_NAMES if "item" in bindings or "option" in bindings else RULE_NAMES
    missing = sorted(n for n in names if bindings.get(n) is None and n in expr)
    try:
        used = _names_used(expr)
        activation = {k: json_to_cel(v) for k, v in bindings.items() if k in used}
        out = _program(expr).evaluate(activation)
    except CELEvalError as exc:
        return None, _reason(exc, missing)
    except (TypeError, ValueError, KeyError, ZeroDivisionError, RecursionError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if isinstance(out, CELEvalError):
        return None, _reason(out, missing)
    return out, ""


def _reason(exc: Exception, missing: list[str]) -> str:
    args = getattr(exc, "args", ())
    text = str(args[0]) if args else str(exc)
    if missing:  # an error about a name the log gave nothing for: say that, not CEL's words
        return f"the log holds no {missing[0]!r} for this call"
    return text.splitlines()[0][:200] if text else type(exc).__name__
