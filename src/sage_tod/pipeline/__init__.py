"""Whole runs over files: read (turns or an agent log), route, evaluate, write.

The layer above importers, outputs and routing, below the integrations and
the CLI: `evaluate_files` is what `sage-tod evaluate` does, callable from
Python; `evaluate_turn_dicts` is the in-memory door the integrations use.
"""

from sage_tod.pipeline.files import (
    EvaluateRequest,
    FileRun,
    evaluate_files,
    evaluate_turn_dicts,
)

__all__ = ["EvaluateRequest", "FileRun", "evaluate_files", "evaluate_turn_dicts"]
