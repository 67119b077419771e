"""MultiWOZ 2.1 (ConvLab-2 copy) loader and the MultiWOZ workflow spec.

Turns are read by `sage_tod.importers.multiwoz_dialogues` (the corpus format is
also what users import their own system's dialogues in); this module adds the
splits, the schema and the spec.

MultiWOZ 2.4 only re-labels the dev/test belief states of 2.1 and keeps the
file format, so `load_dialogues(version="2.4")` reads `multiwoz/mwz24/data.json`
(from MULTIWOZ2.4.zip) with the same code when it is present.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sage_tod.importers.multiwoz_dialogues import (
    DOMAINS,
    MultiwozSlots,
    act_domain,
    dialogue_turns,
    flat_state,
)
from sage_tod.lab.datasets.common import SpecDoc, TurnDict, dedupe, read_json
from sage_tod.lab.datasets.paths import DataMissing, data_root, require
from sage_tod.text.booleans import is_dontcare
from sage_tod.text.dates import WEEKDAYS
from sage_tod.text.normalize import basic, is_unset
from sage_tod.text.numbers import read_number
from sage_tod.text.times import normalize_time

# read through here by the slices and the bench
__all__ = ["DOMAINS", "MultiwozSlots", "compile_spec", "dialogue_turns", "flat_state",
           "iter_turns", "load_dialogues", "load_schema"]

Split = Literal["val", "test"]
Version = Literal["2.1", "2.4", "auto"]

SCHEMA = "multiwoz/mwz22/schema.json"
ONTOLOGY = "multiwoz/mwz24/ontology.json"
SPLIT_FILES: Mapping[str, str] = {"val": "multiwoz/mwz21_convlab2/val.json.gz",
                                  "test": "multiwoz/mwz21_convlab2/test.json.gz"}
MWZ24_DATA = "multiwoz/mwz24/data.json"
MWZ24_LISTS: Mapping[str, str] = {"val": "multiwoz/mwz24/valListFile.json",
                                  "test": "multiwoz/mwz24/testListFile.json"}

# Thresholds of the required-field rule (docs/datasets.md, "MultiWOZ spec").
REQUIRED_FILL = 0.5
OUTCOME_FILL = 0.95


# ---------------------------------------------------------------------------------------------
# raw data


def load_dialogues(split: Split, root: Path | None = None,
                   version: Version = "auto") -> dict[str, Any]:
    """Raw dialogues of a split, by id. `auto` prefers a MultiWOZ 2.4 data.json when present."""
    base = root if root is not None else data_root()
    if version in ("2.4", "auto") and (base / MWZ24_DATA).exists():
        data = read_json(base / MWZ24_DATA)
        ids = read_json(require(MWZ24_LISTS[split], base))
        wanted = {i if i.endswith(".json") else i + ".json" for i in ids}
        return {k.removesuffix(".json"): v for k, v in sorted(data.items()) if k in wanted}
    if version == "2.4":
        require(MWZ24_DATA, base)
    data = read_json(require(SPLIT_FILES[split], base))
    return {k.removesuffix(".json"): data[k] for k in sorted(data)}


def load_schema(root: Path | None = None) -> dict[str, dict[str, Any]]:
    """The MultiWOZ 2.2 schema, by service (domain) name."""
    return {s["service_name"]: s for s in read_json(require(SCHEMA, root))}


def informable_slots(service: Mapping[str, Any]) -> list[str]:
    """Slots any intent of the service takes (required or optional), in schema order."""
    named = {s for it in service["intents"] for s in [*it["required_slots"],
                                                      *it["optional_slots"]]}
    return [s["name"] for s in service["slots"] if s["name"] in named]


# ---------------------------------------------------------------------------------------------
# turns


def _context(root: Path | None) -> MultiwozSlots:
    schema = load_schema(root)
    wf_slots = {d: frozenset(informable_slots(schema[d])) for d in DOMAINS if d in schema}
    names = frozenset(s for v in wf_slots.values() for s in v)
    return MultiwozSlots(names, wf_slots)


def iter_turns(split: Split, root: Path | None = None, version: Version = "auto"
               ) -> Iterator[TurnDict]:
    """Turns of a MultiWOZ split in the public turn shape (dialogue-id order)."""
    base = root if root is not None else data_root()
    used = "2.4" if version != "2.1" and (base / MWZ24_DATA).exists() else "2.1-convlab2"
    dialogues = load_dialogues(split, base, version)
    ctx = _context(base)
    for did, dialogue in dialogues.items():
        yield from dialogue_turns(did, dialogue, ctx, split, used)


# ---------------------------------------------------------------------------------------------
# spec compilation


def _db_records(domain: str, root: Path | None) -> list[dict[str, Any]]:
    try:
        recs = read_json(require(f"multiwoz/db/{domain}_db.json", root))
    except DataMissing:
        return []
    return recs if isinstance(recs, list) else []


def db_attributes(domain: str, root: Path | None = None) -> frozenset[str]:
    """Lower-cased attribute names of the domain's database records (its search keys)."""
    return frozenset(k.lower().replace(" ", "") for r in _db_records(domain, root) for k in r)


