"""The audit set on disk: what annotators see, kept apart from what the tool said.

An audit directory holds three files:

* `audit.json`: the manifest (audit id, seed, sizes, the workflows' required
  fields); no verdict;
* `items.jsonl`: one item per line, the turn as an annotator sees it (history,
  u_t, a_t, the states, tool calls with results); no verdict, no gold, no
  importer metadata (a natural slice's `meta.errors` would give the label away);
* `key.json`: the tool's verdict, fired classes and stratum of each item, and
  each stratum's population size; read only by `audit score`.

`audit page` reads the first two and never opens the third, so a page cannot
leak a verdict by construction (tests/test_audit_page.py checks the bytes too).
The labels an annotator exports from the page (`LabelsFile`) name the audit id,
so labels made for another audit set are refused rather than silently joined.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import iter_jsonl, parse_json
from sage_tod.outputs.files import write_atomic

FORMAT: Literal["sage-tod-audit"] = "sage-tod-audit"
LABELS_FORMAT: Literal["sage-tod-audit-labels"] = "sage-tod-audit-labels"
VERSION = 1
MANIFEST, ITEMS, KEY = "audit.json", "items.jsonl", "key.json"
LABELS: tuple[str, ...] = ("failure", "acceptable", "cant_tell")
Label = Literal["failure", "acceptable", "cant_tell"]


class ToolCall(BaseModel):
    """One tool call as the page shows it (the `tool_calls` turn field, or what today's
    importers leave: `meta.tool_calls` names and `[tool NAME] RESULT` history entries)."""

    model_config = ConfigDict(frozen=True)
    id: str | None = None
    name: str
    arguments: Any = None
    result: Any = None
    error: bool = False


class Exchange(BaseModel):
    """An earlier exchange, with the tool calls (and results) made in it, if any."""

    model_config = ConfigDict(frozen=True)
    user: str = ""
    agent: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class AuditItem(BaseModel):
    """One turn to label, with an opaque id that says nothing about its stratum."""

    model_config = ConfigDict(frozen=True)
    item: str
    dialogue_id: str
    turn_id: int | str
    workflow: str
    history: tuple[Exchange, ...] = ()
    user: str
    agent: str
    state_before: dict[str, str | None]
    state_after: dict[str, str | None]
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.dialogue_id}:{self.turn_id}"


class RequiredField(BaseModel):
    model_config = ConfigDict(frozen=True)
    slot: str
    description: str = ""


class WorkflowInfo(BaseModel):
    """What an annotator needs to know of a workflow (from the spec, when given)."""

    model_config = ConfigDict(frozen=True)
    id: str
    description: str = ""
    required: tuple[RequiredField, ...] = ()
    order: str = ""
    outcome: str = ""


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True)
    format: Literal["sage-tod-audit"] = FORMAT
    version: int = VERSION
    audit_id: str
    n: int
    seed: int
    workflows: dict[str, WorkflowInfo] = Field(default_factory=dict)


class KeyEntry(BaseModel):
    """The tool's answer on one item (kept aside from the annotators)."""

    model_config = ConfigDict(frozen=True)
    item: str
    dialogue_id: str
    turn_id: int | str
    verdict: Literal["failure", "acceptable", "undecided"]
    classes: tuple[str, ...] = ()
    stratum: str


class StratumSize(BaseModel):
    model_config = ConfigDict(frozen=True)
    population: int
    sampled: int


class AuditKey(BaseModel):
    model_config = ConfigDict(frozen=True)
    audit_id: str
    verdicts_sha256: str
    config: str
    strata: dict[str, StratumSize]
    items: tuple[KeyEntry, ...]


class ItemLabel(BaseModel):
    """One annotator's answer on one item."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")
    item: StrictStr
    label: Label
    failure_class: Literal["IUV", "WNF", "PC", "UV"] | None = Field(default=None, alias="class")
    note: StrictStr = ""


class LabelsFile(BaseModel):
    """What the page's export button downloads (and what `audit labels` writes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    format: Literal["sage-tod-audit-labels"] = LABELS_FORMAT
    version: int = VERSION
    audit_id: StrictStr
    annotator: StrictStr = Field(min_length=1)
    labels: tuple[ItemLabel, ...]


assert set(CLASS_NAMES) == {"IUV", "WNF", "PC", "UV"}  # the Literal above names them


def audit_id_of(items_text: str) -> str:
    """The audit id: a digest of the items file, so labels follow exactly these items."""
    return hashlib.sha256(items_text.encode("utf-8")).hexdigest()[:12]


def items_text(items: Sequence[AuditItem]) -> str:
    return "".join(json.dumps(i.model_dump(mode="json"), ensure_ascii=False) + "\n"
                   for i in items)


def _dump(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json", by_alias=True), ensure_ascii=False,
                      indent=1) + "\n"


