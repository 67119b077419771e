"""Where the benchmark data lives, and clear errors when a file is missing.

The corpora are large and licensed separately, so they are never copied into
the repository or the package: they are read from a data directory that
`SAGE_TOD_DATA` (or a command's `--data` option) names. Nothing is guessed from
the checkout or the working directory, so an installed wheel and a checkout
behave alike; the Makefile, `.ci/run` and the test suite set `SAGE_TOD_DATA`
to `../shared/data` when that exists. A missing file is reported with its path
and where to get it upstream (`WHAT_TO_GET`).
"""

from __future__ import annotations

import os
from pathlib import Path

from sage_tod.contracts.errors import InputError

ENV_VAR = "SAGE_TOD_DATA"

# What to fetch when a file is missing, keyed by the first path components.
WHAT_TO_GET: dict[str, str] = {
    "multiwoz/mwz21_convlab2": "ConvLab-2's MultiWOZ 2.1 (thu-coai/ConvLab-2, data/multiwoz/"
                               "{val,test}.json.zip, unzipped and gzipped)",
    "multiwoz/mwz24": "MultiWOZ 2.4 (smartyfh/MultiWOZ2.4, data/MULTIWOZ2.4.zip)",
    "multiwoz/mwz22": "the MultiWOZ 2.2 schema (budzianowski/multiwoz, data/MultiWOZ_2.2/"
                      "schema.json)",
    "multiwoz/db": "the MultiWOZ databases (budzianowski/multiwoz, db/*_db.json)",
    "sgd/sgd_x": "the SGD-X variant schemas (google-research-datasets/dstc8-schema-guided-"
                 "dialogue, sgd_x/data/v1..v5)",
    "sgd": "the Schema-Guided Dialogue dataset (google-research-datasets/dstc8-schema-"
           "guided-dialogue)",
    "abcd": "ABCD (asappresearch/abcd, data/abcd_v1.1.json.gz, ontology.json, kb.json)",
    "mwzeval": "published MultiWOZ system outputs (Tomiinek/MultiWOZ_Evaluation, "
               "predictions/*.json; the development subset's ids in dev_dialogues.json)",
    "snli": "SNLI 1.0 (the Stanford NLI corpus, snli_1.0_{train,test}.jsonl, gzipped)",
}


class DataMissing(InputError):
    """A data file the command needs is not in the data directory."""


class DataRootUnset(DataMissing):
    """No data directory was named (`SAGE_TOD_DATA` unset and no `--data`)."""


def data_root() -> Path:
    """The data directory named by $SAGE_TOD_DATA; `DataRootUnset` when it is not set."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    raise DataRootUnset(f"${ENV_VAR}", "not set: the data sets are not part of sage-tod; set "
                        f"{ENV_VAR} (or pass --data) to a directory laid out as in "
                        "docs/datasets.md. " + layout_text())


def layout_text(rels: list[str] | None = None) -> str:
    """'It needs: PATH (SOURCE); ...' for the given data-relative paths (default: all)."""
    items = rels if rels is not None else list(WHAT_TO_GET)
    return "It needs: " + "; ".join(f"{r} ({what_to_get(r)})" for r in items)


def require_all(rels: list[str], root: Path | None = None) -> None:
    """Every path of `rels` under the data root, checked at once: one error lists all missing."""
    try:
        base = root if root is not None else data_root()
    except DataRootUnset as exc:
        raise DataRootUnset(f"${ENV_VAR}", "not set: the data sets are not part of sage-tod; "
                            f"set {ENV_VAR} (or pass --data) to the data directory. "
                            + layout_text(rels)) from exc
    missing = [r for r in rels if not (base / r).exists()]
    if missing:
        raise DataMissing(base, f"{len(missing)} data file(s) missing; get them and place them "
                          f"under this directory, or point {ENV_VAR} at one that has them. "
                          + layout_text(missing))


def what_to_get(rel: str) -> str:
    """The source to fetch for a data-relative path (longest matching prefix wins)."""
    for prefix in sorted(WHAT_TO_GET, key=len, reverse=True):
        if rel.startswith(prefix):
            return WHAT_TO_GET[prefix]
    return "see docs/datasets.md"


def require(rel: str, root: Path | None = None) -> Path:
    """The path of `rel` under the data root; `DataMissing` naming it and its source if absent."""
    base = root if root is not None else data_root()
    p = base / rel
    if not p.exists():
        raise DataMissing(p, f"missing data file; get {what_to_get(rel)} and place it here, "
                          f"or point {ENV_VAR} at a data directory that has it")
    return p
