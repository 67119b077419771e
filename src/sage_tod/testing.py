"""Public path for the test helpers (`from sage_tod.testing import assert_turns_pass`).

The code lives in `sage_tod.outputs.testing`; this name is kept because users import it.
"""

from sage_tod.outputs.testing import (
    StageMissingError,
    TurnsFailedError,
    assert_turns_pass,
    format_failures,
)

__all__ = ["StageMissingError", "TurnsFailedError", "assert_turns_pass", "format_failures"]