def ontology_values(root: Path | None = None) -> dict[str, list[str]]:
    """MultiWOZ 2.4 ontology values by schema slot name ("hotel-book people" ->
    hotel-bookpeople)."""
    try:
        onto = read_json(require(ONTOLOGY, root))
    except DataMissing:
        return {}
    return {k.replace(" ", "").lower(): list(v) for k, v in onto.items()}


def _slot_type(slot: Mapping[str, Any], onto: list[str]) -> str:
    values = [str(v) for v in slot.get("possible_values") or []]
    if values and all(v.lower() in WEEKDAYS for v in values):
        return "date"
    if values and all(v.isdigit() for v in values):
        return "number"
    real = [v for v in onto if not is_unset(v) and not is_dontcare(v)]
    if real and sum(normalize_time(v) is not None for v in real) >= 0.8 * len(real):
        return "time"
    if real and not values and sum(read_number(v) is not None for v in real) >= 0.8 * len(
            real):
        return "number"
    if slot.get("is_categorical") and values:
        return "categorical"
    return "free"


@dataclass(frozen=True)
class CompletionStats:
    """How often each slot is filled when a domain's workflow completes (validation split)."""

    domain: str
    n: int
    fill: Mapping[str, float]
    union_fill: Mapping[tuple[str, str], float]


def completion_stats(dialogues: Mapping[str, Any], domain: str, slots: list[str],
                     transactional: bool) -> CompletionStats:
    """Fill rates of `slots` in s_t at the turns that complete the domain's workflow.

    A transactional domain completes when the dataset records a new booking for
    it (its `booked` list grows); a search-only domain when the system first
    names an entity of it (an Inform/Recommend act with a Name).
    """
    names = frozenset(slots)
    counts: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    n = 0
    for _, dlg in sorted(dialogues.items()):
        log = dlg["log"]
        prev_booked = 0
        named = False
        for i in range(1, len(log), 2):
            md = log[i].get("metadata") or {}
            booked = len((md.get(domain) or {}).get("book", {}).get("booked", []) or [])
            if transactional:
                done = booked > prev_booked
            else:
                acts = log[i].get("dialog_act") or {}
                done = not named and any(
                    act_domain(a) == domain and s == "Name" and v not in ("none", "?")
                    for a, ps in acts.items() for s, v in ps)
                named = named or done
            prev_booked = booked
            if not done:
                continue
            n += 1
            state = flat_state(md, names)
            for s in slots:
                if s in state:
                    counts[s] += 1
            for x in slots:
                for y in slots:
                    if x < y and (x in state or y in state):
                        pairs[(x, y)] += 1
    fill = {s: counts[s] / n if n else 0.0 for s in slots}
    union = {p: c / n for p, c in pairs.items()} if n else {}
    return CompletionStats(domain, n, fill, union)


# other words for a price range. Left out: "fancy" ("I fancy a curry" wants, it does not
# price), "budget" (the slot's own cue word: "my budget is moderate"), and words one letter
# from another word, which the matcher's typo tolerance would find there ("pricey" in
# "moderately priced", "posh" in "post code")
_PRICE_SYNONYMS: dict[str, tuple[str, ...]] = {
    "cheap": ("inexpensive", "low cost", "low-cost", "low priced"),
    "moderate": (),
    "expensive": ("high end", "high-end", "upscale", "luxury", "luxurious"),
}

# other words for an area: the adjective only before "part" ("in the northern part of
# town"; "Northern European cuisine" is food), and the one-word sides ("on the Eastside")
_AREA_SYNONYMS: dict[str, tuple[str, ...]] = {
    "centre": (),
    "east": ("eastern part", "eastside"),
    "north": ("northern part", "northside"),
    "south": ("southern part", "southside"),
    "west": ("western part", "westside"),
}


# free slots whose values the database lists, read as the slot's catalogue
_CATALOGUE_FIELDS = frozenset({"food", "name"})
# free slots of a domain without a database whose values are the places the other
# domains' databases name (a taxi goes from and to hotels, restaurants, attractions)
_PLACE_FIELDS = frozenset({"departure", "destination"})
_ENTITY_DOMAINS = ("hotel", "restaurant", "attraction")


