"""Turns and verdicts as Parquet tables (optional: needs pyarrow, `pip install
'sage-tod[parquet]'`), because large agent logs live in Parquet.

A turns table has one column per turn field (docs/formats.md, "Parquet"):
flat fields as strings (`turn_id` int or string), nested fields
(`state_before`, `state_after`, `history`, `user_values`, `agent_acts`,
`gold`, `meta`) either as JSON strings, which is what `write_turns_parquet`
writes, or as Arrow structs, maps and lists. Each row becomes the same dict a
JSONL line would, so validation, error messages ("row N" is reported as the
line) and history filling are those of JSONL. A struct-typed state column has
every slot of every row's workflow; its null members are dropped, so they read
as "not in this state" rather than as slots of the wrong workflow.

A verdicts table has the columns people filter on (dialogue_id, turn_id as a
string, workflow, verdict, confidence, classes, config, latency_ms, cost_usd)
and `json`, the verdict's JSONL line, which is what is read back: the round
trip is lossless. The run header (`contracts.run_record`) is the schema's
`sage_tod_run` metadata entry; the `json` lines leave out what it states, as
they do under a JSONL header.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader, is_header
from sage_tod.contracts.safejson import UnsafeDocument, parse_json

NESTED = ("state_before", "state_after", "history", "user_values", "agent_acts", "gold",
          "meta")
_STATES = ("state_before", "state_after")
ROW_GROUP = 4096


def is_parquet(path: str | Path) -> bool:
    return str(path).lower().endswith((".parquet", ".pq"))


def _pyarrow(path: str | Path) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError(path, "reading or writing Parquet needs pyarrow: "
                               "pip install 'sage-tod[parquet]'") from None
    return pyarrow


def _plain(value: Any) -> Any:
    """Arrow map columns come back as lists of (key, value) pairs; make them dicts."""
    if isinstance(value, list) and value and all(
            isinstance(x, tuple) and len(x) == 2 for x in value):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def row_to_turn_obj(row: Mapping[str, Any], path: str | Path = "<parquet>",
                    line: int | None = None) -> dict[str, Any] | InputError:
    """One table row as the dict a turns JSONL line would hold (or the error)."""
    obj: dict[str, Any] = {}
    for k, v in row.items():
        if v is None and k not in ("state_before", "state_after"):
            continue  # an absent optional field is a null cell
        if k in NESTED and isinstance(v, str):
            try:
                v = parse_json(v)  # the same limits as a JSONL line (contracts.safejson)
            except json.JSONDecodeError as exc:
                return InputError(path, f"malformed JSON in column {k}: {exc.msg}",
                                  line=line, field=k)
            except UnsafeDocument as exc:
                return InputError(path, f"column {k}: {exc}", line=line, field=k)
        else:
            v = _plain(v)
        if k in _STATES and isinstance(v, dict):
            v = {s: x for s, x in v.items() if x is not None} if not isinstance(
                row.get(k), str) else v
        obj[k] = v
    return obj


def _open_table(path: str | Path) -> tuple[Path, Any]:
    """The path and its `pyarrow.parquet.ParquetFile`; one-line errors when it is not one."""
    pa = _pyarrow(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(p, "file not found")
    try:
        return p, pa.parquet.ParquetFile(str(p))
    except (OSError, pa.ArrowException) as exc:
        raise InputError(p, f"not a readable Parquet file: {exc}") from None


def iter_parquet_rows(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(row number from 1, turn dict or InputError) for each row, one batch at a time."""
    p, pf = _open_table(path)
    n = 0
    for batch in pf.iter_batches(batch_size=ROW_GROUP):
        for row in batch.to_pylist():
            n += 1
            yield n, row_to_turn_obj(row, p, n)


