"""A starting spec from a tool agent's OpenAI function schemas (`sage-tod specs from-tools`).

A team that runs an LLM tool caller already has the one machine-readable
description of its workflows: the `tools` it passes to the chat API. Each
tool that changes something (a *write*: `book_reservation`, `cancel_order`) is
a commitment sage-tod judges call by call, so each becomes a workflow whose
slots are the tool's arguments; the tools that only look things up (*reads*)
are listed as `writes: false` so that the checks know their results are
evidence, not commitments. What the schemas cannot say (the policy: which
reads must come first, what must hold in their results, when the user must
say yes) is left to the user, and the YAML says where to add it.

Which tools write cannot be read from a JSON schema, so it is decided by the
user (`writes=` / `reads=`) or else by the tool's name (`classify_by_name`); the
rule that decided is kept with each tool and printed, so a wrong guess is seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.importers.records import read_document

# The first word of a read tool's name: it looks something up, computes, thinks or
# hands over, and changes no record the agent is judged on.
READ_WORDS: tuple[str, ...] = (
    "get", "find", "search", "list", "lookup", "look", "fetch", "read", "query", "check",
    "view", "show", "describe", "retrieve", "calculate", "compute", "think",
)
# `transfer_to_human_agents`, `transfer_to_agent`: a hand-off to a person is neither a
# write nor a failure; `transfer_funds` is a write.
HANDOFF_PREFIX = "transfer_to_"

_WORD_SPLIT = re.compile(r"[_\-\s.]+|(?<=[a-z0-9])(?=[A-Z])")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class ToolArgument:
    """One top-level argument of a tool, as its JSON schema describes it."""

    name: str
    schema: Mapping[str, Any]
    required: bool

    @property
    def description(self) -> str:
        d = self.schema.get("description")
        return d.strip() if isinstance(d, str) else ""

    def slot_type(self) -> tuple[str, tuple[str, ...]]:
        """(sage-tod slot type, categorical values): enum -> categorical with its values,
        integer/number -> number, boolean -> categorical true/false, anything else free."""
        enum = self.schema.get("enum")
        if isinstance(enum, list) and enum and all(
                isinstance(v, str | int | float | bool) for v in enum):
            return "categorical", tuple(dict.fromkeys(_enum_text(v) for v in enum))
        kind = _json_type(self.schema)
        if kind in ("integer", "number"):
            return "number", ()
        if kind == "boolean":
            return "categorical", ("true", "false")
        return "free", ()

    def item_fields(self) -> tuple[str, ...]:
        """The fields of a nested record (an object, or a list of objects): what the
        per-call checks walk leaf by leaf."""
        node: Any = self.schema
        if _json_type(node) == "array":
            node = node.get("items")
        props = node.get("properties") if isinstance(node, Mapping) else None
        return tuple(str(k) for k in props) if isinstance(props, Mapping) else ()

    @property
    def nested(self) -> bool:
        return _json_type(self.schema) in ("array", "object")


@dataclass(frozen=True)
class ToolSchema:
    """One function tool: its name, description and top-level arguments."""

    name: str
    description: str
    arguments: tuple[ToolArgument, ...]
    where: str  # where it is in the file, for messages ("[3].function")


@dataclass(frozen=True)
class ToolClass:
    """Whether a tool writes, and the rule that said so (printed for the user)."""

    tool: ToolSchema
    writes: bool
    rule: str


@dataclass(frozen=True)
class ToolSpecDraft:
    """The starting spec: its YAML text, the classification, and what was left out."""

    text: str
    classes: tuple[ToolClass, ...]
    skipped: tuple[str, ...]  # one line per tool or item not made into a workflow

    def bundle(self, where: str = "<from-tools spec>") -> SpecBundle:
        return parse_spec(yaml.safe_load(self.text), where)


def _json_type(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    t = schema.get("type")
    if isinstance(t, list):  # ["string", "null"]
        t = next((x for x in t if x != "null"), "")
    return t if isinstance(t, str) else ""


def _enum_text(v: str | int | float | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def read_tool_schemas(path: str | Path) -> tuple[list[ToolSchema], list[str]]:
    """The function tools of a file, and a note per item that is not one.

    Accepted: a list of `{"type": "function", "function": {name, description,
    parameters}}` (the chat API's `tools`), a bare list of `{name, description,
    parameters}` (the older `functions`, or the Responses API's flat tools), or an
    object holding either list under `tools` (or `functions`). A tool without a
    name, or two tools with one name, is an `InputError` naming the field.
    """
    p = Path(path)
    doc = read_document(p)
    prefix = ""
    if isinstance(doc, dict):
        key = next((k for k in ("tools", "functions") if k in doc), None)
        if key is None:
            raise InputError(p, "expected a list of tools, or an object with 'tools'")
        doc, prefix = doc[key], key
    if not isinstance(doc, list):
        raise InputError(p, "tools must be a list", field=prefix or None)
    tools: list[ToolSchema] = []
    notes: list[str] = []
    first: dict[str, str] = {}
    for i, item in enumerate(doc):
        where = f"{prefix}[{i}]"
        if not isinstance(item, dict):
            raise InputError(p, "a tool must be an object", field=where)
        fn: Any = item
        if "function" in item:
            fn, where = item["function"], f"{where}.function"
            if not isinstance(fn, dict):
                raise InputError(p, "'function' must be an object", field=where)
        elif item.get("type") not in (None, "function") and "name" not in item:
            notes.append(f"{where}: a {item.get('type')!r} tool, not a function: ignored")
            continue
        name = fn.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError(p, "a tool needs a name (a non-empty string)",
                             field=f"{where}.name")
        if name in first:
            raise InputError(p, f"duplicate tool name {name!r} (first at {first[name]})",
                             field=f"{where}.name")
        first[name] = where
        desc = fn.get("description", "")
        if not isinstance(desc, str):
            raise InputError(p, "description must be a string", field=f"{where}.description")
        tools.append(ToolSchema(name, desc.strip(), _arguments(p, fn, where), where))
    if not tools:
        raise InputError(p, "no function tools in the file", field=prefix or None)
    return tools, notes


def _arguments(p: Path, fn: Mapping[str, Any], where: str) -> tuple[ToolArgument, ...]:
    params = fn.get("parameters")
    if params is None:
        return ()
    if not isinstance(params, dict):
        raise InputError(p, "parameters must be a JSON schema object",
                         field=f"{where}.parameters")
    props = params.get("properties", {})
    if not isinstance(props, dict):
        raise InputError(p, "properties must be an object", field=f"{where}.parameters"
                         ".properties")
    req = params.get("required", [])
    if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
        raise InputError(p, "required must be a list of argument names",
                         field=f"{where}.parameters.required")
    for j, r in enumerate(req):
        if r not in props:
            raise InputError(p, f"required argument {r!r} is not in properties",
                             field=f"{where}.parameters.required[{j}]")
    out: list[ToolArgument] = []
    for arg, schema in props.items():
        if not isinstance(schema, dict):
            raise InputError(p, "an argument's schema must be an object",
                             field=f"{where}.parameters.properties.{arg}")
        if not arg.strip() or arg != arg.strip():
            raise InputError(p, "argument names may not be blank or start/end with spaces",
                             field=f"{where}.parameters.properties.{arg}")
        out.append(ToolArgument(arg, schema, arg in req))
    return tuple(out)


def classify_by_name(name: str) -> tuple[bool, str]:
    """(writes, rule) from the name alone: a hand-off (`transfer_to_...`) and a tool
    whose first word is a read word (`get_`, `find_`, `search_`, `list_`, `calculate`,
    `think`, ... : `READ_WORDS`; snake, kebab or camel case) reads; any other tool writes,
    because a write taken for a read would never be checked."""
    low = name.lower()
    if low.startswith(HANDOFF_PREFIX):
        return False, f"name starts with '{HANDOFF_PREFIX}': a hand-off, writes nothing"
    words = [w for w in _WORD_SPLIT.split(name) if w]
    first = words[0].lower() if words else low
    if first in READ_WORDS:
        return False, f"name starts with the read word '{first}'"
    return True, "name has no read word first: taken as a write"


def classify(tools: Sequence[ToolSchema], *, writes: Iterable[str] = (),
             reads: Iterable[str] = (), path: str | Path = "<tools>") -> list[ToolClass]:
    """Each tool's class: `writes`/`reads` for the tools they name, the name rule for
    the others. Naming a tool the file lacks, or one in both lists, is an error."""
    w, r = list(dict.fromkeys(writes)), list(dict.fromkeys(reads))
    names = {t.name for t in tools}
    for flag, given in (("--writes", w), ("--reads", r)):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise InputError(path, f"{flag} names tool(s) the file does not have: "
                             + ", ".join(unknown))
    both = sorted(set(w) & set(r))
    if both:
        raise InputError(path, "tool(s) in both --writes and --reads: " + ", ".join(both))
    out: list[ToolClass] = []
    for t in tools:
        if t.name in w:
            out.append(ToolClass(t, True, "named in --writes"))
        elif t.name in r:
            out.append(ToolClass(t, False, "named in --reads"))
        else:
            does, rule = classify_by_name(t.name)
            out.append(ToolClass(t, does, rule))
    return out


def _scalar(value: str) -> str:
    """`value` as a YAML scalar that reads back as the same string (`on`, `yes`, `1`
    and `null` are quoted: YAML would read them as booleans, numbers or nothing)."""
    if _PLAIN.match(value):
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False)


def _words(name: str) -> str:
    return " ".join(w.lower() for w in _WORD_SPLIT.split(name) if w)


def _flow(values: Iterable[str]) -> str:
    return "[" + ", ".join(_scalar(v) for v in values) + "]"


def _comment(text: str, indent: str, width: int = 92) -> list[str]:
    """`text` as YAML comment lines (wrapped), each starting with `indent# `."""
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(indent) + 2 + len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        lines.append(cur)
    return [f"{indent}# {ln}" for ln in lines]


