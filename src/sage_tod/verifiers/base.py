"""The one interface every cascade stage shares, and the stage registry.

A stage answers a batch of criteria with TRUE (the failure fires), FALSE or
ABSTAIN, each with a margin in [0, 1] and a rationale. Stages register a
factory under their name (`S1`, `S2`, `S3`); a stage whose dependencies or
model are missing raises `StageUnavailable` from its factory, and the cascade
runs without it, its criteria abstaining visibly. New stages plug in here
without touching the compiler.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import Criterion, Decision


@dataclass(frozen=True)
class Item:
    """One criterion to decide, with the turn it came from."""

    criterion: Criterion
    ctx: TurnContext


@runtime_checkable
class Stage(Protocol):
    """A verifier stage. `accepts` routes; `decide` answers a batch in order."""

    name: str

    def accepts(self, criterion: Criterion) -> bool: ...

    def decide(self, items: Sequence[Item]) -> list[Decision]: ...


class StageUnavailable(RuntimeError):
    """A stage cannot run here (missing package, model or endpoint); says how to fix it."""


StageFactory = Callable[[dict[str, Any]], Stage]
_REGISTRY: dict[str, StageFactory] = {}


def register_stage(name: str) -> Callable[[StageFactory], StageFactory]:
    def deco(factory: StageFactory) -> StageFactory:
        _REGISTRY[name] = factory
        return factory
    return deco


def available_stages() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def build_stage(name: str, options: dict[str, Any] | None = None) -> Stage:
    """Instantiate a registered stage; `StageUnavailable` when it is not built or cannot run."""
    _load_builtin()
    factory = _REGISTRY.get(name)
    if factory is None:
        raise StageUnavailable(f"stage {name} is not part of this version of sage-tod")
    return factory(dict(options or {}))


def _load_builtin() -> None:
    """Import the stage modules so their factories register.

    S2 and S3 live in optional modules: a missing optional dependency only
    makes that stage unavailable, it never breaks S1.
    """
    importlib.import_module("sage_tod.verifiers.symbolic")
    for module in ("sage_tod.verifiers.nli", "sage_tod.verifiers.llm"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
