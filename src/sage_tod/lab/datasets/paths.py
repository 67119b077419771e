"""Where the benchmark data lives, and clear errors when a file is missing.

The corpora are large and licensed separately, so they are never copied into
the repository: they are read from a data directory. `SAGE_TOD_DATA` names it;
otherwise the default is `../shared/data` next to the repository checkout,
found from this file's location first (an editable install) and from the
working directory second (a wheel install run from the checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

from sage_tod.contracts.errors import InputError
from sage_tod.locations import checkout_root

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
}


class DataMissing(InputError):
    """A data file the command needs is not in the data directory."""


def _repo_default() -> Path:
    root = checkout_root()
    return (root.parent if root else Path.cwd().parent) / "shared" / "data"


def data_root() -> Path:
    """The data directory: $SAGE_TOD_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    candidates = [_repo_default(), Path.cwd().parent / "shared" / "data",
                  Path.cwd() / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0]


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
