"""One registry for everything a package can plug into sage-tod: stages,
criterion classes and named configurations.

Built-ins and plugins register the same way, through Python entry points
(the mechanism inspect_ai and lm-evaluation-harness use): a package declares

    [project.entry-points."sage_tod.stages"]
    TONE = "my_pkg.tone:make_stage"

and `sage-tod` finds it once installed. Code can also register at run time
(`Registry.register`), which tests and notebooks use. Entries load lazily on
first lookup, so an optional stage whose dependencies are missing never breaks
the others; an unknown name is a `KeyError` that lists the available ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

T = TypeVar("T")

STAGES_GROUP = "sage_tod.stages"
CRITERIA_GROUP = "sage_tod.criteria"
CONFIGS_GROUP = "sage_tod.configs"


class UnknownName(KeyError):
    """A name nobody registered; the message lists what is available."""

    def __init__(self, kind: str, name: str, available: list[str]) -> None:
        super().__init__(f"unknown {kind} {name!r}; available: {', '.join(available) or 'none'}")
        self.kind, self.name, self.available = kind, name, available

    def __str__(self) -> str:
        return str(self.args[0])


class PluginLoadError(RuntimeError):
    """An entry point that names a module or object that cannot be imported."""


class Registry(Generic[T]):
    """Named objects of one kind, from entry points of `group` and run-time registrations."""

    def __init__(self, group: str, kind: str) -> None:
        self.group, self.kind = group, kind
        self._points: dict[str, EntryPoint] | None = None
        self._loaded: dict[str, T] = {}
        self._lock = threading.Lock()

    def _entry_points(self) -> dict[str, EntryPoint]:
        if self._points is None:
            # first declaration of a name wins: a plugin cannot silently replace a built-in
            points: dict[str, EntryPoint] = {}
            for ep in entry_points(group=self.group):
                points.setdefault(ep.name, ep)
            self._points = points
        return self._points

    def names(self) -> list[str]:
        """Every registered name (entry points and run-time registrations), sorted."""
        return sorted({*self._entry_points(), *self._loaded})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._loaded or name in self._entry_points())

    def register(self, name: str, obj: T) -> T:
        """Register `obj` under `name` at run time (replaces an earlier run-time entry)."""
        with self._lock:
            self._loaded[name] = obj
        return obj

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator("NAME")` registers the decorated object."""
        def deco(obj: T) -> T:
            return self.register(name, obj)
        return deco

    def unregister(self, name: str) -> None:
        with self._lock:
            self._loaded.pop(name, None)

    def get(self, name: str) -> T:
        """The object registered as `name`; `UnknownName` lists the others."""
        with self._lock:
            if name in self._loaded:
                return self._loaded[name]
        ep = self._entry_points().get(name)
        if ep is None:
            raise UnknownName(self.kind, name, self.names())
        try:
            obj: T = ep.load()
        except ImportError:
            raise  # an optional dependency is missing: callers decide what that means
        except Exception as exc:  # a broken plugin names itself, it does not crash sage-tod
            raise PluginLoadError(f"{self.kind} {name!r} ({ep.value}) failed to load: "
                                  f"{type(exc).__name__}: {exc}") from exc
        with self._lock:
            return self._loaded.setdefault(name, obj)
