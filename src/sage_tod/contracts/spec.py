"""Workflow specifications W = (S, F, ordering, O): load, validate, query.

The file format is a public contract (docs/formats.md). Loading is strict:
unknown keys, unknown slot names, duplicate ids and ordering cycles are errors
that name the file and the field, because a silently mis-read spec would give
silently wrong verdicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, Literal, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.predicate import (
    Node,
    PredicateSyntaxError,
    expand_all_required,
    parse_predicate,
    render,
)
from sage_tod.contracts.safejson import UnsafeDocument, check_tree, parse_json
from sage_tod.contracts.tool_rules import (
    PREFERENCE_NAMES,
    RuleSyntaxError,
    ToolPreference,
    ToolRule,
    ToolTarget,
    compile_rule,
)
from sage_tod.text.keys import normalize_typed
from sage_tod.text.memo import remembered
from sage_tod.text.normalize import is_unset, synonym_table

SlotType = Literal["categorical", "free", "number", "time", "date", "boolean"]


_T = TypeVar("_T")
_KEYS_MAX = 20_000  # values remembered per slot by `normalize` and `surface_forms`


class SlotSpec(BaseModel):
    """One slot of the schema S."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    type: SlotType = "free"
    values: tuple[str, ...] = ()
    synonyms: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # a corpus convention, off by default: a value of this slot the user asks about in a
    # yes/no question ("Do they have free internet?") counts as stated (MultiWOZ records
    # the amenities asked about; SGD does not)
    recorded_when_asked: bool = False
    # a corpus convention, off by default: a value of this slot that is also the word the
    # workflow is named by ("a hotel" for hotel-type = hotel) counts as stated; off, the
    # word names the task, not a value, unless contrasted ("a hotel, not a guesthouse")
    recorded_from_task_word: bool = False
    # a corpus convention, off by default: a value of this slot that ends the name of an
    # entity the user names ("Clare College" for attraction-type = college) counts as
    # stated; off, a word inside a name is part of the name
    recorded_from_names: bool = False

    @field_validator("name")
    @classmethod
    def _strip_name(cls, v: str) -> str:
        if v != v.strip() or not v.strip():
            raise ValueError("slot names may not be blank or start/end with spaces")
        return v

    @cached_property
    def table(self) -> dict[str, str]:
        """basic(surface form) -> canonical value (categorical values and synonyms)."""
        return synonym_table(self.values, self.synonyms)

    @cached_property
    def _keys(self) -> dict[str, str]:
        return {}

    def normalize(self, value: str) -> str:
        """The comparison key of `value` for this slot (`text.keys.normalize_typed`),
        memoised per slot: the diff, S1 and the extractor ask for the same few values
        again and again."""
        return remembered(self._keys, value,
                          lambda v: normalize_typed(v, self.type, self.table), _KEYS_MAX)

    @cached_property
    def _forms(self) -> dict[str, tuple[str, ...]]:
        return {}

    def surface_forms(self, value: str) -> list[str]:
        """Every way the schema lets `value` be written: itself plus its synonyms
        (memoised per slot, like `normalize`)."""
        forms: tuple[str, ...] = remembered(self._forms, value, self._written_forms, _KEYS_MAX)
        return list(forms)

    def _written_forms(self, value: str) -> tuple[str, ...]:
        canon = self.table.get(normalize_typed(value, "free"), value)
        return tuple(dict.fromkeys([value, canon, *self.synonyms.get(canon, ())]))


class _AnyBucket(BaseModel):
    """`{any: [a, b]}` in `order`: later buckets open once any one of a, b is filled."""

    model_config = ConfigDict(extra="forbid")

    any: list[str] = Field(min_length=1)


