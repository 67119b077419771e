"""Where sage-tod's own files are: the user's cache home and, when run from a
source checkout, that checkout.

Found by looking, not by counting parent directories, so moving a module never
silently points at the wrong folder; outside a checkout (an installed wheel)
`checkout_root()` is None and callers must not rely on it.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PROJECT_LINE = 'name = "sage-tod"'


@cache
def checkout_root() -> Path | None:
    """The source checkout this module runs from (its `pyproject.toml` names sage-tod)."""
    for parent in Path(__file__).resolve().parents:
        pyproject = parent / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = pyproject.read_text(encoding="utf-8")
            except OSError:
                return None
            return parent if _PROJECT_LINE in text else None
    return None


def data_home() -> Path:
    """Where sage-tod keeps models it trained and its caches (XDG, overridable)."""
    env = os.environ.get("SAGE_TOD_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sage-tod"
