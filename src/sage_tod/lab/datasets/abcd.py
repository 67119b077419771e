"""ABCD (Action-Based Conversations Dataset): loader and workflow specs.

Turns. A conversation alternates blocks of customer utterances with blocks
of agent utterances and agent actions (button clicks with slot values). A
turn is one customer block (u_t) followed by the agent block up to the next
customer utterance (a_t is its utterances joined, its actions kept in
`meta.actions`). The state is the cumulative {slot: value} of the actions'
values: s_{t-1} before the block's actions, s_t after. An action's values are
given as a list; each value is assigned to a slot by matching the
conversation's scenario (`customer_name`, `order_id`, ...), then the
ontology's enumerable values, then by position among the action's slots.
Text comes from `original` (cased), actions from `delexed` (they align
entry by entry); the leading agent greeting is history only.

Specs. One workflow per subflow: its slots are the slots of the actions that
kb.json lists for the subflow (ontology.json gives each action's slots); a
slot that is the only slot of its action is required, in the kb action
order, one bucket per action; actions with several alternative slots (pull
up an account by name *or* id) contribute optional slots.

The full corpus (`abcd/abcd_v1.1.json.gz`) is 4 MiB or more upstream and is
not in the shared data; `abcd_sample.json` (3 conversations) has the same
format and is what the tests use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sage_tod.lab.datasets.common import SpecDoc, TurnDict, dedupe, read_json
from sage_tod.lab.datasets.paths import DataMissing, data_root, require
from sage_tod.text.normalize import basic

FULL = "abcd/abcd_v1.1.json.gz"
SAMPLE = "abcd/abcd_sample.json"
ONTOLOGY = "abcd/ontology.json"
KB = "abcd/kb.json"


def require_full_corpus(root: Path | None = None) -> Path:
    """The full ABCD corpus, or `DataMissing` saying where to put it and where to get it."""
    base = root if root is not None else data_root()
    p = base / FULL
    if not p.exists():
        raise DataMissing(p, "the full ABCD corpus is not present, so ABCD-UV cannot be built; "
                          "get data/abcd_v1.1.json.gz from asappresearch/abcd (git lfs / the "
                          "release) and place it here")
    return p


def load_conversations(path: Path, split: str = "test") -> list[dict[str, Any]]:
    """Conversations of a corpus file: a list (sample) or {train, dev, test} (full corpus)."""
    data = read_json(path)
    if isinstance(data, dict):
        if split not in data:
            raise DataMissing(path, f"no split {split!r} in the corpus (has "
                              f"{', '.join(sorted(data))})")
        data = data[split]
    return sorted(data, key=lambda c: int(c["convo_id"]))


def load_ontology(root: Path | None = None) -> dict[str, Any]:
    return dict(read_json(require(ONTOLOGY, root)))


def load_kb(root: Path | None = None) -> dict[str, list[str]]:
    return dict(read_json(require(KB, root)))


def action_slots(onto: Mapping[str, Any]) -> dict[str, list[str]]:
    """Action (button) -> its slots, over all action groups of the ontology."""
    out: dict[str, list[str]] = {}
    for group in onto["actions"].values():
        for action, slots in group.items():
            out[action] = list(slots)
    return out


def _enumerable(onto: Mapping[str, Any]) -> dict[str, list[str]]:
    return {k: list(v) for k, v in onto["values"]["enumerable"].items()}


def all_slots(onto: Mapping[str, Any]) -> list[str]:
    slots = [s for ss in action_slots(onto).values() for s in ss]
    slots += [s for ss in onto["values"]["non_enumerable"].values() for s in ss]
    return sorted(set(slots))


def compile_spec(root: Path | None = None) -> SpecDoc:
    """One workflow per subflow from kb.json and ontology.json (rule in the module docstring)."""
    onto = load_ontology(root)
    kb = load_kb(root)
    acts = action_slots(onto)
    enum = _enumerable(onto)
    shared = []
    for s in all_slots(onto):
        doc: dict[str, Any] = {"name": s, "description": s.replace("_", " ")
                               .replace("slotval", "value"), "type": "free"}
        if s in enum and not s.endswith("_query"):
            doc["type"] = "categorical"
            doc["values"] = list(enum[s])
        shared.append(doc)
    flows = {sub: flow for flow, subs in onto["intents"]["subflows"].items() for sub in subs}
    workflows = []
    for sub in sorted(kb):
        seq = kb[sub]
        slots = dedupe(s for a in seq for s in acts.get(a, []))
        required: list[str] = []
        order: list[list[str]] = []
        for a in seq:
            ss = acts.get(a, [])
            if len(ss) == 1 and ss[0] not in required:
                required.append(ss[0])
                order.append([ss[0]])
        wf: dict[str, Any] = {
            "id": sub,
            "description": f"{flows.get(sub, '?').replace('_', ' ')}: "
                           f"{sub.replace('_', ' ')} (actions: {', '.join(seq)})",
            "slots": slots or all_slots(onto)[:1],
            "required": required,
            "order": order,
        }
        workflows.append(wf)
    return {"version": 1, "slots": shared, "workflows": workflows}


def _assign(values: Sequence[str], action: str, scenario: Mapping[str, Any],
            acts: Mapping[str, list[str]], enum: Mapping[str, list[str]],
            known: set[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in ("personal", "order"):
        for k, v in (scenario.get(part) or {}).items():
            if isinstance(v, str) and v.strip():
                fields.setdefault(basic(v), k)
    slots = acts.get(action, [])
    out: dict[str, str] = {}
    free_slots = [s for s in slots]
    for v in values:
        v = str(v)
        slot = fields.get(basic(v))
        if slot is not None and slot not in known:
            slot = None
        if slot is None:
            slot = next((s for s in slots if any(basic(x) == basic(v) for x in enum.get(s, []))),
                        None)
        if slot is None:
            slot = next((s for s in free_slots if s not in out), None)
        if slot is None:
            continue
        out[slot] = v
        if slot in free_slots:
            free_slots.remove(slot)
    return out


def subflow_of(convo: Mapping[str, Any], known: Iterable[str]) -> str:
    """The conversation's subflow as kb.json names it (FAQ scenarios add a suffix: timing_4)."""
    sub = str((convo.get("scenario") or {}).get("subflow", ""))
    names = set(known)
    if sub in names:
        return sub
    base = re.sub(r"_\d+$", "", sub)
    return base if base in names else sub


