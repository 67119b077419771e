"""Writing a verdicts file safely: fresh, overwritten or resumed.

A verdicts file is only ever written through `VerdictSink`, which holds the
file's exclusive lock (`outputs.files.LineFile`) from the first check to the
last line. Its first line is the run header (`contracts.run_record.RunHeader`):
the sage-tod version and commit, the spec's and the turns file's SHA-256, the
configuration, the options and each stage's fingerprint. `--resume` continues a
file only when

* it has a run header whose `identity()` equals the new run's; any
  difference is listed by field and refused, so one file never mixes verdicts
  of two runs (a file of format 1, without a header, is refused too);
* every line after it is a verdict: a last line cut short by an interrupted
  run is removed; a damaged line elsewhere refuses the resume, names the line
  and leaves the file as it was, unless `truncate_at_damage` asks to cut the
  file there and redo the rest.

Before format 2 the identity lived in a sidecar `<file>.meta.json`; the
header replaces it (a stale sidecar beside a file we rewrite is removed).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.run_record import RunHeader, differences
from sage_tod.contracts.verdicts import Verdict, scan_verdicts, write_header, write_verdict
from sage_tod.outputs.files import LineFile, check_target

SIDECAR_SUFFIX = ".meta.json"  # format 1's identity file, read no more, removed on rewrite


def sidecar_path(path: str | Path) -> Path:
    p = Path(path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def file_sha256(path: str | Path) -> str:
    """Content hash of an input file (streamed: a 100k-turn file is not held in memory)."""
    h = hashlib.sha256()
    try:
        with Path(path).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read file: {exc.strerror or exc}") from None
    return h.hexdigest()


def _is_stream(path: Path) -> bool:
    return str(path.absolute()).startswith(("/dev/", "/proc/")) or (
        path.exists() and not path.is_file())


class VerdictSink:
    """`with VerdictSink(out, header, resume=..., overwrite=...) as sink:` then
    `sink.done` (keys already there) and `sink.write(verdict)`."""

    def __init__(self, path: str | Path, header: RunHeader, *, resume: bool,
                 overwrite: bool, truncate_at_damage: bool = False,
                 flag: str = "--resume to continue it or --overwrite") -> None:
        self.path = Path(path)
        self.header = header
        self.resume = resume
        self.overwrite = overwrite
        self.truncate_at_damage = truncate_at_damage
        self.flag = flag  # what the refusal of an existing file suggests
        self.done: set[str] = set()
        self.cut: str | None = None  # what a --truncate-at-damage resume removed, in words
        self._lines: LineFile | None = None

    def __enter__(self) -> VerdictSink:
        p = self.path
        resuming = self.resume and p.is_file() and p.stat().st_size > 0
        if not resuming:
            check_target(p, overwrite=self.overwrite or self.resume, flag=self.flag)
        lines = LineFile(p, fresh=not resuming)
        lines.open()  # the lock is held from here on
        self._lines = lines
        try:
            if resuming:
                self._prepare_resume()
            else:
                lines.write(write_header, self.header)
                old = sidecar_path(p)
                if not _is_stream(p) and old.is_file():
                    old.unlink()  # format 1's sidecar would describe another run
        except BaseException:
            lines.close()
            self._lines = None
            raise
        return self

    def _prepare_resume(self) -> None:
        assert self._lines is not None
        found = scan_verdicts(self.path, cut_damage=self.truncate_at_damage)
        if found.header is None:
            raise InputError(self.path, "has no run header (written by sage-tod before "
                                        "format 2, or not by `evaluate`), so it cannot be "
                                        "checked to come from the same code, spec, turns and "
                                        "settings; not resuming (use --overwrite to start "
                                        "again)")
        diff = differences(found.header.identity(), self.header.identity())
        if diff:
            raise InputError(self.path, "was written by a different run; not resuming "
                                        "(differs: " + "; ".join(diff[:6])
                                        + ("; ..." if len(diff) > 6 else "") + ")")
        if found.damaged_line is not None:
            self.cut = (f"cut at damaged line {found.damaged_line} ({found.lines_after} "
                        f"line(s) removed); {len(found.keys)} verdict(s) kept")
        if found.good != self.path.stat().st_size:
            self._lines.truncate(found.good)
        self.done = found.keys

    def write(self, verdict: Verdict) -> None:
        assert self._lines is not None
        self._lines.write(lambda v, fh: write_verdict(v, fh, self.header), verdict)

    def close(self) -> None:
        if self._lines is not None:
            lines, self._lines = self._lines, None
            lines.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
