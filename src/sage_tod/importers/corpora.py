"""`multiwoz` and `sgd`: a system's own dialogues written in the corpora's formats.

Research systems often emit their output as MultiWOZ or SGD dialogue files
(generated dialogues, a user simulator's runs). These formats are read with
the corpus loaders (`sage_tod.importers.multiwoz_dialogues.dialogue_turns`,
`sage_tod.importers.sgd_dialogues.dialogue_turns`); this module only supplies what those
loaders take from the corpus schema — here from the user's spec — and accounts
for what they leave out:

- `multiwoz`: a JSON object `{dialogue_id: {"log": [user, system, user, ...]}}`
  (ConvLab/MultiWOZ 2.x `data.json` shape; system entries carry `metadata`
  belief states; `dialog_act`/`span_info` optional). The spec's workflows are
  MultiWOZ domains (`sage-tod specs export multiwoz` writes one).
- `sgd`: a JSON list of SGD dialogues (`dialogues_NNN.json` shape: `turns` with
  `speaker`, `utterance`, `frames`). Workflow ids are `Service.Intent`.

A user entry without a system reply, and a turn whose domain/service is not a
workflow of the spec, are counted as skipped with their reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers import multiwoz_dialogues as multiwoz
from sage_tod.importers import sgd_dialogues as sgd
from sage_tod.importers.base import ImportResult, Skipped, TurnDict
from sage_tod.importers.records import json_records, read_document


def _read_json(path: Path) -> Any:
    if path.suffix == ".gz":
        from sage_tod.importers.records import read_json

        try:
            return read_json(path)
        except (OSError, ValueError) as exc:
            raise InputError(path, f"cannot read gzip JSON: {exc}") from None
    return read_document(path)


def _account(res: ImportResult, did: str, n_pairs: int, odd: bool, got: list[TurnDict],
             spec: SpecBundle) -> list[TurnDict]:
    """The turns of one dialogue the spec has a workflow for; the rest counted as
    skipped in `res`, with why."""
    yielded = {t["turn_id"] for t in got}
    for k in range(n_pairs):
        if k not in yielded:
            res.skipped.append(Skipped(f"dialogue {did} turn {k}",
                                       "no workflow of the spec (domain/service/intent)"))
    if odd:
        res.skipped.append(Skipped(f"dialogue {did} turn {n_pairs}",
                                   "user entry without a system reply"))
    kept: list[TurnDict] = []
    for t in got:
        if t["workflow"] in spec.workflows:
            kept.append(t)
        else:
            res.skipped.append(Skipped(f"dialogue {did} turn {t['turn_id']}",
                                       f"workflow {t['workflow']!r} is not in the spec"))
    return kept


def read_multiwoz(path: Path, spec: SpecBundle, **_: Any) -> ImportResult:
    res = ImportResult(format="multiwoz", path=str(path))
    data = _read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, "a MultiWOZ file is an object {dialogue_id: {log: [...]}}")
    wf_slots = {d: frozenset(spec.workflows[d].slots) for d in multiwoz.DOMAINS
                if d in spec.workflows}
    if not wf_slots:
        raise InputError(path, "the spec has no MultiWOZ domain workflow (taxi, hotel, "
                         "restaurant, train, attraction); use `sage-tod specs export "
                         "multiwoz`")
    ctx = multiwoz.MultiwozSlots(frozenset(s for v in wf_slots.values() for s in v), wf_slots)
    for did in sorted(data):
        dlg = data[did]
        name = did.removesuffix(".json")
        if not isinstance(dlg, dict) or not isinstance(dlg.get("log"), list):
            raise InputError(path, f"dialogue {did}: missing field 'log'", field=f"{did}.log")
        for i, entry in enumerate(dlg["log"]):
            if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
                raise InputError(path, f"dialogue {did}: log entry {i} needs a 'text' string",
                                 field=f"{did}.log[{i}].text")
        got = list(_safe(multiwoz.dialogue_turns(name, dlg, ctx, "user", "user"), path, did))
        for t in got:
            t["meta"]["dataset"] = "multiwoz-format"
        res.conversations += 1
        n = len(dlg["log"])
        res.turns.extend(_account(res, name, n // 2, n % 2 == 1, got, spec))
    return res


def _services(spec: SpecBundle) -> Mapping[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for wid, wf in spec.workflows.items():
        if "." in wid:
            out.setdefault(wid.split(".", 1)[0], set()).update(wf.slots)
    return {k: frozenset(v) for k, v in out.items()}


def read_sgd(path: Path, spec: SpecBundle, **_: Any) -> ImportResult:
    res = ImportResult(format="sgd", path=str(path))
    res.turns.extend(stream_sgd(res, path, spec))
    return res


def _sgd_whole(data: Any) -> Any:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise _NotSgd
    return data


class _NotSgd(Exception):
    """A document that is neither a dialogue nor a list of them."""


def _sgd_dialogues(path: Path) -> Iterator[Any]:
    """The dialogues of an SGD file: a large list one at a time (`json_records`), a
    gzip file or a smaller document read whole."""
    if path.suffix == ".gz":
        data = _read_json(path)
        yield from _sgd_whole(data)
        return
    for rec in json_records(path, _sgd_whole):
        yield rec.obj


def stream_sgd(res: ImportResult, path: Path, spec: SpecBundle, **_: Any
               ) -> Iterator[TurnDict]:
    """The turns of an SGD file, one dialogue at a time, counted in `res`."""
    services = _services(spec)
    dialogues = _sgd_dialogues(path)
    try:
        first = next(dialogues, None)
    except _NotSgd:
        raise InputError(path, "an SGD file is a list of dialogues") from None
    if not services:
        raise InputError(path, "the spec has no SGD workflow (ids `Service.Intent`); use "
                         "`sage-tod specs export sgd`")
    if first is None:
        return
    for i, dlg in enumerate(itertools.chain([first], dialogues)):
        if not isinstance(dlg, dict) or not isinstance(dlg.get("turns"), list):
            raise InputError(path, "missing field 'turns'", field=f"[{i}].turns")
        if not isinstance(dlg.get("dialogue_id"), str):
            raise InputError(path, "missing field 'dialogue_id'", field=f"[{i}].dialogue_id")
        for j, t in enumerate(dlg["turns"]):
            for k in ("utterance", "frames"):
                if not isinstance(t, dict) or k not in t:
                    raise InputError(path, f"missing field '{k}'",
                                     field=f"[{i}].turns[{j}].{k}")
        got = list(_safe(sgd.dialogue_turns(dlg, services, "user", path.name.split(".")[0]),
                         path, dlg["dialogue_id"]))
        for t in got:
            t["meta"]["dataset"] = "sgd-format"
        res.conversations += 1
        n = len(dlg["turns"])
        yield from _account(res, dlg["dialogue_id"], n // 2, n % 2 == 1, got, spec)


def _safe(it: Iterator[TurnDict], path: Path, did: str) -> Iterator[TurnDict]:
    """The loader's turns; a field it needs and does not find becomes an InputError."""
    try:
        yield from it
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
        # (AttributeError: a field that should be an object is a number, found by the
        # importer property tests)
        raise InputError(path, f"dialogue {did}: not in the corpus format ({type(exc).__name__}"
                         f": {exc})") from None
