"""MultiWOZ dialogues (the corpus file format) -> turns.

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

The format is the corpus's own (`{id: {"log": [...]}}`, ConvLab-2 acts and
spans optional), so a system's generated dialogues in it import like the
corpus (`sage-tod import multiwoz`); `sage_tod.lab.datasets.multiwoz` reads the
corpus splits through here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sage_tod.importers.base import TurnDict
from sage_tod.importers.records import dedupe, token_char_spans
from sage_tod.text.normalize import basic, is_unset

DOMAINS: tuple[str, ...] = ("taxi", "hotel", "restaurant", "train", "attraction")

# ConvLab-2 / MultiWOZ dialogue-act slot abbreviations -> metadata key. This is
# the act annotation's own vocabulary (not a schema fact), so it is a table.
ACT_SLOT: Mapping[str, str] = {
    "Price": "pricerange", "Area": "area", "Food": "food", "Name": "name", "Type": "type",
    "Internet": "internet", "Parking": "parking", "Stars": "stars", "Day": "day",
    "People": "people", "Time": "time", "Stay": "stay", "Leave": "leaveat",
    "Arrive": "arriveby", "Depart": "departure", "Dest": "destination",
}
INFORM_ACTS = frozenset({"Inform", "Recommend", "Select", "OfferBook", "OfferBooked", "Book"})


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


def act_domain(act: str) -> str:
    return act.split("-", 1)[0].lower()


@dataclass(frozen=True)
class MultiwozSlots:
    """The slot names a MultiWOZ state may hold, overall and per domain (workflow)."""

    slot_names: frozenset[str]
    wf_slots: Mapping[str, frozenset[str]]


def _domain_votes(acts: Mapping[str, Any]) -> Counter[str]:
    votes: Counter[str] = Counter()
    for act, pairs in acts.items():
        dom = act_domain(act)
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
                if votes.get(act_domain(act)) == best:
                    return act_domain(act), rule
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
        dom, kind = act_domain(act), act.split("-", 1)[-1]
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
        dom, kind = act_domain(act), act.split("-", 1)[-1]
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


def dialogue_turns(dialogue_id: str, dialogue: Mapping[str, Any], ctx: MultiwozSlots, split: str,
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
