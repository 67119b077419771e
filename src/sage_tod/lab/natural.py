"""The natural-failure slice: what published MultiWOZ systems really got wrong.

Six end-to-end systems' outputs on the 199 development dialogues of the
MultiWOZ 2.1 test split (`$SAGE_TOD_DATA/mwzeval/*.json`) are imported with
`sage_tod.importers.mwzeval` (gold user turns and history, the system's own
response and tracked state). Each turn is labelled by comparing the system's
state *update* Δ_t with the gold update (the corpus states), leniently; the
rules, the annotation quirks that are excluded and the tags are written up in
docs/benchmarks.md ("Natural failures"). Labels are noisy, so a committed audit
(`data/natural_audit.jsonl`, read by hand) corrects or drops turns; the audited
subset carries raw and corrected labels side by side.

Nothing here is imported by the runtime; the slice is built from the data
directory at run time and never committed.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers.mwzeval import read_mwzeval
from sage_tod.lab.datasets.common import TurnDict, dumps_line, write_jsonl
from sage_tod.lab.datasets.paths import data_root, require
from sage_tod.lab.natural_values import (
    SLOT_VALUE_TYPE,
    basic,
    found_in,
    same_value,
    value_key,
    value_type,
)

SYSTEMS: tuple[str, ...] = ("augpt", "damd", "dots", "labes", "mintl", "soloist")
MWZEVAL_DIR = "mwzeval"
DEV_LIST = "mwzeval/dev_dialogues.json"
AUDIT_FILE = Path(__file__).with_name("data") / "natural_audit.jsonl"

ErrorKind = Literal["dropped", "wrong", "deleted", "extra"]
How = Literal["typed", "dontcare", "accepted_offer", "implicit", "unsupported"]

# ---------------------------------------------------------------------------------------------
# labels


@dataclass(frozen=True)
class SlotError:
    """One disagreement of the system's update with the gold update, tagged."""

    slot: str
    kind: ErrorKind
    system: str | None
    gold: str | None
    how: How
    value_type: str
    side: Literal["gold", "system"] = "gold"  # whose value `how` and `value_type` describe
    untracked: bool = False  # the system never writes this slot anywhere
    note: str | None = None  # restated | gold_lags: a drop the gold update does not show

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"slot": self.slot, "kind": self.kind, "system": self.system,
                             "gold": self.gold, "how": self.how,
                             "value_type": self.value_type, "side": self.side}
        if self.untracked:
            d["untracked"] = True
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class TurnLabel:
    """The raw label of one turn and what was excluded as an annotation quirk."""

    errors: list[SlotError] = field(default_factory=list)
    quirks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "failure" if self.errors else "acceptable"

    @property
    def failure_class(self) -> str | None:
        if not self.errors:
            return None
        iuv = any(e.kind in ("dropped", "deleted") or (e.kind == "wrong" and e.how == "typed")
                  for e in self.errors)
        return "IUV" if iuv else "UV"


ACCEPT_CUES: tuple[str, ...] = (
    "yes", "yeah", "yep", "sure", "ok", "okay", "book", "sounds good", "sounds great",
    "great", "perfect", "that one", "that works", "fine", "please", "lovely", "good",
    "excellent", "wonderful", "like that", "i will take", "i ll take", "reserve",
    "that will work", "that would work", "interested")


def accepts(text: str) -> bool:
    """Whether u_t reads as taking up what the agent offered ("yes", "book it", "sounds good")."""
    b = f" {basic(text)} "
    return any(f" {c} " in b for c in ACCEPT_CUES)