class ToolSpec(BaseModel):
    """How one tool of a tool-calling agent maps onto the workflow (docs/formats.md).

    Agents that act through tools keep their workflow state in the arguments
    they pass, not in a state dict; the importers (`sage_tod.importers`) read it
    from there. `args` maps an argument name or dotted path (`passengers.0.dob`,
    `*` for every list item) to a slot; a `writes` call fills the slots of its
    arguments, a read-only call (`writes: false`, a lookup) does not; a successful
    call of a `confirms` tool is the agent confirming the workflow (for PC).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    args: dict[str, str] = Field(default_factory=dict)
    writes: bool = True
    confirms: bool = False
    # a call changes the backend, so it is judged where it happens (default: `confirms`)
    commits: bool | None = None
    # what each committing call is judged against (docs/formats.md, *Tool rules*)
    target: ToolTarget | None = None
    confirmation: Literal["explicit", "none"] = "explicit"
    after: tuple[str, ...] = ()
    rules: tuple[ToolRule, ...] = ()
    prefer: tuple[ToolPreference, ...] = ()
    # a regular expression (case-insensitive) for a user message asking for this tool's
    # action ("cancel", "add .* bags?"): a request no call carried out by the conversation's
    # last turn is an ignored user value (docs/formats.md, *Unfinished requests*)
    requested: str | None = None
    # the tool hands the user over to a human, which the policy allows only for requests
    # the agent's committing tools cannot serve (docs/formats.md, *Hand-offs*)
    handoff: bool = False
    ground: dict[str, Literal["any", "user", "referred", "result", "free"]] = Field(
        default_factory=dict)

    @property
    def is_commit(self) -> bool:
        return self.confirms if self.commits is None else self.commits

    def grounding(self, path: str) -> str:
        """How an argument leaf must be supported: the most specific `ground` entry whose
        pattern (`*` for a list index or any one name) covers the leaf's path."""
        parts = path.split(".")
        best, best_len = "any", -1
        for pattern, how in self.ground.items():
            pp = pattern.split(".")
            if len(pp) <= len(parts) and len(pp) > best_len and all(
                    a in ("*", b) for a, b in zip(pp, parts, strict=False)):
                best, best_len = how, len(pp)
        return best


class _WorkflowModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    description: str = ""
    slots: list[SlotSpec | str] = Field(default_factory=list)
    required: list[str] = Field(default_factory=list)
    order: list[list[str] | _AnyBucket] | None = None

    @field_validator("order", mode="before")
    @classmethod
    def _bucket_shapes(cls, v: Any) -> Any:
        # a union's own error ("order[0].list[str]: should be a valid list") hides the rule
        if isinstance(v, list):
            for b, bucket in enumerate(v):
                if isinstance(bucket, dict) and set(bucket) != {"any"}:
                    raise ValueError(f"bucket {b}: a mapping bucket is written {{any: [slots]}}; "
                                     f"got keys {sorted(bucket)}")
                if not isinstance(bucket, list | dict):
                    raise ValueError(f"bucket {b}: write a list of slots or {{any: [slots]}}")
        return v

    precedes: list[tuple[str, str]] | None = None
    outcome: str | None = None
    confirmation_cues: list[str] = Field(default_factory=list)
    tools: dict[str, ToolSpec] = Field(default_factory=dict)


class _SpecFileModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    slots: list[SlotSpec] = Field(default_factory=list)
    workflows: list[_WorkflowModel] = Field(min_length=1)
    context: dict[str, Any] = Field(default_factory=dict)  # constants for tool rules


@dataclass(frozen=True)
class _Derives:
    """A validated spec part that keeps the tables derived from it (the extractor's value
    forms, the cue index, the waivable slots, the other workflows' words): every turn
    asks for the same ones, and a spec never changes after loading."""

    _derived: dict[object, Any] = field(default_factory=dict, init=False, repr=False,
                                        compare=False)

    def derived(self, key: str | Derived[Any, Any], build: Callable[[Self], _T]) -> _T:
        """`build(self)`, computed the first time `key` is asked for and kept. A module's
        own tables use a `Derived` key (typed, and no name two modules could share); a
        string key is for a one-off flag."""
        got = self._derived.get(key)
        if got is None:
            got = self._derived[key] = build(self)
        return got


_Part = TypeVar("_Part", bound=_Derives)