def _workflow_lines(c: ToolClass, read_tools: Sequence[ToolSchema]) -> list[str]:
    t = c.tool
    lines = [f"  - id: {_scalar(t.name)}"]
    lines.append(f"    description: {_scalar(t.description or f'Call {t.name}.')}")
    lines.append("    slots:")
    for a in t.arguments:
        kind, values = a.slot_type()
        desc = a.description or f"{_words(a.name)} of the {_words(t.name)} call"
        if a.nested:
            fields = a.item_fields()
            what = "list" if _json_type(a.schema) == "array" else "record"
            lines.extend(_comment(
                f"a nested {what}" + (f" (fields {', '.join(fields)})" if fields else "")
                + ": one slot for the whole argument; the per-call checks walk its leaves "
                "(every item, every field) themselves.", "      "))
        lines.append(f"      - name: {_scalar(a.name)}")
        lines.append(f"        description: {_scalar(desc)}")
        if kind != "free":
            lines.append(f"        type: {kind}")
        if values:
            lines.append(f"        values: {_flow(values)}")
    req = [a.name for a in t.arguments if a.required]
    lines.append(f"    required: {_flow(req)}")
    if len(req) > 1:
        lines.extend(_comment("the schema's required arguments, as one bucket: no order "
                              "among them. Split the bucket if some must come first.",
                              "    "))
    if req:
        lines.append(f"    order: [{_flow(req)}]")
    lines.extend(_comment(
        "TODO rules (docs/formats.md §1, Tool rules): what must hold before this call: "
        "the user's explicit yes to a read-back of this action, the reads that must come "
        "first (the user authenticated, the record fetched), and conditions on fields of "
        "earlier results (a status, a cabin, a date). The schemas cannot say these; your "
        "agent's policy does.", "    "))
    verb = next((w.lower() for w in _WORD_SPLIT.split(t.name) if w), t.name.lower())
    lines.extend(_comment(
        "TODO requested (docs/formats.md §1): how users ask for this action, a regular "
        "expression; it turns on the end-of-conversation check for a request the agent "
        "answered but never carried out. Add it to the tool's entry below; a start from "
        "the tool's name:", "    "))
    cue = "'\\b" + re.escape(verb).replace("'", "''") + "\\b'"  # YAML single quotes: no escapes
    lines.append(f"    #   {_scalar(t.name)}: {{..., requested: {cue}}}")
    lines.append("    tools:")
    args = ", ".join(f"{_scalar(a.name)}: {_scalar(a.name)}" for a in t.arguments)
    lines.append(f"      {_scalar(t.name)}: {{writes: true, confirms: true, args: {{{args}}}}}")
    for r in read_tools:
        # a hand-off is allowed only for requests no write tool serves (most agents'
        # policies: "transfer if and only if the request cannot be handled")
        extra = ", handoff: true" if r.name.lower().startswith(HANDOFF_PREFIX) else ""
        lines.append(f"      {_scalar(r.name)}: {{writes: false{extra}}}")
    return lines