def write_audit_set(out_dir: Path, manifest: Manifest, items: Sequence[AuditItem],
                    key: AuditKey, *, overwrite: bool) -> None:
    """The three files; the items first, so the id in the other two is theirs."""
    text = items_text(items)
    if audit_id_of(text) != manifest.audit_id or key.audit_id != manifest.audit_id:
        raise ValueError("manifest, key and items disagree on the audit id")
    for name in (MANIFEST, ITEMS, KEY):  # refuse before writing any of them
        p = out_dir / name
        if p.is_file() and p.stat().st_size > 0 and not overwrite:
            raise InputError(p, "exists; pass --overwrite to replace the audit set")
    write_atomic(out_dir / ITEMS, text, overwrite=overwrite)
    write_atomic(out_dir / MANIFEST, _dump(manifest), overwrite=overwrite)
    write_atomic(out_dir / KEY, _dump(key), overwrite=overwrite)


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise InputError(path, "not found: is this an audit directory written by "
                               "`sage-tod audit sample`?")
    try:
        return parse_json(path.read_bytes())
    except ValueError as exc:
        raise InputError(path, f"not valid JSON ({exc})") from None


def _validated(model: type[BaseModel], obj: Any, path: Path, line: int | None = None) -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(x) for x in e["loc"])
        raise InputError(path, e["msg"], line=line, field=loc or None) from None


def read_manifest(audit_dir: Path) -> Manifest:
    m: Manifest = _validated(Manifest, _read_json(audit_dir / MANIFEST), audit_dir / MANIFEST)
    return m


def read_items(audit_dir: Path) -> tuple[Manifest, list[AuditItem]]:
    """The manifest and items, checked against each other (an edited items file is refused:
    labels made on it could not be matched to the key)."""
    manifest = read_manifest(audit_dir)
    path = audit_dir / ITEMS
    if not path.is_file():
        raise InputError(path, "not found: the audit set has no items file")
    if audit_id_of(path.read_text(encoding="utf-8")) != manifest.audit_id:
        raise InputError(path, f"does not match the audit id {manifest.audit_id} in "
                               f"{MANIFEST}: the items were changed after sampling")
    items: list[AuditItem] = []
    for n, obj in iter_jsonl(path):
        if isinstance(obj, InputError):
            raise obj
        items.append(_validated(AuditItem, obj, path, n))
    return manifest, items


def read_key(audit_dir: Path, audit_id: str) -> AuditKey:
    path = audit_dir / KEY
    key: AuditKey = _validated(AuditKey, _read_json(path), path)
    if key.audit_id != audit_id:
        raise InputError(path, f"is the key of audit {key.audit_id}, not of {audit_id}")
    return key


def read_labels(path: Path) -> LabelsFile:
    """A labels file, or a one-line error naming the field."""
    obj = _read_json(path)
    if isinstance(obj, dict) and obj.get("format") not in (None, LABELS_FORMAT):
        raise InputError(path, f"is not a labels file (format {obj.get('format')!r})",
                         field="format")
    lf: LabelsFile = _validated(LabelsFile, obj, path)
    return lf


def labels_json(labels: LabelsFile) -> str:
    return _dump(labels)


def _dotted(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def labels_from_rows(rows: Sequence[tuple[int, Any]], items: Sequence[AuditItem], audit_id: str,
                     annotator: str, *, source: Path, key_template: str, label_field: str,
                     class_field: str | None = None, note_field: str | None = None,
                     mapping: dict[str, str] | None = None) -> tuple[LabelsFile, int]:
    """Labels someone already has (JSONL rows keyed by turn) as a labels file for this audit.

    `key_template` formats a row into the turn key items carry ("{dialogue_id}:{turn_id}");
    `mapping` renames label values ("drop" -> "cant_tell"). Rows for turns outside the
    audit set are counted and skipped; (labels file, rows skipped) back.
    """
    by_key = {i.key: i.item for i in items}
    mapping = mapping or {}
    out: list[ItemLabel] = []
    seen: dict[str, int] = {}
    skipped = 0
    for n, row in rows:
        if not isinstance(row, dict):
            raise InputError(source, "a row must be a JSON object", line=n)
        try:
            key = key_template.format(**row)
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError(source, f"--key {key_template!r} cannot be filled from this "
                             f"row ({type(exc).__name__}: {exc})", line=n) from None
        item = by_key.get(key)
        if item is None:
            skipped += 1
            continue
        if item in seen:
            raise InputError(source, f"a second label for turn {key} (first on line "
                             f"{seen[item]})", line=n)
        seen[item] = n
        raw = _dotted(row, label_field)
        label = mapping.get(str(raw), raw)
        if label not in LABELS:
            raise InputError(source, f"label {raw!r} is not one of {', '.join(LABELS)} "
                             "(rename it with --map VALUE=LABEL)", line=n, field=label_field)
        cls = _dotted(row, class_field) if class_field and label == "failure" else None
        note = _dotted(row, note_field) if note_field else None
        lab = _validated(ItemLabel, {"item": item, "label": label, "class": cls,
                                     "note": "" if note is None else str(note)}, source, n)
        out.append(lab)
    order = {i.item: k for k, i in enumerate(items)}
    out.sort(key=lambda lab: order[lab.item])
    return LabelsFile(audit_id=audit_id, annotator=annotator, labels=tuple(out)), skipped