def how_appeared(slot: str, value: str, turn: Mapping[str, Any],
                 other_values: Iterable[str]) -> How | Literal["lag"]:
    """Where a value comes from: u_t, a don't-care, the user's previous turn (`lag`), the
    agent's last offer, anywhere earlier or another slot (`implicit`), or nowhere."""
    hist = turn.get("history") or []
    if value_key(slot, value) == "dontcare":
        if not found_in(slot, value, turn["user"]) and hist and found_in(
                slot, value, hist[-1]["user"]):
            return "lag"
        return "dontcare"
    if found_in(slot, value, turn["user"]):
        return "typed"
    if hist and found_in(slot, value, hist[-1]["user"]):
        return "lag"
    if hist and found_in(slot, value, hist[-1]["agent"]):
        return "accepted_offer"
    if any(found_in(slot, value, h["user"]) or found_in(slot, value, h["agent"])
           for h in hist[:-1]) or any(same_value(slot, value, v) for v in other_values):
        return "implicit"
    return "unsupported"


def generic_hotel_type(slot: str, value: str | None, turn: Mapping[str, Any]) -> bool:
    """hotel-type = hotel where nobody contrasts it with a guesthouse: MultiWOZ 2.1 writes it
    (or not) for the generic "a hotel" / "a place to stay" at random, so it is no evidence."""
    if slot != "hotel-type" or value is None or value_key(slot, value) != "hotel":
        return False
    hist = turn.get("history") or []
    near = turn["user"] + " " + (hist[-1]["agent"] if hist else "")
    return "guest" not in basic(near)


def entity_attribute(slot: str, turn: Mapping[str, Any], gold: Mapping[str, str],
                     system: Mapping[str, str]) -> bool:
    """An attribute (area, price, stars, ...) of the entity the agent just named and the
    user took: MultiWOZ 2.1 copies the agent's description of it into the state, which
    says nothing about what the user asked for."""
    dom, key = slot.split("-", 1)
    names = [n for n in (gold.get(f"{dom}-name"), system.get(f"{dom}-name")) if n]
    hist = turn.get("history") or []
    return key != "name" and bool(hist) and any(
        found_in(f"{dom}-name", n, hist[-1]["agent"]) for n in names)


def chosen_train_time(slot: str, system: Mapping[str, str], gold_before: Mapping[str, str]
                      ) -> bool:
    """The offered train's own times, where the user gave a leave/arrive constraint: the
    corpus overwrites the constraint with the chosen train's times; the constraint stands."""
    times = ("train-leaveat", "train-arriveby")
    return slot in times and any(t in system or t in gold_before for t in times)


def implied_by_held(slot: str, value: str, state: Mapping[str, str]) -> bool:
    """The value is part of another value s_t holds ("guesthouse" in "rosa's bed and breakfast",
    "college" in "magdalene college"): naming the entity already says it."""
    return any(k != slot and k.endswith("-name") and found_in(slot, value, v)
               for k, v in state.items())


