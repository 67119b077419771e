"""`rasa`: conversations from a Rasa tracker store (tracker JSON or event lists).

A record is a tracker (`{sender_id, events: [...]}`, as `GET
/conversations/{id}/tracker` returns it and as tracker stores keep it) or a bare
list of events; a JSON file holds one record or a list, JSONL one per line.
Events are the tracker-store JSON (`{"event": "user" | "bot" | "slot" |
"action" | ..., ...}`):

- `user` starts a turn (u_t is its `text`); `bot` texts until the next `user`
  event are a_t (joined by a newline); bot text before the first user event is
  a history entry with an empty user side;
- `slot` events are the state: a slot named like a slot of the workflow sets it
  (`null` unsets it); other slots are counted in `ignored_slots`, never read;
  `restart` and `reset_slots` clear the state. s_t is the state after the
  turn's last event;
- `requested_slot` set to a workflow slot is the agent requesting it
  (`agent_acts.request`); an `action` named in the workflow's `tools` with
  `confirms: true` makes `agent_acts.confirm` true (otherwise confirmation is
  left to text detection: `confirm` stays null);
- the workflow is `--workflow`, else the spec's only workflow, else the first
  form/active loop of the conversation named like a workflow, else the spec's
  first workflow.

Other events (`session_started`, `active_loop`, `user_featurization`,
`rewind`, ...) carry no turn content; they are counted in the summary.
`rewind` is not replayed (its user message stays a turn).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.importers.base import ImportResult, Skipped, TurnDict
from sage_tod.importers.records import Record, iter_records, json_records

_ID_KEYS = ("sender_id", "conversation_id", "name")
_RESETS = {"restart", "reset_slots"}


def _value(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str | int | float):
        return str(v)
    return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _events(rec: Record, path: Path) -> tuple[list[Any], str, str]:
    obj = rec.obj
    if isinstance(obj, list):
        return obj, rec.loc, f"{path.stem}-{rec.index}"
    if not isinstance(obj, dict):
        raise InputError(path, "a Rasa record must be a tracker object or a list of events",
                         line=rec.line, field=rec.loc or None)
    if "events" not in obj:
        raise InputError(path, "missing field 'events'", line=rec.line,
                         field=rec.field("events"))
    if not isinstance(obj["events"], list):
        raise InputError(path, "events must be a list", line=rec.line,
                         field=rec.field("events"))
    did = next((str(obj[k]) for k in _ID_KEYS if isinstance(obj.get(k), str | int)),
               f"{path.stem}-{rec.index}")
    return obj["events"], rec.field("events"), did


def _workflow(spec: SpecBundle, events: list[dict[str, Any]], fixed: str | None
              ) -> tuple[Workflow, str]:
    if fixed is not None:
        return spec.workflows[fixed], "option"
    wfs = list(spec.workflows.values())
    if len(wfs) == 1:
        return wfs[0], "only_workflow"
    for e in events:
        if e.get("event") in ("active_loop", "form") and e.get("name") in spec.workflows:
            return spec.workflows[e["name"]], f"active_loop:{e['name']}"
    return wfs[0], "first_in_spec"


def _is_event(obj: Any) -> bool:
    return isinstance(obj, dict) and "event" in obj


def _whole(top: Any) -> Any:
    if isinstance(top, list) and top and all(_is_event(e) for e in top):
        return {"events": top}  # one conversation written as a bare event list
    return top


def read(path: Path, spec: SpecBundle, *, workflow: str | None = None,
         **_: Any) -> ImportResult:
    res = ImportResult(format="rasa", path=str(path))
    res.turns.extend(stream(res, path, spec, workflow=workflow))
    return res


def stream(res: ImportResult, path: Path, spec: SpecBundle, *, workflow: str | None = None,
           **_: Any) -> Iterator[TurnDict]:
    """The turns of `path`, one tracker (conversation) at a time, counted in `res`: JSONL
    line by line, a large JSON list of trackers item by item (`records.json_records`)."""
    recs: Iterable[Record] = (json_records(path, _whole, _is_event)
                              if path.suffix.lower() == ".json" else iter_records(path))
    for rec in recs:
        events, loc, did = _events(rec, path)
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                raise InputError(path, "an event must be an object", line=rec.line,
                                 field=f"{loc}[{i}]")
            if not isinstance(e.get("event"), str):
                raise InputError(path, "missing field 'event'", line=rec.line,
                                 field=f"{loc}[{i}].event")
        turns = _conversation(events, spec, did, res, workflow, path, rec, loc)
        res.conversations += 1
        if not turns:
            res.skipped.append(Skipped(f"{rec.where} ({did})", "no user event"))
        yield from turns


def _conversation(events: list[dict[str, Any]], spec: SpecBundle, did: str, res: ImportResult,
                  fixed: str | None, path: Path, rec: Record, loc: str) -> list[TurnDict]:
    wf, rule = _workflow(spec, events, fixed)
    state: dict[str, str] = {}
    before: dict[str, str] = {}
    history: list[dict[str, str]] = []
    turns: list[TurnDict] = []
    lead: list[str] = []
    cur: dict[str, Any] | None = None

    def close(t: dict[str, Any]) -> None:
        agent = "\n".join(a for a in t["agent"] if a.strip())
        turn: TurnDict = {
            "dialogue_id": did, "turn_id": len(turns), "workflow": wf.id, "user": t["user"],
            "agent": agent, "state_before": dict(sorted(before.items())),
            "state_after": dict(sorted(state.items())), "history": [dict(h) for h in history],
        }
        if t["request"] or t["confirm"]:
            turn["agent_acts"] = {"request": list(dict.fromkeys(t["request"])),
                                  "confirm": True if t["confirm"] else None, "inform": {}}
        turn["meta"] = {"source": "rasa", "record": rec.where, "first_event": t["first"],
                        "workflow_rule": rule, "actions": t["actions"],
                        "intent": t["intent"]}
        turns.append(turn)
        history.append({"user": t["user"], "agent": agent})

    for i, e in enumerate(events):
        kind = e["event"]
        if kind == "user":
            if cur is not None:
                close(cur)
            elif lead:
                history.append({"user": "", "agent": "\n".join(lead)})
                lead = []
            before = dict(state)
            text = e.get("text")
            if text is not None and not isinstance(text, str):
                raise InputError(path, "user text must be a string", line=rec.line,
                                 field=f"{loc}[{i}].text")
            parsed = e.get("parse_data")
            found = parsed.get("intent") if isinstance(parsed, dict) else None
            intent = found.get("name") if isinstance(found, dict) else None
            cur = {"user": text or "", "agent": [], "request": [], "confirm": False,
                   "first": i, "actions": [], "intent": intent}
        elif kind == "bot":
            text = e.get("text")
            if text is not None and not isinstance(text, str):
                raise InputError(path, "bot text must be a string", line=rec.line,
                                 field=f"{loc}[{i}].text")
            if text:
                (cur["agent"] if cur is not None else lead).append(text)
        elif kind == "slot":
            name = e.get("name")
            if not isinstance(name, str):
                raise InputError(path, "missing field 'name' of a slot event", line=rec.line,
                                 field=f"{loc}[{i}].name")
            if name == "requested_slot":
                v = e.get("value")
                if isinstance(v, str) and v in wf.slots and cur is not None:
                    cur["request"].append(v)
                continue
            if name not in wf.slots:
                res.ignored_slots[name] += 1
                continue
            v = _value(e.get("value"))
            if v is None:
                state.pop(name, None)
            else:
                state[name] = v
        elif kind == "action":
            name = e.get("name")
            if isinstance(name, str) and cur is not None:
                if name != "action_listen":
                    cur["actions"].append(name)
                ts = wf.tools.get(name)
                if ts is not None and ts.confirms:
                    cur["confirm"] = True
        elif kind in _RESETS:
            state.clear()
            res.notes[f"{kind} event (state cleared)"] += 1
        else:
            res.notes[f"{kind} event (no turn content)"] += 1
    if cur is not None:
        close(cur)
    elif lead:
        res.notes["bot message with no user message after it"] += len(lead)
    return turns