def _catalogue(domain: str, root: Path | None) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for r in _db_records(domain, root):
        for k, v in r.items():
            if k in _CATALOGUE_FIELDS and isinstance(v, str) and v.strip():
                out.setdefault(k, set()).add(v.strip().lower())
    return {k: sorted(v) for k, v in out.items()}


def _places(root: Path | None) -> list[str]:
    """Every entity name the hotel, restaurant and attraction databases list."""
    return sorted({n for d in _ENTITY_DOMAINS for n in _catalogue(d, root).get("name", [])})


# A listed name that validation users write as an ordinary word is no name there ("I'm
# looking for a place to go": "the place" is an attraction): one they write in at least
# WORD_MIN_TURNS user turns, fewer than WORD_RECORDED of which the state records it in, is
# left out of the catalogue (and read by the other readers, as before)
WORD_MIN_TURNS = 10
WORD_RECORDED = 0.5
_ARTICLES = frozenset({"the", "a", "an"})


def _name_forms(name: str) -> frozenset[str]:
    """How a text writes a listed name: its words, and without a leading article."""
    words = basic(name).split()
    forms = {" ".join(words)}
    if len(words) > 1 and words[0] in _ARTICLES:
        forms.add(" ".join(words[1:]))
    return frozenset(forms)


def ordinary_words(names: list[str], dialogues: Mapping[str, Any]) -> frozenset[str]:
    """The `names` validation users write as ordinary words (`WORD_MIN_TURNS`): written in
    a user turn, the state after it records the name in no slot."""
    forms = {n: _name_forms(n) for n in names}
    said: Counter[str] = Counter()
    held: Counter[str] = Counter()
    for _, dlg in sorted(dialogues.items()):
        log = dlg["log"]
        for i in range(0, len(log) - 1, 2):
            text = f" {basic(str(log[i].get('text', '')))} "
            hits = [n for n, fs in forms.items() if any(f" {f} " in text for f in fs)]
            if not hits:
                continue
            md = log[i + 1].get("metadata") or {}
            # compared without spaces: "christs college" records "christ 's college"
            recorded = {basic(v).replace(" ", "") for dom in md.values()
                        if isinstance(dom, dict) for part in ("semi", "book")
                        for v in (dom.get(part) or {}).values() if isinstance(v, str)}
            for n in hits:
                said[n] += 1
                held[n] += any(f.replace(" ", "") in recorded for f in forms[n])
    return frozenset(n for n, k in said.items()
                     if k >= WORD_MIN_TURNS and held[n] < WORD_RECORDED * k)


def _workflow(service: Mapping[str, Any], stats: CompletionStats, onto: Mapping[str, list[str]],
              db_keys: frozenset[str], catalogue: Mapping[str, list[str]] | None = None
              ) -> dict[str, Any]:
    catalogue = catalogue or {}
    domain = service["service_name"]
    slots = informable_slots(service)
    by_name = {s["name"]: s for s in service["slots"]}
    slot_docs: list[dict[str, Any]] = []
    types: dict[str, str] = {}
    for name in slots:
        s = by_name[name]
        types[name] = _slot_type(s, onto.get(name, []))
        doc: dict[str, Any] = {"name": name, "description": s["description"], "type": types[name]}
        field = name.split("-", 1)[1]
        if types[name] == "free" and catalogue.get(field):
            # the agent's own database lists the values ("a modern European restaurant",
            # MultiWOZ val SNG0550): the spec carries it as the slot's catalogue
            doc["values"] = list(catalogue[field])
        if types[name] == "categorical":
            values = [str(v) for v in s["possible_values"]]
            if {"yes", "free"} <= set(values):
                # "free wifi" is how users say internet = yes; the states write "yes"
                values.remove("free")
                doc["synonyms"] = {"yes": ["free"]}
                # MultiWOZ writes the amenity a user asks about ("Do they have free
                # internet?" -> internet = yes: PMUL2756 turn 2)
                doc["recorded_when_asked"] = True
            elif set(values) == set(_PRICE_SYNONYMS):
                # "a high end Indian restaurant" (MultiWOZ SNG0547): the price range in
                # words the value list lacks ("moderately priced" its readers find already)
                doc["synonyms"] = {v: list(f) for v, f in _PRICE_SYNONYMS.items() if f}
            elif set(values) == set(_AREA_SYNONYMS):
                # "in the southern part of town" (MultiWOZ val MUL0065), "on the
                # Eastside" (MUL1615)
                doc["synonyms"] = {v: list(f) for v, f in _AREA_SYNONYMS.items() if f}
            doc["values"] = values
        slot_docs.append(doc)
    declared = dedupe(s for it in service["intents"] for s in it["required_slots"])
    fill = stats.fill
    groups: list[tuple[str, str]] = []
    grouped: set[str] = set()
    if declared:
        required = [s for s in slots if s in declared]
        core = list(required)
    else:
        # MultiWOZ 2.2 declares no required slots: derive them (docs/datasets.md)
        for (x, y), u in sorted(stats.union_fill.items()):
            if (types[x] == types[y] and fill[x] < OUTCOME_FILL and fill[y] < OUTCOME_FILL
                    and u >= OUTCOME_FILL and x not in {g for p in groups for g in p}):
                groups.append((x, y))
        grouped = {g for p in groups for g in p}
        required = [s for s in slots if fill[s] >= REQUIRED_FILL and s not in grouped]
        core = [s for s in required if fill[s] >= OUTCOME_FILL]
    search = [s for s in required if s.split("-", 1)[1] in db_keys]
    booking = [s for s in required if s not in search]
    order: list[Any] = [b for b in (search, booking) if b]
    if search and booking and all(fill[s] < OUTCOME_FILL for s in search):
        # completions happen without each search field (a hotel picked by name has no
        # area): booking opens once the search has started, by any of them or by a
        # search field of an or-group (restaurant food or name)
        alts = [s for s in slots if s in search or (s in grouped and s.split("-", 1)[1] in db_keys)]
        order = [{"any": alts}, booking]
    wf: dict[str, Any] = {
        "id": domain,
        "description": service.get("description", ""),
        "slots": slot_docs,
        "required": required,
        "order": order,
    }
    conj = [f"filled({s})" for s in core] + [f"(filled({x}) or filled({y}))" for x, y in groups]
    if set(core) != set(required) or groups:
        wf["outcome"] = " and ".join(conj) if conj else "all_required"
    transactional = any(it["is_transactional"] for it in service["intents"])
    if not transactional:
        wf["description"] += " (search only: nothing is booked, so nothing is confirmed)"
    return wf