def turn_row(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A turn dict (JSONL form) as a row of the written table: nested fields as JSON.

    Key order is kept (no sort_keys): the order of a state's slots is the order of
    the turn's criteria, and so of its verdict."""
    row: dict[str, Any] = {}
    for k, v in obj.items():
        if k in NESTED:
            row[k] = None if v is None else json.dumps(v, ensure_ascii=False)
        elif k == "turn_id":
            row[k] = str(v) if not isinstance(v, int) else v
        else:
            row[k] = v
    return row


def write_turns_parquet(turns: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write turn dicts (the JSONL form) as a turns table; the row count.

    `turn_id` keeps its type when every row agrees (all ints or all strings);
    mixed ids are written as strings.
    """
    pa = _pyarrow(path)
    rows = [turn_row(t) for t in turns]
    if any(not isinstance(r.get("turn_id"), int) for r in rows):
        for r in rows:
            r["turn_id"] = str(r.get("turn_id"))
    cols = ["dialogue_id", "turn_id", "workflow", "user", "agent", *NESTED]
    extra = sorted({k for r in rows for k in r} - set(cols))
    cols += extra
    table = pa.table({c: [r.get(c) for r in rows] for c in cols})
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pa.parquet.write_table(table, str(path))
    return len(rows)


VERDICT_COLUMNS = ("dialogue_id", "turn_id", "workflow", "verdict", "confidence", "classes",
                   "config", "latency_ms", "cost_usd", "json")


class VerdictParquetWriter:
    """Verdicts to a Parquet file in row groups of ROW_GROUP: memory stays bounded."""

    def __init__(self, path: str | Path, header: RunHeader | None = None, *,
                 resume: bool = False, overwrite: bool = True, **_: Any) -> None:
        """Same call as the JSONL `VerdictSink`; a Parquet file is written whole, so
        `resume` is refused and an existing file is replaced (the CLI asks for
        --overwrite first). `header` is the schema's `sage_tod_run` metadata."""
        if resume:
            raise InputError(path, "--resume needs a JSONL --out (a Parquet file is "
                                   "written whole)")
        self.done: set[str] = set()
        self._pa = _pyarrow(path)
        pa = self._pa
        self.path = Path(path)
        self.schema = pa.schema([
            ("dialogue_id", pa.string()), ("turn_id", pa.string()), ("workflow", pa.string()),
            ("verdict", pa.string()), ("confidence", pa.float64()),
            ("classes", pa.list_(pa.string())), ("config", pa.string()),
            ("latency_ms", pa.float64()), ("cost_usd", pa.float64()), ("json", pa.string())],
            metadata=None if header is None else {b"sage_tod_run": header.to_json().encode()})
        self.header = header
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._w = pa.parquet.ParquetWriter(str(self.path), self.schema)
        self._rows: list[dict[str, Any]] = []
        self.count = 0

    def write(self, v: Any) -> None:
        """One `Verdict` (anything with `to_dict()` and `to_json()`)."""
        d = v.to_dict()
        self._rows.append({
            "dialogue_id": d["dialogue_id"], "turn_id": str(d["turn_id"]),
            "workflow": d.get("workflow"), "verdict": d["verdict"],
            "confidence": d.get("confidence"), "classes": [str(c) for c in d.get("classes", [])],
            "config": d.get("config"), "latency_ms": d.get("latency_ms"),
            "cost_usd": d.get("cost_usd"), "json": v.to_line(self.header)})
        self.count += 1
        if len(self._rows) >= ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self._w.write_table(self._pa.Table.from_pylist(self._rows, schema=self.schema))
            self._rows = []

    def close(self) -> None:
        self.flush()
        self._w.close()

    def __enter__(self) -> VerdictParquetWriter:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def parquet_header(path: str | Path) -> RunHeader | None:
    """The run header in a verdicts table's schema metadata, or None (format 1)."""
    p, pf = _open_table(path)
    raw = (pf.schema_arrow.metadata or {}).get(b"sage_tod_run")
    if raw is None:
        return None
    try:
        obj = parse_json(raw)
        if not is_header(obj):
            raise ValueError("not a run header")
        return RunHeader.model_validate(obj)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(p, f"damaged run header in the schema metadata: {exc}",
                         field="sage_tod_run") from None


def iter_verdict_json(path: str | Path) -> Iterator[tuple[int, str]]:
    """(row number, verdict JSON line) of a verdicts table."""
    p, pf = _open_table(path)
    if "json" not in pf.schema_arrow.names:
        raise InputError(p, "not a verdicts table: no `json` column", field="json")
    n = 0
    for batch in pf.iter_batches(batch_size=ROW_GROUP, columns=["json"]):
        for s in batch.column(0).to_pylist():
            n += 1
            yield n, s
