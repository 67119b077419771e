"""What the text readers need to know about a slot, as a protocol.

`text` is the lowest layer: the formats themselves (a spec's synonyms, a turn's
unset values) normalise through it, so it cannot import them. Readers that
depend on a slot's type or surface forms take anything shaped like this;
`sage_tod.contracts.spec.SlotSpec` is one.
"""

from __future__ import annotations

from typing import Protocol


class SlotLike(Protocol):
    """The slot attributes the readers consult."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def values(self) -> tuple[str, ...] | list[str]: ...

    def normalize(self, value: str) -> str: ...

    def surface_forms(self, value: str) -> list[str]: ...
