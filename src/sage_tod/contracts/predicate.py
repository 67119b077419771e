"""The outcome predicate O: a tiny boolean language parsed without `eval`.

Grammar (keywords are case-insensitive)::

    expr    := or_expr
    or_expr := and_expr ("or" and_expr)*
    and_expr:= unary ("and" unary)*
    unary   := "not" unary | atom
    atom    := "(" expr ")" | "true" | "false" | "all_required"
             | "filled" "(" SLOT ")" | SLOT ("==" | "!=") VALUE
    SLOT    := bare name [A-Za-z0-9_.:-]+ (may not start with a digit) | `any name`
    VALUE   := 'quoted' | "quoted" | bare word [A-Za-z0-9_.:-]+

The parser is a hand-written recursive descent over a regex tokenizer, so a
spec file can never execute code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<op>==|!=|\(|\))|`(?P<bq>[^`]+)`|'(?P<sq>[^']*)'|\"(?P<dq>[^\"]*)\""
    r"|(?P<word>[A-Za-z0-9_.:\-]+))"
)

Filled = Callable[[str], bool]
Equals = Callable[[str, str], bool]


class PredicateSyntaxError(ValueError):
    """The outcome expression does not parse; the message says where."""


@dataclass(frozen=True)
class _Tok:
    kind: str  # op | name | string | word
    text: str
    pos: int


@dataclass(frozen=True)
class Const:
    value: bool

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return self.value

    def slots(self) -> frozenset[str]:
        return frozenset()

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        return frozenset()


@dataclass(frozen=True)
class IsFilled:
    slot: str

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return filled(self.slot)

    def slots(self) -> frozenset[str]:
        return frozenset({self.slot})

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        return frozenset() if filled(self.slot) else frozenset({self.slot})


@dataclass(frozen=True)
class Compare:
    slot: str
    value: str
    negated: bool

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return equals(self.slot, self.value) != self.negated

    def slots(self) -> frozenset[str]:
        return frozenset({self.slot})

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        return frozenset() if self.evaluate(filled, equals) else frozenset({self.slot})


@dataclass(frozen=True)
class Not:
    inner: Node

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return not self.inner.evaluate(filled, equals)

    def slots(self) -> frozenset[str]:
        return self.inner.slots()

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        return frozenset() if self.evaluate(filled, equals) else self.inner.slots()


@dataclass(frozen=True)
class And:
    parts: tuple[Node, ...]

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return all(p.evaluate(filled, equals) for p in self.parts)

    def slots(self) -> frozenset[str]:
        return frozenset().union(*(p.slots() for p in self.parts))

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        return frozenset().union(*(p.unmet(filled, equals) for p in self.parts))


@dataclass(frozen=True)
class Or:
    parts: tuple[Node, ...]

    def evaluate(self, filled: Filled, equals: Equals) -> bool:
        return any(p.evaluate(filled, equals) for p in self.parts)

    def slots(self) -> frozenset[str]:
        return frozenset().union(*(p.slots() for p in self.parts))

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:
        if self.evaluate(filled, equals):
            return frozenset()
        return frozenset().union(*(p.unmet(filled, equals) for p in self.parts))


@dataclass(frozen=True)
class AllRequired:
    """Placeholder for "every required field filled"; expanded by the spec."""

    def evaluate(self, filled: Filled, equals: Equals) -> bool:  # pragma: no cover
        raise RuntimeError("all_required must be expanded before evaluation")

    def slots(self) -> frozenset[str]:
        return frozenset()

    def unmet(self, filled: Filled, equals: Equals) -> frozenset[str]:  # pragma: no cover
        raise RuntimeError("all_required must be expanded before evaluation")


Node = Const | IsFilled | Compare | Not | And | Or | AllRequired


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    end = len(text.rstrip())  # not `text[pos:].strip()` per token: quadratic on long input
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise PredicateSyntaxError(f"unexpected character {text[pos:].strip()[:1]!r} "
                                       f"at position {pos}")
        start = m.start(m.lastgroup or 0)
        if m.group("op"):
            toks.append(_Tok("op", m.group("op"), start))
        elif m.group("bq") is not None:
            toks.append(_Tok("name", m.group("bq"), start))
        elif m.group("sq") is not None:
            toks.append(_Tok("string", m.group("sq"), start))
        elif m.group("dq") is not None:
            toks.append(_Tok("string", m.group("dq"), start))
        else:
            toks.append(_Tok("word", m.group("word"), start))
        pos = m.end()
    return toks


MAX_DEPTH = 50  # nested parentheses / `not`s; deeper is an error, not a RecursionError
MAX_LENGTH = 100_000  # characters of one expression


class _Parser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise PredicateSyntaxError(f"expected an expression string, got "
                                       f"{type(text).__name__}")
        if len(text) > MAX_LENGTH:
            raise PredicateSyntaxError(f"expression longer than {MAX_LENGTH:,} characters")
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise PredicateSyntaxError(f"expression nested more than {MAX_DEPTH} levels deep")

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise PredicateSyntaxError(f"expected {what} at end of expression")
        self.i += 1
        return tok

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "word" and tok.text.lower() == word:
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.toks:
            raise PredicateSyntaxError("empty expression")
        node = self.parse_or()
        tok = self.peek()
        if tok is not None:
            raise PredicateSyntaxError(f"unexpected {tok.text!r} at position {tok.pos}")
        return node

    def parse_or(self) -> Node:
        parts = [self.parse_and()]
        while self.keyword("or"):
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def parse_and(self) -> Node:
        parts = [self.parse_unary()]
        while self.keyword("and"):
            parts.append(self.parse_unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def parse_unary(self) -> Node:
        if self.keyword("not"):
            self._enter()
            node = Not(self.parse_unary())
            self.depth -= 1
            return node
        return self.parse_atom()

    def expect_op(self, op: str) -> None:
        tok = self.next(f"'{op}'")
        if tok.kind != "op" or tok.text != op:
            raise PredicateSyntaxError(f"expected '{op}' at position {tok.pos}, got {tok.text!r}")

    def parse_atom(self) -> Node:
        tok = self.next("a condition")
        if tok.kind == "op" and tok.text == "(":
            self._enter()
            node = self.parse_or()
            self.expect_op(")")
            self.depth -= 1
            return node
        if tok.kind == "word" and tok.text.lower() in {"true", "false"}:
            return Const(tok.text.lower() == "true")
        if tok.kind == "word" and tok.text.lower() == "all_required":
            return AllRequired()
        if tok.kind == "word" and tok.text.lower() == "filled":
            self.expect_op("(")
            slot = self.next("a slot name")
            if slot.kind not in {"word", "name", "string"}:
                raise PredicateSyntaxError(f"expected a slot name at position {slot.pos}")
            name = slot.text
            # filled(...) may hold a slot name with spaces: join words up to ')'
            while (nxt := self.peek()) is not None and nxt.kind == "word":
                name += " " + nxt.text
                self.i += 1
            self.expect_op(")")
            return IsFilled(name)
        if tok.kind in {"word", "name"}:
            if tok.kind == "word" and tok.text[0].isdigit():
                raise PredicateSyntaxError(f"expected a slot name at position {tok.pos}, "
                                           f"got {tok.text!r}")
            op = self.next("'==' or '!='")
            if op.kind != "op" or op.text not in {"==", "!="}:
                raise PredicateSyntaxError(
                    f"expected '==' or '!=' after {tok.text!r} at position {op.pos}")
            val = self.next("a value")
            if val.kind not in {"word", "string"}:
                raise PredicateSyntaxError(f"expected a value at position {val.pos}")
            return Compare(tok.text, val.text, negated=op.text == "!=")
        raise PredicateSyntaxError(f"unexpected {tok.text!r} at position {tok.pos}")


def parse_predicate(text: str) -> Node:
    """Parse an outcome expression; raises `PredicateSyntaxError` with a position."""
    return _Parser(text).parse()


def expand_all_required(node: Node, required: tuple[str, ...]) -> Node:
    """Replace `all_required` by the conjunction of filled(f) for every required f."""
    if isinstance(node, AllRequired):
        return And(tuple(IsFilled(f) for f in required)) if required else Const(True)
    if isinstance(node, Not):
        return Not(expand_all_required(node.inner, required))
    if isinstance(node, And):
        return And(tuple(expand_all_required(p, required) for p in node.parts))
    if isinstance(node, Or):
        return Or(tuple(expand_all_required(p, required) for p in node.parts))
    return node


def render(node: Node) -> str:
    """Readable form of a predicate, used in criterion questions."""
    if isinstance(node, Const):
        return "true" if node.value else "false"
    if isinstance(node, IsFilled):
        return f"filled({node.slot})"
    if isinstance(node, Compare):
        return f"{node.slot} {'!=' if node.negated else '=='} {node.value!r}"
    if isinstance(node, Not):
        return f"not {render(node.inner)}"
    if isinstance(node, And):
        return " and ".join(_paren(p) for p in node.parts)
    if isinstance(node, Or):
        return " or ".join(_paren(p) for p in node.parts)
    return "all_required"


def _paren(node: Node) -> str:
    return f"({render(node)})" if isinstance(node, And | Or) else render(node)


def evaluate(node: Node, state: Mapping[str, str], equals: Equals) -> bool:
    """Evaluate against a state whose unset slots are absent."""
    return node.evaluate(lambda s: s in state, equals)
