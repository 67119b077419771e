"""Turns from MultiWOZ_Evaluation predictions, joined with the corpus.

The MultiWOZ community reports end-to-end systems in one file format (the
`mwzeval` prediction format, Nekvinda & Dušek 2021):
`{dialogue_id: [{"response": str, "state": {domain: {slot: value}},
"active_domains"?: [...]}, ...]}`, one entry per *system* turn, in order. The
file holds only what the system produced; everything else a turn needs comes
from the corpus the system was run on (MultiWOZ 2.1, ConvLab-2 copy):

- u_t and h_<t are the corpus's (end-to-end MultiWOZ systems are run turn by
  turn on the gold context, so the history is what the system actually saw);
- a_t is the system's `response`; s_t is the system's `state` flattened to the
  spec's slot names, and s_{t-1} is the system's previous `state` (empty before
  the first turn);
- the workflow of a turn is the corpus rule of the MultiWOZ loader
  (docs/datasets.md: domain of the user's acts, else of the system's, else of
  the changed gold state, else the previous turn's), and turns outside the
  spec's workflows (police, hospital, greetings) are not yielded.

mwzeval slot names vary by system (`pricerange`, `price range`, `arriveby`,
`arrive by`, `arrive`, `leave`, `people`, `day`, `stay`, `time`); they map onto
the spec by rule: spaces dropped, `arrive`/`leave` completed, then `domain-key`
if the spec has it, else `domain-bookkey` (`people` -> `hotel-bookpeople`,
`day` -> `train-day` but `hotel-bookday`). Values keep their spelling except two
format repairs: the corpus tokenisation of clitics and clock times is undone
("saint john 's college" -> "saint john's college", "17 : 45" -> "17:45") and
every spelling of "don't care" becomes the MultiWOZ value `dontcare`.

No dialogue acts are produced (the format has none), so the turns are text-only.
The corpus's own states ride along in `meta` (`corpus_state_before/after`) for
benchmarks; the evaluator never reads `meta`.

The corpus format (states, the workflow rule) is read through
`sage_tod.importers.multiwoz_dialogues`, as the dataset loader reads it. The
`sage-tod import mwzeval` / `evaluate --format mwzeval` commands reach this
module through the format registry (`sage_tod.importers.base`).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers.multiwoz_dialogues import DOMAINS, flat_state, turn_domain
from sage_tod.text import is_dontcare, is_unset

TurnDict = dict[str, Any]
UnknownSlots = Literal["error", "drop"]

# mwzeval key (spaces removed, lower case) -> the MultiWOZ metadata key it abbreviates
SLOT_ALIASES: Mapping[str, str] = {"arrive": "arriveby", "leave": "leaveat"}
SPLIT_FILES: Mapping[str, str] = {"test": "multiwoz/mwz21_convlab2/test.json.gz",
                                  "val": "multiwoz/mwz21_convlab2/val.json.gz"}
_CLITIC_RE = re.compile(r"(\w) (n't|'s|'re|'ll|'m|'ve|'d)\b")
_SPACED_CLOCK_RE = re.compile(r"\b(\d{1,2}) ?: ?(\d{2})\b")


@dataclass
class ImportCounts:
    """What an import read and what it left out, for the command's summary line."""

    dialogues: int = 0
    system_turns: int = 0
    turns: int = 0
    outside_workflows: int = 0
    dropped_slots: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"dialogues": self.dialogues, "system_turns": self.system_turns,
                "turns": self.turns, "outside_workflows": self.outside_workflows,
                "dropped_slots": dict(sorted(self.dropped_slots.items()))}


def corpus_key(dialogue_id: str) -> str:
    """The corpus id of a prediction id: `pmul4603` -> `PMUL4603` (no `.json`)."""
    return dialogue_id.strip().removesuffix(".json").upper()


def spec_slot(domain: str, key: str, slot_names: Iterable[str]) -> str | None:
    """The spec slot an mwzeval (domain, key) names, or None when the spec has none."""
    names = set(slot_names)
    k = key.replace(" ", "").replace("_", "").lower()
    k = SLOT_ALIASES.get(k, k)
    for cand in (f"{domain}-{k}", f"{domain}-book{k}"):
        if cand in names:
            return cand
    return None


