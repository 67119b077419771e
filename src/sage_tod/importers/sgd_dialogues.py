"""SGD dialogues (the corpus file format) -> turns.

SGD annotates the dialogue state on user turns, per service frame,
cumulatively. Turn k pairs user turn 2k (u_t) with system turn 2k+1 (a_t);
s_t is the user frame's `slot_values`, s_{t-1} the previous state of the
same service in the dialogue (empty the first time the service appears).
A slot's value list may hold several spellings; the state keeps the value
it already had while that value is still listed, otherwise the first one,
so a re-ordered list is not a state change. The turn's workflow is the
frame's (service, active_intent), written `Service.Intent`; frames whose
intent is NONE are skipped. When a user turn has several frames, the one
whose service the system answers in (else the first with actions) is used.
`sage_tod.lab.datasets.sgd` reads the corpus files through here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sage_tod.importers.base import TurnDict
from sage_tod.importers.records import dedupe


def _stable_state(slot_values: Mapping[str, list[str]], previous: Mapping[str, str]
                  ) -> dict[str, str]:
    out: dict[str, str] = {}
    for slot, values in slot_values.items():
        if not values:
            continue
        prev = previous.get(slot)
        out[slot] = prev if prev is not None and prev in values else values[0]
    return dict(sorted(out.items()))


def _pick_frame(user_frames: list[dict[str, Any]], sys_services: set[str]
                ) -> dict[str, Any] | None:
    live = [f for f in user_frames
            if f.get("state") and f["state"].get("active_intent", "NONE") != "NONE"]
    if not live:
        return None
    for f in live:
        if f["service"] in sys_services:
            return f
    for f in live:
        if f.get("actions"):
            return f
    return live[0]


def _user_values(text: str, frame: Mapping[str, Any]) -> list[dict[str, Any]]:
    spans = {s["slot"]: (int(s["start"]), int(s["exclusive_end"]))
             for s in frame.get("slots", []) if "start" in s}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    actions = frame.get("actions")
    if actions:
        for a in actions:
            if a["act"] != "INFORM" or not a.get("values") or a["slot"] in seen:
                continue
            seen.add(a["slot"])
            sp = spans.get(a["slot"])
            if sp is not None and 0 <= sp[0] <= sp[1] <= len(text):
                out.append({"slot": a["slot"], "value": text[sp[0]:sp[1]], "start": sp[0],
                            "end": sp[1], "confidence": 1.0})
            else:
                out.append({"slot": a["slot"], "value": a["values"][0], "start": None,
                            "end": None, "confidence": 1.0})
    else:  # legacy dev files: no user actions, only the slot spans
        for slot, (s, e) in sorted(spans.items(), key=lambda x: x[1]):
            if 0 <= s <= e <= len(text):
                out.append({"slot": slot, "value": text[s:e], "start": s, "end": e,
                            "confidence": 1.0})
    return sorted(out, key=lambda u: (u["start"] if u["start"] is not None else 10**6,
                                      u["slot"]))


def _agent_acts(frames: list[dict[str, Any]], service: str, slots: frozenset[str]
                ) -> dict[str, Any]:
    request: list[str] = []
    inform: dict[str, str] = {}
    confirm = False
    for f in frames:
        if f["service"] != service:
            continue
        for a in f.get("actions", []):
            if a["act"] == "NOTIFY_SUCCESS":
                confirm = True
            if a["slot"] not in slots:
                continue
            if a["act"] == "REQUEST":
                request.append(a["slot"])
            elif a["act"] in ("INFORM", "OFFER", "CONFIRM") and a.get("values"):
                inform.setdefault(a["slot"], a["values"][0])
    return {"request": dedupe(request), "confirm": confirm, "inform": dict(sorted(inform.items()))}


def _acts_summary(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"service": f["service"],
             "actions": [{"act": a["act"], "slot": a["slot"], "values": a.get("values", [])}
                         for a in f.get("actions", [])]} for f in frames]


def dialogue_turns(dialogue: Mapping[str, Any], service_slots: Mapping[str, frozenset[str]],
                   split: str, file: str) -> Iterator[TurnDict]:
    """Every (service, intent) turn of one SGD dialogue, with explicit history."""
    turns = dialogue["turns"]
    history: list[dict[str, str]] = []
    last_state: dict[str, dict[str, str]] = {}
    for k in range(len(turns) // 2):
        u, a = turns[2 * k], turns[2 * k + 1]
        sys_services = {f["service"] for f in a["frames"]}
        frame = _pick_frame(u["frames"], sys_services)
        # every frame's state advances, used or not
        new_states: dict[str, dict[str, str]] = {}
        for f in u["frames"]:
            if f.get("state"):
                new_states[f["service"]] = _stable_state(f["state"]["slot_values"],
                                                         last_state.get(f["service"], {}))
        if frame is not None and frame["service"] in service_slots:
            service = frame["service"]
            yield {
                "dialogue_id": dialogue["dialogue_id"], "turn_id": k,
                "workflow": f"{service}.{frame['state']['active_intent']}",
                "user": u["utterance"], "agent": a["utterance"],
                "state_before": dict(last_state.get(service, {})),
                "state_after": dict(new_states[service]),
                "history": [dict(h) for h in history],
                "user_values": _user_values(u["utterance"], frame),
                "agent_acts": _agent_acts(a["frames"], service, service_slots[service]),
                "meta": {"dataset": "sgd", "split": split, "file": file, "service": service,
                         "user_acts": _acts_summary([frame]),
                         "system_acts": _acts_summary(a["frames"])},
            }
        last_state.update(new_states)
        history.append({"user": u["utterance"], "agent": a["utterance"]})
