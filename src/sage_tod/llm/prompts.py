"""Prompt templates shipped as package data, one file per prompt.

Why files: the baselines must be auditable and comparable (docs/baselines.md
quotes them), and a prompt change must show up as a diff of a text file, not
of Python string literals. A file has a `[system]` and a `[user]` section;
lines starting with `#!` are comments. Placeholders are `$name` (string.Template),
so JSON braces in a prompt need no escaping; a missing placeholder is an error,
not a silently half-filled prompt.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str

    def render(self, **values: str) -> tuple[str, str]:
        """(system, user) with every `$name` filled; KeyError names a missing one."""
        return (string.Template(self.system).substitute(values),
                string.Template(self.user).substitute(values))


def _parse(name: str, text: str) -> Prompt:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#!"):
            continue
        head = line.strip().lower()
        if head in ("[system]", "[user]"):
            current = sections.setdefault(head[1:-1], [])
            continue
        if current is not None:
            current.append(line)
    if "user" not in sections:
        raise ValueError(f"prompt {name}: no [user] section")
    return Prompt(name, "\n".join(sections.get("system", [])).strip(),
                  "\n".join(sections["user"]).strip())


@cache
def load_prompt(name: str) -> Prompt:
    """The prompt `src/sage_tod/llm/prompt_files/<name>.txt`."""
    path = resources.files("sage_tod.llm").joinpath("prompt_files", f"{name}.txt")
    text = path.read_text(encoding="utf-8")
    return _parse(name, text)

