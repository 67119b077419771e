"""The state diff Delta_t = {(slot, old, new) : old != new} under normalisation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.text.keys import normalize_typed


@dataclass(frozen=True)
class SlotChange:
    """One changed slot; `None` means unset."""

    slot: str
    old: str | None
    new: str | None


def state_diff(spec: SpecBundle, workflow: Workflow | None, before: Mapping[str, str],
               after: Mapping[str, str]) -> tuple[SlotChange, ...]:
    """Changed slots, in a stable order (state_after order, then deletions).

    Both states must already have unset values removed (`Turn.before()`).
    """
    changes: list[SlotChange] = []

    def key(slot: str, value: str) -> str:
        s = spec.slot(slot, workflow)
        return s.normalize(value) if s is not None else normalize_typed(value, "free")

    for slot, new in after.items():
        old = before.get(slot)
        # equal strings have equal keys: only a changed spelling needs the slot's reader
        if old is None or (old != new and key(slot, old) != key(slot, new)):
            changes.append(SlotChange(slot, old, new))
    for slot, old in before.items():
        if slot not in after:
            changes.append(SlotChange(slot, old, None))
    return tuple(changes)
