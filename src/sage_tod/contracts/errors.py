"""Errors about user input.

Every problem with a file a user gave us is reported as one `InputError` that
names the file, the line (when the format has lines) and the field, so the CLI
can print one readable line and exit with status 2 instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class InputProblem:
    """One located problem in an input file."""

    path: str
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}: {what}{self.message}"


class InputError(Exception):
    """Raised for bad user input; carries the located problem."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None,
                 field: str | None = None) -> None:
        self.problem = InputProblem(str(path), message, line, field)
        super().__init__(str(self.problem))
