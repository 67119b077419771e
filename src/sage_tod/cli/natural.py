"""`sage-tod slices natural --out DIR`: build the natural-failure slice from the data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sage_tod.contracts.errors import InputError
from sage_tod.outputs.console import err


def natural_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="directory to write the slice to")],
    data: Annotated[Path | None, typer.Option(help="data directory (default: $SAGE_TOD_DATA)")
                    ] = None,
) -> None:
    """Natural failures of six published MultiWOZ systems (raw labels + the audited subset)."""
    from sage_tod.contracts.spec import parse_spec
    from sage_tod.lab.datasets.multiwoz import compile_spec
    from sage_tod.lab.datasets.paths import data_root
    from sage_tod.lab.natural import build_natural
    from sage_tod.lab.slices import dump_spec

    try:
        root = data if data is not None else data_root()
        doc = compile_spec(root)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "multiwoz.yaml").write_text(dump_spec(doc), encoding="utf-8", newline="\n")
        stats = build_natural(out_dir, parse_spec(doc, out_dir / "multiwoz.yaml"), root)
    except (InputError, ValueError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    a = stats["audited"]
    err.print(f"wrote {out_dir}/natural.jsonl ({stats['n']} turns: "
              f"{stats['labels'].get('failure', 0)} failures), natural-audited.jsonl "
              f"({a['n']} turns: {a['labels'].get('failure', 0)} failures), "
              "natural-stats.json and multiwoz.yaml", highlight=False, soft_wrap=True)
