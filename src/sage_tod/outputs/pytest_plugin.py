"""pytest plugin (entry point `pytest11`): the `sage_turns` fixture.

Loaded into every pytest session where sage-tod is installed, so it imports
nothing heavy until a test asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def assert_turns_pass() -> Callable[..., Any]:
    """`assert_turns_pass(spec, turns, allow_undecided=True, config="core")`."""
    from sage_tod.outputs.testing import assert_turns_pass as check

    return check