def compile_spec(root: Path | None = None) -> SpecDoc:
    """The MultiWOZ spec: one workflow per domain, from the 2.2 schema and the validation split.

    Slots, types and values come from the schema (and the database/ontology for
    types); required fields and the outcome come from the rule in
    docs/datasets.md, because the 2.2 schema lists no required slots.
    """
    schema = load_schema(root)
    onto = ontology_values(root)
    val = load_dialogues("val", root, version="2.1")  # never the test split
    places = _places(root)
    words = ordinary_words(places, val)
    workflows = []
    for dom in DOMAINS:
        service = schema[dom]
        transactional = any(it["is_transactional"] for it in service["intents"])
        stats = completion_stats(val, dom, informable_slots(service), transactional)
        catalogue = _catalogue(dom, root)
        if "name" not in catalogue:
            # a domain with no entities of its own goes between the others' (free slots
            # only: the train's stations are categorical)
            catalogue.update(dict.fromkeys(_PLACE_FIELDS, places))
        catalogue = {k: [v for v in vs if v not in words] if k in _PLACE_FIELDS | {"name"}
                     else vs for k, vs in catalogue.items()}
        workflows.append(_workflow(service, stats, onto, db_attributes(dom, root), catalogue))
    return {"version": 1, "workflows": workflows}


def value_pool(root: Path | None = None) -> dict[str, list[str]]:
    """Plausible values per slot, for UV injection: schema values, database, then ontology.

    Database values come first because they are clean; ontology values are
    kept only when they parse for the slot's type (no "dontcare", no typos).
    """
    schema = load_schema(root)
    onto = ontology_values(root)
    pool: dict[str, list[str]] = defaultdict(list)
    places: list[str] = []
    for dom in DOMAINS:
        service = schema[dom]
        by_name = {s["name"]: s for s in service["slots"]}
        recs = _db_records(dom, root)
        for r in recs:
            if isinstance(r.get("name"), str):
                places.append(r["name"])
        for name in informable_slots(service):
            s = by_name[name]
            stype = _slot_type(s, onto.get(name, []))
            key = name.split("-", 1)[1]
            vals: list[str] = [str(v) for v in s.get("possible_values") or []]
            for r in recs:
                for k, v in r.items():
                    if k.lower().replace(" ", "") == key and isinstance(v, str):
                        vals.append(v)
            for v in onto.get(name, []):
                if is_unset(v) or is_dontcare(v) or any(
                        ch in v for ch in "|<>"):
                    continue  # annotation noise ("monday<thursday", "a|b")
                if stype == "date" and basic(v) not in WEEKDAYS:
                    continue
                if stype == "time" and normalize_time(v) is None:
                    continue
                if stype == "number" and read_number(v) is None:
                    continue
                vals.append(v)
            pool[name].extend(vals)
    for name in ("taxi-departure", "taxi-destination"):
        pool[name].extend(places)
    return {k: dedupe(v.strip().lower() for v in vals if v.strip())
            for k, vals in sorted(pool.items())}
