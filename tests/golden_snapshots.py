"""Golden snapshots: what the compiler read and what the cascade decided, per turn.

A snapshot line holds, for one turn, the compiled criteria (id, class, args and the
compiler's evidence span: the extraction) and, per configuration (`s1`, `core`), the
turn verdict, the classes that fired and each criterion's decision, deciding stage,
margin (4 decimals) and support span. Timings, rationales and anything else a
machine can change are left out. Spans keep their offsets, not their text: the data
sets' words stay in `$SAGE_TOD_DATA`, and `input` (a hash of the turn as evaluated)
says whether the turn itself changed, so a diff tells "the input moved" from "the
evaluator moved".

Two snapshots are compared with `sage-tod bench diff`'s notion of the same verdict
(`sage_tod.lab.verdict_diff`): any field that differs is a change, and a change is
*decided* when the label, the classes or a criterion's (id, decision, deciding stage)
moved; otherwise it is a detail (margin, span, args). Margins within one unit of the
fourth decimal count as equal (`MARGIN_TOLERANCE`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.cascade import Cascade
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.lab.datasets.common import dumps_line
from sage_tod.lab.verdict_diff import _decided as verdict_decided

GOLDEN_DIR = Path(__file__).parent / "fixtures" / "golden"
CONFIGS: tuple[str, ...] = ("s1", "core")
UPDATE_ENV = "SAGE_TOD_UPDATE_GOLDEN"
UPDATE_COMMAND = f"{UPDATE_ENV}=1 pytest tests/test_golden.py"
MARGIN_DECIMALS = 4
# Two margins this close are the same: a score that differs in its last bits on another
# CPU (ONNX Runtime's kernels differ by instruction set) can round to the neighbouring
# fourth decimal; a real change moves a margin further, or moves a decision.
MARGIN_TOLERANCE = 1.5 * 10 ** -MARGIN_DECIMALS
SHOWN_TURNS = 15  # a diff spells out this many turns per file, then counts the rest

TurnDict = dict[str, Any]
Row = dict[str, Any]


@dataclass
class Source:
    """Turns of one origin (the demo, a fixture log, a built slice) and their spec.

    `pick` chooses which turns a regenerated snapshot keeps (all by default); the
    comparison evaluates exactly the turns the snapshot file names, so the choice is
    made once, when the file is written, and reviewed with it.
    """

    name: str
    spec: SpecBundle
    turns: list[TurnDict]
    pick: Callable[[TurnDict], bool] | None = None


def turn_key(t: Mapping[str, Any]) -> str:
    return f"{t['dialogue_id']}:{t['turn_id']}"


def every_nth(n: int, salt: str = "") -> Callable[[TurnDict], bool]:
    """A stable 1-in-n choice by the turn's key (CRC-32), independent of file order."""
    return lambda t: zlib.crc32(f"{salt}{turn_key(t)}".encode()) % n == 0


def input_hash(t: Mapping[str, Any]) -> str:
    return hashlib.sha256(dumps_line(t).encode()).hexdigest()[:16]


def _span(s: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {k: s[k] for k in ("source", "index", "start", "end")}


def _extraction(v: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"id": c["id"], "class": c["class"], "args": c["args"],
             "evidence": _span(c.get("evidence"))} for c in v["criteria"]]


def _outcome(v: Mapping[str, Any]) -> dict[str, Any]:
    return {"verdict": v["verdict"], "classes": v["classes"],
            "criteria": [{"id": c["id"], "decision": c["decision"],
                          "decided_by": c["decided_by"],
                          "margin": round(float(c["margin"]), MARGIN_DECIMALS),
                          "support": _span(c.get("support"))} for c in v["criteria"]]}


def snapshot(source: str, turn: Mapping[str, Any], verdicts: Mapping[str, Verdict]) -> Row:
    """One snapshot line; the extraction is `s1`'s, and a configuration that compiled
    other criteria keeps its own under `criteria` in its entry."""
    dumped = {cfg: v.to_dict() for cfg, v in verdicts.items()}
    base = _extraction(dumped[CONFIGS[0]])
    row: Row = {"source": source, "key": turn_key(turn), "workflow": turn["workflow"],
                "input": input_hash(turn), "criteria": base}
    for cfg, d in dumped.items():
        entry = _outcome(d)
        own = _extraction(d)
        if own != base:
            entry["compiled"] = own
        row[cfg] = entry
    return row


