"""Verifier stages of the cascade (S1 symbolic, S2 encoder/NLI, S3 focused LLM)."""

from sage_tod.verifiers.base import Item, Stage, StageUnavailable, available_stages, build_stage

__all__ = ["Item", "Stage", "StageUnavailable", "available_stages", "build_stage"]
