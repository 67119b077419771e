"""Errors at the command line: one readable line on stderr, never a traceback.

Every command of every sub-app is wrapped (`install_guards`), so a command
cannot forget it: bad input (`InputError`, also what an unwritable output
raises), an operating-system error on a path, undecodable text, nesting too
deep and numbers too big print `error: ...` and exit with status 2. Anything
else is a bug: it prints one `internal error` line and exits 1 (set
`SAGE_TOD_DEBUG=1` to see the traceback).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import typer
from rich.markup import escape

from sage_tod.contracts.errors import InputError
from sage_tod.outputs.console import err

INPUT_EXIT = 2
BUG_EXIT = 1

# The usage errors typer raises (`BadParameter`, `UsageError`) derive from the click it
# runs on: the `click` package before typer 0.2x, its vendored `typer._click` since. The
# base is taken from typer's own class, so sage-tod needs no `click` of its own (a plain
# `pip install sage-tod` has none) and passes typer's errors through whichever it is.
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _line(text: str) -> str:
    """The message on one line (a multi-line message would read as a traceback)."""
    flat = " ".join(str(text).split())
    return flat[:2000] + ("…" if len(flat) > 2000 else "")


def _say(prefix: str, text: str) -> None:
    err.print(f"[bold red]{prefix}:[/] " + escape(_line(text)), highlight=False)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    try:
        yield
    except (typer.Exit, typer.Abort, _CLICK_ERROR, KeyboardInterrupt, BrokenPipeError,
            SystemExit):
        raise
    except InputError as exc:
        _say("error", str(exc))
        raise typer.Exit(INPUT_EXIT) from None
    except OSError as exc:
        where = exc.filename if exc.filename is not None else ""
        _say("error", f"{where}: {exc.strerror or exc}" if where else str(exc))
        raise typer.Exit(INPUT_EXIT) from None
    except (UnicodeError, RecursionError, OverflowError, MemoryError) as exc:
        _say("error", f"input cannot be processed ({type(exc).__name__}: {exc})")
        raise typer.Exit(INPUT_EXIT) from None
    except Exception as exc:
        if os.environ.get("SAGE_TOD_DEBUG"):
            raise
        _say("internal error", f"{type(exc).__name__}: {exc} (a bug in sage-tod; "
                               "SAGE_TOD_DEBUG=1 shows the traceback)")
        raise typer.Exit(BUG_EXIT) from None


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with `one_line_errors` around it; the signature typer reads is kept."""
    if getattr(fn, "__sage_guarded__", False):
        return fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return fn(*args, **kwargs)

    run.__sage_guarded__ = True  # type: ignore[attr-defined]
    return run


def install_guards(app: typer.Typer) -> None:
    """Wrap every registered command and callback of `app` and its sub-apps."""
    for cmd in app.registered_commands:
        if cmd.callback is not None:
            cmd.callback = guarded(cmd.callback)
    if app.registered_callback is not None and app.registered_callback.callback is not None:
        app.registered_callback.callback = guarded(app.registered_callback.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            install_guards(group.typer_instance)
