"""Reading a log file as records: a JSON document or JSONL, with record locations.

Every importer reports errors by record; this module decides what a record is
and how to name it: in JSONL the line number, in a JSON list the index
(`field '[3].messages[5].role'`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import UnsafeDocument, iter_jsonl, parse_json


@dataclass(frozen=True)
class Record:
    """One record of a log file and where it is."""

    obj: Any
    index: int  # 0-based position in the file
    line: int | None  # JSONL line number
    loc: str  # field prefix for errors: "" (JSONL) or "[3]" (JSON list)

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line is not None else f"record {self.index}"

    def field(self, name: str) -> str:
        return f"{self.loc}.{name}" if self.loc else name


def read_document(path: Path) -> Any:
    """The parsed JSON of `path` (not JSONL)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "file is not UTF-8 text") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc}") from None
    if not text.strip():
        raise InputError(path, "file is empty")
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg} (column {exc.colno})",
                         line=exc.lineno) from None
    except UnsafeDocument as exc:
        raise InputError(path, str(exc)) from None


def is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def iter_records(path: Path, top: Any | None = None) -> Iterator[Record]:
    """Records of a JSONL file (one per line) or of a JSON list (one per item).

    A JSON document that is not a list is one record. `top` is the already
    parsed document, when the caller had to look at it first.
    """
    if is_jsonl(path) and top is None:
        for idx, (n, obj) in enumerate(iter_jsonl(path)):
            if isinstance(obj, InputError):
                raise obj
            yield Record(obj, idx, n, "")
        return
    doc = read_document(path) if top is None else top
    if isinstance(doc, list):
        for i, obj in enumerate(doc):
            yield Record(obj, i, None, f"[{i}]")
    else:
        yield Record(doc, 0, None, "")


STREAM_BYTES = 4 << 20  # JSON documents larger than this are read record by record


def stream_records(path: Path, prefix: str, loc: str) -> Iterator[Record]:
    """The items of the array at `prefix` (ijson syntax: "item", "simulations.item") of a
    JSON document, parsed one at a time: memory holds one record, not the document, and
    the bounded reader's limits (`check_tree`: depth, values, numbers, text) apply to
    each record, not to the whole file, so a 25 MB τ²-bench results file reads.
    """
    import ijson

    from sage_tod.contracts.safejson import check_tree

    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    with fh:
        i = -1
        try:
            for i, obj in enumerate(ijson.items(fh, prefix, use_float=True)):
                try:
                    check_tree(obj)
                except UnsafeDocument as exc:
                    raise InputError(path, str(exc), field=f"{loc}[{i}]") from None
                yield Record(obj, i, None, f"{loc}[{i}]")
        except ijson.JSONError as exc:
            raise InputError(path, f"malformed JSON after record {i}: "
                             f"{str(exc).splitlines()[0][:200]}",
                             field=f"{loc}[{i + 1}]") from None
        except UnicodeDecodeError:
            raise InputError(path, "file is not UTF-8 text") from None
        except RecursionError:
            raise InputError(path, "nesting is too deep", field=f"{loc}[{i + 1}]") from None


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def json_records(path: Path, whole: Callable[[Any], Any],
                 is_part: Callable[[Any], bool] = lambda _: False) -> Iterator[Record]:
    """The records of a JSON log document, read as they are asked for.

    A top-level list larger than `STREAM_BYTES` is streamed item by item
    (`stream_records`, the same records and locations as a list read whole), unless
    its first item `is_part` of a record (a chat message, a Rasa event): then the list
    is one conversation and is read whole, as is every other document, smaller lists
    included (their parsed form is a few tens of MB at most). `whole` turns a document
    read whole into what `iter_records` reads (a bare message list into one record).
    """
    if file_size(path) > STREAM_BYTES and top_level_keys(path)[0] == "array":
        first = next(stream_records(path, "item", ""), None)
        if first is None or not is_part(first.obj):
            yield from stream_records(path, "item", "")
            return
    yield from iter_records(path, whole(read_document(path)))


def top_level_keys(path: Path, limit: int = 64) -> tuple[str | None, list[str]]:
    """The document's top-level type ("map", "array", ...) and its first `limit` keys,
    read without building the document."""
    import ijson

    keys: list[str] = []
    kind: str | None = None
    try:
        with path.open("rb") as fh:
            for prefix, event, value in ijson.parse(fh):
                if kind is None:
                    kind = {"start_map": "map", "start_array": "array"}.get(event, "value")
                    if kind != "map":
                        break
                if prefix == "" and event == "map_key":
                    keys.append(str(value))
                    if len(keys) >= limit:
                        break
                if prefix == "" and event == "end_map":
                    break
    except (ijson.JSONError, UnicodeDecodeError, OSError, RecursionError):
        return kind, keys
    return kind, keys


def read_json(path: Path) -> Any:
    """Read JSON or gzip-compressed JSON (`*.gz`)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def token_char_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the space-separated tokens of `text` (ConvLab tokenisation)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for tok in text.split(" "):
        if tok:
            spans.append((pos, pos + len(tok)))
        pos += len(tok) + 1
    return spans


def dedupe(items: Iterable[str]) -> list[str]:
    """Unique items in first-seen order."""
    seen: dict[str, None] = {}
    for it in items:
        seen.setdefault(it, None)
    return list(seen)


def check_roles(raw: Any, path: str | Path, line: int | None, loc: str) -> None:
    """A message's `role` must be text before the chat reader looks it up (a list or an
    object there would be an unhashable key, not a located error)."""
    if not isinstance(raw, list):
        return  # the chat reader reports it
    for i, m in enumerate(raw):
        if isinstance(m, dict) and "role" in m and not isinstance(m["role"], str):
            raise InputError(path, f"role must be a string, got {type(m['role']).__name__}",
                             line=line, field=f"{loc}[{i}].role")

