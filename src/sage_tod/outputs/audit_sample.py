"""`audit sample`: a seeded, stratified sample of verdicts, written as a blind audit set.

Strata are the tool's answers: one per fired failure class (a turn that fired
several classes goes to its rarest one, so the rare classes get their turns),
`undecided`, and `acceptable`. The acceptable stratum gets a fixed share of the
sample (misses can only be found there); the rest is split between the other
strata by weight: equal weights by default (every class gets the same number
of turns however rare it is), or proportional to the stratum's size, with
per-stratum weights on top. A stratum smaller than its quota gives its turns
back to the others. Every stratum's population and sample size go into the key,
so `audit score` can weight the sample back to the verdicts file.

The sample is drawn with Python's `random.Random(seed)` over the turns in file
order and then shuffled, so the same inputs and seed give the same audit set
byte for byte, and the item order says nothing about the strata.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle
from sage_tod.contracts.turns import iter_turn_lines
from sage_tod.contracts.verdicts import Verdict
from sage_tod.outputs.audit_set import (
    AuditItem,
    AuditKey,
    Exchange,
    KeyEntry,
    Manifest,
    RequiredField,
    StratumSize,
    ToolCall,
    WorkflowInfo,
    audit_id_of,
    items_text,
)

ACCEPTABLE, UNDECIDED = "acceptable", "undecided"
_TOOL_PREFIX = "[tool "


@dataclass(frozen=True)
class SampleOptions:
    """How many turns, and how they are spread over the strata."""

    n: int = 200
    seed: int = 0
    acceptable_share: float = 0.25
    allocation: str = "equal"  # equal | proportional
    weights: Mapping[str, float] = field(default_factory=dict)  # stratum -> weight


def stratum_of(v: Verdict, rarity: Mapping[str, int]) -> str:
    """`failure:CLASS` (the rarest class it fired), `failure`, `undecided` or `acceptable`."""
    if v.verdict != "failure":
        return v.verdict
    fired = sorted({str(c) for c in v.classes},
                   key=lambda c: (rarity.get(c, 0), _class_rank(c), c))
    return f"failure:{fired[0]}" if fired else "failure"


def _class_rank(c: str) -> int:
    return CLASS_NAMES.index(c) if c in CLASS_NAMES else len(CLASS_NAMES)


def _largest_remainder(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """`total` split in proportion to `weights` (whole numbers, summing to `total`)."""
    wsum = sum(weights.values())
    if total <= 0 or wsum <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / wsum for k, w in weights.items()}
    out = {k: int(x) for k, x in exact.items()}
    rest = total - sum(out.values())
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:rest]:
        out[k] += 1
    return out


def _fill(total: int, weights: Mapping[str, float], caps: Mapping[str, int]
          ) -> tuple[dict[str, int], int]:
    """Quotas by weight, capped at each stratum's size: a stratum whose fair share is
    more than it has gets all it has and the rest is shared again among the others;
    (quotas, turns no stratum could take) back."""
    alloc = dict.fromkeys(weights, 0)
    active = {k for k, w in weights.items() if w > 0 and caps[k] > 0}
    left = max(0, total)
    while active:
        wsum = sum(weights[k] for k in active)
        full = {k for k in active if left * weights[k] / wsum >= caps[k]}
        if not full:
            break
        for k in full:
            alloc[k] = caps[k]
            left -= caps[k]
        active -= full
    if active and left > 0:
        alloc.update(_largest_remainder(left, {k: weights[k] for k in sorted(active)}))
        left = 0
    return alloc, left


def allocate(sizes: Mapping[str, int], opts: SampleOptions) -> dict[str, int]:
    """Turns to draw per stratum (see the module docstring)."""
    if opts.n < 1:
        raise InputError("--n", "must be at least 1")
    if not 0 <= opts.acceptable_share <= 1:
        raise InputError("--acceptable-share", "must be between 0 and 1")
    if opts.allocation not in {"equal", "proportional"}:
        raise InputError("--allocation", f"unknown allocation {opts.allocation!r}; use "
                                         "equal or proportional")
    for name, w in opts.weights.items():
        if name not in sizes:
            raise InputError("--weight", f"no stratum {name!r} in the verdicts (strata: "
                             f"{', '.join(sorted(sizes))})")
        if w < 0:
            raise InputError("--weight", f"{name}: a weight cannot be negative")
    others = {k: v for k, v in sizes.items() if k != ACCEPTABLE}
    weights = {k: opts.weights.get(k, 1.0 if opts.allocation == "equal" else float(v))
               for k, v in others.items()}
    n_acc = sizes.get(ACCEPTABLE, 0)
    acc_weight = opts.weights.get(ACCEPTABLE, 1.0)
    acc_target = min(n_acc, round(opts.n * opts.acceptable_share)) if acc_weight > 0 else 0
    alloc, left = _fill(opts.n - acc_target, weights, others)
    if acc_weight > 0:
        alloc[ACCEPTABLE] = min(n_acc, acc_target + left)
        spare = opts.n - sum(alloc.values())
        if spare > 0:  # the acceptable turns ran out too: top the others up
            more, _ = _fill(spare, weights, {k: others[k] - alloc[k] for k in others})
            for k, q in more.items():
                alloc[k] += q
    elif ACCEPTABLE in sizes:
        alloc[ACCEPTABLE] = 0
    return alloc


def _str_field(obj: Mapping[str, Any], name: str, path: Path, line: int) -> str:
    v = obj.get(name)
    if not isinstance(v, str):
        raise InputError(path, "missing required field" if v is None else
                         "expected a string", line=line, field=name)
    return v


def _state(obj: Mapping[str, Any], name: str, path: Path, line: int) -> dict[str, str | None]:
    v = obj.get(name)
    if not isinstance(v, dict) or not all(isinstance(x, str | None) for x in v.values()):
        raise InputError(path, "expected an object of slot -> string or null", line=line,
                         field=name)
    return dict(v)


def _calls(raw: Any, path: Path, line: int, where: str) -> tuple[ToolCall, ...]:
    """The `tool_calls` field (list of {id, name, arguments, result, error})."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(path, "tool_calls must be a list", line=line, field=where)
    out: list[ToolCall] = []
    for j, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise InputError(path, "a tool call needs a string `name`", line=line,
                             field=f"{where}[{j}]")
        cid = c.get("id")
        out.append(ToolCall(id=cid if isinstance(cid, str) else None, name=c["name"],
                            arguments=c.get("arguments"), result=c.get("result"),
                            error=bool(c.get("error", False))))
    return tuple(out)