def draft_spec(tools: Sequence[ToolSchema], classes: Sequence[ToolClass],
               source: str = "tools.json", notes: Sequence[str] = (),
               path: str | Path | None = None) -> ToolSpecDraft:
    """The starting spec as commented YAML: one workflow per write tool (id = tool
    name; slots = its top-level arguments; required and one `order` bucket from the
    schema's `required`; under `tools` the write tool with `confirms: true` and its
    `args`, plus every read tool as `writes: false`).

    A write tool without arguments has nothing to map to a slot, and a workflow needs
    one, so it is left out and said so (in `skipped` and in the YAML); no write tool
    at all is an error, since the spec would have no workflow.
    """
    reads = [c.tool for c in classes if not c.writes]
    writes = [c for c in classes if c.writes and c.tool.arguments]
    skipped = [f"{c.tool.name}: a write without arguments: no slot to check, so no workflow"
               for c in classes if c.writes and not c.tool.arguments]
    skipped.extend(notes)
    if not writes:
        raise InputError(path or source, "no tool with arguments writes ("
                         + ("; ".join(f"{c.tool.name}: {c.rule}" for c in classes))
                         + "); name the writing tools with --writes")
    lines = [f"# A starting spec, written by `sage-tod specs from-tools {source}`."]
    lines.extend(_comment(
        "One workflow per write tool; its slots are the tool's arguments (type and "
        "values from the JSON schema), `required` is the schema's. Read tools are listed "
        "as `writes: false`: their results are evidence, not commitments. Review the "
        "classification below, then add your policy's rules where the TODOs say.", ""))
    lines.append("#")
    lines.append("# tool classification (--writes / --reads override the name rule):")
    for c in classes:
        lines.append(f"#   {c.tool.name}: {'write' if c.writes else 'read'} ({c.rule})")
    for s in skipped:
        lines.extend(_comment(f"not a workflow: {s}", ""))
    lines.append("version: 1")
    lines.append("workflows:")
    for c in writes:
        lines.extend(_workflow_lines(c, reads))
    text = "\n".join(lines) + "\n"
    draft = ToolSpecDraft(text, tuple(classes), tuple(skipped))
    draft.bundle(f"<spec from {source}>")  # what we write must load
    return draft


def spec_from_tools(path: str | Path, *, writes: Iterable[str] = (),
                    reads: Iterable[str] = ()) -> ToolSpecDraft:
    """Read `path`'s function schemas, classify them, and draft the spec."""
    tools, notes = read_tool_schemas(path)
    classes = classify(tools, writes=writes, reads=reads, path=path)
    return draft_spec(tools, classes, Path(path).name, notes, path)