def label_turn(turn: Mapping[str, Any], gold_next: Mapping[str, str],
               tracked: frozenset[str], next_user: str | None = None) -> TurnLabel:
    """Label one imported turn from its system and gold updates (docs/benchmarks.md).

    Two more drops count at this turn although the gold update does not show them:
    a value the user restates in u_t that s_t still lacks (`restated`), and a value
    typed in u_t that the corpus records only one turn later (`gold_lags`; `next_user`
    is u_{t+1}, so a value said again there is left to that turn).

    `gold_next` is the corpus state one turn later (for the annotation-lag
    quirk); `tracked` the slots this system ever writes: a value dropped for a slot the
    system never tracks is still a failure (s_t does not hold what the user said), but
    the error says so (`untracked`), since it is a property of the system, not the turn.
    """
    meta = turn["meta"]
    sb, sa = turn["state_before"], turn["state_after"]
    gb, ga = meta["corpus_state_before"], meta["corpus_state_after"]
    out = TurnLabel()
    gold_delta = {s: v for s, v in ga.items() if not same_value(s, gb.get(s), v)}
    sys_delta = {s: v for s, v in sa.items() if not same_value(s, sb.get(s), v)}
    others_gold = list(gb.values())
    accepted = accepts(turn["user"])
    for s, gv in sorted(gold_delta.items()):
        if same_value(s, sa.get(s), gv):
            continue
        how = how_appeared(s, gv, turn, others_gold)
        quirk = ("generic_hotel_type" if generic_hotel_type(s, gv, turn) else
                 "gold_name_dontcare" if s.endswith("-name") and value_key(s, gv) == "dontcare"
                 else
                 "gold_unsupported" if how == "unsupported" else
                 "gold_lag_previous_turn" if how == "lag" else
                 "gold_from_agent_inform" if how == "accepted_offer" and not accepted else
                 "gold_entity_attributes" if how == "accepted_offer" and entity_attribute(
                     s, turn, ga, sa) else
                 "implied_by_name" if s.endswith("-type") and implied_by_held(s, gv, sa) else
                 "gold_chosen_train_times" if how == "accepted_offer" and chosen_train_time(
                     s, sa, gb) else
                 "gold_lag" if s in sys_delta and same_value(s, sys_delta[s], gold_next.get(s))
                 else None)
        if quirk is not None or how == "lag" or how == "unsupported":
            out.quirks.append({"slot": s, "quirk": quirk, "gold": gv})
            continue
        kind: ErrorKind = "wrong" if s in sys_delta else "deleted" if (
            s in sb and s not in sa) else "dropped"
        out.errors.append(SlotError(s, kind, sa.get(s), gv, how, value_type(s, gv, how),
                                    untracked=s not in tracked))
    for s, sv in sorted(sys_delta.items()):
        if s in gold_delta or same_value(s, sv, ga.get(s)):
            continue
        if same_value(s, sv, gold_next.get(s)):
            out.quirks.append({"slot": s, "quirk": "gold_lag", "system": sv})
            continue
        if generic_hotel_type(s, sv, turn):
            out.quirks.append({"slot": s, "quirk": "generic_hotel_type", "system": sv})
            continue
        how = how_appeared(s, sv, turn, [v for k, v in sb.items() if k != s])
        if how == "lag":
            how = "implicit"
        if how == "accepted_offer" and accepted and s not in ga:
            out.quirks.append({"slot": s, "quirk": "gold_misses_accepted_offer", "system": sv})
            continue
        kind = "wrong" if s in ga else "extra"
        out.errors.append(SlotError(s, kind, sv, ga.get(s), how, value_type(s, sv, how),
                                    side="system"))
    flagged = {e.slot for e in out.errors}
    wf = f"{turn['workflow']}-"  # drops the gold update misses: this turn's workflow only
    for s, gv in sorted(ga.items()):  # restated in u_t, still missing from s_t
        if (s in gold_delta or s in flagged or s in sys_delta or not s.startswith(wf)
                or same_value(s, sa.get(s), gv)
                or SLOT_VALUE_TYPE.get(s.split("-", 1)[1]) == "number"
                or value_key(s, gv) == "dontcare" or generic_hotel_type(s, gv, turn)
                or not found_in(s, gv, turn["user"]) or implied_by_held(s, gv, sa)):
            continue
        out.errors.append(SlotError(s, "dropped", sa.get(s), gv, "typed",
                                    value_type(s, gv, "typed"), note="restated",
                                    untracked=s not in tracked))
        flagged.add(s)
    for s, gv in sorted(gold_next.items()):  # typed now, recorded by the corpus later
        if (s in flagged or not s.startswith(wf) or same_value(s, ga.get(s), gv)
                or same_value(s, sa.get(s), gv) or value_key(s, gv) == "dontcare"
                or SLOT_VALUE_TYPE.get(s.split("-", 1)[1]) == "number"
                or generic_hotel_type(s, gv, turn) or not found_in(s, gv, turn["user"])
                or implied_by_held(s, gv, sa)
                or (next_user is not None and found_in(s, gv, next_user))):
            continue
        how = how_appeared(s, gv, turn, others_gold)
        if how != "typed":
            continue
        out.errors.append(SlotError(s, "dropped", sa.get(s), gv, how, value_type(s, gv, how),
                                    note="gold_lags", untracked=s not in tracked))
        flagged.add(s)
    for s in sorted(set(sb) - set(sa)):
        if s in ga and s not in gold_delta and s in tracked:
            gv = ga[s]
            dhow = how_appeared(s, gv, turn, others_gold)
            dhow = "implicit" if dhow == "lag" else dhow
            out.errors.append(SlotError(s, "deleted", None, gv, dhow,
                                        value_type(s, gv, dhow)))
    return out


