"""Which NLI model S2 uses, and why.

The resolution order is a contract (docs/nli.md): an explicit choice, then
`SAGE_TOD_NLI_MODEL`, then the project's own trained model, then the
SGD-dev-adapted MiniLM shipped in the repository (`models/`; it beat the SNLI
model on every slice, docs/results-nli.md, and needs no retraining on a fresh
clone), then the shared SNLI-trained MiniLM, then the paper's hub model only
when a hub answers quickly. Every step is recorded, so when nothing is found the message can say
exactly where S2 looked and how to get a model.
"""

from __future__ import annotations

import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from sage_tod.locations import checkout_root, data_home

ENV_MODEL = "SAGE_TOD_NLI_MODEL"
SHARED_MODEL_NAME = "nli-minilm-l6-snli"
REPO_MODEL_NAME = "nli-minilm-sgd-adapted"
HUB_MODEL = "cross-encoder/nli-deberta-v3-base"
HUB_URL = "https://huggingface.co"
HUB_TIMEOUT_S = 1.5


def own_model_dir() -> Path:
    """The project's own trained model: `sage-tod models train-nli --out` this to use it."""
    return data_home() / "models" / "nli"


def shared_model_candidates() -> list[Path]:
    """`../shared/models/nli-minilm-l6-snli` beside the repo root and beside the cwd."""
    out: list[Path] = []
    root = checkout_root()
    for base in ([root] if root else []) + [Path.cwd()]:
        p = (base / ".." / "shared" / "models" / SHARED_MODEL_NAME).resolve()
        if p not in out:
            out.append(p)
    return out


def repo_model_candidates() -> list[Path]:
    """`models/nli-minilm-sgd-adapted` in the repository (absent from a wheel install)."""
    root = checkout_root()
    return [root / "models" / REPO_MODEL_NAME] if root else []


def is_model_dir(p: Path) -> bool:
    return p.is_dir() and (p / "config.json").is_file()


def hub_reachable(timeout_s: float = HUB_TIMEOUT_S, model: str = HUB_MODEL) -> bool:
    """One short HTTPS HEAD on the model's API page, never a download.

    A bare TCP connect is not enough: sandboxes and proxies accept connections
    to anything, and a hub that "answers" that way would make S2 wait on a
    download that never comes. Offline machines must not hang here.
    """
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get(
            "TRANSFORMERS_OFFLINE", "") not in ("", "0"):
        return False
    url = f"{HUB_URL}/api/models/{model}"
    try:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return int(resp.status) == 200
    except (TimeoutError, OSError, ValueError):
        return False


@dataclass
class Resolution:
    """The chosen model (or None) and each place that was tried."""

    model: str | None
    source: str
    tried: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.model is not None

    def missing_message(self) -> str:
        looked = "; ".join(self.tried)
        return (f"S2 has no NLI model, so it abstains on every criterion. Looked for: {looked}. "
                f"Get one: point --nli-model or {ENV_MODEL} at a Hugging Face NLI model "
                f"directory (e.g. ../shared/models/{SHARED_MODEL_NAME}), train one with "
                f"`sage-tod models train-nli --data ../shared/data/snli --out "
                f"{own_model_dir()}`, or allow hub access for {HUB_MODEL}.")


def resolve_model(explicit: str | None = None, *, allow_hub: bool = True) -> Resolution:
    """Follow the documented order; a hub id is returned only when the hub answers."""
    tried: list[str] = []
    if explicit:
        p = Path(explicit).expanduser()
        if is_model_dir(p):
            return Resolution(str(p.resolve()), "explicit", tried)
        if not p.exists() and "/" in explicit and not explicit.startswith((".", "/", "~")):
            if allow_hub and hub_reachable():
                return Resolution(explicit, "explicit (hub id)", tried)
            tried.append(f"{explicit} (explicit hub id; hub not reachable)")
        else:
            tried.append(f"{p} (explicit; not a model directory with config.json)")
        # an explicit choice that fails is not silently replaced by another model
        return Resolution(None, "explicit", tried)
    env = os.environ.get(ENV_MODEL)
    if env:
        p = Path(env).expanduser()
        if is_model_dir(p):
            return Resolution(str(p.resolve()), f"${ENV_MODEL}", tried)
        tried.append(f"{p} (${ENV_MODEL}; not a model directory)")
    own = own_model_dir()
    if is_model_dir(own):
        return Resolution(str(own), "own trained model", tried)
    tried.append(f"{own} (own trained model)")
    for p in repo_model_candidates():
        if is_model_dir(p):
            return Resolution(str(p), "repository model (SGD-dev adapted)", tried)
        tried.append(f"{p} (repository model)")
    for p in shared_model_candidates():
        if is_model_dir(p):
            return Resolution(str(p), "shared model", tried)
        tried.append(f"{p} (shared model)")
    if allow_hub and hub_reachable():
        return Resolution(HUB_MODEL, "hub", tried)
    tried.append(f"{HUB_MODEL} (hub not reachable within {HUB_TIMEOUT_S:g} s)")
    return Resolution(None, "none", tried)
