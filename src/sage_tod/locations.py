"""Where sage-tod keeps its own files: the user's cache home.

Nothing at run time looks at a source checkout or at folders beside it (an
installed wheel and an editable checkout behave alike): packaged files are
found next to the modules that use them, data sets through `SAGE_TOD_DATA`,
and everything sage-tod writes (trained models, ONNX exports, score caches)
lives under `data_home()`.
"""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    """Where sage-tod keeps models it trained and its caches (XDG, overridable)."""
    env = os.environ.get("SAGE_TOD_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sage-tod"
