"""Schema-Guided Dialogue (SGD) and SGD-X: loader and workflow specs.

Turns are read by `sage_tod.importers.sgd_dialogues` (its docstring says how a
turn, its states and its workflow are taken from a dialogue).

Specs. One workflow per (service, intent): the workflow's slots are all the
service's slots (other intents' slots are optional), `required` is the
intent's required slots. Order: for a transactional intent, the required
slots that the service's search (non-transactional) intents take or return
identify the entity and come first; the transactional-only ones second; one
bucket when either side is empty or the intent is a search. Types: boolean
for True/False categorical slots, number for all-digit categorical slots,
categorical otherwise; a free slot a user can give (required or optional in
some intent) is a time when its name ends in `time`, a date when it ends in
`date`, else free.

SGD-X. The variant schemas rename services, slots and intents and re-word
descriptions. The official generator aligns a variant with the original by
position (the i-th service, its j-th slot and k-th intent), so we do the
same: types and orderings are computed on the original schema and carried
over; only names and descriptions change. Dialogue text is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sage_tod.importers.sgd_dialogues import dialogue_turns
from sage_tod.lab.datasets.common import SpecDoc, TurnDict, read_json
from sage_tod.lab.datasets.paths import DataMissing, data_root, require

Split = Literal["test", "dev"]
VARIANTS: tuple[str, ...] = ("v1", "v2", "v3", "v4", "v5")
LEGACY_DEV = "sgd/dev_legacy_2019-08"


def schema_path(split: Split, variant: str | None = None) -> str:
    if variant is None:
        return f"sgd/{split}/schema.json"
    if variant not in VARIANTS:
        raise DataMissing(f"sgd/sgd_x/{variant}", "unknown SGD-X variant; use one of "
                          + ", ".join(VARIANTS))
    return f"sgd/sgd_x/{variant}/{split}/schema.json"


def load_schema(split: Split = "test", root: Path | None = None,
                variant: str | None = None) -> list[dict[str, Any]]:
    data = read_json(require(schema_path(split, variant), root))
    return list(data)


def dialogue_files(split: Split, root: Path | None = None) -> list[Path]:
    """The split's dialogue files (dev: the current files plus the three legacy ones)."""
    base = root if root is not None else data_root()
    d = require(f"sgd/{split}", base)
    files = sorted(d.glob("dialogues_*.json*"))
    if split == "dev" and (base / LEGACY_DEV).is_dir():
        files += sorted((base / LEGACY_DEV).glob("dialogues_*.json*"))
    if not files:
        raise DataMissing(d, "no dialogues_NNN.json(.gz) files; get the SGD "
                          f"{split} dialogues from google-research-datasets/dstc8-schema-"
                          "guided-dialogue")
    return sorted(files, key=lambda p: p.name)


# ---------------------------------------------------------------------------------------------
# spec


def _slot_type(slot: Mapping[str, Any], user_given: bool) -> str:
    values = [str(v) for v in slot.get("possible_values") or []]
    if slot.get("is_categorical") and values:
        if set(values) <= {"True", "False"}:
            return "boolean"
        if all(v.isdigit() for v in values):
            return "number"
        return "categorical"
    last = slot["name"].rsplit("_", 1)[-1]
    if user_given and last == "time":
        return "time"
    if user_given and last == "date":
        return "date"
    return "free"


