"""Which NLI model S2 uses, and why.

The resolution order is a contract (docs/nli.md): an explicit choice, then
`SAGE_TOD_NLI_MODEL`, then the user's own trained model, then the model that
ships inside the package (`sage_tod/nli/model/`: the SGD-dev-adapted MiniLM
with its claim design, so a plain `pip install` has a working S2), then the
paper's hub model only when a hub answers quickly.

Nothing here looks at a source checkout or at folders beside it: an installed
wheel and an editable checkout resolve the same way. An explicit choice or an
environment variable that names nothing is an error (`ModelNotFound`), never
silently replaced by another model. Every step is recorded, so when nothing is
found the message says exactly where S2 looked and how to get a model.
"""

from __future__ import annotations

import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from sage_tod.contracts.errors import InputError
from sage_tod.locations import data_home

ENV_MODEL = "SAGE_TOD_NLI_MODEL"
PACKAGED_MODEL_NAME = "nli-minilm-sgd-adapted"
HUB_MODEL = "cross-encoder/nli-deberta-v3-base"
HUB_URL = "https://huggingface.co"
HUB_TIMEOUT_S = 1.5


class ModelNotFound(InputError):
    """`--nli-model` or `$SAGE_TOD_NLI_MODEL` names no usable model (CLI exit status 2)."""


def own_model_dir() -> Path:
    """The user's own trained model: `sage-tod models train-nli --out` this to use it."""
    return data_home() / "models" / "nli"


def packaged_model_dir() -> Path:
    """The default model installed with the package (`sage_tod/nli/model/`)."""
    return Path(__file__).resolve().parent / "model"


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
                f"Get one: reinstall sage-tod (its wheel ships the default model in "
                f"{packaged_model_dir()}), point --nli-model or {ENV_MODEL} at a Hugging Face "
                f"NLI model directory, train one with `sage-tod models train-nli --out "
                f"{own_model_dir()}`, or allow hub access for {HUB_MODEL}.")


def _looks_like_hub_id(name: str) -> bool:
    return "/" in name and not name.startswith((".", "/", "~")) and name.count("/") == 1


def resolve_model(explicit: str | None = None, *, allow_hub: bool = True) -> Resolution:
    """Follow the documented order; a hub id is returned only when the hub answers.

    Raises `ModelNotFound` when the explicit choice or `$SAGE_TOD_NLI_MODEL`
    names neither a model directory nor (explicit only) a reachable hub id.
    """
    tried: list[str] = []
    if explicit:
        p = Path(explicit).expanduser()
        if is_model_dir(p):
            return Resolution(str(p.resolve()), "explicit", tried)
        if not p.exists() and _looks_like_hub_id(explicit):
            if allow_hub and hub_reachable(model=explicit):
                return Resolution(explicit, "explicit (hub id)", tried)
            raise ModelNotFound("--nli-model", f"{explicit!r} is not a local model directory "
                                "and the hub is not reachable to fetch it")
        raise ModelNotFound("--nli-model", f"{p} is not a model directory (no config.json); "
                            "an explicit model is never replaced by another one")
    env = os.environ.get(ENV_MODEL)
    if env:
        p = Path(env).expanduser()
        if is_model_dir(p):
            return Resolution(str(p.resolve()), f"${ENV_MODEL}", tried)
        raise ModelNotFound(f"${ENV_MODEL}", f"{p} is not a model directory (no config.json); "
                            f"unset {ENV_MODEL} to use the default model")
    own = own_model_dir()
    if is_model_dir(own):
        return Resolution(str(own), "own trained model", tried)
    tried.append(f"{own} (own trained model)")
    packaged = packaged_model_dir()
    if is_model_dir(packaged):
        return Resolution(str(packaged), f"packaged model ({PACKAGED_MODEL_NAME})", tried)
    tried.append(f"{packaged} (packaged model; missing from this install)")
    if allow_hub and hub_reachable():
        return Resolution(HUB_MODEL, "hub", tried)
    tried.append(f"{HUB_MODEL} (hub not reachable within {HUB_TIMEOUT_S:g} s)")
    return Resolution(None, "none", tried)
