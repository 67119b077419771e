"""`sage-tod audit sample | page | score | labels`: a blind human audit of the verdicts
(docs/audit.md). The work is in `outputs.audit_*`; this only reads options and prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import iter_jsonl
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.outputs.audit_page import render_audit_page
from sage_tod.outputs.audit_sample import SampleOptions, sample_audit
from sage_tod.outputs.audit_score import check_labels, score_audit, to_markdown
from sage_tod.outputs.audit_set import (
    ITEMS,
    KEY,
    labels_from_rows,
    labels_json,
    read_items,
    read_key,
    read_labels,
    write_audit_set,
)
from sage_tod.outputs.console import err, out
from sage_tod.outputs.files import check_target, write_atomic
from sage_tod.outputs.sink import file_sha256

audit_app = typer.Typer(no_args_is_help=True, help="A blind audit by your annotators: sample "
                        "turns, label them in the browser, score agreement and the tool.")

Overwrite = Annotated[bool, typer.Option(help="replace existing output files")]


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out_: dict[str, str] = {}
    for v in values:
        name, sep, val = v.partition("=")
        if not sep or not name:
            raise InputError(flag, f"expected NAME=VALUE, got {v!r}")
        out_[name] = val
    return out_


@audit_app.command("sample")
def sample(
    verdicts: Annotated[Path, typer.Option(help="verdicts JSONL of `sage-tod evaluate`")],
    turns: Annotated[Path, typer.Option(help="the turns file the verdicts were made from")],
    out_dir: Annotated[Path, typer.Option("--out", help="audit directory to write")],
    n: Annotated[int, typer.Option("--n", help="turns to sample")] = 200,
    seed: Annotated[int, typer.Option(help="random seed (same inputs + seed = same set)")
                    ] = 0,
    spec: Annotated[Path | None, typer.Option(
        help="workflow spec: shows annotators each workflow's required fields")] = None,
    acceptable_share: Annotated[float, typer.Option(
        help="share of the sample drawn from turns the tool found acceptable")] = 0.25,
    allocation: Annotated[str, typer.Option(
        help="the rest over the other strata: equal (each class alike) | proportional")
                          ] = "equal",
    weight: Annotated[list[str] | None, typer.Option(
        help="STRATUM=W, repeatable: weight a stratum (failure:IUV, failure:UV, undecided, "
             "...; 0 leaves it out)")] = None,
    overwrite: Overwrite = False,
) -> None:
    """Draw a stratified, seeded sample of turns into an audit set (no verdict in what
    annotators will see; the tool's answers go to key.json for scoring)."""
    try:
        weights = {k: float(v) for k, v in _pairs(weight or [], "--weight").items()}
    except ValueError:
        raise InputError("--weight", "a weight must be a number") from None
    opts = SampleOptions(n=n, seed=seed, acceptable_share=acceptable_share,
                         allocation=allocation, weights=weights)
    bundle = load_spec(spec) if spec is not None else None
    vs = read_verdicts(verdicts)
    res = sample_audit(vs, turns, opts, verdicts_sha256=file_sha256(verdicts),
                       verdicts_path=str(verdicts), spec=bundle)
    write_audit_set(out_dir, res.manifest, res.items, res.key, overwrite=overwrite)
    table = Table(title=f"audit {res.manifest.audit_id}: {len(res.items)} of {len(vs)} turns")
    for col in ("stratum", "turns", "sampled"):
        table.add_column(col, justify="left" if col == "stratum" else "right")
    for name, s in res.key.strata.items():
        table.add_row(name, str(s.population), str(s.sampled))
    out.print(table)
    out.print(f"wrote {out_dir / ITEMS} (for the pages) and {out_dir / KEY} (the tool's "
              "answers: keep it from the annotators)", highlight=False, soft_wrap=True)


@audit_app.command("page")
def page(
    audit_dir: Annotated[Path, typer.Argument(help="audit directory of `audit sample`")],
    annotator: Annotated[str, typer.Option(help="the annotator's name (in the labels file)")],
    out_path: Annotated[Path, typer.Option("--out", help="HTML page to write")],
    overwrite: Overwrite = False,
) -> None:
    """Write one self-contained labelling page for an annotator (opens offline)."""
    if not annotator.strip():
        raise InputError("--annotator", "give a name")
    manifest, items = read_items(audit_dir)
    check_target(out_path, overwrite=overwrite)
    html = render_audit_page(manifest, items, annotator.strip())
    write_atomic(out_path, html, overwrite=overwrite)
    out.print(f"wrote {out_path} ({len(items)} items, {len(html) // 1024} KiB) for "
              f"{annotator.strip()}", highlight=False, soft_wrap=True)


@audit_app.command("score")
def score(
    audit_dir: Annotated[Path, typer.Argument(help="audit directory of `audit sample`")],
    labels: Annotated[list[Path], typer.Argument(help="labels files exported from the pages "
                                                      "(two or more for agreement)")],
    adjudicated: Annotated[Path | None, typer.Option(
        help="labels file of the adjudication: its labels replace the annotators' consensus "
             "on the items it covers")] = None,
    allow_missing: Annotated[bool, typer.Option(
        help="score the items every annotator labelled instead of refusing")] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="also write the JSON")
                         ] = None,
    md_path: Annotated[Path | None, typer.Option("--markdown", help="also write the markdown")
                       ] = None,
    overwrite: Overwrite = False,
) -> None:
    """Agreement (Cohen's / Fleiss' kappa), consensus and disagreements, and the tool's
    precision / recall / F1 against the consensus, per class, with bootstrap intervals."""
    manifest, items = read_items(audit_dir)
    key = read_key(audit_dir, manifest.audit_id)
    ids = [i.item for i in items]
    files = [(p, read_labels(p)) for p in labels]
    by_file = check_labels(files, manifest.audit_id, ids, allow_missing=allow_missing)
    adj = None
    if adjudicated is not None:
        (adj,) = check_labels([(adjudicated, read_labels(adjudicated))], manifest.audit_id,
                              ids, complete=False)
    for p in (json_path, md_path):
        if p is not None:
            check_target(p, overwrite=overwrite)
    res = score_audit([lf.annotator for _, lf in files], by_file, key, ids, adj)
    md = to_markdown(res)
    if json_path is not None:
        write_atomic(json_path, json.dumps(res.to_dict(), indent=1) + "\n",
                     overwrite=overwrite)
    if md_path is not None:
        write_atomic(md_path, md, overwrite=overwrite)
    out.print(md, markup=False, highlight=False, soft_wrap=True)