def _service_workflows(orig: Mapping[str, Any], named: Mapping[str, Any]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    """(slot docs, workflows) of one service; structure from `orig`, names from `named`."""
    if len(orig["slots"]) != len(named["slots"]) or len(orig["intents"]) != len(
            named["intents"]):
        raise DataMissing(named["service_name"], "variant schema does not align with the "
                          "original by position (different slot or intent counts)")
    rename = {o["name"]: n["name"] for o, n in zip(orig["slots"], named["slots"], strict=True)}
    service = named["service_name"]
    user_given = {s for it in orig["intents"] for s in [*it["required_slots"],
                                                        *it["optional_slots"]]}
    slot_docs: list[dict[str, Any]] = []
    for o, n in zip(orig["slots"], named["slots"], strict=True):
        stype = _slot_type(o, o["name"] in user_given)
        doc: dict[str, Any] = {"name": n["name"], "description": n["description"],
                               "type": stype}
        if stype == "categorical":
            doc["values"] = [str(v) for v in n.get("possible_values") or o["possible_values"]]
        slot_docs.append(doc)
    search_slots: set[str] = set()
    for it in orig["intents"]:
        if not it["is_transactional"]:
            search_slots |= {*it["required_slots"], *it["optional_slots"],
                             *it.get("result_slots", [])}
    workflows: list[dict[str, Any]] = []
    for o_it, n_it in zip(orig["intents"], named["intents"], strict=True):
        req = list(o_it["required_slots"])
        if o_it["is_transactional"]:
            first = [s for s in req if s in search_slots]
            second = [s for s in req if s not in search_slots]
            order = [b for b in (first, second) if b]
        else:
            order = [req] if req else []
        wf: dict[str, Any] = {
            "id": f"{service}.{n_it['name']}",
            "description": n_it["description"] + (
                "" if o_it["is_transactional"] else " (search: nothing is confirmed)"),
            "slots": [d["name"] for d in slot_docs],
            "required": [rename[s] for s in req],
            "order": [[rename[s] for s in b] for b in order],
        }
        workflows.append(wf)
    return slot_docs, workflows


def compile_spec(split: Split = "test", root: Path | None = None,
                 variant: str | None = None) -> SpecDoc:
    """One workflow per (service, intent) of the split's schema (or an SGD-X variant).

    Slot names are the schema's own (bare) names. They are unique within a
    service but not across services (`city`), so each workflow defines its
    service's slots inline rather than through the file's shared `slots`.
    """
    orig = load_schema(split, root)
    named = orig if variant is None else load_schema(split, root, variant)
    if len(orig) != len(named):
        raise DataMissing(schema_path(split, variant), "variant schema has a different "
                          "number of services than the original")
    workflows: list[dict[str, Any]] = []
    for o, n in zip(orig, named, strict=True):
        slot_docs, wfs = _service_workflows(o, n)
        by_name = {d["name"]: d for d in slot_docs}
        for wf in wfs:
            wf["slots"] = [by_name[s] for s in wf["slots"]]
            workflows.append(wf)
    return {"version": 1, "workflows": workflows}


# ---------------------------------------------------------------------------------------------
# renaming (SGD-X)


@dataclass(frozen=True)
class Renaming:
    """Original -> variant names, aligned by schema position."""

    services: Mapping[str, str]
    slots: Mapping[str, Mapping[str, str]]  # by original service
    intents: Mapping[str, Mapping[str, str]]

    def workflow(self, wid: str) -> str:
        service, intent = wid.split(".", 1)
        return f"{self.services[service]}.{self.intents[service][intent]}"

    def slot(self, wid: str, slot: str) -> str:
        return self.slots[wid.split(".", 1)[0]].get(slot, slot)


def renaming(split: Split, variant: str, root: Path | None = None) -> Renaming:
    orig = load_schema(split, root)
    named = load_schema(split, root, variant)
    services: dict[str, str] = {}
    slots: dict[str, dict[str, str]] = {}
    intents: dict[str, dict[str, str]] = {}
    for o, n in zip(orig, named, strict=True):
        services[o["service_name"]] = n["service_name"]
        slots[o["service_name"]] = {a["name"]: b["name"]
                                    for a, b in zip(o["slots"], n["slots"], strict=True)}
        intents[o["service_name"]] = {a["name"]: b["name"]
                                      for a, b in zip(o["intents"], n["intents"], strict=True)}
    return Renaming(services, slots, intents)


def rename_turn(turn: TurnDict, ren: Renaming, variant: str) -> TurnDict:
    """The same turn under a variant schema: workflow and slot names replaced, text kept."""
    wid = turn["workflow"]
    out = dict(turn)
    out["workflow"] = ren.workflow(wid)
    out["state_before"] = dict(sorted((ren.slot(wid, k), v)
                                      for k, v in turn["state_before"].items()))
    out["state_after"] = dict(sorted((ren.slot(wid, k), v)
                                     for k, v in turn["state_after"].items()))
    if turn.get("user_values") is not None:
        out["user_values"] = [{**uv, "slot": ren.slot(wid, uv["slot"])}
                              for uv in turn["user_values"]]
    if turn.get("agent_acts") is not None:
        acts = turn["agent_acts"]
        out["agent_acts"] = {
            **acts,
            "request": [ren.slot(wid, s) for s in acts.get("request", [])],
            "inform": dict(sorted((ren.slot(wid, k), v)
                                  for k, v in acts.get("inform", {}).items())),
        }
    gold = turn.get("gold")
    if gold is not None and gold.get("injection"):
        inj = dict(gold["injection"])
        if "slot" in inj:
            inj["slot"] = ren.slot(wid, inj["slot"])
        out["gold"] = {**gold, "injection": inj}
    out["meta"] = {**(turn.get("meta") or {}), "sgdx_variant": variant,
                   "original_workflow": wid}
    return out


def iter_turns(split: Split = "test", root: Path | None = None) -> Iterator[TurnDict]:
    """Turns of an SGD split in the public turn shape (file, then dialogue order)."""
    schema = load_schema(split, root)
    service_slots = {s["service_name"]: frozenset(x["name"] for x in s["slots"]) for s in schema}
    for path in dialogue_files(split, root):
        file = path.name.split(".", 1)[0]
        for dlg in read_json(path):
            yield from dialogue_turns(dlg, service_slots, split, file)
