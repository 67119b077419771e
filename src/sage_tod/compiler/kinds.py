"""Criterion classes as plug-ins: what a class compiles from a turn, and how a
fired criterion of it is repaired.

The four built-in classes (UV, IUV, WNF, PC; `compiler/compile.py`) register
as `sage_tod.criteria` entry points, exactly as a plugin package's own class
does (docs/api.md). A configuration names the classes it compiles
(`evaluation/configs.py`), so installing a plugin never changes the verdicts
of a configuration that does not ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import Criterion
from sage_tod.plugins import CRITERIA_GROUP, Registry


@dataclass(frozen=True)
class CriterionKind:
    """One criterion class: its name in verdicts, its compiler and its repair signal."""

    name: str
    compile: Callable[[TurnContext], list[Criterion]]
    repair: Callable[[Criterion, TurnContext], str]
    description: str = ""


CRITERIA: Registry[CriterionKind] = Registry(CRITERIA_GROUP, "criterion class")
# the paper's taxonomy, in the order their criteria are compiled (and written) per turn
BUILTIN_CRITERIA: tuple[str, ...] = ("UV", "IUV", "WNF", "PC")


def resolve_kinds(names: Sequence[str]) -> tuple[CriterionKind, ...]:
    """The registered kinds for `names`, in that order (`UnknownName` lists the others)."""
    return tuple(CRITERIA.get(n) for n in names)
