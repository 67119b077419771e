"""The embedded demo: a restaurant + taxi spec and gold-labelled dialogues."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def spec_path() -> Path:
    return Path(str(files("sage_tod.demo").joinpath("spec.yaml")))


def turns_path() -> Path:
    return Path(str(files("sage_tod.demo").joinpath("turns.jsonl")))
