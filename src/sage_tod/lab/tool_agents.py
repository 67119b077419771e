"""The tool-agent development benchmark: per-turn labels from τ/τ²-bench gold actions.

The held-out evaluation labels tool-agent turns from the benchmark authors'
gold actions, so the development slices are labelled the same way
(data/tool-agents/SOURCES.md). A turn (one user message and everything the
agent does until the next: exactly the turns `sage-tod import tau-bench`
produces) is

- **failure** when it holds a successful write call that matches no gold
  action of the task under τ²-bench's rule: same tool name, and the arguments
  named in `compare_args` (all of the call's arguments when it is null) equal;
  a retail return/exchange item list that differs only in order matches,
  because the retail backend stores those lists sorted;
- **clean** when it holds successful write calls and all of them match;
- **unlabelled** otherwise (no write call, or only failed ones: a failed call
  changed nothing, so gold says nothing about it).

A failing call gets a subclass: `unexpected_write` (no gold action uses that
tool), `wrong_target` (some gold action of the tool differs from the call only
in its target id, `order_id` / `reservation_id` / ...), else `wrong_argument`,
with the differing leaves against the closest gold action of the tool (lists
compared element by element, so a kept flight segment or an extra passenger is
one leaf). Write tools are read from τ²-bench's `domains/<d>/tools.py` with
`ast` (the `@is_tool(ToolType.WRITE)` methods); τ-bench v1 airline has the same
tool names.

`build_tool_agents` imports every trajectory file with the ordinary importer
and a domain spec and writes `<stem>.turns.jsonl` (gold filled on labelled
turns, `meta.tool_label` on every turn) plus `manifest.json`; nothing in the
output depends on the clock or the machine, so rebuilds are byte-identical.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.importers.base import TurnDict
from sage_tod.importers.chat import Call, Message, pair_results, parse_messages
from sage_tod.importers.records import read_document
from sage_tod.importers.tau_bench import read as read_tau_bench

LABELS = ("failure", "clean", "unlabelled")
SUBCLASSES = ("wrong_argument", "unexpected_write", "wrong_target")
# the entity a write acts on, most specific first: a call that differs from a
# gold action only here acted on the wrong order / reservation / line
TARGET_ARGS = ("order_id", "reservation_id", "line_id", "user_id", "customer_id")
# retail tools whose item lists the backend stores sorted (SOURCES.md)
SORTED_LISTS = {"return_delivered_order_items": ("item_ids",),
                "exchange_delivered_order_items": ("item_ids", "new_item_ids")}
DOMAINS = ("airline", "retail", "telecom")


# ---------------------------------------------------------------------------------------------
# write tools and gold actions


@dataclass(frozen=True)
class WriteTool:
    """A tool that changes the database, and the argument naming what it acts on."""

    name: str
    target: str | None


def _decorated_write(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        if (isinstance(dec, ast.Call) and dec.args and isinstance(dec.args[0], ast.Attribute)
                and dec.args[0].attr == "WRITE"):
            return True
    return False


def write_tools(tools_py: Path) -> dict[str, WriteTool]:
    """The `@is_tool(ToolType.WRITE)` methods of a τ²-bench `tools.py`, read with `ast`.

    Parsed, not imported: the file needs τ²-bench's package to run, and the
    benchmark must not execute code it only reads.
    """
    try:
        tree = ast.parse(tools_py.read_text(encoding="utf-8"), str(tools_py))
    except (OSError, SyntaxError) as exc:
        raise InputError(tools_py, f"cannot read the tool definitions: {exc}") from None
    out: dict[str, WriteTool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _decorated_write(node):
            params = [a.arg for a in node.args.args if a.arg != "self"]
            target = next((t for t in TARGET_ARGS if t in params), None)
            out[node.name] = WriteTool(node.name, target)
    if not out:
        raise InputError(tools_py, "no @is_tool(ToolType.WRITE) method found")
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class GoldAction:
    """One gold action of a task (only the agent's: `requestor` assistant)."""

    action_id: str
    name: str
    arguments: Mapping[str, Any]
    compare_args: tuple[str, ...] | None


def _gold_tau2(task: Mapping[str, Any]) -> list[GoldAction]:
    crit = task.get("evaluation_criteria") or {}
    out = []
    for i, a in enumerate(crit.get("actions") or []):
        if a.get("requestor", "assistant") != "assistant":
            continue  # the user's own device actions (telecom): not the agent's calls
        ca = a.get("compare_args")
        out.append(GoldAction(str(a.get("action_id", i)), a["name"], a.get("arguments") or {},
                              None if ca is None else tuple(ca)))
    return out


def _action_checks(sim: Mapping[str, Any]) -> list[GoldAction] | None:
    """The gold actions τ²-bench scored this run against, when it recorded them."""
    ri = sim.get("reward_info")
    ac = ri.get("action_checks") if isinstance(ri, dict) else None
    if not isinstance(ac, list):
        return None
    return _gold_tau2({"evaluation_criteria": {"actions": [c["action"] for c in ac
                                                            if isinstance(c, dict)
                                                            and isinstance(c.get("action"),
                                                                           dict)]}})


def _same_actions(a: Sequence[GoldAction], b: Sequence[GoldAction]) -> bool:
    def key(g: GoldAction) -> str:
        return json.dumps([g.name, g.arguments, g.compare_args], sort_keys=True)
    return sorted(map(key, a)) == sorted(map(key, b))


def _gold_tau1(task: Mapping[str, Any]) -> list[GoldAction]:
    return [GoldAction(str(i), a["name"], a.get("kwargs") or {}, None)
            for i, a in enumerate(task.get("actions") or [])]


# ---------------------------------------------------------------------------------------------
# the matching rule and the subclasses


def _normalised(tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(args)
    for key in SORTED_LISTS.get(tool, ()):
        v = out.get(key)
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[key] = sorted(v)
    return out


def compared_keys(call_args: Mapping[str, Any], gold: GoldAction) -> list[str]:
    """τ²-bench's keys: `compare_args`, or every argument of the call when it is null."""
    return list(gold.compare_args) if gold.compare_args is not None else list(call_args)


def matches(name: str, args: Mapping[str, Any], gold: GoldAction) -> bool:
    """τ²-bench's `Action.compare_with_tool_call`, plus the sorted retail item lists."""
    if name != gold.name:
        return False
    keys = compared_keys(args, gold)
    if not keys:
        return True
    a, g = _normalised(name, args), _normalised(name, gold.arguments)
    return ({k: a[k] for k in keys if k in a} == {k: g[k] for k in keys if k in g})


_ABSENT = object()


def leaf_diff(call: Any, gold: Any, path: str = "") -> list[dict[str, Any]]:
    """The leaves where two argument values differ; records and lists element by element.

    Each leaf is `{path, call, gold}`, a side left out when that side lacks the
    leaf (`passengers[2]` only in the call: an extra passenger).
    """
    if call is _ABSENT or gold is _ABSENT:
        leaf: dict[str, Any] = {"path": path}
        if call is not _ABSENT:
            leaf["call"] = call
        if gold is not _ABSENT:
            leaf["gold"] = gold
        return [leaf]
    if isinstance(call, dict) and isinstance(gold, dict):
        out: list[dict[str, Any]] = []
        for k in sorted(set(call) | set(gold), key=str):
            sub = f"{path}.{k}" if path else str(k)
            out += leaf_diff(call.get(k, _ABSENT), gold.get(k, _ABSENT), sub)
        return out
    if isinstance(call, list) and isinstance(gold, list):
        out = []
        for i in range(max(len(call), len(gold))):
            out += leaf_diff(call[i] if i < len(call) else _ABSENT,
                             gold[i] if i < len(gold) else _ABSENT, f"{path}[{i}]")
        return out
    return [] if call == gold else [{"path": path, "call": call, "gold": gold}]


def call_diff(name: str, args: Mapping[str, Any], gold: GoldAction) -> list[dict[str, Any]]:
    """Differing leaves of a call against a gold action of the same tool, on the compared keys."""
    keys = compared_keys(args, gold)
    a, g = _normalised(name, args), _normalised(name, gold.arguments)
    return leaf_diff({k: a[k] for k in keys if k in a}, {k: g[k] for k in keys if k in g})


@dataclass(frozen=True)
class CallLabel:
    """One successful write call of a turn, judged against the task's gold actions."""

    name: str
    arguments: Mapping[str, Any]
    match: bool
    gold: str | None  # the matching gold action, else the closest one of the tool
    subclass: str | None = None
    diff: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments), "match": self.match,
                "gold": self.gold, "subclass": self.subclass, "diff": list(self.diff)}