class Derived(Generic[_Part, _T]):
    """A table derived from a spec part (a `Workflow`, a `SpecBundle`), built the first
    time it is asked for on that part and kept with it: `FORMS = Derived("forms", build)`
    at module level, `FORMS.of(wf)` per turn.

    The key is this object, not a string, so the reader knows the table's type, two
    modules cannot collide on a name, and the table lives and dies with the spec that it
    was derived from (no process-wide memo to bound or to clear).
    """

    __slots__ = ("build", "name")

    def __init__(self, name: str, build: Callable[[_Part], _T]) -> None:
        self.name = name  # for repr and debugging only: identity is the key
        self.build = build

    def of(self, part: _Part) -> _T:
        got = part._derived.get(self)
        if got is None:
            got = part._derived[self] = self.build(part)
        return got

    def __repr__(self) -> str:
        return f"Derived({self.name!r})"


@dataclass(frozen=True)
class Workflow(_Derives):
    """A validated workflow, with the queries the compiler and S1 need."""

    id: str
    description: str
    slots: Mapping[str, SlotSpec]
    required: tuple[str, ...]
    buckets: tuple[tuple[str, ...], ...]
    # field -> groups that must each have at least one member filled before it: an
    # all-of bucket contributes one singleton group per field, an any-of bucket one group
    prereqs: Mapping[str, tuple[frozenset[str], ...]]
    outcome: Node
    outcome_text: str
    confirmation_cues: tuple[str, ...]
    any_buckets: frozenset[int] = frozenset()  # indices into `buckets` that are any-of
    tools: Mapping[str, ToolSpec] = field(default_factory=dict)  # tool name -> mapping

    def slot(self, name: str) -> SlotSpec | None:
        return self.slots.get(name)

    def is_optional(self, name: str) -> bool:
        return name in self.slots and name not in self.required

    def filled(self, state: Mapping[str, str]) -> frozenset[str]:
        return frozenset(s for s, v in state.items() if not is_unset(v))

    def next_fields(self, state: Mapping[str, str]) -> tuple[str, ...]:
        """Next(W, s): unfilled required fields whose prerequisites are all filled."""
        done = self.filled(state)
        return tuple(f for f in self.required
                     if f not in done and not self.missing_prereqs(f, state))

    def unmet_groups(self, name: str, state: Mapping[str, str],
                     also: Iterable[str] = ()) -> tuple[frozenset[str], ...]:
        """Prerequisite groups of `name` with no member filled (nor in `also`, fields the
        agent supplies or asks for in the same turn)."""
        done = self.filled(state) | frozenset(also)
        return tuple(g for g in self.prereqs.get(name, ()) if not g & done)

    def missing_prereqs(self, name: str, state: Mapping[str, str],
                        also: Iterable[str] = ()) -> frozenset[str]:
        """Fields that must be filled (one per any-of group) before `name` may be requested."""
        return frozenset(f for g in self.unmet_groups(name, state, also) for f in g)

    def describe_missing(self, name: str, state: Mapping[str, str]) -> str:
        """"hotel-area" or "one of hotel-area, hotel-name": for rationales and repair hints."""
        parts = [next(iter(g)) if len(g) == 1 else "one of " + ", ".join(sorted(g))
                 for g in self.unmet_groups(name, state)]
        return ", ".join(sorted(parts))

    def order_text(self, sep: str = " < ", brackets: str = "{}") -> str:
        """The ordering for people: `{a, b} < {c}`; any-of buckets read `any{a, b}`."""
        return sep.join(("any" if i in self.any_buckets else "") + brackets[0] + ", ".join(b)
                        + brackets[1] for i, b in enumerate(self.buckets))

    def equals(self, slot: str, a: str, b: str) -> bool:
        spec = self.slots.get(slot)
        if spec is None:
            return normalize_typed(a, "free") == normalize_typed(b, "free")
        return spec.normalize(a) == spec.normalize(b)

    def outcome_holds(self, state: Mapping[str, str]) -> bool:
        done = self.filled(state)
        return self.outcome.evaluate(
            lambda s: s in done,
            lambda s, v: s in done and self.equals(s, state[s], v),
        )

    def outcome_unmet(self, state: Mapping[str, str]) -> frozenset[str]:
        """Slots whose condition in O is unmet (what a repair must fill or change)."""
        done = self.filled(state)
        return self.outcome.unmet(
            lambda s: s in done,
            lambda s, v: s in done and self.equals(s, state[s], v),
        )


