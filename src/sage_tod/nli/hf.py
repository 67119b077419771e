"""Hugging Face loading, kept quiet: sage-tod prints its own messages.

Its own module so that the backend and the ONNX exporter can both use it
without importing each other.
"""

from __future__ import annotations


def quiet_transformers() -> None:
    """No weight-loading progress bars on stderr: sage-tod prints its own messages."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:
        pass