def judge_call(call: Call, golds: Sequence[GoldAction], writes: Mapping[str, WriteTool]
               ) -> CallLabel:
    """Match a successful write call; name the subclass and leaves when nothing matches."""
    for g in golds:
        if matches(call.name, call.args, g):
            return CallLabel(call.name, call.args, True, g.action_id)
    same = [g for g in golds if g.name == call.name]
    if not same:
        return CallLabel(call.name, call.args, False, None, "unexpected_write")
    diffs = [(len(d), i, g, d) for i, g in enumerate(same)
             for d in [call_diff(call.name, call.args, g)]]
    target = writes[call.name].target if call.name in writes else None
    for _, _, g, d in diffs:
        if target is not None and d and all(
                leaf["path"] == target or leaf["path"].startswith(target + ".")
                or leaf["path"].startswith(target + "[") for leaf in d):
            return CallLabel(call.name, call.args, False, g.action_id, "wrong_target", tuple(d))
    _, _, g, d = min(diffs, key=lambda x: (x[0], x[1]))
    return CallLabel(call.name, call.args, False, g.action_id, "wrong_argument", tuple(d))


@dataclass(frozen=True)
class TurnLabel:
    """The label of one turn: failure / clean / unlabelled, and what decided it."""

    label: str
    calls: tuple[CallLabel, ...] = ()
    failed_writes: int = 0  # write calls whose result was an error (they change nothing)

    @property
    def subclass(self) -> str | None:
        first = next((c for c in self.calls if not c.match), None)
        return first.subclass if first is not None else None

    @property
    def diff(self) -> list[dict[str, Any]]:
        first = next((c for c in self.calls if not c.match), None)
        return list(first.diff) if first is not None else []