def _tool_entry(h: Exchange) -> tuple[str, str] | None:
    """(name, result) of a `{"user": "", "agent": "[tool NAME] RESULT"}` history entry."""
    if h.user or not h.agent.startswith(_TOOL_PREFIX) or "] " not in h.agent:
        return None
    name, _, result = h.agent[len(_TOOL_PREFIX):].partition("] ")
    return name, result


def _history(raw: Any, path: Path, line: int) -> list[Exchange]:
    if not isinstance(raw, list):
        raise InputError(path, "history must be a list", line=line, field="history")
    out: list[Exchange] = []
    for i, h in enumerate(raw):
        if not isinstance(h, dict) or not all(isinstance(h.get(k, ""), str)
                                              for k in ("user", "agent")):
            raise InputError(path, "a history entry needs string user and agent", line=line,
                             field=f"history[{i}]")
        calls = _calls(h.get("tool_calls"), path, line, f"history[{i}].tool_calls")
        ex = Exchange(user=h.get("user", ""), agent=h.get("agent", ""), tool_calls=calls)
        tool = _tool_entry(ex) if not calls else None
        if tool is not None:  # today's importers: a result shown as a history entry
            ex = Exchange(tool_calls=(ToolCall(name=tool[0], result=tool[1]),))
        out.append(ex)
    return out


def _legacy_calls(meta: Any, history: list[Exchange]) -> tuple[tuple[ToolCall, ...],
                                                                list[Exchange]]:
    """This turn's calls from `meta.tool_calls`, with their results taken from the tool
    entries that end h_<t (where `import --tool-results` puts turn t's own results)."""
    listed = meta.get("tool_calls") if isinstance(meta, dict) else None
    if not isinstance(listed, list) or not listed:
        return (), history
    tail = len(history)
    while tail > 0 and history[tail - 1].tool_calls and not history[tail - 1].agent:
        tail -= 1
    results = [h.tool_calls[0] for h in history[tail:] if len(h.tool_calls) == 1]
    used: set[int] = set()
    calls: list[ToolCall] = []
    for c in listed:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            continue
        j = next((k for k, r in enumerate(results) if k not in used and r.name == c["name"]),
                 None)
        result = None
        if j is not None:
            used.add(j)
            result = results[j].result
        calls.append(ToolCall(name=c["name"], result=result, error=c.get("ok") is False))
    if len(used) != len(results):  # results we could not place stay in the history
        return tuple(calls), history
    return tuple(calls), history[:tail]


