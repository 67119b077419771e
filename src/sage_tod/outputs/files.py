"""The one path every command writes files through.

Three promises (docs/guarantees.md), kept here so no command can forget one:

* nothing a user had is overwritten unless they said `--overwrite`
  (`check_target`); a directory, a missing parent that cannot be made or an
  unwritable place is one `InputError`, never a traceback;
* whole-file outputs (reports, pages, JSON summaries) are written to a
  temporary file beside the target and renamed over it (`write_atomic`), so an
  interrupted or failed write leaves the old file or none, never half a file;
* line files written as they go (verdicts, traces) hold an exclusive
  `fcntl.flock` for their whole life (`LineFile`), so two runs can never
  interleave lines in one file: the second is refused at once.

Every `OSError` of a write (`/dev/full`, a read-only directory, a full disk)
becomes an `InputError` naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from sage_tod.contracts.errors import InputError


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def cannot_write(path: str | Path, exc: OSError) -> InputError:
    """The one-line error for a failed write."""
    return InputError(path, f"cannot write: {_why(exc)}")


def is_special(path: Path) -> bool:
    """A device or pipe (`/dev/stdout`, `/dev/full`): written in place, never renamed over."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_target(path: str | Path, *, overwrite: bool, flag: str = "--overwrite") -> Path:
    """Refuse an existing non-empty file without `overwrite`, and a directory always."""
    p = Path(path)
    if p.is_dir():
        raise InputError(p, "is a directory; give a file name to write")
    if p.is_file() and p.stat().st_size > 0 and not overwrite:
        raise InputError(p, f"exists; pass {flag} to replace it")
    existing = next((a for a in p.parents if a.exists()), None)
    if existing is not None and not existing.is_dir():
        raise InputError(existing, "is not a directory, so nothing can be written under it")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(p.parent, exc) from None
    if not p.parent.is_dir():
        raise InputError(p.parent, "is not a directory")
    return p


def write_atomic(path: str | Path, data: str | bytes, *, overwrite: bool,
                 flag: str = "--overwrite") -> Path:
    """Write a whole file at once: temp file beside it, fsync, rename over the target."""
    p = check_target(path, overwrite=overwrite, flag=flag)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if is_special(p):
        try:
            with p.open("wb") as fh:
                fh.write(payload)
        except OSError as exc:
            raise cannot_write(p, exc) from None
        return p
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise cannot_write(p, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


T = TypeVar("T")


def _plain_line(line: str, fh: IO[str]) -> None:
    fh.write(line + "\n")


class OutputLocked(InputError):
    """Another process holds the file (a second `evaluate --resume` on one output)."""


class LineFile:
    """An exclusively locked text file written line by line (JSONL outputs).

    The file is opened without truncating, locked (non-blocking; a held lock is
    an `OutputLocked` error), and only then truncated (`fresh=True`) or
    positioned at its end, so a refused second writer has changed nothing.
    Each `write_line` is flushed: an interrupted run keeps every finished line.
    """

    def __init__(self, path: str | Path, *, fresh: bool) -> None:
        self.path = Path(path)
        self._fresh = fresh
        self._fh: IO[str] | None = None
        self._fd: int | None = None

    def __enter__(self) -> LineFile:
        if self._fd is None:
            self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        p = self.path
        try:
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise InputError(p, "is a directory; give a file name to write") from None
            # a write-only device (/dev/full) or a path we may only write
            try:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o666)
            except OSError as exc2:
                raise cannot_write(p, exc2) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputLocked(p, "another sage-tod run is writing this file; wait for "
                                      "it to finish (two runs must not write one file)"
                                   ) from None
            raise cannot_write(p, exc) from None
        self._fd = fd
        try:
            if self._fresh and not is_special(p):
                os.ftruncate(fd, 0)
            if not is_special(p):
                os.lseek(fd, 0, os.SEEK_END)
            self._fh = os.fdopen(os.dup(fd), "a", encoding="utf-8", newline="\n")
        except OSError as exc:
            self.close()
            raise cannot_write(p, exc) from None

    def truncate(self, size: int) -> None:
        """Cut the file back (an interrupted last line) while holding the lock."""
        assert self._fd is not None and self._fh is not None
        try:
            self._fh.flush()
            os.ftruncate(self._fd, size)
            os.lseek(self._fd, 0, os.SEEK_END)
            self._fh.seek(0, os.SEEK_END)
        except OSError as exc:
            raise cannot_write(self.path, exc) from None

    def write_line(self, line: str) -> None:
        self.write(_plain_line, line)

    def write(self, writer: Callable[[T, IO[str]], object], record: T) -> None:
        """`writer(record, fh)` (e.g. `contracts.verdicts.write_verdict`, the format's one
        writer) with its errors turned into one-line `InputError`s."""
        assert self._fh is not None
        try:
            writer(record, self._fh)
            self._fh.flush()
        except OSError as exc:
            raise cannot_write(self.path, exc) from None
        except UnicodeEncodeError:
            raise InputError(self.path, "cannot write a line: it holds text that is not "
                                        "valid Unicode (a lone surrogate?)") from None

    def close(self) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError as exc:
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                raise cannot_write(self.path, exc) from None
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def open_lines(path: str | Path, *, overwrite: bool, flag: str = "--overwrite") -> LineFile:
    """A fresh locked line file: refuses an existing non-empty file without `overwrite`."""
    p = check_target(path, overwrite=overwrite, flag=flag)
    lf = LineFile(p, fresh=True)
    lf.open()
    return lf