def _failed(result: Message | None) -> bool:
    """The importer's rule (importers/chat.py): τ² `error: true`, or text starting "Error"."""
    if result is None:
        return False
    if result.error is not None:
        return result.error
    return result.text.lstrip().lower().startswith("error")


def conversation_labels(msgs: Sequence[Message], golds: Sequence[GoldAction],
                        writes: Mapping[str, WriteTool],
                        firsts: Sequence[int] | None = None) -> list[TurnLabel]:
    """One label per turn of the conversation, in order.

    `firsts` are the message indices where the importer opened its turns
    (`meta.first_message`); a turn holds every assistant call from there to
    the next turn's first message, so the labels follow whatever the importer
    counts as a turn (simulator control messages open none). Without it, every
    user message opens a turn. Calls before the first turn belong to no turn.
    """
    answers = pair_results(msgs)  # the importer's pairing (a reused call id included)
    starts = set(firsts) if firsts is not None else {m.index for m in msgs if m.role == "user"}
    turns: list[list[Call]] = []
    for m in msgs:
        if m.index in starts:
            turns.append([])
        if m.role == "assistant" and turns:
            turns[-1].extend(m.calls)
    out: list[TurnLabel] = []
    for calls in turns:
        judged: list[CallLabel] = []
        failed = 0
        for c in calls:
            if c.name not in writes:
                continue
            if c.id is not None and _failed(answers.get(id(c))):
                failed += 1
                continue
            judged.append(judge_call(c, golds, writes))
        if not judged:
            out.append(TurnLabel("unlabelled", (), failed))
        else:
            bad = any(not j.match for j in judged)
            out.append(TurnLabel("failure" if bad else "clean", tuple(judged), failed))
    return out


