"""Do two runs give the same verdicts? The check behind every "verdicts unchanged".

A speed or refactoring change must leave every verdict as it was; a quality
change must say which turns moved. This compares two verdict files (JSONL or
Parquet) or two `sage-tod bench` directories (every `runs/<slice>/<config>`
file present in either) turn by turn, keyed by `dialogue_id:turn_id`, with
`latency_ms` left out (wall time differs on every run). It reports, per file,
how many turns differ and how many changed their label, with the first few
changes spelled out (label before → after and the first field that differs),
and what differs between the two files' run headers (code version and commit,
inputs, options, each stage's fingerprint, library versions): the why beside
the what.

`format_version` is a property of the file, not of a turn: a format-2 file states it
once in its header, a format-1 file (no header) on every line. It is compared once,
with the headers (`header_differences`), and left out of the turn-by-turn comparison,
so a format-1 run and a format-2 run of the same verdicts are identical turn by turn
and differ in the header only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader, differences
from sage_tod.contracts.verdicts import iter_verdicts, read_header

IGNORED = ("latency_ms",)
# fields of the file, not of the turn: compared once, with the run headers
PER_FILE = ("format_version",)
_SUFFIXES = (".jsonl", ".parquet", ".pq")


@dataclass(frozen=True)
class TurnChange:
    key: str
    before: str | None  # label, None when the turn is missing on that side
    after: str | None
    field: str  # first top-level field that differs ("" when a side is missing)
    decided: bool = True  # a label, or a criterion's decision or deciding stage, changed


@dataclass
class FileDiff:
    name: str
    turns: int
    changed: list[TurnChange] = field(default_factory=list)
    # run-header fields that differ ("field (a then, b now)"); a file of format 1 has none
    header: list[str] = field(default_factory=list)

    @property
    def relabelled(self) -> int:
        return sum(c.before != c.after for c in self.changed)

    @property
    def redecided(self) -> int:
        """Turns where a decision moved, not only a rationale, margin or confidence."""
        return sum(c.decided for c in self.changed)


def _rows(path: Path, ignored: Iterable[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for v in iter_verdicts(path):
        d = v.to_dict()
        for k in (*PER_FILE, *ignored):
            d.pop(k, None)
        key = f"{d['dialogue_id']}:{d['turn_id']}"
        if key in out:
            raise InputError(path, f"turn {key} appears twice")
        out[key] = d
    return out


def _first_field(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    return next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), "")


def _decisions(d: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    return [(c.get("id"), c.get("decision"), c.get("decided_by"))
            for c in d.get("criteria", [])]


def _decided(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a["verdict"] != b["verdict"] or a.get("classes") != b.get("classes")
            or _decisions(a) != _decisions(b))


def diff_files(a: Path, b: Path, name: str = "", ignored: Iterable[str] = IGNORED
               ) -> FileDiff:
    """Turn-by-turn differences between two verdict files."""
    ign = tuple(ignored)
    ra, rb = _rows(a, ign), _rows(b, ign)
    out = FileDiff(name or b.name, len(set(ra) | set(rb)), header=header_differences(a, b))
    for key in [*ra, *(k for k in rb if k not in ra)]:
        x, y = ra.get(key), rb.get(key)
        if x == y:
            continue
        out.changed.append(TurnChange(
            key, None if x is None else x["verdict"], None if y is None else y["verdict"],
            "" if x is None or y is None else _first_field(x, y),
            x is None or y is None or _decided(x, y)))
    return out


def header_differences(a: Path, b: Path) -> list[str]:
    """What differs between the run headers of two verdict files (creation time aside).

    A file without a header (format 1) is compared by its format version, read from its
    first verdict line, so a format-1 file against a format-2 one reads
    `format_version (1 then, 2 now)` and says which side has no header; the turns are
    then compared without `format_version` (`PER_FILE`).
    """
    ha, hb = read_header(a), read_header(b)
    if ha is None or hb is None:
        out = differences({"format_version": _format_version(a, ha)},
                          {"format_version": _format_version(b, hb)})
        if (ha is None) != (hb is None):
            old, new = (a, b) if ha is None else (b, a)
            out.append(f"run header (only in {new.name}; {old.name} has none: format 1, "
                       "written before run headers)")
        return out
    da, db = ha.to_dict(), hb.to_dict()
    for d in (da, db):
        d.pop("created", None)
    return differences(da, db)


def _format_version(path: Path, header: RunHeader | None) -> int | None:
    """The file's format: its header's, else its first verdict's (None when empty)."""
    if header is not None:
        return header.format_version
    return next((v.format_version for v in iter_verdicts(path)), None)


def _verdict_files(root: Path) -> dict[str, Path]:
    base = root / "runs" if (root / "runs").is_dir() else root
    # (a run's `.meta.json` sidecar has none of these suffixes)
    return {str(p.relative_to(base)): p for p in sorted(base.rglob("*"))
            if p.is_file() and p.suffix.lower() in _SUFFIXES}


def diff_runs(a: Path, b: Path, ignored: Iterable[str] = IGNORED) -> list[FileDiff]:
    """Two verdict files, or every verdict file of two bench (or plain) directories;
    a file present on one side only counts every turn of it as changed."""
    for p in (a, b):
        if not p.exists():
            raise InputError(p, "no such file or directory")
    if a.is_file() and b.is_file():
        return [diff_files(a, b, b.name, ignored)]
    if a.is_file() or b.is_file():
        raise InputError(a if a.is_file() else b,
                         "compare two files or two directories, not one of each")
    fa, fb = _verdict_files(a), _verdict_files(b)
    if not fa and not fb:
        raise InputError(a, "no verdict files (.jsonl/.parquet) under either directory")
    out: list[FileDiff] = []
    for name in sorted(set(fa) | set(fb)):
        if name in fa and name in fb:
            out.append(diff_files(fa[name], fb[name], name, ignored))
            continue
        present = fa.get(name) or fb[name]
        rows = _rows(present, tuple(ignored))
        d = FileDiff(name, len(rows))
        d.changed = [TurnChange(k, r["verdict"] if name in fa else None,
                                r["verdict"] if name in fb else None, "") for k, r in rows.items()]
        out.append(d)
    return out
