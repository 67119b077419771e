"""Writing a verdicts file safely: fresh, overwritten or resumed.

A verdicts file is only ever written through `VerdictSink`, which holds the
file's exclusive lock (`outputs.files.LineFile`) from the first check to the
last line, and keeps a sidecar `<file>.meta.json` saying what produced it: the
spec's and the turns file's SHA-256, the configuration, the options and each
stage's fingerprint (S2's model hash, backend and claim design; S3's endpoint
and model). `--resume` continues a file only when

* every line is a verdict (a last line cut short by an interrupted run is
  removed; anything else that is not a verdict refuses the resume and leaves
  the file exactly as it was), and
* the sidecar exists and names the same spec, turns, configuration, options
  and models; any difference is listed and refused, so one file never mixes
  verdicts of two runs.

The verdict lines themselves are unchanged (docs/formats.md is a contract):
the identity lives beside the file, not in it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.verdicts import Verdict, scan_verdicts, write_verdict
from sage_tod.outputs.files import LineFile, check_target, write_atomic

SIDECAR_SUFFIX = ".meta.json"
SIDECAR_FORMAT = "sage-tod verdicts sidecar"


def sidecar_path(path: str | Path) -> Path:
    p = Path(path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def _wants_sidecar(path: Path) -> bool:
    """Only a regular file the user named outside /dev and /proc gets a sidecar."""
    if str(path.absolute()).startswith(("/dev/", "/proc/")):
        return False
    return path.is_file() and not path.is_symlink()


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


def _differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = ""
                 ) -> list[str]:
    out: list[str] = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _differences(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} ({a!r} then, {b!r} now)")
    return out


def _normal(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The identity as JSON would give it back (tuples become lists, keys strings)."""
    data: dict[str, Any] = json.loads(json.dumps(identity, sort_keys=True, default=str))
    return data


class VerdictSink:
    """`with VerdictSink(out, identity, resume=..., overwrite=...) as sink:` then
    `sink.done` (keys already there) and `sink.write(verdict)`."""

    def __init__(self, path: str | Path, identity: Mapping[str, Any], *, resume: bool,
                 overwrite: bool) -> None:
        self.path = Path(path)
        self.identity = _normal(identity)
        self.resume = resume
        self.overwrite = overwrite
        self.done: set[str] = set()
        self._lines: LineFile | None = None

    def __enter__(self) -> VerdictSink:
        p = self.path
        resuming = self.resume and p.is_file() and p.stat().st_size > 0
        if not resuming:
            check_target(p, overwrite=self.overwrite or self.resume,
                         flag="--resume to continue it or --overwrite")
        lines = LineFile(p, fresh=not resuming)
        lines.open()  # the lock is held from here on
        self._lines = lines
        try:
            if resuming:
                self._prepare_resume()
            self._write_sidecar()
        except BaseException:
            lines.close()
            self._lines = None
            raise
        return self

    def _prepare_resume(self) -> None:
        assert self._lines is not None
        keys, good = scan_verdicts(self.path)
        side = sidecar_path(self.path)
        if not side.is_file():
            raise InputError(self.path, f"has no sidecar {side.name}, so it cannot be checked "
                                        "to come from the same spec, turns and settings; not "
                                        "resuming (use --overwrite to start again)")
        try:
            meta = json.loads(side.read_text(encoding="utf-8"))
            old = meta["identity"]
            if meta.get("format") != SIDECAR_FORMAT or not isinstance(old, dict):
                raise ValueError("not a sidecar")
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            raise InputError(side, "is not a sage-tod verdicts sidecar; not resuming") from None
        diff = _differences(old, self.identity)
        if diff:
            raise InputError(self.path, "was written by a different run; not resuming "
                                        "(differs: " + "; ".join(diff[:6])
                                        + ("; ..." if len(diff) > 6 else "") + ")")
        if good != self.path.stat().st_size:
            self._lines.truncate(good)
        self.done = keys

    def _write_sidecar(self) -> None:
        meta = {"format": SIDECAR_FORMAT, "sidecar_version": 1, "verdicts": self.path.name,
                "identity": self.identity}
        if not _wants_sidecar(self.path):
            return  # a device or stream (/dev/stdout): nothing to resume, nowhere to write
        write_atomic(sidecar_path(self.path), json.dumps(meta, indent=2, sort_keys=True)
                     + "\n", overwrite=True)

    def write(self, verdict: Verdict) -> None:
        assert self._lines is not None
        self._lines.write(write_verdict, verdict)

    def close(self) -> None:
        if self._lines is not None:
            lines, self._lines = self._lines, None
            lines.close()

    def __exit__(self, *exc: object) -> None:
        self.close()