# ---------------------------------------------------------------------------------------------
# trajectory files


@dataclass
class Conversation:
    """One trajectory of a file: where the importer finds it, its task's gold and reward."""

    where: str  # the importer's meta.record: "record <index>"
    task_id: str
    messages: list[Message]
    golds: list[GoldAction]


@dataclass
class TrajectoryFile:
    """A trajectory file read for labelling: its shape, domain, agent and conversations."""

    path: Path
    domain: str
    version: str  # tau-bench | tau2-bench
    agent_model: str | None
    gold_source: str  # where the gold actions came from
    conversations: list[Conversation] = field(default_factory=list)
    import_path: Path | None = None  # a τ²-shaped copy when the importer cannot read the file


def _domain_of(path: Path, doc: Any) -> str:
    if isinstance(doc, dict):
        info = doc.get("info") or {}
        env = info.get("environment_info") or {} if isinstance(info, dict) else {}
        name = env.get("domain_name") if isinstance(env, dict) else None
        if isinstance(name, str) and name in DOMAINS:
            return name
    parts = path.stem.split("-")
    for d in DOMAINS:
        if d in parts:
            return d
    raise InputError(path, "cannot tell the domain (no info.environment_info.domain_name, "
                     "and no airline/retail/telecom in the file name)")


def _domain_tasks(data: Path, domain: str) -> dict[str, Mapping[str, Any]]:
    p = data / "domains" / domain / "tasks.json"
    if not p.exists():
        return {}
    doc = read_document(p)
    if not isinstance(doc, list):
        raise InputError(p, "tasks.json must be a list of tasks")
    return {str(t["id"]): t for t in doc}


def read_trajectories(path: Path, data: Path) -> TrajectoryFile:
    """Conversations of one τ-bench / τ²-bench file, with each task's gold actions.

    Shapes: a τ²-bench results document `{info, tasks, simulations}`; a bare
    list of τ²-bench simulations (its gold comes from `domains/<d>/tasks.json`);
    a τ-bench v1 list `{task_id, trial, reward, traj, info.task.actions}`; and
    τ²-bench's single-example document `{task, simulation_run}`, which the
    importer does not read, so it is given a τ²-shaped copy to import.
    """
    doc = read_document(path)
    domain = _domain_of(path, doc)
    if isinstance(doc, dict) and isinstance(doc.get("simulation_run"), dict) \
            and isinstance(doc.get("task"), dict):
        doc = {"info": doc.get("info"), "tasks": [doc["task"]],
               "simulations": [doc["simulation_run"]]}
        tf = TrajectoryFile(path, domain, "tau2-bench", None, "file (single example)")
        tf.import_path = Path("<tau2 copy>")
    elif isinstance(doc, dict) and isinstance(doc.get("simulations"), list):
        info = doc.get("info") or {}
        llm = (info.get("agent_info") or {}).get("llm") if isinstance(info, dict) else None
        tf = TrajectoryFile(path, domain, "tau2-bench", llm if isinstance(llm, str) else None,
                            "file")
    elif isinstance(doc, list) and doc and isinstance(doc[0], dict) and "traj" in doc[0]:
        tf = TrajectoryFile(path, domain, "tau-bench", None, "file (info.task.actions)")
    elif isinstance(doc, list):
        tf = TrajectoryFile(path, domain, "tau2-bench", None,
                            f"domains/{domain}/tasks.json")
    else:
        raise InputError(path, "not a τ-bench or τ²-bench trajectory file")
    if tf.version == "tau-bench":
        for i, rec in enumerate(doc):
            task = (rec.get("info") or {}).get("task") or {}
            msgs = parse_messages(rec["traj"], path, None, f"[{i}].traj")
            tf.conversations.append(Conversation(f"record {i}", str(rec["task_id"]), msgs,
                                                 _gold_tau1(task)))
        return tf
    if isinstance(doc, dict):
        tasks = {str(t["id"]): t for t in doc.get("tasks") or []}
        sims, loc = doc["simulations"], "simulations[{}]"
    else:
        tasks, sims, loc = _domain_tasks(data, domain), doc, "[{}]"
    checks = [_action_checks(sim) for sim in sims]
    # τ² stores the gold actions it scored a run against in reward_info.action_checks;
    # when they disagree with the task the simulation names, the file's task ids do
    # not name the tasks that ran (seen in one leaderboard submission), so the checks
    # are the only gold, and a run without checks ran a task without gold actions
    # (τ² writes none then; true in every file whose task ids agree)
    reliable = all(ch is None or str(sim.get("task_id")) not in tasks
                   or _same_actions(ch, _gold_tau2(tasks[str(sim.get("task_id"))]))
                   for sim, ch in zip(sims, checks, strict=True))
    if not reliable:
        tf.gold_source += "; task ids unreliable: reward_info.action_checks only"
    for i, (sim, ch) in enumerate(zip(sims, checks, strict=True)):
        tid = str(sim.get("task_id"))
        if ch is not None:
            golds = ch
            if not reliable:
                tid = ch[0].action_id.split("_")[0] if ch else f"unknown-{tid}"
        elif not reliable:
            golds, tid = [], f"no-gold-{tid}"
        elif tid in tasks:
            golds = _gold_tau2(tasks[tid])
        else:
            raise InputError(path, f"task {tid!r} of the simulation has no task definition "
                             f"({tf.gold_source})", field=loc.format(i) + ".task_id")
        msgs = parse_messages(sim.get("messages"), path, None, loc.format(i) + ".messages")
        tf.conversations.append(Conversation(f"record {i}", tid, msgs, golds))
    if tf.import_path is not None:
        tf.import_path = _tau2_copy(doc)
    return tf


