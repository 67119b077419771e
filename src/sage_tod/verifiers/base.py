"""The one interface every cascade stage shares, and the stage registry.

A stage answers a batch of criteria with TRUE (the failure fires), FALSE or
ABSTAIN, each with a margin in [0, 1] and a rationale. Stages register a
factory under their name (`S1`, `S2`, `S3`) as `sage_tod.stages` entry points,
and a plugin package registers its own stages the same way (docs/api.md); a
stage whose dependencies or model are missing raises `StageUnavailable` from
its factory, and the cascade runs without it, its criteria abstaining visibly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import Criterion, Decision
from sage_tod.plugins import STAGES_GROUP, PluginLoadError, Registry, UnknownName


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
# built-ins (S1, S2, S3) and plugins alike come from the `sage_tod.stages` entry points
STAGES: Registry[StageFactory] = Registry(STAGES_GROUP, "stage")


def register_stage(name: str) -> Callable[[StageFactory], StageFactory]:
    """Register a stage factory at run time (a plugin package uses an entry point instead)."""
    return STAGES.decorator(name)


def available_stages() -> list[str]:
    return STAGES.names()


def build_stage(name: str, options: dict[str, Any] | None = None) -> Stage:
    """Instantiate a registered stage; `StageUnavailable` when it is not installed or cannot run.

    S2 and S3 need optional packages: a missing one makes that stage
    unavailable (its criteria abstain, visibly), it never breaks S1.
    """
    try:
        factory = STAGES.get(name)
    except UnknownName as exc:
        raise StageUnavailable(f"stage {name} is not installed ({exc})") from None
    except ImportError as exc:
        raise StageUnavailable(f"stage {name} needs the missing module {exc.name or exc}; "
                               "pip install 'sage-tod[nli]'") from None
    except PluginLoadError as exc:
        raise StageUnavailable(str(exc)) from None
    return factory(dict(options or {}))
