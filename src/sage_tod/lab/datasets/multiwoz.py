"""MultiWOZ 2.1 (ConvLab-2 copy) loader and the MultiWOZ workflow spec.

Turns. Dialogue logs alternate user and system entries; only system entries
carry a belief state (`metadata`). Turn k pairs user entry 2k (u_t) with
system entry 2k+1 (a_t): s_t is entry 2k+1's metadata, s_{t-1} is entry
2k-1's (empty for the first turn). "not mentioned" and "" mean unset.
Metadata keys map onto the MultiWOZ 2.2 schema names by rule: `semi` key k
of domain d is `d-k` lower-cased (leaveAt -> taxi-leaveat), `book` key k is
`d-bookk` (people -> hotel-bookpeople).

Workflow of a turn (its domain): the domain with most slot acts in the
user's dialogue acts for u_t; else the domain of the system's acts in a_t;
else the first domain whose state changed; else the previous turn's domain.
`Booking-*` acts have no domain and count for the turn's domain. Turns of
domains outside the five workflows (police, hospital, general chit-chat at
the start) are not yielded, but they stay in later turns' history.

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

from sage_tod.lab.datasets.common import SpecDoc, TurnDict, dedupe, read_json, token_char_spans
from sage_tod.lab.datasets.paths import DataMissing, data_root, require
from sage_tod.text.normalize import WEEKDAYS, basic, is_unset, normalize_number, normalize_time

DOMAINS: tuple[str, ...] = ("taxi", "hotel", "restaurant", "train", "attraction")
Split = Literal["val", "test"]
Version = Literal["2.1", "2.4", "auto"]

SCHEMA = "multiwoz/mwz22/schema.json"
ONTOLOGY = "multiwoz/mwz24/ontology.json"
SPLIT_FILES: Mapping[str, str] = {"val": "multiwoz/mwz21_convlab2/val.json.gz",
                                  "test": "multiwoz/mwz21_convlab2/test.json.gz"}
MWZ24_DATA = "multiwoz/mwz24/data.json"
MWZ24_LISTS: Mapping[str, str] = {"val": "multiwoz/mwz24/valListFile.json",
                                  "test": "multiwoz/mwz24/testListFile.json"}

# ConvLab-2 / MultiWOZ dialogue-act slot abbreviations -> metadata key. This is
# the act annotation's own vocabulary (not a schema fact), so it is a table.
ACT_SLOT: Mapping[str, str] = {
    "Price": "pricerange", "Area": "area", "Food": "food", "Name": "name", "Type": "type",
    "Internet": "internet", "Parking": "parking", "Stars": "stars", "Day": "day",
    "People": "people", "Time": "time", "Stay": "stay", "Leave": "leaveat",
    "Arrive": "arriveby", "Depart": "departure", "Dest": "destination",
}
INFORM_ACTS = frozenset({"Inform", "Recommend", "Select", "OfferBook", "OfferBooked", "Book"})
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


def flat_state(metadata: Mapping[str, Any], slot_names: frozenset[str]) -> dict[str, str]:
    """ConvLab metadata -> flat {domain-slot: value} over the five domains; unset omitted."""
    out: dict[str, str] = {}
    for dom in DOMAINS:
        md = metadata.get(dom)
        if not md:
            continue
        for k, v in md.get("semi", {}).items():
            name = f"{dom}-{k.lower()}"
            if isinstance(v, str) and not is_unset(v) and name in slot_names:
                out[name] = v
        for k, v in md.get("book", {}).items():
            name = f"{dom}-book{k.lower()}"
            if k != "booked" and isinstance(v, str) and not is_unset(v) and name in slot_names:
                out[name] = v
    return dict(sorted(out.items()))


def act_slot(domain: str, act_slot_name: str, slot_names: frozenset[str]) -> str | None:
    """Schema slot of an act slot in a domain (Day -> train-day, but hotel-bookday)."""
    key = ACT_SLOT.get(act_slot_name)
    if key is None:
        return None
    for cand in (f"{domain}-{key}", f"{domain}-book{key}"):
        if cand in slot_names:
            return cand
    return None


def _act_domain(act: str) -> str:
    return act.split("-", 1)[0].lower()


# ---------------------------------------------------------------------------------------------
# turns


@dataclass(frozen=True)
class _Ctx:
    slot_names: frozenset[str]
    wf_slots: Mapping[str, frozenset[str]]


def _context(root: Path | None) -> _Ctx:
    schema = load_schema(root)
    wf_slots = {d: frozenset(informable_slots(schema[d])) for d in DOMAINS if d in schema}
    names = frozenset(s for v in wf_slots.values() for s in v)
    return _Ctx(names, wf_slots)


def _domain_votes(acts: Mapping[str, Any]) -> Counter[str]:
    votes: Counter[str] = Counter()
    for act, pairs in acts.items():
        dom = _act_domain(act)
        if dom not in ("general", "booking"):
            votes[dom] += max(1, len(pairs))
    return votes


def turn_domain(user_acts: Mapping[str, Any], sys_acts: Mapping[str, Any],
                before: Mapping[str, str], after: Mapping[str, str],
                previous: str | None) -> tuple[str | None, str]:
    """(domain, which rule decided) for one turn; see the module docstring."""
    for rule, acts in (("user_acts", user_acts), ("system_acts", sys_acts)):
        votes = _domain_votes(acts)
        if votes:
            best = max(votes.values())
            # ties: first in act order
            for act in acts:
                if votes.get(_act_domain(act)) == best:
                    return _act_domain(act), rule
    changed = [s.split("-", 1)[0] for s in sorted(set(before) | set(after))
               if before.get(s) != after.get(s)]
    for dom in DOMAINS:
        if dom in changed:
            return dom, "state_change"
    return previous, "previous_turn"


def _user_values(text: str, acts: Mapping[str, Any], spans: list[Any], domain_slots:
                 frozenset[str], slot_names: frozenset[str]) -> list[dict[str, Any]]:
    tok = token_char_spans(text)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for act, pairs in acts.items():
        dom, kind = _act_domain(act), act.split("-", 1)[-1]
        if dom not in DOMAINS or kind != "Inform":
            continue
        for s, v in pairs:
            slot = act_slot(dom, s, slot_names)
            if slot is None or v in ("none", "?", "") or (slot, v) in seen:
                continue
            seen.add((slot, v))
            start: int | None = None
            end: int | None = None
            for sp in spans:
                if sp[0] == act and sp[1] == s and basic(str(sp[2])) == basic(v):
                    i, j = int(sp[3]), int(sp[4])
                    if 0 <= i <= j < len(tok):
                        start, end = tok[i][0], tok[j][1]
                    break
            out.append({"slot": slot, "value": v, "start": start, "end": end,
                        "confidence": 1.0})
    return sorted(out, key=lambda u: (u["start"] if u["start"] is not None else 10**6,
                                      u["slot"]))


def _agent_acts(acts: Mapping[str, Any], domain: str, wf_slots: frozenset[str],
                slot_names: frozenset[str]) -> dict[str, Any]:
    request: list[str] = []
    inform: dict[str, str] = {}
    confirm = False
    for act, pairs in acts.items():
        dom, kind = _act_domain(act), act.split("-", 1)[-1]
        # a booking confirms this turn's workflow only when it is this domain's booking
        # ("I booked your train" in a hotel turn confirms nothing about the hotel)
        if act == "Booking-Book" or (act == "Train-OfferBooked" and domain == "train"):
            confirm = True
        if (act == "Taxi-Inform" and domain == "taxi"
                and any(s in ("Car", "Phone") for s, _ in pairs)):
            confirm = True  # a taxi booking is confirmed by naming the car and its number
        if dom == "booking":
            dom = domain
        if dom != domain:
            continue
        for s, v in pairs:
            slot = act_slot(dom, s, slot_names)
            if slot is None or slot not in wf_slots:
                continue
            if kind == "Request":
                request.append(slot)
            elif kind in INFORM_ACTS and v not in ("none", "?", ""):
                inform.setdefault(slot, v)
    return {"request": dedupe(request), "confirm": confirm, "inform": dict(sorted(inform.items()))}


def dialogue_turns(dialogue_id: str, dialogue: Mapping[str, Any], ctx: _Ctx, split: str,
                   version: str) -> Iterator[TurnDict]:
    """Every workflow turn of one dialogue, with explicit history."""
    log = dialogue["log"]
    history: list[dict[str, str]] = []
    before: dict[str, str] = {}
    prev_dom: str | None = None
    for k in range(len(log) // 2):
        u, a = log[2 * k], log[2 * k + 1]
        after = flat_state(a.get("metadata") or {}, ctx.slot_names)
        uacts, sacts = u.get("dialog_act") or {}, a.get("dialog_act") or {}
        dom, rule = turn_domain(uacts, sacts, before, after, prev_dom)
        if dom in ctx.wf_slots:
            assert dom is not None
            yield {
                "dialogue_id": dialogue_id, "turn_id": k, "workflow": dom,
                "user": u["text"], "agent": a["text"],
                "state_before": dict(before), "state_after": dict(after),
                "history": [dict(h) for h in history],
                "user_values": _user_values(u["text"], uacts, u.get("span_info") or [],
                                            ctx.wf_slots[dom], ctx.slot_names),
                "agent_acts": _agent_acts(sacts, dom, ctx.wf_slots[dom], ctx.slot_names),
                "meta": {"dataset": "multiwoz", "version": version, "split": split,
                         "domain_rule": rule, "user_acts": uacts, "system_acts": sacts},
            }
        history.append({"user": u["text"], "agent": a["text"]})
        before = after
        prev_dom = dom
    return


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
    if values and all(v.lower() in {"monday", "tuesday", "wednesday", "thursday", "friday",
                                    "saturday", "sunday"} for v in values):
        return "date"
    if values and all(v.isdigit() for v in values):
        return "number"
    real = [v for v in onto if not is_unset(v) and basic(v) not in {"dontcare", "dont care"}]
    if real and sum(normalize_time(v) is not None for v in real) >= 0.8 * len(real):
        return "time"
    if real and not values and sum(normalize_number(v) is not None for v in real) >= 0.8 * len(
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
                    _act_domain(a) == domain and s == "Name" and v not in ("none", "?")
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


def _workflow(service: Mapping[str, Any], stats: CompletionStats, onto: Mapping[str, list[str]],
              db_keys: frozenset[str]) -> dict[str, Any]:
    domain = service["service_name"]
    slots = informable_slots(service)
    by_name = {s["name"]: s for s in service["slots"]}
    slot_docs: list[dict[str, Any]] = []
    types: dict[str, str] = {}
    for name in slots:
        s = by_name[name]
        types[name] = _slot_type(s, onto.get(name, []))
        doc: dict[str, Any] = {"name": name, "description": s["description"], "type": types[name]}
        if types[name] == "categorical":
            values = [str(v) for v in s["possible_values"]]
            if {"yes", "free"} <= set(values):
                # "free wifi" is how users say internet = yes; the states write "yes"
                values.remove("free")
                doc["synonyms"] = {"yes": ["free"]}
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
    workflows = []
    for dom in DOMAINS:
        service = schema[dom]
        transactional = any(it["is_transactional"] for it in service["intents"])
        stats = completion_stats(val, dom, informable_slots(service), transactional)
        workflows.append(_workflow(service, stats, onto, db_attributes(dom, root)))
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
                if is_unset(v) or basic(v) in {"dontcare", "dont care"} or any(
                        ch in v for ch in "|<>"):
                    continue  # annotation noise ("monday<thursday", "a|b")
                if stype == "date" and basic(v) not in WEEKDAYS:
                    continue
                if stype == "time" and normalize_time(v) is None:
                    continue
                if stype == "number" and normalize_number(v) is None:
                    continue
                vals.append(v)
            pool[name].extend(vals)
    for name in ("taxi-departure", "taxi-destination"):
        pool[name].extend(places)
    return {k: dedupe(v.strip().lower() for v in vals if v.strip())
            for k, vals in sorted(pool.items())}