@dataclass(frozen=True)
class SpecBundle(_Derives):
    """Every workflow of one spec file; the schema S is the union of their slots."""

    path: str
    workflows: Mapping[str, Workflow]
    all_slots: Mapping[str, SlotSpec] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)

    def tool_workflows(self, tool: str) -> list[Workflow]:
        """The workflows that declare `tool` as a committing tool, in spec order."""
        return [wf for wf in self.workflows.values()
                if (ts := wf.tools.get(tool)) is not None and ts.is_commit]

    def workflow(self, wid: str) -> Workflow | None:
        return self.workflows.get(wid)

    def slot(self, name: str, workflow: Workflow | None = None) -> SlotSpec | None:
        if workflow is not None and name in workflow.slots:
            return workflow.slots[name]
        return self.all_slots.get(name)


def _loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


MAX_SPEC_BYTES = 50 * 1024 * 1024


def _read_document(path: Path) -> Any:
    if path.is_dir():
        raise InputError(path, "is a directory, not a spec file")
    try:
        if path.is_file() and path.stat().st_size > MAX_SPEC_BYTES:
            raise InputError(path, f"spec file is larger than {MAX_SPEC_BYTES // 2**20} MiB")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(path, "not UTF-8 text", line=line) from None
    if not text.strip():
        raise InputError(path, "file is empty")
    if path.suffix.lower() == ".json":
        try:
            return parse_json(text)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"malformed JSON: {exc.msg}", line=exc.lineno) from None
        except UnsafeDocument as exc:
            raise InputError(path, str(exc)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        yline = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(path, f"malformed YAML: {problem}", line=yline) from None
    except RecursionError:
        raise InputError(path, "malformed YAML: nesting is too deep") from None
    except (ValueError, OverflowError) as exc:  # e.g. a 5,000-digit number
        raise InputError(path, f"malformed YAML: {exc}") from None
    try:
        check_tree(data)
    except UnsafeDocument as exc:
        raise InputError(path, str(exc)) from None
    return data


def load_spec(path: str | Path) -> SpecBundle:
    """Load and validate a spec file (YAML or JSON) with one or many workflows."""
    p = Path(path)
    data = _read_document(p)
    return parse_spec(data, p)


def parse_spec(data: Any, path: str | Path = "<spec>") -> SpecBundle:
    """Validate an already-parsed spec document (dict or list)."""
    try:
        check_tree(data)
    except UnsafeDocument as exc:
        raise InputError(path, str(exc)) from None
    if isinstance(data, list):
        data = {"workflows": data}
    elif isinstance(data, dict) and "id" in data and "workflows" not in data:
        data = {"workflows": [data]}
    if not isinstance(data, dict):
        raise InputError(path, "a spec must be a mapping with 'workflows' (or one workflow)")
    # top-level `x-...` keys are the author's (YAML anchors shared by workflows), as in
    # OpenAPI and Compose files: not read, not an error
    data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}
    try:
        model = _SpecFileModel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _loc(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        raise InputError(path, msg, field=loc or None) from None
    shared: dict[str, SlotSpec] = {}
    for i, s in enumerate(model.slots):
        if s.name in shared:
            raise InputError(path, f"duplicate slot {s.name!r}", field=f"slots[{i}].name")
        shared[s.name] = s
    workflows: dict[str, Workflow] = {}
    all_slots: dict[str, SlotSpec] = dict(shared)
    for i, wm in enumerate(model.workflows):
        where = f"workflows[{i}]"
        if wm.id in workflows:
            raise InputError(path, f"duplicate workflow id {wm.id!r}", field=f"{where}.id")
        wf = _build_workflow(wm, shared, path, where)
        workflows[wm.id] = wf
        for name, s in wf.slots.items():
            all_slots.setdefault(name, s)
    return SpecBundle(str(path), workflows, all_slots, dict(model.context))


def _check_slot(spec: SlotSpec, path: str | Path, where: str) -> None:
    if spec.synonyms and spec.values:
        for canon in spec.synonyms:
            if canon not in spec.values:
                raise InputError(path, f"synonyms given for {canon!r}, which is not in values",
                                 field=f"{where}.synonyms")


def _build_workflow(wm: _WorkflowModel, shared: Mapping[str, SlotSpec],
                    path: str | Path, where: str) -> Workflow:
    slots: dict[str, SlotSpec] = {}
    for j, s in enumerate(wm.slots):
        if isinstance(s, str):
            if s not in shared:
                raise InputError(path, f"unknown slot {s!r} (not in the file's shared slots)",
                                 field=f"{where}.slots[{j}]")
            s = shared[s]
        if s.name in slots:
            raise InputError(path, f"duplicate slot {s.name!r}", field=f"{where}.slots[{j}]")
        _check_slot(s, path, f"{where}.slots[{j}]")
        slots[s.name] = s
    if not slots:
        raise InputError(path, "a workflow needs at least one slot", field=f"{where}.slots")
    required: list[str] = []
    for j, r in enumerate(wm.required):
        if r not in slots:
            raise InputError(path, f"unknown slot {r!r}", field=f"{where}.required[{j}]")
        if r in required:
            raise InputError(path, f"{r!r} listed twice", field=f"{where}.required[{j}]")
        required.append(r)
    req = tuple(required)
    if wm.order is not None and wm.precedes is not None:
        raise InputError(path, "give either 'order' (buckets) or 'precedes' (pairs), not both",
                         field=f"{where}.precedes")
    any_buckets: frozenset[int] = frozenset()
    if wm.precedes is not None:
        buckets, prereqs = _from_pairs(wm.precedes, slots, req, path, where)
    else:
        order: list[list[str] | _AnyBucket] = (
            list(wm.order) if wm.order is not None else [list(req)] if req else [])
        buckets, prereqs, any_buckets = _from_buckets(order, slots, req, path, where)
    outcome_text = wm.outcome if wm.outcome is not None else "all_required"
    try:
        node = expand_all_required(parse_predicate(outcome_text), req)
    except PredicateSyntaxError as exc:
        raise InputError(path, f"outcome does not parse: {exc}", field=f"{where}.outcome") from None
    for s in sorted(node.slots()):
        if s not in slots:
            raise InputError(path, f"unknown slot {s!r} in outcome", field=f"{where}.outcome")
    for tool, ts in wm.tools.items():
        for arg, slot in ts.args.items():
            if slot not in slots:
                raise InputError(path, f"unknown slot {slot!r} for argument {arg!r} of tool "
                                 f"{tool!r}", field=f"{where}.tools.{tool}.args.{arg}")
        _check_tool_rules(tool, ts, wm.tools, path, f"{where}.tools.{tool}")
    return Workflow(
        id=wm.id, description=wm.description, slots=slots, required=req, buckets=buckets,
        prereqs=prereqs, outcome=node, outcome_text=render(node),
        confirmation_cues=tuple(c for c in wm.confirmation_cues if c.strip()),
        any_buckets=any_buckets, tools=dict(wm.tools),
    )


Groups = tuple[frozenset[str], ...]


def _check_tool_rules(tool: str, ts: ToolSpec, tools: Mapping[str, ToolSpec],
                      path: str | Path, where: str) -> None:
    """Rules compile, and every tool they name is one the workflow declares: a typo in a
    rule must stop the load, not make the rule abstain on every call."""
    if ts.target is not None:
        for j, name in enumerate(ts.target.read):
            if name not in tools:
                raise InputError(path, f"target read tool {name!r} is not declared in this "
                                 "workflow's tools", field=f"{where}.target.read[{j}]")
    for j, name in enumerate(ts.after):
        if name not in tools:
            raise InputError(path, f"tool {name!r} is not declared in this workflow's tools",
                             field=f"{where}.after[{j}]")
    seen: set[str] = set()
    for j, rule in enumerate(ts.rules):
        if rule.id in seen:
            raise InputError(path, f"duplicate rule id {rule.id!r}", field=f"{where}.rules[{j}].id")
        seen.add(rule.id)
        for part in ("check", "when"):
            expr = getattr(rule, part)
            if expr is None:
                continue
            try:
                compile_rule(expr)
            except RuleSyntaxError as exc:
                raise InputError(path, f"rule {rule.id!r} does not compile: {exc}",
                                 field=f"{where}.rules[{j}].{part}") from None
            for name in re.findall(r"\bresults\.([A-Za-z_][A-Za-z0-9_]*)", expr):
                if name not in tools:
                    raise InputError(path, f"rule {rule.id!r} reads results.{name}, a tool "
                                     "this workflow does not declare",
                                     field=f"{where}.rules[{j}].{part}")
    for j, pref in enumerate(ts.prefer):
        at = f"{where}.prefer[{j}]"
        if pref.id in seen:
            raise InputError(path, f"duplicate rule id {pref.id!r}", field=f"{at}.id")
        seen.add(pref.id)
        for part in ("cue", "unless"):
            pattern = getattr(pref, part)
            try:
                re.compile(pattern or "")
            except re.error as exc:
                raise InputError(path, f"preference {pref.id!r}: {part} is not a regular "
                                 f"expression ({exc})", field=f"{at}.{part}") from None
        for k, name in enumerate(pref.options):
            if name not in tools:
                raise InputError(path, f"preference {pref.id!r} reads options of {name!r}, a "
                                 "tool this workflow does not declare",
                                 field=f"{at}.options[{k}]")
        for part in ("key", "available"):
            expr = getattr(pref, part)
            if expr is None:
                continue
            try:
                compile_rule(expr, PREFERENCE_NAMES)
            except RuleSyntaxError as exc:
                raise InputError(path, f"preference {pref.id!r} does not compile: {exc}",
                                 field=f"{at}.{part}") from None
    if ts.requested is not None:
        try:
            re.compile(ts.requested)
        except re.error as exc:
            raise InputError(path, f"requested is not a regular expression ({exc})",
                             field=f"{where}.requested") from None
    if (ts.prefer or ts.target is not None or ts.after or ts.requested or (
            ts.rules and not ts.handoff)) and not ts.is_commit:
        raise InputError(path, "target, after, rules, prefer and requested are for committing "
                         "tools (set commits: true or confirms: true; a hand-off tool, "
                         "handoff: true, may have rules)", field=where)


def _from_buckets(order: list[list[str] | _AnyBucket], slots: Mapping[str, SlotSpec],
                  req: tuple[str, ...], path: str | Path, where: str
                  ) -> tuple[tuple[tuple[str, ...], ...], dict[str, Groups], frozenset[int]]:
    seen: dict[str, int] = {}
    lists: list[list[str]] = []
    any_idx: set[int] = set()
    for b, raw in enumerate(order):
        is_any = isinstance(raw, _AnyBucket)
        bucket = raw.any if isinstance(raw, _AnyBucket) else raw
        if is_any:
            any_idx.add(b)
        lists.append(bucket)
        for j, name in enumerate(bucket):
            loc = f"{where}.order[{b}]" + (f".any[{j}]" if is_any else f"[{j}]")
            if name not in slots:
                raise InputError(path, f"unknown slot {name!r}", field=loc)
            if name not in req and not is_any:
                raise InputError(path, f"{name!r} is not a required field; an all-of bucket "
                                 "lists only required fields (optional slots may come any "
                                 "time, or stand as alternatives in an {any: [...]} bucket)",
                                 field=loc)
            if name in seen:
                raise InputError(path, f"ordering cycle: {name!r} is in bucket {seen[name]} and "
                                 f"bucket {b}, so it would have to come before and after "
                                 "itself", field=loc)
            seen[name] = b
    missing = [f for f in req if f not in seen]
    if missing:
        raise InputError(path, f"order must place every required field; missing {missing}",
                         field=f"{where}.order")
    prereqs: dict[str, Groups] = {}
    earlier: list[frozenset[str]] = []
    for b, bucket in enumerate(lists):
        for name in bucket:
            prereqs[name] = tuple(earlier)
        if b in any_idx:
            earlier.append(frozenset(bucket))
        else:
            earlier.extend(frozenset([f]) for f in bucket)
    kept = [b for b, bucket in enumerate(lists) if bucket]
    return (tuple(tuple(lists[b]) for b in kept), prereqs,
            frozenset(kept.index(b) for b in any_idx if b in kept))


def _from_pairs(pairs: list[tuple[str, str]], slots: Mapping[str, SlotSpec],
                req: tuple[str, ...], path: str | Path, where: str
                ) -> tuple[tuple[tuple[str, ...], ...], Mapping[str, Groups]]:
    direct: dict[str, set[str]] = {f: set() for f in req}
    for j, (a, b) in enumerate(pairs):
        for name in (a, b):
            if name not in slots:
                raise InputError(path, f"unknown slot {name!r}", field=f"{where}.precedes[{j}]")
            if name not in req:
                raise InputError(path, f"{name!r} is not a required field",
                                 field=f"{where}.precedes[{j}]")
        direct[b].add(a)
    # transitive closure in topological order (Kahn), as bitsets: no recursion (a chain of
    # 2,500 pairs is 2,500 deep) and no set per field (a chain's closure is quadratic)
    order_of = {f: i for i, f in enumerate(req)}
    after: dict[str, list[str]] = {f: [] for f in req}
    indeg = {f: len(direct[f]) for f in req}
    for b, preds in direct.items():
        for a in preds:
            after[a].append(b)
    queue = [f for f in req if indeg[f] == 0]
    topo: list[str] = []
    while queue:
        f = queue.pop()
        topo.append(f)
        for b in after[f]:
            indeg[b] -= 1
            if indeg[b] == 0:
                queue.append(b)
    if len(topo) != len(req):
        raise InputError(path, "ordering cycle: " + _cycle_text(direct, indeg),
                         field=f"{where}.precedes")
    bits: dict[str, int] = {}
    depth: dict[str, int] = {}
    for f in topo:  # every prerequisite comes before what it precedes
        acc = 0
        for p in direct[f]:
            acc |= bits[p] | (1 << order_of[p])
        bits[f] = acc
        depth[f] = 1 + max((depth[p] for p in direct[f]), default=-1)
    # layer into buckets for display: depth = longest chain of prerequisites
    layers: dict[int, list[str]] = {}
    for f in req:
        layers.setdefault(depth[f], []).append(f)
    buckets = tuple(tuple(layers[d]) for d in sorted(layers))
    return buckets, _ClosureGroups(req, bits)


def _cycle_text(direct: Mapping[str, set[str]], indeg: Mapping[str, int]) -> str:
    """One cycle among the fields left with prerequisites, as "a -> b -> a"."""
    left = {f for f, d in indeg.items() if d > 0}
    node = min(left)
    path: list[str] = []
    seen: dict[str, int] = {}
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min(p for p in direct[node] if p in left)
    cyc = [*path[seen[node]:], node]
    return " -> ".join(reversed(cyc))


class _ClosureGroups(Mapping[str, Groups]):
    """field -> one singleton group per transitive prerequisite, computed on access from a
    bitset (in name order, like the sets it replaces); the singletons are shared."""

    def __init__(self, fields: tuple[str, ...], bits: Mapping[str, int]) -> None:
        self._fields = fields
        self._bits = dict(bits)
        self._one = [frozenset([f]) for f in fields]

    def __getitem__(self, name: str) -> Groups:
        b = self._bits[name]
        groups = [self._one[i] for i in range(b.bit_length()) if b >> i & 1]
        return tuple(sorted(groups, key=lambda g: next(iter(g))))

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)