def clean_value(value: str) -> str:
    """Undo the corpus tokenisation of clitics and spell every don't-care as `dontcare`."""
    v = " ".join(value.split())
    if is_dontcare(v) or v.replace(" ", "") in {"don'tcare", "don'tcare.", "dontcare"}:
        return "dontcare"
    return _SPACED_CLOCK_RE.sub(r"\1:\2", _CLITIC_RE.sub(r"\1\2", v))


def read_predictions(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Read and shape-check a prediction file; errors name the file, dialogue and turn."""
    p = Path(path)
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(p, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(p, f"cannot read file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(p, f"malformed JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(data, dict) or not data:
        raise InputError(p, "expected a non-empty object {dialogue_id: [turn, ...]} "
                         "(the MultiWOZ_Evaluation prediction format)")
    for did, turns in data.items():
        if not isinstance(turns, list):
            raise InputError(p, f"dialogue {did}: expected a list of system turns")
        for i, t in enumerate(turns):
            where = f"dialogue {did} turn {i}"
            if not isinstance(t, dict):
                raise InputError(p, f"{where}: expected an object with 'response' and 'state'")
            if not isinstance(t.get("response"), str):
                raise InputError(p, f"{where}: 'response' must be a string",
                                 field="response")
            st = t.get("state", {})
            if not isinstance(st, dict) or not all(
                    isinstance(sl, dict) and all(isinstance(v, str) for v in sl.values())
                    for sl in st.values()):
                raise InputError(p, f"{where}: 'state' must be {{domain: {{slot: string}}}}",
                                 field="state")
    return data


def load_corpus(path: str | Path) -> dict[str, Any]:
    """Corpus dialogues by upper-case id without `.json` (JSON or gzipped JSON)."""
    p = Path(path)
    try:
        with (gzip.open(p, "rt", encoding="utf-8") if p.suffix == ".gz"
              else p.open(encoding="utf-8")) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError(p, "corpus file not found (MultiWOZ 2.1, ConvLab-2 copy; see "
                         "docs/datasets.md)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(p, f"cannot read corpus: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(p, "a corpus must be an object {dialogue_id: dialogue}")
    return {corpus_key(k): v for k, v in data.items()}


def system_state(state: Mapping[str, Mapping[str, str]], slot_names: frozenset[str],
                 where: str, unknown_slots: UnknownSlots, counts: ImportCounts
                 ) -> dict[str, str]:
    """A system's mwzeval state as a flat {spec slot: value}; unset values omitted."""
    out: dict[str, str] = {}
    for dom, slots in state.items():
        for key, value in slots.items():
            name = spec_slot(dom.lower(), key, slot_names)
            if name is None:
                if unknown_slots == "error":
                    raise InputError(where, f"unknown slot '{dom}-{key}': the spec has no "
                                     "such slot (unknown_slots='drop' leaves it out)",
                                     field=f"state.{dom}.{key}")
                counts.dropped_slots[f"{dom}-{key}"] += 1
                continue
            if is_unset(value):
                continue
            out[name] = clean_value(value)
    return dict(sorted(out.items()))


def default_data_root() -> Path:
    """$SAGE_TOD_DATA; nothing is guessed from a checkout or the working directory.

    Without it the import cannot find the corpus, and the error says which files it
    needs and where they come from (or to pass the corpus file itself).
    """
    env = os.environ.get("SAGE_TOD_DATA")
    if env:
        return Path(env).expanduser()
    raise InputError("$SAGE_TOD_DATA", "not set, so the MultiWOZ 2.1 corpus the predictions "
                     f"refer to cannot be found: pass --corpus FILE, or set SAGE_TOD_DATA to a "
                     f"directory with {SPLIT_FILES['test']} (and optionally {SPLIT_FILES['val']}"
                     "; ConvLab-2's MultiWOZ 2.1, thu-coai/ConvLab-2 data/multiwoz/"
                     "{test,val}.json.zip, unzipped and gzipped)")


def _corpus_files(corpus_path: str | Path | None, root: Path | None) -> list[Path]:
    if corpus_path is not None:
        return [Path(corpus_path)]
    base = root if root is not None else default_data_root()
    return [base / SPLIT_FILES["test"], base / SPLIT_FILES["val"]]


def read_mwzeval(pred_path: str | Path, corpus_path: str | Path | None, spec: SpecBundle, *,
                 unknown_slots: UnknownSlots = "error", dialogues: Iterable[str] | None = None,
                 root: Path | None = None) -> tuple[list[TurnDict], ImportCounts]:
    """Turns (public turn-JSONL dicts) of a prediction file, and what was read.

    `corpus_path` None reads the MultiWOZ 2.1 test split from the data directory
    and, for ids not found there, the validation split. `dialogues` restricts the
    import to those prediction ids. `unknown_slots="drop"` leaves out slots the
    spec lacks (counted) instead of stopping at the first.
    """
    preds = read_predictions(pred_path)
    wanted = None if dialogues is None else {d.lower() for d in dialogues}
    slot_names = frozenset(spec.all_slots) | frozenset(
        s for wf in spec.workflows.values() for s in wf.slots)
    files = _corpus_files(corpus_path, root)
    pending = list(files)
    corpus: dict[str, Any] = {}
    counts = ImportCounts()
    turns: list[TurnDict] = []
    for did in sorted(preds):
        if wanted is not None and did.lower() not in wanted:
            continue
        key = corpus_key(did)
        while key not in corpus and pending:
            nxt = pending.pop(0)
            if nxt != files[0] and not nxt.exists():
                continue  # the validation split is optional
            corpus.update(load_corpus(nxt))
        if key not in corpus:
            raise InputError(pred_path, f"dialogue {did}: unknown dialogue id, not in "
                             + ", ".join(str(f) for f in files))
        turns.extend(_dialogue(str(pred_path), did, key, preds[did], corpus[key], spec,
                               slot_names, unknown_slots, counts))
    return turns, counts


def _dialogue(path: str, did: str, key: str, pred: list[dict[str, Any]], dlg: Mapping[str, Any],
              spec: SpecBundle, slot_names: frozenset[str], unknown_slots: UnknownSlots,
              counts: ImportCounts) -> list[TurnDict]:
    log = dlg["log"]
    n = len(log) // 2
    if len(pred) != n:
        raise InputError(path, f"dialogue {did}: {len(pred)} system turns, but the corpus "
                         f"dialogue {key} has {n}")
    counts.dialogues += 1
    counts.system_turns += n
    corpus_names = frozenset(slot_names)
    out: list[TurnDict] = []
    history: list[dict[str, str]] = []
    sys_before: dict[str, str] = {}
    gold_before: dict[str, str] = {}
    prev_dom: str | None = None
    for k in range(n):
        u, a = log[2 * k], log[2 * k + 1]
        gold_after = flat_state(a.get("metadata") or {}, corpus_names)
        sys_after = system_state(pred[k].get("state", {}), slot_names,
                                 f"{path}: dialogue {did} turn {k}", unknown_slots, counts)
        dom, rule = turn_domain(u.get("dialog_act") or {}, a.get("dialog_act") or {},
                                gold_before, gold_after, prev_dom)
        if dom is not None and dom in spec.workflows:
            meta: dict[str, Any] = {
                "source": "mwzeval", "corpus_id": key, "domain_rule": rule,
                "corpus_state_before": dict(gold_before), "corpus_state_after": gold_after,
                "corpus_agent": a["text"],
            }
            if "active_domains" in pred[k]:
                meta["active_domains"] = list(pred[k]["active_domains"])
            out.append({
                "dialogue_id": did, "turn_id": k, "workflow": dom,
                "user": u["text"], "agent": pred[k]["response"],
                "state_before": dict(sys_before), "state_after": dict(sys_after),
                "history": [dict(h) for h in history], "meta": meta,
            })
            counts.turns += 1
        else:
            counts.outside_workflows += 1
        history.append({"user": u["text"], "agent": a["text"]})
        sys_before, gold_before, prev_dom = sys_after, gold_after, dom
    return out


__all__ = ["DOMAINS", "ImportCounts", "clean_value", "corpus_key", "default_data_root",
           "flat_state", "load_corpus", "read_mwzeval", "read_predictions", "spec_slot",
           "system_state", "turn_domain"]