class Evaluators:
    """One cascade per configuration for the whole run, so S2's model loads once and its
    pair scores are cached across every source (in a file under the test's tmp dir)."""

    def __init__(self, cache_path: Path) -> None:
        self.cascades = {cfg: Cascade.from_config(cfg, {"cache_path": str(cache_path)}
                                                  if cfg != "s1" else None)
                         for cfg in CONFIGS}
        missing = {cfg: c.missing for cfg, c in self.cascades.items() if c.missing}
        if missing:
            raise RuntimeError(f"golden configurations cannot run every stage: {missing}")

    def rows(self, src: Source, keys: Iterable[str] | None = None) -> list[Row]:
        """Snapshot lines for `keys` (in that order; None: the turns `src.pick` keeps)."""
        by_key: dict[str, TurnDict] = {}
        for t in src.turns:
            k = turn_key(t)
            if k in by_key:
                raise ValueError(f"{src.name}: turn {k} appears twice")
            by_key[k] = t
        if keys is None:
            chosen = [t for t in src.turns if src.pick is None or src.pick(t)]
        else:
            chosen = [by_key[k] for k in keys if k in by_key]
        verdicts = {cfg: list(Evaluator(src.spec, cascade=c).evaluate(chosen))
                    for cfg, c in self.cascades.items()}
        return [snapshot(src.name, t, {cfg: vs[i] for cfg, vs in verdicts.items()})
                for i, t in enumerate(chosen)]


# files