def _tau2_copy(doc: Mapping[str, Any]) -> Path:
    fd, name = tempfile.mkstemp(prefix="sage-tod-tau2-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return Path(name)


# ---------------------------------------------------------------------------------------------
# slices


def md5(path: Path) -> str:
    h = hashlib.md5()  # a checksum for the manifest, as SOURCES.md lists
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def labelled_turns(tf: TrajectoryFile, spec: SpecBundle,
                   writes: Mapping[str, WriteTool]) -> list[TurnDict]:
    """The importer's turns of the file, each with `gold` (when labelled) and `meta.tool_label`."""
    src = tf.import_path or tf.path
    try:
        res = read_tau_bench(src, spec)
    finally:
        if tf.import_path is not None:
            tf.import_path.unlink(missing_ok=True)
    firsts: dict[str, list[int]] = {}
    for turn in res.turns:
        firsts.setdefault(turn["meta"]["record"], []).append(turn["meta"]["first_message"])
    convs = {c.where: c for c in tf.conversations}
    labels = {w: conversation_labels(convs[w].messages, convs[w].golds, writes, f)
              for w, f in firsts.items()}
    ordinal: Counter[str] = Counter()
    out: list[TurnDict] = []
    for turn in res.turns:
        meta = turn["meta"]
        conv = convs[meta["record"]]
        lab = labels[meta["record"]][ordinal[meta["record"]]]
        ordinal[meta["record"]] += 1
        tl: dict[str, Any] = {"label": lab.label, "subclass": lab.subclass, "diff": lab.diff,
                              "calls": [c.as_dict() for c in lab.calls],
                              "failed_writes": lab.failed_writes, "reward": meta.get("reward")}
        turn = dict(turn)
        turn["meta"] = {**meta, "domain": tf.domain, "file": tf.path.stem,
                        "task_key": f"{tf.domain}:{tf.version}:{conv.task_id}",
                        "tool_label": tl}
        if lab.label != "unlabelled":
            turn["gold"] = {"label": "failure" if lab.label == "failure" else "acceptable",
                            "class": None}
        out.append(turn)
    return out


def trajectory_files(data: Path) -> list[Path]:
    """The trajectory files of the data directory (SOURCES.md lists them), by name."""
    return sorted(p for p in data.glob("*.json") if p.is_file())


def build_tool_agents(data: Path, out: Path, specs: Mapping[str, tuple[Path, SpecBundle]]
                      ) -> dict[str, Any]:
    """Write `<stem>.turns.jsonl` for every file whose domain has a spec, and `manifest.json`.

    A file whose domain has no spec is listed in the manifest as skipped, with
    its label counts (labels need no spec; the turns file does).
    """
    files = trajectory_files(data)
    if not files:
        raise InputError(data, "no trajectory files (*.json) in the data directory")
    writes: dict[str, dict[str, WriteTool]] = {}
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"source": "tool-agents", "labels": "gold actions, τ²-bench's "
                                "matching rule (sage_tod.lab.tool_agents)", "files": {},
                                "specs": {d: {"path": p.as_posix(), "md5": md5(p)}
                                          for d, (p, _) in sorted(specs.items())}}
    totals: dict[str, Counter[str]] = {}
    for path in files:
        tf = read_trajectories(path, data)
        if tf.domain not in writes:
            writes[tf.domain] = write_tools(data / "domains" / tf.domain / "tools.py")
        w = writes[tf.domain]
        entry: dict[str, Any] = {"md5": md5(path), "bytes": path.stat().st_size,
                                 "domain": tf.domain, "version": tf.version,
                                 "agent_model": tf.agent_model, "gold": tf.gold_source,
                                 "conversations": len(tf.conversations)}
        if tf.domain in specs:
            turns = labelled_turns(tf, specs[tf.domain][1], w)
            name = f"{path.stem}.turns.jsonl"
            (out / name).write_text("".join(json.dumps(t, sort_keys=True, ensure_ascii=False)
                                            + "\n" for t in turns),
                                    encoding="utf-8", newline="\n")
            entry["turns_file"] = name
            entry["turns_md5"] = md5(out / name)
            labs = [t["meta"]["tool_label"] for t in turns]
        else:
            if tf.import_path is not None:
                tf.import_path.unlink(missing_ok=True)
            entry["skipped"] = f"no spec for domain {tf.domain}"
            labs = [{"label": lab.label, "subclass": lab.subclass}
                    for c in tf.conversations
                    for lab in conversation_labels(c.messages, c.golds, w)]
        counts = Counter(lab["label"] for lab in labs)
        subs = Counter(lab["subclass"] for lab in labs if lab["subclass"])
        entry["turns"] = len(labs)
        entry["labels"] = {k: counts.get(k, 0) for k in LABELS}
        entry["subclasses"] = {k: subs.get(k, 0) for k in SUBCLASSES}
        manifest["files"][path.name] = entry
        tot = totals.setdefault(tf.domain, Counter())
        tot.update({**entry["labels"], **entry["subclasses"], "turns": len(labs),
                    "conversations": len(tf.conversations)})
    manifest["domains"] = {d: dict(sorted(c.items())) for d, c in sorted(totals.items())}
    manifest["write_tools"] = {d: {n: t.target for n, t in w.items()}
                               for d, w in sorted(writes.items())}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True,
                                                  ensure_ascii=False) + "\n",
                                       encoding="utf-8", newline="\n")
    return manifest


def iter_slice_turns(slices: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file stem, turn line) for every turns file the manifest of `slices` lists."""
    mpath = slices / "manifest.json"
    if not mpath.exists():
        raise InputError(mpath, "no manifest.json; build with `sage-tod slices tool-agents`")
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    for name, entry in sorted(manifest["files"].items()):
        tfile = entry.get("turns_file")
        if not tfile:
            continue
        stem = Path(name).stem
        with (slices / tfile).open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield stem, json.loads(line)
