"""LLM access for S3, the LLM-judge baselines and the LLM router.

Everything goes through `LLMClient`, which speaks the OpenAI chat-completions
protocol to any compatible endpoint (docs/llm.md) and never raises for a
failed call: callers turn `ChatResult.error` into an abstention.

The names below are loaded on first use: the CLI imports `sage_tod.llm.config`
at start, and that must not pull in the HTTP client (httpx) for commands that
never call an LLM.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sage_tod.llm.cache import ResponseCache, cache_key
    from sage_tod.llm.client import ChatRequest, ChatResult, ClientStats, LLMClient
    from sage_tod.llm.config import (
        HOW_TO_CONFIGURE,
        LLMConfig,
        LLMNotConfigured,
        config_from_options,
    )
    from sage_tod.llm.pricing import PRICES, Price, price_for

_WHERE = {
    "ResponseCache": "cache", "cache_key": "cache",
    "ChatRequest": "client", "ChatResult": "client", "ClientStats": "client",
    "LLMClient": "client",
    "HOW_TO_CONFIGURE": "config", "LLMConfig": "config", "LLMNotConfigured": "config",
    "config_from_options": "config",
    "PRICES": "pricing", "Price": "pricing", "price_for": "pricing",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sage_tod.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sage_tod.llm.{module}"), name)


__all__ = [
    "HOW_TO_CONFIGURE",
    "PRICES",
    "ChatRequest",
    "ChatResult",
    "ClientStats",
    "LLMClient",
    "LLMConfig",
    "LLMNotConfigured",
    "Price",
    "ResponseCache",
    "cache_key",
    "config_from_options",
    "price_for",
]
