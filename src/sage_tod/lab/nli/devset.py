"""A development set for S2, built from SGD *dev* dialogues only.

SGD annotates which values the user stated, so each value a user turn adds to
the state is a positive claim (supported), and a value of the same slot that
nobody in the dialogue said is a negative (unsupported, as a UV injection
writes). The state records the annotation's canonical value where one exists
("11:30" for "half past 11 in the morning", "2019-03-01" for "today"), as a
real tracker would, so positives include the paraphrases S1 cannot settle.

Never build this from SGD test or MultiWOZ test: those are evaluation splits.
The same construction also writes sage-tod turns (half clean, half with one
injected unsupported value) and a spec, for `calibrate` and the benchmark.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import Turn
from sage_tod.text.normalize import is_unset

FORBIDDEN_SPLITS = ("test",)


@dataclass(frozen=True)
class DevClaim:
    """One value written at one turn, with whether the user really supplied it."""

    turn_key: str
    slot: str
    value: str
    supported: bool


@dataclass
class DevSet:
    spec: dict[str, Any]
    turns: list[dict[str, Any]]
    claims: list[DevClaim] = field(default_factory=list)

    def bundle(self) -> SpecBundle:
        return parse_spec(self.spec, "<sgd-dev spec>")

    def turn_objects(self) -> dict[str, Turn]:
        out = {}
        for t in self.turns:
            clean = {k: v for k, v in t.items() if k not in ("gold", "meta")}
            turn = Turn.model_validate(clean)
            out[turn.key] = turn
        return out

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        import yaml

        out_dir.mkdir(parents=True, exist_ok=True)
        spec_p = out_dir / "spec.yaml"
        turns_p = out_dir / "turns.jsonl"
        spec_p.write_text(yaml.safe_dump(self.spec, sort_keys=False), encoding="utf-8")
        turns_p.write_text("".join(json.dumps(t) + "\n" for t in self.turns), encoding="utf-8")
        return spec_p, turns_p


def _check_split(split_dir: Path) -> None:
    if split_dir.name.lower() in FORBIDDEN_SPLITS or "multiwoz" in str(split_dir).lower():
        raise ValueError(f"{split_dir}: S2 development data must come from SGD dev, never from "
                         "an evaluation split")


def _open_json(p: Path) -> Any:
    if p.suffix == ".gz":
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(p.read_text(encoding="utf-8"))


def load_schema(split_dir: Path) -> dict[str, dict[str, Any]]:
    for name in ("schema.json", "schema.json.gz"):
        if (split_dir / name).is_file():
            return {s["service_name"]: s for s in _open_json(split_dir / name)}
    raise FileNotFoundError(f"no schema.json in {split_dir}")


def iter_dialogues(split_dir: Path) -> Iterator[dict[str, Any]]:
    files = sorted(p for p in split_dir.iterdir() if p.name.startswith("dialogues_"))
    for f in files:
        yield from _open_json(f)


def _spec(schema: dict[str, dict[str, Any]], services: list[str]) -> dict[str, Any]:
    workflows = []
    for svc in services:
        s = schema[svc]
        slots = []
        for sl in s["slots"]:
            entry: dict[str, Any] = {"name": sl["name"], "description": sl["description"]}
            vals = [v for v in sl.get("possible_values", []) if v.lower() != "dontcare"]
            if sl.get("is_categorical") and vals:
                entry["type"] = "categorical"
                entry["values"] = vals
            slots.append(entry)
        workflows.append({"id": svc, "description": s.get("description", ""), "slots": slots,
                          "required": []})
    return {"version": 1, "workflows": workflows}


def _user_value(frame: dict[str, Any], slot: str, surface: str) -> str:
    """The canonical value the user turn's INFORM act gives for `slot`, else the surface."""
    for act in frame.get("actions", []):
        if act.get("slot") == slot and act.get("act") == "INFORM" and act.get(
                "canonical_values"):
            return str(act["canonical_values"][0])
    return surface


def frame_state(frame: dict[str, Any], before: dict[str, str]) -> dict[str, str]:
    """A service's state after a user frame: canonical values, and a value kept as it was
    when the frame restates it (SGD lists every surface form of a value)."""
    after: dict[str, str] = {}
    for slot, vals in frame.get("state", {}).get("slot_values", {}).items():
        if not vals:
            continue
        canon = _user_value(frame, slot, vals[0])
        after[slot] = before[slot] if slot in before and before[slot] in [*vals, canon] else canon
    return after


