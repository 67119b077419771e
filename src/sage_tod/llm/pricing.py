"""Dollar cost of a call from its token usage and a per-million-token price table.

The paper reports cost from response-metadata token counts at OpenAI list
prices (Metrics; Implementation): gpt-4.1 $2/$8 and gpt-4.1-mini $0.40/$1.60
per Mtok in/out. A model served on this machine costs $0. A model not in the
table is priced at $0 but marked `priced=False`, so a report can say that a
zero is unknown rather than free; give its prices with `llm_price_in` /
`llm_price_out` (or SAGE_TOD_LLM_PRICE_IN/OUT).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# model name prefix -> (USD per 1M input tokens, USD per 1M output tokens)
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
}
# served locally (llama.cpp, Ollama, vLLM on own hardware): no per-token price
LOCAL_PATTERNS = (r"smollm", r"qwen", r"llama", r"\.gguf$", r"^local[-/:]", r"mistral",
                  r"phi-?\d", r"gemma")


@dataclass(frozen=True)
class Price:
    """A price per Mtok; `priced` is False when the model was not found anywhere."""

    per_mtok_in: float
    per_mtok_out: float
    priced: bool = True

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.per_mtok_in + completion_tokens * self.per_mtok_out) / 1e6


def price_for(model: str, *, price_in: float | None = None, price_out: float | None = None,
              local: bool = False) -> Price:
    """Explicit prices win; then the longest table prefix (snapshots such as
    `gpt-4.1-2025-04-14` match `gpt-4.1`; `gpt-4.1-mini-…` matches the mini row);
    then a loopback endpoint or a local-looking model name is $0."""
    if price_in is not None or price_out is not None:
        return Price(price_in or 0.0, price_out or 0.0)
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in PRICES:
        if (name == prefix or name.startswith(prefix + "-")) and len(prefix) > len(best):
            best = prefix
    if best:
        return Price(*PRICES[best])
    if local or any(re.search(p, name) for p in LOCAL_PATTERNS):
        return Price(0.0, 0.0)
    return Price(0.0, 0.0, priced=False)
