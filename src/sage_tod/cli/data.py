"""`sage-tod slices build` and `sage-tod specs export` (wired into the main CLI).

Missing data and bad options end in one readable line on stderr and exit
status 2, like the rest of the CLI; nothing is half-written when a requested
slice cannot be built, because availability is checked before any work.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from sage_tod.cli.natural import natural_cmd
from sage_tod.cli.tool_agents import slices_cmd as tool_agents_cmd
from sage_tod.contracts.criteria import CLASS_NAMES
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import parse_spec
from sage_tod.lab.datasets import abcd, multiwoz, sgd
from sage_tod.lab.datasets.common import SpecDoc
from sage_tod.lab.datasets.paths import ENV_VAR, data_root
from sage_tod.lab.slices import DEFAULT_SLICES, SLICE_NAMES, BuildConfig, build, dump_spec
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import write_atomic

slices_app = typer.Typer(no_args_is_help=True, add_completion=False,
                         help="Benchmark slices (MW-mixed, UV-rich, SGD, SGD-X, dev, ABCD-UV).")
DATASETS = ("multiwoz", "sgd", "abcd")


def _fail(msg: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def compile_dataset_spec(dataset: str, variant: str | None = None,
                         root: Path | None = None) -> SpecDoc:
    """The compiled spec document of a dataset (validated with `parse_spec`)."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose from {', '.join(DATASETS)}")
    if variant is not None and dataset != "sgd":
        raise ValueError("--variant applies to sgd only (SGD-X v1..v5)")
    if dataset == "multiwoz":
        doc = multiwoz.compile_spec(root)
    elif dataset == "sgd":
        if variant is not None and variant not in sgd.VARIANTS:
            raise ValueError(f"unknown SGD-X variant {variant!r}; choose from "
                             + ", ".join(sgd.VARIANTS))
        doc = sgd.compile_spec("test", root, variant=variant)
    else:
        doc = abcd.compile_spec(root)
    parse_spec(doc, f"<{dataset} spec>")
    return doc


def specs_export(
    dataset: Annotated[str, typer.Argument(help="multiwoz | sgd | abcd")],
    out: Annotated[Path | None, typer.Option("--out", help="file to write (default: stdout)")
                   ] = None,
    variant: Annotated[str | None, typer.Option(help="SGD-X variant v1..v5 (sgd only)")
                       ] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing --out file")] = False,
) -> None:
    """Compile a dataset's schema into a workflow spec (YAML) in the public spec format."""
    try:
        text = dump_spec(compile_dataset_spec(dataset, variant))
    except InputError as exc:
        raise _fail(str(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if out is None:
        sys.stdout.write(text)
        return
    write_atomic(out, text, overwrite=overwrite)
    err.print(f"wrote {out}", highlight=False)


def _counts_table(manifest: dict[str, object]) -> Table:
    t = Table(title="slices", show_header=True, header_style="bold")
    for col in ("slice", "file", "turns", "workflows", "clean", *CLASS_NAMES):
        t.add_column(col, justify="left" if col in ("slice", "file") else "right")
    slices = manifest["slices"]
    assert isinstance(slices, dict)
    for name, s in slices.items():
        cls = s["classes"]
        t.add_row(name, s["file"], str(s["n"]), str(s["workflows"]),
                  str(s["labels"].get("acceptable", 0)), str(cls["IUV"]), str(cls["WNF"]),
                  str(cls["PC"]), str(cls["UV"]))
    return t


@slices_app.command("build")
def build_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="directory to write the slices to")],
    only: Annotated[str, typer.Option(
        "--slices", help="comma-separated: " + ", ".join(SLICE_NAMES) + " or 'all' "
        "(default: all but abcd-uv, which needs the full ABCD corpus)")
    ] = ",".join(DEFAULT_SLICES),
    seed: Annotated[int, typer.Option(help="seed of every sampling and injection choice")] = 0,
    no_acts: Annotated[bool, typer.Option("--no-acts", help="text-only: omit user_values "
                                                            "and agent_acts")] = False,
    data: Annotated[Path | None, typer.Option(help="data directory (default: $SAGE_TOD_DATA)")
                    ] = None,
) -> None:
    """Build the benchmark slices (seeded; identical files on every run) and their specs."""
    names = list(SLICE_NAMES) if only.strip() == "all" else [
        n.strip() for n in only.split(",") if n.strip()]
    root = data if data is not None else (data_root() if os.environ.get(ENV_VAR) else None)
    if root is not None and "abcd-uv" not in names and not (root / abcd.FULL).exists():
        err.print(f"note: ABCD-UV not built: the full corpus {root / abcd.FULL} is missing "
                  "(see docs/datasets.md).", highlight=False, soft_wrap=True)
    try:
        manifest = build(out_dir, names, BuildConfig(seed=seed, acts=not no_acts), root)
    except InputError as exc:
        raise _fail(str(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    out.print(_counts_table(manifest))
    out.print(f"wrote {len(manifest['slices'])} slice(s), specs and manifest.json to {out_dir}",
              highlight=False)


slices_app.command("natural")(natural_cmd)
slices_app.command("tool-agents")(tool_agents_cmd)
