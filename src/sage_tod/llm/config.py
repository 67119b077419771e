"""Endpoint configuration for an OpenAI-compatible chat-completions server.

One `LLMConfig` describes where to send calls (OpenAI, Azure OpenAI, vLLM,
llama.cpp's server, Ollama all speak the same protocol) and how to behave
(timeouts, retries, concurrency, cache). It holds the *name* of the
environment variable that carries the API key, never the key itself, so a
config can be printed, logged or stored in a report without leaking it; the
key is read from the environment only when a request is sent.

Values come from an options dict (`llm_*` keys, what the cascade passes to
stage factories) and fall back to `SAGE_TOD_LLM_*` environment variables;
docs/llm.md lists them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sage_tod.contracts.errors import InputError

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_AZURE_API_VERSION = "2024-10-21"


class LLMNotConfigured(ValueError):
    """No endpoint or model was given; the message says how to configure one."""


class LLMSettingsError(InputError, LLMNotConfigured):
    """A setting was given but cannot be used (BACKOFF=-1, TIMEOUT=nan, a base URL without
    a scheme): an input error (exit 2), not an absent stage (S3 re-raises it rather
    than reporting the stage missing)."""


HOW_TO_CONFIGURE = (
    "set an OpenAI-compatible endpoint: SAGE_TOD_LLM_BASE_URL (e.g. https://api.openai.com/v1, "
    "or http://127.0.0.1:8080/v1 from `sage-tod llm serve-local`) and SAGE_TOD_LLM_MODEL "
    "(e.g. gpt-4.1); the API key is read from the variable named by SAGE_TOD_LLM_API_KEY_ENV "
    "(default OPENAI_API_KEY). Options llm_base_url / llm_model / llm_api_key_env do the same. "
    "See docs/llm.md"
)


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call a chat model. Holds no secret (only `api_key_env`, a name)."""

    base_url: str
    model: str
    api_key_env: str = DEFAULT_KEY_ENV
    azure_deployment: str | None = None
    azure_api_version: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    concurrency: int = 8
    max_tokens: int = 256
    temperature: float = 0.0
    cache_path: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    max_response_bytes: int = 4 * 1024 * 1024

    @property
    def is_azure(self) -> bool:
        """Azure OpenAI addresses a deployment, not a model, and uses an `api-key` header."""
        return self.azure_deployment is not None or ".openai.azure.com" in self.base_url

    @property
    def is_loopback(self) -> bool:
        host = urlsplit(self.base_url).hostname or ""
        return host in ("127.0.0.1", "localhost", "::1")

    @property
    def chat_url(self) -> str:
        base = self.base_url.rstrip("/")
        if self.is_azure:
            dep = self.azure_deployment or self.model
            if "/openai/deployments/" not in base:
                base = f"{base}/openai/deployments/{dep}"
            return f"{base}/chat/completions"
        return f"{base}/chat/completions"

    def api_key(self) -> str | None:
        """The key, read now from the environment (never cached on the object)."""
        value = os.environ.get(self.api_key_env) if self.api_key_env else None
        return value or None

    def describe(self) -> dict[str, Any]:
        """Safe to print or store: the key's variable name and whether it is set, not its value."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["api_key_set"] = self.api_key() is not None
        return d


# option key -> (environment variable, converter)
_OPTIONS: dict[str, tuple[str, type]] = {
    "base_url": ("SAGE_TOD_LLM_BASE_URL", str),
    "model": ("SAGE_TOD_LLM_MODEL", str),
    "api_key_env": ("SAGE_TOD_LLM_API_KEY_ENV", str),
    "azure_deployment": ("SAGE_TOD_LLM_AZURE_DEPLOYMENT", str),
    "azure_api_version": ("SAGE_TOD_LLM_AZURE_API_VERSION", str),
    "timeout_s": ("SAGE_TOD_LLM_TIMEOUT", float),
    "max_retries": ("SAGE_TOD_LLM_MAX_RETRIES", int),
    "backoff_s": ("SAGE_TOD_LLM_BACKOFF", float),
    "max_backoff_s": ("SAGE_TOD_LLM_MAX_BACKOFF", float),
    "concurrency": ("SAGE_TOD_LLM_CONCURRENCY", int),
    "max_tokens": ("SAGE_TOD_LLM_MAX_TOKENS", int),
    "temperature": ("SAGE_TOD_LLM_TEMPERATURE", float),
    "cache_path": ("SAGE_TOD_LLM_CACHE", str),
    "price_in": ("SAGE_TOD_LLM_PRICE_IN", float),
    "price_out": ("SAGE_TOD_LLM_PRICE_OUT", float),
    "max_response_bytes": ("SAGE_TOD_LLM_MAX_RESPONSE_BYTES", int),
}

# (lowest, highest) allowed for each number; None = unbounded on that side
_RANGES: dict[str, tuple[float | None, float | None]] = {
    "timeout_s": (0.001, 3600.0), "max_retries": (0, 20), "backoff_s": (0.0, 600.0),
    "max_backoff_s": (0.0, 3600.0), "concurrency": (1, 256), "max_tokens": (1, 1_000_000),
    "temperature": (0.0, 2.0), "price_in": (0.0, None), "price_out": (0.0, None),
    "max_response_bytes": (1024, 1 << 30),
}


def _check_value(key: str, var: str, value: Any) -> None:
    lo, hi = _RANGES.get(key, (None, None))
    if isinstance(value, float) and not math.isfinite(value):
        raise LLMSettingsError(var, f"llm_{key} must be a finite number, got {value!r}")
    if isinstance(value, int | float) and ((lo is not None and value < lo)
                                           or (hi is not None and value > hi)):
        span = f">= {lo:g}" if hi is None else f"between {lo:g} and {hi:g}"
        raise LLMSettingsError(var, f"llm_{key} must be {span}, got {value!r}")


def check_base_url(url: str, var: str = "SAGE_TOD_LLM_BASE_URL") -> str:
    """An http(s) URL with a host, or `LLMSettingsError` saying what is wrong."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise LLMSettingsError(var, f"malformed base URL {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LLMSettingsError(var, f"malformed base URL {url!r}: give http(s)://host[:port]"
                                    "/path, e.g. https://api.openai.com/v1")
    if any(c.isspace() for c in url):
        raise LLMSettingsError(var, f"malformed base URL {url!r}: it contains spaces")
    return url


def default_cache_path() -> str:
    """`$SAGE_TOD_CACHE_DIR/llm-cache.sqlite3`, else ~/.cache/sage-tod/llm-cache.sqlite3."""
    root = os.environ.get("SAGE_TOD_CACHE_DIR") or str(Path.home() / ".cache" / "sage-tod")
    return str(Path(root) / "llm-cache.sqlite3")


def config_from_options(options: Mapping[str, Any] | None = None, *,
                        env: Mapping[str, str] | None = None,
                        defaults: Mapping[str, Any] | None = None) -> LLMConfig:
    """Build a config from `llm_<field>` options, then `SAGE_TOD_LLM_*` env, then defaults.

    Raises `LLMNotConfigured` when no base URL or model can be found. The
    value "none" (or "off") for `cache_path` disables the cache.
    """
    opts = dict(options or {})
    environ = os.environ if env is None else env
    vals: dict[str, Any] = dict(defaults or {})
    for key, (var, conv) in _OPTIONS.items():
        raw = opts.get(f"llm_{key}")
        if raw is None:
            raw = environ.get(var)
        if raw is None or raw == "":
            continue
        try:
            vals[key] = conv(raw)
        except (TypeError, ValueError, OverflowError):
            raise LLMSettingsError(var, f"llm_{key}: cannot read {raw!r} as a "
                                        f"{'whole number' if conv is int else conv.__name__}"
                                   ) from None
        _check_value(key, var, vals[key])
    if not vals.get("base_url") or not vals.get("model"):
        missing = [k for k in ("base_url", "model") if not vals.get(k)]
        raise LLMNotConfigured(f"no LLM {' and '.join(missing)} configured; {HOW_TO_CONFIGURE}")
    cache = vals.get("cache_path")
    if cache is None:
        vals["cache_path"] = default_cache_path()
    elif str(cache).lower() in ("none", "off", "0", ""):
        vals["cache_path"] = None
    if vals.get("azure_deployment") and not vals.get("azure_api_version"):
        vals["azure_api_version"] = DEFAULT_AZURE_API_VERSION
    cfg = LLMConfig(**vals)
    if cfg.is_azure and not cfg.azure_api_version:
        cfg = replace(cfg, azure_api_version=DEFAULT_AZURE_API_VERSION)
    check_base_url(cfg.base_url)
    for key in _RANGES:
        _check_value(key, _OPTIONS[key][0], getattr(cfg, key))
    return cfg
