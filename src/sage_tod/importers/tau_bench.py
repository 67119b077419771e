"""`tau-bench`: τ-bench result files and τ²-bench simulation runs.

τ-bench (sierra-research/tau-bench) writes a JSON list of
`{task_id, trial, reward, info, traj}` where `traj` is the OpenAI-style message
list the agent saw (system policy first; `tool_calls[].function.arguments` a JSON
string). τ²-bench (sierra-research/tau2-bench) writes a results document
`{info, tasks, simulations: [...]}` whose simulations carry `task_id`, `trial`,
`reward_info.reward` and `messages` with `tool_calls` as objects
(`{id, name, arguments: {...}}`) and tool messages `{id, content, error}`; a
single simulation object or a list of them is read too.

Every turn's `meta` keeps `task_id`, `trial` and `reward` (τ-bench's own
verdict on the whole conversation), so per-conversation comparisons need no
second file. Dialogue ids are `task<task_id>-trial<trial>` (τ²: the simulation
id is kept in `meta.simulation_id`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers.base import ImportResult, TurnDict
from sage_tod.importers.chat import counted_conversation, parse_messages
from sage_tod.importers.records import (
    STREAM_BYTES,
    Record,
    check_roles,
    file_size,
    iter_records,
    read_document,
    stream_records,
    top_level_keys,
)


def _reward(obj: dict[str, Any]) -> float | None:
    r = obj.get("reward")
    if r is None and isinstance(obj.get("reward_info"), dict):
        r = obj["reward_info"].get("reward")
    return float(r) if isinstance(r, int | float) and not isinstance(r, bool) else None


def read(path: Path, spec: SpecBundle, *, workflow: str | None = None,
         tool_results: bool = False, **_: Any) -> ImportResult:
    res = ImportResult(format="tau-bench", path=str(path))
    res.turns.extend(stream(res, path, spec, workflow=workflow, tool_results=tool_results))
    return res


def stream(res: ImportResult, path: Path, spec: SpecBundle, *, workflow: str | None = None,
           tool_results: bool = False, **_: Any) -> Iterator[TurnDict]:
    """The turns of `path`, one record (conversation) at a time, counted in `res`."""
    recs: Iterable[Record]
    if path.suffix.lower() == ".jsonl":
        recs = iter_records(path)
    else:
        # a results document is read one record at a time (ijson): memory holds one
        # simulation, and the bounded reader's limits apply per record, so a 25 MB
        # τ²-bench file with millions of values reads; anything else is read whole
        kind, keys = top_level_keys(path)
        if kind == "map" and "simulations" in keys:
            res.notes["tau2 results file"] += 1
            recs = stream_records(path, "simulations.item", "simulations")
        elif kind == "array" and file_size(path) > STREAM_BYTES:
            recs = stream_records(path, "item", "")
        else:
            recs = iter_records(path, read_document(path))
    seen: dict[str, int] = {}
    for rec in recs:
        obj = rec.obj
        if not isinstance(obj, dict):
            raise InputError(path, "a τ-bench record must be an object", line=rec.line,
                             field=rec.loc or None)
        if "traj" in obj:
            key, version = "traj", "tau-bench"
        elif "messages" in obj:
            key, version = "messages", "tau2-bench"
        else:
            raise InputError(path, "missing field 'traj' (τ-bench) or 'messages' "
                             "(τ²-bench)", line=rec.line, field=rec.field("traj"))
        if "task_id" not in obj:
            raise InputError(path, "missing field 'task_id'", line=rec.line,
                             field=rec.field("task_id"))
        check_roles(obj[key], path, rec.line, rec.field(key))
        msgs = parse_messages(obj[key], path, rec.line, rec.field(key))
        task, trial = obj["task_id"], obj.get("trial")
        did = f"task{task}" + (f"-trial{trial}" if trial is not None else "")
        if did in seen:  # the same task and trial twice (merged result files)
            seen[did] += 1
            did = f"{did}-{seen[did]}"
        else:
            seen[did] = 0
        meta: dict[str, Any] = {"source": version, "record": rec.where, "task_id": task,
                                "trial": trial, "reward": _reward(obj)}
        if version == "tau2-bench":
            meta["simulation_id"] = obj.get("id")
            meta["termination_reason"] = obj.get("termination_reason")
        yield from counted_conversation(res, msgs, spec, did, rec.where, workflow=workflow,
                                        meta=meta, tool_results=tool_results)