def read_rows(path: Path) -> list[Row]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def write_rows(path: Path, rows: Iterable[Row]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            fh.write(dumps_line(r) + "\n")
            n += 1
    return n


def row_id(r: Mapping[str, Any]) -> tuple[str, str]:
    return (str(r["source"]), str(r["key"]))


def expected_keys(rows: Sequence[Row]) -> dict[str, list[str]]:
    """The turn keys a snapshot file names, per source, in file order."""
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(str(r["source"]), []).append(str(r["key"]))
    return out


# the readable diff


def _json(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False, sort_keys=True)


def _fmt(x: Any) -> str:
    """Words as they are (decisions, stages), anything else as JSON."""
    return x if isinstance(x, str) else _json(x)


def _changes(name: str, a: Any, b: Any) -> list[str]:
    """`name: old -> new`, key by key where both sides are mappings (args, spans)."""
    if a == b:
        return []
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return [f"{name}.{k} {_json(a.get(k))} -> {_json(b.get(k))}"
                for k in [*a, *(k for k in b if k not in a)] if a.get(k) != b.get(k)]
    return [f"{name} {_fmt(a)} -> {_fmt(b)}"]


def _crit_line(c: Mapping[str, Any]) -> str:
    return f"{c['id']} [{c['class']}] args={_fmt(c['args'])} evidence={_fmt(c['evidence'])}"


def _extraction_diff(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
                     label: str) -> list[str]:
    a = {c["id"]: c for c in old}
    b = {c["id"]: c for c in new}
    out: list[str] = []
    for cid in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(cid), b.get(cid)
        if x == y:
            continue
        if x is None:
            out.append(f"{label}: + {_crit_line(y)}")  # type: ignore[arg-type]
        elif y is None:
            out.append(f"{label}: - {_crit_line(x)}")
        else:
            parts = [p for f in ("class", "args", "evidence")
                     for p in _changes(f, x.get(f), y.get(f))]
            out.append(f"{label}: {cid}: " + ", ".join(parts))
    if not out and [c["id"] for c in old] != [c["id"] for c in new]:
        out.append(f"{label}: order {[c['id'] for c in old]} -> {[c['id'] for c in new]}")
    return out


def _outcome_diff(cfg: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
                  ) -> list[str]:
    if old == new:
        return []
    if old is None or new is None:
        return [f"{cfg}: {'not in the snapshot' if old is None else 'not evaluated now'}"]
    out: list[str] = []
    if old["verdict"] != new["verdict"]:
        out.append(f"{cfg} verdict: {old['verdict']} -> {new['verdict']}")
    if old.get("classes") != new.get("classes"):
        out.append(f"{cfg} classes: {old.get('classes')} -> {new.get('classes')}")
    a = {c["id"]: c for c in old["criteria"]}
    b = {c["id"]: c for c in new["criteria"]}
    for cid in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(cid), b.get(cid)
        if x == y:
            continue
        if x is None or y is None:
            c = x or y
            assert c is not None
            sign = "-" if y is None else "+"
            out.append(f"{cfg} {sign} {cid}: {c['decision']} by {c['decided_by']} "
                       f"(margin {c['margin']})")
            continue
        parts = [p for f in ("decision", "decided_by", "margin", "support")
                 for p in _changes(f, x.get(f), y.get(f))]
        out.append(f"{cfg} {cid}: " + ", ".join(parts))
    if "compiled" in old or "compiled" in new:
        out += _extraction_diff(old.get("compiled", []), new.get("compiled", []),
                                f"{cfg} compiled")
    return out


@dataclass(frozen=True)
class RowChange:
    source: str
    key: str
    decided: bool  # `bench diff`'s notion: a label, class or (id, decision, stage) moved
    lines: list[str]


def _without_rounding_noise(old: Row, new: Row) -> Row:
    """`new` with every margin within `MARGIN_TOLERANCE` of the snapshot's set to it."""
    out = copy.deepcopy(new)
    for cfg in CONFIGS:
        if not isinstance(old.get(cfg), dict) or not isinstance(out.get(cfg), dict):
            continue
        before = {c["id"]: c for c in old[cfg]["criteria"]}
        for c in out[cfg]["criteria"]:
            b = before.get(c["id"])
            if b is not None and abs(float(c["margin"]) - float(b["margin"])) <= MARGIN_TOLERANCE:
                c["margin"] = b["margin"]
    return out


def row_change(old: Row | None, new: Row | None) -> RowChange | None:
    """What differs between the snapshot's line and today's, in words; None when equal."""
    if old is not None and new is not None:
        new = _without_rounding_noise(old, new)
    if old == new:
        return None
    ref = old if old is not None else new
    assert ref is not None
    src, key = row_id(ref)
    if old is None:
        return RowChange(src, key, True, ["new turn, not in the snapshot"])
    if new is None:
        return RowChange(src, key, True, ["in the snapshot, but the source has no such turn "
                                          "now"])
    lines: list[str] = []
    if old.get("input") != new.get("input"):
        lines.append("input turn changed (data set, builder or importer), not only the "
                     "evaluator")
    if old.get("workflow") != new.get("workflow"):
        lines.append(f"workflow: {old.get('workflow')} -> {new.get('workflow')}")
    lines += _extraction_diff(old["criteria"], new["criteria"], "extraction")
    decided = False
    for cfg in sorted({*CONFIGS, *(k for k in old if k in CONFIGS),
                       *(k for k in new if k in CONFIGS)}):
        o, n = old.get(cfg), new.get(cfg)
        lines += _outcome_diff(cfg, o, n)
        if o != n:
            decided = decided or o is None or n is None or verdict_decided(o, n)
    return RowChange(src, key, decided, lines)


def compare(old_rows: Sequence[Row], new_rows: Sequence[Row]) -> list[RowChange]:
    """Every changed turn, in the snapshot's order, then turns new to it."""
    a = {row_id(r): r for r in old_rows}
    b = {row_id(r): r for r in new_rows}
    out: list[RowChange] = []
    for k in [*a, *(k for k in b if k not in a)]:
        ch = row_change(a.get(k), b.get(k))
        if ch is not None:
            out.append(ch)
    return out


def report(name: str, n_turns: int, changes: Sequence[RowChange],
           texts: Mapping[tuple[str, str], str] | None = None) -> str:
    """A few lines per changed turn: which turn, which criterion, old -> new."""
    if not changes:
        return f"{name}: {n_turns} turn(s), no change"
    decided = sum(c.decided for c in changes)
    head = (f"{name}: {len(changes)} of {n_turns} turn(s) differ from the snapshot "
            f"({decided} decided: label, class, decision or deciding stage; "
            f"{len(changes) - decided} detail only: margin, span or args)")
    out = [head]
    for ch in changes[:SHOWN_TURNS]:
        kind = "decided" if ch.decided else "detail"
        out.append(f"  [{kind}] {ch.source} {ch.key}")
        user = (texts or {}).get((ch.source, ch.key))
        if user is not None:
            out.append(f"      user: {user[:100]!r}")
        out += [f"      {line}" for line in ch.lines]
    if len(changes) > SHOWN_TURNS:
        out.append(f"  ... and {len(changes) - SHOWN_TURNS} more turn(s)")
    out.append(f"  If the change is intended: {UPDATE_COMMAND}, then review "
               "`git diff tests/fixtures/golden`.")
    return "\n".join(out)