# ---------------------------------------------------------------------------------------------
# the slice


def dev_dialogues(root: Path | None = None) -> list[str]:
    """The 199 test dialogues set aside for development (lower-case mwzeval ids)."""
    with require(DEV_LIST, root).open(encoding="utf-8") as fh:
        return [str(d).lower() for d in json.load(fh)]


def system_turns(system: str, spec: SpecBundle, root: Path | None = None) -> list[TurnDict]:
    """One system's imported turns over the development dialogues."""
    base = root if root is not None else data_root()
    pred = require(f"{MWZEVAL_DIR}/{system}.json", base)
    turns, _ = read_mwzeval(pred, None, spec, unknown_slots="drop",
                            dialogues=dev_dialogues(base), root=base)
    return turns


def label_system(system: str, turns: Sequence[TurnDict]) -> list[TurnDict]:
    """Slice lines of one system: ids prefixed by the system, gold label, tags in meta."""
    tracked = frozenset(s for t in turns for s in t["state_after"])
    by_key = {(t["dialogue_id"], t["turn_id"]): t for t in turns}
    out: list[TurnDict] = []
    for t in turns:
        nxt = by_key.get((t["dialogue_id"], int(t["turn_id"]) + 1))
        gold_next = (nxt or t)["meta"]["corpus_state_after"]
        lab = label_turn(t, gold_next, tracked, nxt["user"] if nxt else None)
        line = dict(t)
        line["dialogue_id"] = f"{system}/{t['dialogue_id']}"
        meta = dict(t["meta"])
        meta.update({"system": system, "errors": [e.to_dict() for e in lab.errors],
                     "quirks": lab.quirks, "raw_label": lab.label})
        line["meta"] = meta
        line["gold"] = {"label": lab.label, "class": lab.failure_class}
        out.append(line)
    return out


@dataclass(frozen=True)
class AuditEntry:
    """One audited turn: the raw label, the corrected one (or `drop`) and why."""

    system: str
    dialogue_id: str
    turn_id: int
    raw_label: str
    corrected_label: str  # failure | acceptable | drop
    reason: str
    tags: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.system}/{self.dialogue_id}:{self.turn_id}"


def read_audit(path: Path = AUDIT_FILE) -> list[AuditEntry]:
    """The committed audit (one JSON object per line)."""
    out: list[AuditEntry] = []
    if not path.exists():
        return out
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            d = json.loads(line)
            if d["corrected_label"] not in ("failure", "acceptable", "drop"):
                raise ValueError(f"{path}:{n}: corrected_label must be failure, acceptable "
                                 "or drop")
            out.append(AuditEntry(d["system"], d["dialogue_id"], int(d["turn_id"]),
                                  d["raw_label"], d["corrected_label"], d.get("reason", ""),
                                  tuple(d.get("tags", ()))))
    return out


def apply_audit(lines: Sequence[TurnDict], audit: Sequence[AuditEntry]) -> list[TurnDict]:
    """The audited subset: audited turns only, corrected gold, raw label beside it.

    Dropped turns (the audit found the gold unusable) are left out; an entry whose
    raw label no longer matches the builder's is an error, so a changed labeller
    cannot silently reuse an audit made for other labels.
    """
    by_key = {f"{t['dialogue_id']}:{t['turn_id']}": t for t in lines}
    out: list[TurnDict] = []
    for a in audit:
        t = by_key.get(a.key)
        if t is None:
            raise ValueError(f"audit entry {a.key} is not in the slice")
        if t["gold"]["label"] != a.raw_label:
            raise ValueError(f"audit entry {a.key}: raw label {a.raw_label!r} but the slice "
                             f"labels it {t['gold']['label']!r}; re-audit it")
        if a.corrected_label == "drop":
            continue
        line = dict(t)
        meta = dict(t["meta"])
        meta.update({"audit_reason": a.reason, "audit_tags": list(a.tags)})
        line["meta"] = meta
        cls = t["gold"]["class"] if a.corrected_label == "failure" else None
        if a.corrected_label == "failure" and cls is None:
            cls = "UV" if "uv" in a.tags else "IUV"
        line["gold"] = {"label": a.corrected_label, "class": cls,
                        "note": f"raw label {a.raw_label}"}
        out.append(line)
    return out


