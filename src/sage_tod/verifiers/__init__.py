"""Verifier stages of the cascade (S1 symbolic, S2 NLI, S3 focused LLM) and their registry."""

from sage_tod.verifiers.base import (
    STAGES,
    Item,
    Stage,
    StageUnavailable,
    available_stages,
    build_stage,
    register_stage,
)

__all__ = [
    "STAGES",
    "Item",
    "Stage",
    "StageUnavailable",
    "available_stages",
    "build_stage",
    "register_stage",
]
