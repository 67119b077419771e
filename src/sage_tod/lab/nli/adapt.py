"""NLI pairs from SGD *dev* annotations, in exactly the claim form S2 uses at run time.

Why: the SNLI-trained MiniLM reads dialogue claims barely better than chance
(docs/nli.md). SGD annotates, per user turn, which slot values the user stated
(character spans and INFORM acts) and what the agent offered, so it yields
dialogue NLI pairs with no human labelling. The premise window and hypothesis
template are the ones S2 will use (`claims.window`, `claims.fit_premise`,
`claims.hypothesis`), so the model is trained on the inputs it later sees.

Labels (the shared model's order, `train.LABELS`):

- entailment: a value Delta_t writes for a slot the user's turn states (span or
  INFORM act), in the annotation's canonical form ("11:30" for "half past 11 in
  the morning") as a tracker writes it; with a window that holds the agent's
  previous turn, also a value the agent offered there and the state took up
  (the user accepted it).
- contradiction: another value of a slot the user stated this turn, one that
  appears nowhere in the premise.
- neutral: a value of a slot the turn does not mention (nor, for windows that
  reach into h_<t, one the dialogue ever set), appearing nowhere in the premise.

Caveat, stated wherever results are reported: contradiction and neutral pairs
resemble the benchmark's UV injector (a plausible value of the slot that is
said nowhere). Only SGD dev (and the 2019 legacy release of its three missing
files) is read; a test split or MultiWOZ path is refused.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.lab.nli.devset import _check_split, _open_json, frame_state, load_schema, value_pool
from sage_tod.nli.claims import Utterance, fit_premise, hypothesis, window

# train.LABELS order; repeated here so building pairs needs no torch import
CONTRADICTION, ENTAILMENT, NEUTRAL = 0, 1, 2
LABEL_NAMES = {CONTRADICTION: "contradiction", ENTAILMENT: "entailment", NEUTRAL: "neutral"}
_OFFER_ACTS = ("OFFER", "INFORM", "CONFIRM")
_WITH_AGENT = ("prev_agent+u_t", "user_all+offers")


@dataclass(frozen=True)
class AdaptPair:
    """One training pair and where it came from (kind: stated | accepted | other_value |
    unmentioned)."""

    dialogue_id: str
    premise: str
    hypothesis: str
    label: int
    kind: str


def sgd_dev_dirs(root: str | Path) -> list[Path]:
    """`root/dev` plus `root/dev_legacy_2019-08` when present (or `root` itself if it
    is a split directory)."""
    r = Path(root)
    if (r / "schema.json").is_file() or (r / "schema.json.gz").is_file():
        return [r]
    out = [d for d in (r / "dev", r / "dev_legacy_2019-08") if d.is_dir()]
    if not out:
        raise FileNotFoundError(f"no SGD dev directory under {r}")
    return out


def iter_dev_dialogues(dirs: Sequence[Path]) -> Iterator[dict[str, Any]]:
    """Every dialogue once (the first directory wins on a repeated dialogue id)."""
    seen: set[str] = set()
    for d in dirs:
        _check_split(d)
        for f in sorted(p for p in d.iterdir() if p.name.startswith("dialogues_")):
            for dlg in _open_json(f):
                if dlg["dialogue_id"] not in seen:
                    seen.add(dlg["dialogue_id"])
                    yield dlg


def _schema(dirs: Sequence[Path]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for d in dirs:
        try:
            out = {**load_schema(d), **out}
        except FileNotFoundError:
            continue  # the legacy files ship without a schema; dev's covers them
    if not out:
        raise FileNotFoundError(f"no schema.json in {', '.join(map(str, dirs))}")
    return out


def _desc(schema: dict[str, dict[str, Any]], svc: str, slot: str) -> str:
    """What `claims.slot_desc` gives for the spec built from the same schema."""
    for sl in schema.get(svc, {}).get("slots", []):
        if sl["name"] == slot and str(sl.get("description", "")).strip():
            return str(sl["description"]).strip().rstrip(".")
    return slot.replace("_", " ").replace("-", " ").strip()


def _mentioned(frame: dict[str, Any]) -> set[str]:
    """Slots the user's turn states: character spans (all releases) and INFORM acts."""
    out = {s["slot"] for s in frame.get("slots", [])}
    out |= {a["slot"] for a in frame.get("actions", [])
            if a.get("act") == "INFORM" and a.get("slot")}
    return out


def _offered(agent_turn: dict[str, Any] | None, svc: str) -> dict[str, set[str]]:
    """Values the agent's turn put on the table, per slot (offers, informs, confirms)."""
    out: dict[str, set[str]] = {}
    if agent_turn is None:
        return out
    for fr in agent_turn["frames"]:
        if fr["service"] != svc:
            continue
        for a in fr.get("actions", []):
            if a.get("act") in _OFFER_ACTS and a.get("slot"):
                for v in [*a.get("values", []), *a.get("canonical_values", [])]:
                    out.setdefault(a["slot"], set()).add(str(v).lower())
    return out


def _absent(value: str, premise: str) -> bool:
    return value.lower() not in premise.lower()


