"""LLM access for S3, the LLM-judge baselines and the LLM router.

Everything goes through `LLMClient`, which speaks the OpenAI chat-completions
protocol to any compatible endpoint (docs/llm.md) and never raises for a
failed call: callers turn `ChatResult.error` into an abstention.
"""

from sage_tod.llm.cache import ResponseCache, cache_key
from sage_tod.llm.client import ChatRequest, ChatResult, ClientStats, LLMClient
from sage_tod.llm.config import (
    HOW_TO_CONFIGURE,
    LLMConfig,
    LLMNotConfigured,
    config_from_options,
)
from sage_tod.llm.pricing import PRICES, Price, price_for

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