def conversation_turns(convo: Mapping[str, Any], onto: Mapping[str, Any],
                       subflows: Iterable[str] = ()) -> Iterator[TurnDict]:
    """Turns of one conversation (see the module docstring)."""
    acts = action_slots(onto)
    enum = _enumerable(onto)
    known = set(all_slots(onto))
    original = convo.get("original") or []
    delexed = convo.get("delexed") or []
    aligned = len(original) == len(delexed)
    entries: list[tuple[str, str, dict[str, Any]]] = []
    for i, d in enumerate(delexed):
        text = original[i][1] if aligned else d.get("text", "")
        entries.append((d["speaker"], text, d))
    scenario = convo.get("scenario") or {}
    sub = subflow_of(convo, subflows)
    history: list[dict[str, str]] = []
    state: dict[str, str] = {}
    i = 0
    k = 0
    # the leading agent block is history only
    lead: list[str] = []
    while i < len(entries) and entries[i][0] != "customer":
        if entries[i][0] == "agent":
            lead.append(entries[i][1])
        i += 1
    if lead:
        history.append({"user": "", "agent": " ".join(lead)})
    while i < len(entries):
        users: list[str] = []
        while i < len(entries) and entries[i][0] == "customer":
            users.append(entries[i][1])
            i += 1
        agents: list[str] = []
        actions: list[dict[str, Any]] = []
        before = dict(state)
        while i < len(entries) and entries[i][0] != "customer":
            spk, text, d = entries[i]
            if spk == "agent":
                agents.append(text)
            elif spk == "action":
                tg = d.get("targets") or [None, None, None, []]
                name, vals = tg[2], [str(v) for v in (tg[3] or [])]
                assigned = _assign(vals, name, scenario, acts, enum, known) if name else {}
                state.update(assigned)
                actions.append({"action": name, "values": vals, "slots": assigned,
                                "text": text})
            i += 1
        user, agent = " ".join(users), " ".join(agents)
        yield {
            "dialogue_id": f"abcd-{convo['convo_id']}", "turn_id": k, "workflow": sub,
            "user": user, "agent": agent,
            "state_before": dict(sorted(before.items())),
            "state_after": dict(sorted(state.items())),
            "history": [dict(h) for h in history],
            "meta": {"dataset": "abcd", "flow": scenario.get("flow"),
                     "scenario_subflow": scenario.get("subflow"),
                     "actions": actions},
        }
        history.append({"user": user, "agent": agent})
        k += 1


def iter_turns(convos: Sequence[Mapping[str, Any]], root: Path | None = None
               ) -> Iterator[TurnDict]:
    onto = load_ontology(root)
    kb = load_kb(root)
    for c in convos:
        yield from conversation_turns(c, onto, kb)


def value_pool(convos: Sequence[Mapping[str, Any]], root: Path | None = None
               ) -> dict[str, list[str]]:
    """Plausible values per slot: the ontology's enumerable values, else the corpus's own."""
    onto = load_ontology(root)
    pool: dict[str, list[str]] = {k: list(v) for k, v in _enumerable(onto).items()
                                  if not k.endswith("_query")}
    known = set(all_slots(onto))
    for c in convos:
        sc = c.get("scenario") or {}
        for part in ("personal", "order"):
            for k, v in (sc.get(part) or {}).items():
                if isinstance(v, str) and v.strip() and k in known:
                    pool.setdefault(k, []).append(v)
    return {k: sorted(set(v)) for k, v in sorted(pool.items())}


def sample_path(root: Path | None = None) -> Path:
    return require(SAMPLE, root)


__all__ = ["DataMissing", "compile_spec", "iter_turns", "load_conversations",
           "require_full_corpus", "sample_path"]
