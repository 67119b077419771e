"""`sage-tod specs from-tools`: a starting spec from a tool agent's function schemas.

The conversion is `sage_tod.importers.tool_schemas`; this module only reads the
options, prints which rule classified each tool (to stderr, so the spec can go
to stdout) and writes the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from sage_tod.cli.errors import one_line_errors
from sage_tod.importers.tool_schemas import spec_from_tools
from sage_tod.outputs.console import err
from sage_tod.outputs.files import check_target, write_atomic


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def specs_from_tools(
    tools: Annotated[Path, typer.Argument(help="OpenAI function schemas (JSON): the `tools` "
                                               "list your agent passes to the chat API")],
    out: Annotated[Path | None, typer.Option("--out", help="spec file to write (default: "
                                                           "stdout)")] = None,
    writes: Annotated[str | None, typer.Option(help="comma-separated tools that write "
                                                    "(overrides the name rule)")] = None,
    reads: Annotated[str | None, typer.Option(help="comma-separated tools that only read "
                                                   "(overrides the name rule)")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
) -> None:
    """Write a starting spec: a workflow per write tool, its arguments as slots, the read
    tools as reads (docs/formats.md, Tool mapping). Then add your policy's rules."""
    with one_line_errors():
        if out is not None:
            check_target(out, overwrite=overwrite)  # before the work
        draft = spec_from_tools(tools, writes=_names(writes), reads=_names(reads))
        for c in draft.classes:
            err.print(f"{c.tool.name}: {'write' if c.writes else 'read'} ({c.rule})",
                      highlight=False, markup=False)
        for s in draft.skipped:
            err.print(f"note: not a workflow: {s}", highlight=False, markup=False)
        n = sum(1 for c in draft.classes if c.writes) - sum(
            1 for c in draft.classes if c.writes and not c.tool.arguments)
        if out is None:
            sys.stdout.write(draft.text)
            return
        write_atomic(out, draft.text, overwrite=overwrite)
        err.print(f"wrote {out}: {n} workflow(s), "
                  f"{sum(1 for c in draft.classes if not c.writes)} read tool(s); add the "
                  "rules where it says TODO", highlight=False, markup=False)