def build_pairs(dirs: Sequence[Path], *, template: str, window_name: str,
                count: Callable[[str], int], seed: int = 0, neutral_per_turn: int = 1,
                limit_dialogues: int | None = None) -> list[AdaptPair]:
    """All pairs of the SGD dev dialogues (unbalanced; see `balance`)."""
    schema = _schema(dirs)
    dialogues = list(iter_dev_dialogues(dirs))
    if limit_dialogues is not None:
        dialogues = sorted(dialogues, key=lambda d: d["dialogue_id"])[:limit_dialogues]
    pool = value_pool(dialogues, schema)
    rng = random.Random(seed)
    out: list[AdaptPair] = []
    for d in dialogues:
        did = str(d["dialogue_id"])
        states: dict[str, dict[str, str]] = {}
        utts: list[Utterance] = []
        turns = d["turns"]
        for i in range(0, len(turns), 2):
            user_t = turns[i]
            prev_agent = turns[i - 1] if i > 0 else None
            here = [*utts, Utterance("user", user_t["utterance"])]
            premise = fit_premise(window(here, window_name), count)
            for fr in user_t["frames"]:
                out += _frame_pairs(fr, did, premise, states, prev_agent, schema, pool, rng,
                                    template=template, window_name=window_name,
                                    neutral_per_turn=neutral_per_turn)
            utts.append(Utterance("user", user_t["utterance"]))
            if i + 1 < len(turns) and turns[i + 1]["utterance"].strip():
                utts.append(Utterance("agent", turns[i + 1]["utterance"]))
    return out


def _frame_pairs(fr: dict[str, Any], did: str, premise: str,
                 states: dict[str, dict[str, str]], prev_agent: dict[str, Any] | None,
                 schema: dict[str, dict[str, Any]], pool: dict[tuple[str, str], list[str]],
                 rng: random.Random, *, template: str, window_name: str,
                 neutral_per_turn: int) -> list[AdaptPair]:
    svc = fr["service"]
    before = dict(states.get(svc, {}))
    after = frame_state(fr, before)
    states[svc] = after
    said = _mentioned(fr)
    offered = _offered(prev_agent, svc) if window_name in _WITH_AGENT else {}
    surfaces = {s: {str(v).lower() for v in vals}
                for s, vals in fr.get("state", {}).get("slot_values", {}).items()}
    out: list[AdaptPair] = []

    def add(slot: str, value: str, label: int, kind: str) -> None:
        out.append(AdaptPair(did, premise, hypothesis(template, _desc(schema, svc, slot), value),
                             label, kind))

    diff = [s for s, v in after.items() if before.get(s) != v]
    for slot in diff:
        value = after[slot]
        if slot in said:
            add(slot, value, ENTAILMENT, "stated")
            cands = [c for c in pool.get((svc, slot), []) if c.lower() != value.lower()
                     and c.lower() not in surfaces.get(slot, set()) and _absent(c, premise)]
            if cands:
                add(slot, rng.choice(cands), CONTRADICTION, "other_value")
        elif value.lower() in offered.get(slot, set()) and value.lower() != "dontcare":
            add(slot, value, ENTAILMENT, "accepted")
        # otherwise the value came from further back (or an unannotated paraphrase):
        # its label under this window is unknown, so no pair is made
    known = set(after) if window_name != "u_t" else set()
    free = [sl["name"] for sl in schema.get(svc, {}).get("slots", [])
            if sl["name"] not in said and sl["name"] not in diff and sl["name"] not in known
            and sl["name"] not in offered]
    rng.shuffle(free)
    made = 0
    for slot in free:
        if made >= neutral_per_turn:
            break
        cands = [c for c in pool.get((svc, slot), []) if _absent(c, premise)]
        if cands:
            add(slot, rng.choice(cands), NEUTRAL, "unmentioned")
            made += 1
    return out


def held_out(dialogue_id: str, share: float, seed: int) -> bool:
    """A stable, seeded split by dialogue: no dialogue is in both parts."""
    h = hashlib.sha256(f"{seed}:{dialogue_id}".encode()).digest()
    return int.from_bytes(h[:4], "big") / 2**32 < share


def split(pairs: Sequence[AdaptPair], share: float = 0.1, seed: int = 0
          ) -> tuple[list[AdaptPair], list[AdaptPair]]:
    train = [p for p in pairs if not held_out(p.dialogue_id, share, seed)]
    test = [p for p in pairs if held_out(p.dialogue_id, share, seed)]
    return train, test


def balance(pairs: Sequence[AdaptPair], seed: int = 0) -> list[AdaptPair]:
    """Down-sample every label to the rarest label's count (seeded), then shuffle."""
    by: dict[int, list[AdaptPair]] = {}
    for p in pairs:
        by.setdefault(p.label, []).append(p)
    if not by:
        return []
    n = min(len(v) for v in by.values())
    rng = random.Random(seed)
    out: list[AdaptPair] = []
    for lab in sorted(by):
        v = list(by[lab])
        rng.shuffle(v)
        out += v[:n]
    rng.shuffle(out)
    return out
