"""`sage-tod import` and the `evaluate --format` input path.

`import` reads a log through `import_file` and writes the turns as JSONL;
`evaluate --format` streams the same turns (`importers.base.stream_file`) and
validates them as `load_turns` validates a file, so evaluating a log directly and
evaluating its import give the same verdicts. `report` prints the import summary
(after the run for `evaluate --format`, once every count is known).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import TurnFile
from sage_tod.importers.base import ImportResult, available_formats
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import check_target, write_atomic

_MAX_LISTED = 10


def _opts(workflow: str | None, corpus: Path | None, tool_results: bool = False
          ) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if tool_results:
        opts["tool_results"] = True
    if workflow is not None:
        opts["workflow"] = workflow
    if corpus is not None:
        opts["corpus"] = corpus
    return opts


def read_log(fmt: str, path: Path, spec: SpecBundle, **opts: Any) -> ImportResult:
    """`import_file` as `evaluate --format` reads it (`pipeline.read_agent_log`): an
    unknown format is bad input, a wrong one is told what the file looks like."""
    from sage_tod.pipeline.files import read_agent_log

    return read_agent_log(fmt, path, spec, **opts)


def report(res: ImportResult) -> None:
    """The import summary on stderr: counts, then each skipped item and ignored tool once."""
    err.print(f"{res.format} {res.path}: {res.summary()}", highlight=False, markup=False)
    for s in res.skipped[:_MAX_LISTED]:
        err.print(f"  skipped {s}", highlight=False, markup=False)
    if len(res.skipped) > _MAX_LISTED:
        err.print(f"  ... and {len(res.skipped) - _MAX_LISTED} more skipped item(s)",
                  highlight=False, markup=False)
    for name, n in sorted(res.ignored_tools.items()):
        err.print(f"  ignored tool {name!r} ({n} call(s)): not in the spec's tools mapping",
                  highlight=False, markup=False)
    unused = list(res.unused_tools)
    for name in res.unused_tools:  # a spec tool no call used, next to a called tool it
        close = difflib.get_close_matches(name, list(res.ignored_tools), n=1, cutoff=0.8)
        if close:                  # does not map: a misspelling re-routes silently
            unused.remove(name)
            err.print(f"  [yellow]warning:[/] spec tool {name!r} is called nowhere in this "
                      f"log; the log calls the unmapped tool {close[0]!r} (a misspelling "
                      "in the spec's tools?)", highlight=False)
    if unused:
        shown = ", ".join(repr(u) for u in unused[:_MAX_LISTED])
        err.print(f"  note: {len(unused)} spec tool(s) no call in this log used: {shown}"
                  + (" ..." if len(unused) > _MAX_LISTED else ""), highlight=False,
                  markup=False)
    for name, n in sorted(res.ignored_slots.items()):
        err.print(f"  ignored slot {name!r} ({n} value(s)): not a slot of the workflow",
                  highlight=False, markup=False)
    for what, n in sorted(res.notes.items()):
        err.print(f"  note: {n} {what}", highlight=False, markup=False)


def load_log(spec_path: Path, log: Path, fmt: str, skip_invalid: bool,
             workflow: str | None = None) -> tuple[SpecBundle, TurnFile]:
    """The `evaluate --format` input: the log's turns, validated as a turns file would be."""
    bundle = load_spec(spec_path)
    res = read_log(fmt, log, bundle, **_opts(workflow, None))
    report(res)
    tf = res.records(bundle, skip_invalid=skip_invalid)
    for prob in tf.skipped:
        err.print(f"[yellow]skipped:[/] {prob}", highlight=False)
    return bundle, tf


def import_cmd(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help="log format: "
                                       + ", ".join(available_formats()))],
    log: Annotated[Path, typer.Argument(metavar="IN", help="the log file")],
    spec: Annotated[Path, typer.Option(help="workflow spec (YAML or JSON), with the "
                                            "tools mapping for tool-calling logs")],
    out_path: Annotated[Path, typer.Option("--out", help="turns JSONL to write")],
    workflow: Annotated[str | None, typer.Option(
        help="workflow id of every conversation (default: inferred, docs/logs.md)")] = None,
    corpus: Annotated[Path | None, typer.Option(
        help="mwzeval only: the MultiWOZ dialogues the predictions were made on")] = None,
    tool_results: Annotated[bool, typer.Option(
        help="openai-chat, tau-bench: show tool results to the evaluator as history "
             "entries (docs/logs.md)")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
) -> None:
    """Convert an agent's log into turns JSONL; prints what was read, skipped and ignored."""
    try:
        bundle = load_spec(spec)
        check_target(out_path, overwrite=overwrite)  # before reading a large log
        res = read_log(fmt, log, bundle, **_opts(workflow, corpus, tool_results))
        res.records(bundle)  # the output must be a valid turns file for this spec
        # one atomic write: an interrupted import never leaves half a turns file
        write_atomic(out_path, "".join(json.dumps(t, sort_keys=True, ensure_ascii=False)
                                       + "\n" for t in res.turns), overwrite=overwrite)
    except InputError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
        raise typer.Exit(2) from None
    report(res)
    out.print(f"wrote {res.n_turns} turn(s) of {res.conversations} conversation(s) to "
              f"{out_path} ({len(res.skipped)} skipped item(s))", highlight=False)


def register(app: typer.Typer) -> None:
    """Add `sage-tod import` to the command line."""
    app.command("import")(import_cmd)