@audit_app.command("labels")
def labels(
    audit_dir: Annotated[Path, typer.Argument(help="audit directory of `audit sample`")],
    source: Annotated[Path, typer.Argument(help="JSONL rows with labels you already have")],
    annotator: Annotated[str, typer.Option(help="name for these labels")],
    out_path: Annotated[Path, typer.Option("--out", help="labels file to write")],
    label_field: Annotated[str, typer.Option(help="field with the label (dots reach into "
                                                  "objects: gold.label)")] = "label",
    class_field: Annotated[str | None, typer.Option(help="field with the failure class")
                           ] = None,
    note_field: Annotated[str | None, typer.Option(help="field with a note")] = None,
    key: Annotated[str, typer.Option(help="the row's turn key, from its fields")
                   ] = "{dialogue_id}:{turn_id}",
    map_: Annotated[list[str] | None, typer.Option(
        "--map", help="VALUE=LABEL, repeatable: rename a label value (drop=cant_tell)")] = None,
    overwrite: Overwrite = False,
) -> None:
    """Turn labels you already have (a spreadsheet export, gold labels, an earlier audit)
    into a labels file for this audit set, to score like an annotator's."""
    manifest, items = read_items(audit_dir)
    rows = []
    for n, row in iter_jsonl(source):
        if isinstance(row, InputError):
            raise row
        rows.append((n, row))
    lf, skipped = labels_from_rows(rows, items, manifest.audit_id, annotator, source=source,
                                   key_template=key, label_field=label_field,
                                   class_field=class_field, note_field=note_field,
                                   mapping=_pairs(map_ or [], "--map"))
    write_atomic(out_path, labels_json(lf), overwrite=overwrite)
    msg = (f"wrote {out_path}: {len(lf.labels)} of {len(items)} items labelled by "
           f"{annotator}; {skipped} row(s) for turns outside the audit set skipped")
    (err if len(lf.labels) < len(items) else out).print(msg, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add `sage-tod audit` to the command line."""
    app.add_typer(audit_app, name="audit")