def build_devset(split_dir: str | Path, *, dialogues: int = 120, seed: int = 0,
                 inject_rate: float = 0.5) -> DevSet:
    """Turns, claims and a spec from the first `dialogues` of a seeded shuffle."""
    from sage_tod.compiler.context import make_context
    from sage_tod.verifiers.symbolic import find_support

    split = Path(split_dir)
    _check_split(split)
    schema = load_schema(split)
    rng = random.Random(seed)
    dlgs = list(iter_dialogues(split))
    rng.shuffle(dlgs)
    dlgs = dlgs[:dialogues]
    # value pool per (service, slot): what negatives are drawn from
    pool = value_pool(list(iter_dialogues(split)), schema)
    services = sorted({svc for d in dlgs for svc in d["services"]})
    spec = _spec(schema, services)
    bundle = parse_spec(spec)
    turns: list[dict[str, Any]] = []
    claims: list[DevClaim] = []
    for d in dlgs:
        utts = d["turns"]
        states: dict[str, dict[str, str]] = {}
        history: list[dict[str, str]] = []
        for i in range(0, len(utts), 2):
            user_t = utts[i]
            agent = utts[i + 1]["utterance"] if i + 1 < len(utts) else ""
            for fr in user_t["frames"]:
                svc = fr["service"]
                before = dict(states.get(svc, {}))
                after = frame_state(fr, before)
                states[svc] = after
                new = [s for s, v in after.items()
                       if before.get(s) != v and v.lower() != "dontcare"]
                if not new:
                    continue
                turn = {"dialogue_id": f"sgd-dev-{d['dialogue_id']}-{svc}", "turn_id": i // 2,
                        "workflow": svc, "user": user_t["utterance"], "agent": agent,
                        "state_before": before, "state_after": dict(after),
                        "history": [dict(h) for h in history]}
                key = f"{turn['dialogue_id']}:{turn['turn_id']}"
                ctx = make_context(bundle, Turn.model_validate(turn))
                negs: dict[str, str] = {}
                for slot in new:
                    claims.append(DevClaim(key, slot, after[slot], True))
                    cands = sorted(set(pool.get((svc, slot), ())) - {after[slot]})
                    rng.shuffle(cands)
                    for c in cands[:20]:
                        if bundle.workflows[svc].equals(slot, c, after[slot]):
                            continue
                        if find_support(ctx, slot, c) is None and not _said_later(c, agent):
                            negs[slot] = c
                            claims.append(DevClaim(key, slot, c, False))
                            break
                gold: dict[str, Any] = {"label": "acceptable", "class": None}
                if negs and rng.random() < inject_rate:
                    slot = rng.choice(sorted(negs))
                    turn["state_after"] = {**after, slot: negs[slot]}
                    gold = {"label": "failure", "class": "UV",
                            "injection": {"slot": slot, "value": negs[slot],
                                          "original": after[slot]}}
                turn["gold"] = gold
                turns.append(turn)
            history.append({"user": user_t["utterance"], "agent": agent})
    return DevSet(spec, turns, claims)


def _said_later(value: str, agent: str) -> bool:
    return value.lower() in agent.lower()


def value_pool(dialogues: Sequence[dict[str, Any]], schema: dict[str, dict[str, Any]]
               ) -> dict[tuple[str, str], list[str]]:
    """Values seen per (service, slot) in the dev states and the schema (no dontcare)."""
    pool: dict[tuple[str, str], set[str]] = {}
    for d in dialogues:
        for t in d["turns"]:
            for fr in t["frames"]:
                for slot, vals in fr.get("state", {}).get("slot_values", {}).items():
                    for v in vals:
                        if not is_unset(v) and v.lower() != "dontcare":
                            pool.setdefault((fr["service"], slot), set()).add(v)
    for svc, s in schema.items():
        for sl in s["slots"]:
            for v in sl.get("possible_values", []):
                if v.lower() != "dontcare":
                    pool.setdefault((svc, sl["name"]), set()).add(v)
    return {k: sorted(v) for k, v in pool.items()}
