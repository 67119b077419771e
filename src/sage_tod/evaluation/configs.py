"""Named configurations: which stages run, in which order, over which criterion classes.

The built-ins (`core`, `llm`, the ablations, `s1`) register as
`sage_tod.configs` entry points, as a plugin package's own configuration does
(docs/api.md); `sage-tod configs` lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from sage_tod.compiler.kinds import BUILTIN_CRITERIA
from sage_tod.plugins import CONFIGS_GROUP, Registry


@dataclass(frozen=True)
class StageConfig:
    """A named cascade: stages in order, the criterion classes compiled, one line of help."""

    name: str
    stages: tuple[str, ...]
    help: str
    criteria: tuple[str, ...] = BUILTIN_CRITERIA


CONFIGS: Registry[StageConfig] = Registry(CONFIGS_GROUP, "config")

CORE = StageConfig("core", ("S1", "S2"),
                   "SAGE-Core: compiler + S1 symbolic + S2 encoder/NLI (no paid LLM call)")
LLM = StageConfig("llm", ("S1", "S2", "S3"),
                  "SAGE-LLM: core + S3 focused LLM on open-class abstentions")
NO_S1 = StageConfig("no_s1", ("S2", "S3"), "ablation: S2 + S3")
NO_S2 = StageConfig("no_s2", ("S1", "S3"), "ablation: S1 + S3")
NO_S3 = StageConfig("no_s3", ("S1", "S2"), "ablation: S1 + S2 (identical to core)")
S1_ONLY = StageConfig("s1", ("S1",), "S1 symbolic rules only")
# the order `sage-tod configs` lists them in; plugin configs follow, sorted by name
BUILTIN_CONFIGS: tuple[StageConfig, ...] = (CORE, LLM, NO_S1, NO_S2, NO_S3, S1_ONLY)


def config_names() -> list[str]:
    builtin = [c.name for c in BUILTIN_CONFIGS]
    return builtin + [n for n in CONFIGS.names() if n not in builtin]


def get_config(name: str) -> StageConfig:
    """The configuration called `name`; `UnknownName` lists the available ones."""
    return CONFIGS.get(name)
