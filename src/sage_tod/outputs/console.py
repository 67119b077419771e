"""The two consoles every command prints to.

Errors go to stderr and never wrap (`soft_wrap`), so a one-line message stays
one line that a script or test can match; tables go to stdout, 120 columns
wide when stdout is not a terminal.
"""

from __future__ import annotations

import sys

from rich.console import Console

out = Console(width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, soft_wrap=True)