def build_natural(out_dir: Path, spec: SpecBundle, root: Path | None = None,
                  audit_path: Path = AUDIT_FILE) -> dict[str, Any]:
    """Write natural.jsonl (every turn, raw labels) and natural-audited.jsonl; stats back."""
    lines: list[TurnDict] = []
    for system in SYSTEMS:
        lines.extend(label_system(system, system_turns(system, spec, root)))
    audited = apply_audit(lines, read_audit(audit_path))
    write_jsonl(out_dir / "natural.jsonl", lines)
    write_jsonl(out_dir / "natural-audited.jsonl", audited)
    stats = slice_stats(lines)
    stats["audited"] = slice_stats(audited)
    (out_dir / "natural-stats.json").write_text(dumps_line(stats) + "\n", encoding="utf-8")
    return stats


def slice_stats(lines: Sequence[TurnDict]) -> dict[str, Any]:
    """Counts by label, system, error kind, how the value appeared and value type."""
    labels: Counter[str] = Counter(t["gold"]["label"] for t in lines)
    by_sys: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: Counter[str] = Counter()
    hows: Counter[str] = Counter()
    vtypes: Counter[str] = Counter()
    quirks: Counter[str] = Counter()
    for t in lines:
        by_sys[t["meta"]["system"]][t["gold"]["label"]] += 1
        for e in t["meta"]["errors"]:
            kinds[e["kind"]] += 1
            hows[e["how"]] += 1
            vtypes[e["value_type"]] += 1
        for q in t["meta"]["quirks"]:
            quirks[q["quirk"]] += 1
    return {"n": len(lines), "labels": dict(labels),
            "systems": {s: dict(c) for s, c in sorted(by_sys.items())},
            "error_kinds": dict(kinds), "how": dict(hows), "value_types": dict(vtypes),
            "quirks": dict(quirks)}


def audit_view(line: Mapping[str, Any], history_turns: int = 1) -> str:
    """A compact text view of one slice line for reading it by hand (the audit)."""
    meta = line["meta"]
    sb, sa = line["state_before"], line["state_after"]
    gb, ga = meta["corpus_state_before"], meta["corpus_state_after"]
    sd = {s: v for s, v in sa.items() if sb.get(s) != v}
    sdel = sorted(set(sb) - set(sa))
    gd = {s: v for s, v in ga.items() if gb.get(s) != v}
    rows = [f"== {line['dialogue_id']}:{line['turn_id']} [{line['workflow']}] "
            f"raw={line['gold']['label']}"]
    for h in (line.get("history") or [])[-history_turns:]:
        rows.append(f"  U-1: {h['user']}")
        rows.append(f"  A-1: {h['agent']}")
    rows.append(f"  U:   {line['user']}")
    rows.append(f"  SYS: {line['agent'][:160]}")
    rows.append(f"  sysΔ: {sd}" + (f" del={sdel}" if sdel else ""))
    rows.append(f"  gldΔ: {gd}")
    held = {s: v for s, v in sa.items() if s not in sd}
    if held:
        rows.append(f"  sys held: {held}")
    for e in meta["errors"]:
        rows.append(f"  ERR {e['kind']} {e['slot']} sys={e['system']!r} gold={e['gold']!r} "
                    f"how={e['how']} type={e['value_type']}")
    for q in meta["quirks"]:
        rows.append(f"  quirk {q}")
    return "\n".join(rows)