def read_audit_turns(path: Path, wanted: set[str]) -> dict[str, AuditItem]:
    """The wanted turns (by key) as items without ids, read from the raw lines.

    Read defensively from the JSON dicts rather than through `Turn`, so that
    fields the turns format may gain (`tool_calls`) are shown as soon as a log
    has them; `history` absent means the dialogue's earlier turns, as
    everywhere else.
    """
    past: dict[str, list[Exchange]] = {}
    found: dict[str, AuditItem] = {}
    for n, obj in iter_turn_lines(path):
        if isinstance(obj, InputError):
            raise obj
        if not isinstance(obj, dict):
            raise InputError(path, "a turn must be a JSON object", line=n)
        did = _str_field(obj, "dialogue_id", path, n)
        tid = obj.get("turn_id")
        if isinstance(tid, bool) or not isinstance(tid, int | str):
            raise InputError(path, "expected an integer or string", line=n, field="turn_id")
        user = _str_field(obj, "user", path, n)
        agent = _str_field(obj, "agent", path, n)
        key = f"{did}:{tid}"
        earlier = past.setdefault(did, [])
        if key in wanted:
            hist = (list(earlier) if obj.get("history") is None
                    else _history(obj["history"], path, n))
            calls = _calls(obj.get("tool_calls"), path, n, "tool_calls")
            if not calls:
                calls, hist = _legacy_calls(obj.get("meta"), hist)
            found[key] = AuditItem(
                item="", dialogue_id=did, turn_id=tid,
                workflow=_str_field(obj, "workflow", path, n), history=tuple(hist),
                user=user, agent=agent,
                state_before=_state(obj, "state_before", path, n),
                state_after=_state(obj, "state_after", path, n), tool_calls=calls)
        earlier.append(Exchange(user=user, agent=agent))
    return found


def workflow_info(spec: SpecBundle, ids: Iterable[str]) -> dict[str, WorkflowInfo]:
    """The required fields, ordering and outcome of each workflow the items use."""
    out: dict[str, WorkflowInfo] = {}
    for wid in sorted(set(ids)):
        wf = spec.workflow(wid)
        if wf is None:
            raise InputError(spec.path, f"has no workflow {wid!r}, which the turns use")
        req = tuple(RequiredField(slot=s, description=wf.slots[s].description
                                  if s in wf.slots else "") for s in wf.required)
        out[wid] = WorkflowInfo(id=wid, description=wf.description, required=req,
                                order=wf.order_text(), outcome=wf.outcome_text)
    return out


@dataclass
class AuditSample:
    manifest: Manifest
    items: list[AuditItem]
    key: AuditKey
    unmatched_turns: int = 0


def sample_audit(verdicts: Sequence[Verdict], turns_path: Path, opts: SampleOptions, *,
                 verdicts_sha256: str, verdicts_path: str = "--verdicts",
                 spec: SpecBundle | None = None) -> AuditSample:
    """Draw the sample and build the audit set (nothing written)."""
    seen: dict[str, int] = {}
    for i, v in enumerate(verdicts, 1):
        if v.key in seen:
            raise InputError(verdicts_path, f"duplicate verdict for turn {v.key} (first on "
                             f"line {seen[v.key]})", line=i)
        seen[v.key] = i
    if not verdicts:
        raise InputError(verdicts_path, "no verdicts")
    rarity: Counter[str] = Counter(str(c) for v in verdicts if v.verdict == "failure"
                                   for c in set(v.classes))
    by_stratum: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_stratum.setdefault(stratum_of(v, rarity), []).append(v)
    sizes = {k: len(vs) for k, vs in sorted(by_stratum.items())}
    quotas = allocate(sizes, opts)
    rng = random.Random(opts.seed)
    picked: list[tuple[Verdict, str]] = []
    for name in sorted(by_stratum):
        pool = by_stratum[name]
        picked.extend((v, name) for v in rng.sample(pool, quotas.get(name, 0)))
    rng.shuffle(picked)
    if not picked:
        raise InputError("--weight", "every stratum with turns has weight 0: nothing to sample")
    turns = read_audit_turns(turns_path, {v.key for v, _ in picked})
    missing = [v.key for v, _ in picked if v.key not in turns]
    if missing:
        raise InputError(turns_path, f"has no turn for {len(missing)} sampled verdict(s), "
                         f"e.g. {missing[0]} (line {seen[missing[0]]} of {verdicts_path}): "
                         "give the turns file the verdicts were made from")
    width = max(3, len(str(len(picked))))
    items: list[AuditItem] = []
    entries: list[KeyEntry] = []
    for i, (v, name) in enumerate(picked, 1):
        iid = f"item-{i:0{width}d}"
        items.append(turns[v.key].model_copy(update={"item": iid}))
        entries.append(KeyEntry(item=iid, dialogue_id=v.dialogue_id, turn_id=v.turn_id,
                                verdict=v.verdict, classes=tuple(str(c) for c in v.classes),
                                stratum=name))
    aid = audit_id_of(items_text(items))
    taken = Counter(name for _, name in picked)
    wf = workflow_info(spec, (i.workflow for i in items)) if spec is not None else {}
    manifest = Manifest(audit_id=aid, n=len(items), seed=opts.seed, workflows=wf)
    configs = sorted({v.config for v in verdicts})
    key = AuditKey(audit_id=aid, verdicts_sha256=verdicts_sha256, config=",".join(configs),
                   strata={k: StratumSize(population=s, sampled=taken[k])
                           for k, s in sizes.items()},
                   items=tuple(entries))
    return AuditSample(manifest, items, key)
