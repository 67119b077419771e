"""The run record: one versioned header that says what produced a verdicts file.

Two verdicts files can only be compared, and one file can only be continued
(`--resume`), when we know what made each: the sage-tod version and source
commit, the inputs (spec and turns hashes), the configuration and options, and
every stage's fingerprint (everything that can change that stage's verdicts:
S1's switches, S2's model, runtime and claim design, S3's endpoint and model).
The record is modelled on Inspect's eval log header (`eval`: task, model,
revision, packages; `plan`; `created`) and lm-evaluation-harness's results
(`config`, `versions`, `git_hash`, `pretty_env_info`, `model_name_sanitized`):
what was run, on what, by which code, in which environment.

It is stated once, as the first line of a JSONL verdicts file (and in a
Parquet file's schema metadata); the verdict lines after it leave out what it
says (`format_version`, `config`, `stages`, `missing`) and the reader puts it
back, so `Verdict` objects read from a file are the same either way. Files of
format 1 (no header, every line complete) are read as before.

`identity()` is the part a resume compares: the environment (Python and
library versions) and the creation time are kept for people, not compared,
except the libraries a stage's answers depend on, which that stage's
fingerprint names.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RUN_RECORD = "sage-tod run"
HEADER_VERSION = 1
FORMAT_VERSION = 2  # verdict lines under a run header (format 1: no header, complete lines)
HEADER_PREFIX = b'{"record": "sage-tod run"'
# the libraries whose versions are worth stating (those that are installed)
KEY_PACKAGES = ("pydantic", "numpy", "tokenizers", "onnxruntime", "torch", "transformers",
                "pyarrow", "ray", "httpx")
# header fields a verdict line leaves out when it agrees with the header
SHARED_FIELDS = ("format_version", "config", "stages", "missing")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def source_commit() -> str | None:
    """The git commit sage-tod was installed from or runs from, when it can be known.

    An install from a VCS URL records it in the distribution's `direct_url.json`;
    a checkout (editable install, PYTHONPATH=src) answers `git rev-parse HEAD`,
    with `+dirty` when tracked files differ from it. A wheel from PyPI has none.
    """
    try:
        raw = metadata.distribution("sage-tod").read_text("direct_url.json")
        commit = (json.loads(raw).get("vcs_info") or {}).get("commit_id") if raw else None
        if isinstance(commit, str) and commit:
            return commit
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        pass
    root = Path(__file__).resolve().parents[3]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=5, check=True)
        dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--",
                                "src"], capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    return (commit + ("+dirty" if dirty.returncode == 1 else "")) if commit else None


def sage_tod_version() -> str:
    from sage_tod._version import __version__

    return __version__


@lru_cache(maxsize=1)
def environment() -> dict[str, Any]:
    """Python, platform and the installed versions of the key libraries."""
    return {"python": platform.python_version(),
            "implementation": sys.implementation.name,
            "platform": f"{platform.system()}-{platform.machine()}",
            "packages": {p: v for p in KEY_PACKAGES if (v := _version(p)) is not None}}


def package_versions(*dists: str) -> dict[str, str | None]:
    """Versions of the named libraries (None when absent), for a stage's fingerprint."""
    return {d: _version(d) for d in dists}


class RunHeader(BaseModel):
    """What produced a verdicts file (docs/formats.md §3, "The run header")."""

    model_config = ConfigDict(frozen=True, extra="allow")
    record: Literal["sage-tod run"] = "sage-tod run"
    header_version: int = HEADER_VERSION
    format_version: int = FORMAT_VERSION
    sage_tod: dict[str, Any] = Field(
        default_factory=lambda: {"version": sage_tod_version(), "commit": source_commit()},
        description="version and source commit (null when unknown)")
    environment: dict[str, Any] = Field(default_factory=environment)
    inputs: dict[str, Any] = Field(
        default_factory=dict, description="spec_sha256, turns_sha256, format, route, ...")
    config: str
    stages: list[str]
    missing: list[str] = Field(default_factory=list)
    criteria: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    fingerprints: dict[str, Any] = Field(
        default_factory=dict, description="per stage: everything that can change its verdicts")
    created: str | None = None

    @classmethod
    def for_run(cls, fingerprint: Mapping[str, Any], *, inputs: Mapping[str, Any],
                options: Mapping[str, Any], stages: list[str], reproducible: bool = False
                ) -> RunHeader:
        """The header of a run of a cascade with `fingerprint` (`Evaluator.fingerprint()`).

        `reproducible` leaves out the creation time, so reruns are byte-identical."""
        return cls(config=str(fingerprint.get("config", "custom")), stages=list(stages),
                   missing=list(fingerprint.get("missing") or []),
                   criteria=list(fingerprint.get("criteria") or []),
                   fingerprints=dict(fingerprint.get("stages") or {}),
                   inputs=dict(inputs), options=dict(options),
                   created=None if reproducible else datetime.now(UTC).isoformat(
                       timespec="seconds"))

    def identity(self) -> dict[str, Any]:
        """The fields `--resume` compares: code, inputs, configuration, options, stages."""
        d = self.to_dict()
        for k in ("environment", "created", "record", "header_version"):
            d.pop(k, None)
        return d

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(self.model_dump(mode="json"),
                                                     sort_keys=False, default=str))
        if data.get("created") is None:
            data.pop("created", None)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def shared(self) -> dict[str, Any]:
        """The values a verdict line under this header leaves out."""
        return {"format_version": self.format_version, "config": self.config,
                "stages": list(self.stages), "missing": list(self.missing)}


def is_header(obj: object) -> bool:
    return isinstance(obj, dict) and obj.get("record") == RUN_RECORD


def differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = ""
                ) -> list[str]:
    """Every field (dotted path) whose value differs, with both values."""
    out: list[str] = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += differences(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} ({a!r} then, {b!r} now)")
    return out
