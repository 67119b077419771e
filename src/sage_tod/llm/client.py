"""A small, defensive client for OpenAI-compatible chat-completions endpoints.

Why not the `openai` SDK: the same four behaviours matter for every endpoint
(OpenAI, Azure OpenAI, vLLM, llama.cpp's server, Ollama) and are easiest to
guarantee in one place: bounded retries with backoff on 429/5xx/timeouts, a
concurrency limit, a persistent cache, and *no exceptions*: every failure is
returned as a `ChatResult` with `error` set, so a verifier abstains with the
reason instead of crashing a long evaluation or guessing.

The API key is read from the environment at send time, put in one request
header, and scrubbed from every error string; it is never logged, cached or
returned.

Cost: `ChatResult.cost_usd` is what the answer cost to obtain at list price
(from the usage the server reported), also when it comes from the cache, so a
benchmark's cost column does not depend on whether the cache was warm;
`ClientStats.spent_usd` is what this process actually paid.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from sage_tod.contracts.safejson import parse_json
from sage_tod.llm.cache import CachedResponse, ResponseCache, cache_key, open_cache
from sage_tod.llm.config import LLMConfig
from sage_tod.llm.pricing import Price, price_for
from sage_tod.llm.redact import Redactor

log = logging.getLogger("sage_tod.llm")

Message = Mapping[str, str]
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class ChatRequest:
    """One chat call. `seed` distinguishes repeated samples (it is part of the cache key)."""

    messages: tuple[Mapping[str, str], ...]
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None

    @staticmethod
    def of(system: str | None, user: str, **kw: Any) -> ChatRequest:
        msgs: list[dict[str, str]] = []
        if system:
            msgs.append({"role": "system", "content": system})
        msgs.append({"role": "user", "content": user})
        return ChatRequest(messages=tuple(msgs), **kw)


@dataclass(frozen=True)
class ChatResult:
    """The answer, or why there is none (`error`), with usage, cost and latency."""

    text: str | None
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    latency_ms: float = 0.0
    cached: bool = False
    attempts: int = 0
    error: str | None = None
    usage_estimated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass
class ClientStats:
    """Counters for one client (thread-safe through the client's lock)."""

    requests: int = 0
    http_calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spent_usd: float = 0.0
    errors_by_reason: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class _Retry(Exception):
    def __init__(self, reason: str, wait_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s


class _Fail(Exception):
    def __init__(self, reason: str, attempts: int = 1) -> None:
        super().__init__(reason)
        self.attempts = attempts


class LLMClient:
    """Calls one model on one endpoint. Safe to share between threads."""

    def __init__(self, config: LLMConfig, *, cache: ResponseCache | None = None,
                 use_cache: bool = True) -> None:
        self.config = config
        self.price: Price = price_for(config.model, price_in=config.price_in,
                                      price_out=config.price_out, local=config.is_loopback)
        if cache is None and use_cache and config.cache_path:
            cache = open_cache(config.cache_path)
        self.cache = cache if use_cache else None
        self.stats = ClientStats()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._http = httpx.Client(timeout=httpx.Timeout(config.timeout_s),
                                  trust_env=not config.is_loopback,
                                  limits=httpx.Limits(max_connections=config.concurrency))

    # -- public ------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.config.model

    def chat(self, request: ChatRequest) -> ChatResult:
        """One answer; never raises for transport, HTTP or format problems."""
        with self._lock:
            self.stats.requests += 1
        params = self._params(request)
        key = cache_key(self.config.model, request.messages, params,
                        endpoint=self.config.chat_url)
        if self.cache is not None:
            try:
                hit = self.cache.get(key)
            except Exception as exc:  # a broken cache file must not stop an evaluation
                log.warning("LLM cache read failed (%s); calling the endpoint", exc)
                hit = None
            if hit is not None:
                with self._lock:
                    self.stats.cache_hits += 1
                return self._result(hit, cached=True, attempts=0)
        try:
            got, attempts = self._send(request, params)
        except _Fail as exc:
            reason = self._redact(str(exc))
            with self._lock:
                self.stats.errors += 1
                short = reason.split(":", 1)[0]
                self.stats.errors_by_reason[short] = self.stats.errors_by_reason.get(short, 0) + 1
            return ChatResult(text=None, model=self.config.model, error=reason,
                              attempts=exc.attempts, priced=self.price.priced)
        estimated = got.prompt_tokens < 0
        if estimated:
            got = CachedResponse(got.texts, _estimate_tokens(request.messages),
                                 sum(len(t) for t in got.texts) // 4, got.latency_ms)
        if self.cache is not None:
            try:
                self.cache.put(key, self.config.model, got)
            except Exception as exc:
                log.warning("LLM cache write failed: %s", exc)
        res = self._result(got, cached=False, attempts=attempts, estimated=estimated)
        with self._lock:
            self.stats.prompt_tokens += res.prompt_tokens
            self.stats.completion_tokens += res.completion_tokens
            self.stats.spent_usd += res.cost_usd
        return res

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Answers in input order, at most `config.concurrency` requests in flight."""
        if len(requests) <= 1:
            return [self.chat(r) for r in requests]
        workers = min(self.config.concurrency, len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sage-llm") as pool:
            return list(pool.map(self.chat, requests))

    def close(self) -> None:
        self._http.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        p: dict[str, Any] = {"temperature": self.config.temperature,
                             "max_tokens": request.max_tokens or self.config.max_tokens}
        if request.seed is not None:
            p["seed"] = request.seed
        if request.stop:
            p["stop"] = list(request.stop)
        return p

    def _result(self, r: CachedResponse, *, cached: bool, attempts: int,
                estimated: bool = False) -> ChatResult:
        return ChatResult(
            text=r.texts[0] if r.texts else None, model=self.config.model,
            prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
            cost_usd=round(self.price.cost(r.prompt_tokens, r.completion_tokens), 10),
            priced=self.price.priced, latency_ms=r.latency_ms, cached=cached,
            attempts=attempts, usage_estimated=estimated,
            error=None if r.texts else "empty answer")

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json"}
        key = self.config.api_key()
        if key:
            if self.config.is_azure:
                h["api-key"] = key
            else:
                h["Authorization"] = f"Bearer {key}"
        return h

    def _redact(self, text: str) -> str:
        """The key, any 8+ character piece of it and its reverse, masked (`llm.redact`)."""
        return Redactor(self.config.api_key()).redact(text)

    def _send(self, request: ChatRequest, params: Mapping[str, Any]
              ) -> tuple[CachedResponse, int]:
        body: dict[str, Any] = {"model": self.config.model, "messages": list(request.messages),
                                **params}
        query = ({"api-version": self.config.azure_api_version}
                 if self.config.is_azure and self.config.azure_api_version else None)
        last = "no attempt made"
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                with self._lock:
                    self.stats.retries += 1
            try:
                return self._attempt(body, query), attempt + 1
            except _Fail as exc:
                raise _Fail(str(exc), attempt + 1) from None
            except _Retry as exc:
                last = exc.reason
                if attempt >= self.config.max_retries:
                    break
                wait = min(self.config.max_backoff_s, self.config.backoff_s * 2 ** attempt)
                wait *= 0.5 + random.random() / 2  # jitter: parallel retries do not align
                if exc.wait_s is not None:
                    wait = min(self.config.max_backoff_s, max(wait, exc.wait_s))
                log.info("LLM call retry %d/%d in %.2fs: %s", attempt + 1,
                         self.config.max_retries, wait, exc.reason)
                time.sleep(wait)
        n = self.config.max_retries + 1
        raise _Fail(f"{last} (gave up after {n} attempt{'s' if n > 1 else ''})", n)

    def _attempt(self, body: Mapping[str, Any], query: Mapping[str, str] | None
                 ) -> CachedResponse:
        """One HTTP call under a total deadline (`timeout_s` for the whole exchange, not
        per read: a server that drips a byte a second is cut off) and a size cap."""
        limit = self.config.timeout_s
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["ok"] = self._attempt_inner(body, query, time.monotonic() + limit)
            except BaseException as exc:  # handed to the caller's thread
                box["err"] = exc

        worker = threading.Thread(target=run, name="sage-llm-call", daemon=True)
        with self._slots:
            with self._lock:
                self.stats.http_calls += 1
            worker.start()
            worker.join(limit + 0.25)
        if worker.is_alive():  # left to finish on its own; its answer is never used
            raise _Retry(f"timeout: no complete answer within {limit:g}s")
        if "err" in box:
            raise box["err"]
        got: CachedResponse = box["ok"]
        return got

    def _attempt_inner(self, body: Mapping[str, Any], query: Mapping[str, str] | None,
                       deadline: float) -> CachedResponse:
        t0 = time.perf_counter()
        cap = self.config.max_response_bytes
        limit = self.config.timeout_s
        try:
            with self._http.stream("POST", self.config.chat_url, json=body,
                                   headers=self._headers(), params=query) as resp:
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise _Fail(f"response too large: more than {cap:,} bytes "
                                    "(SAGE_TOD_LLM_MAX_RESPONSE_BYTES)")
                    if time.monotonic() > deadline:
                        raise _Retry(f"timeout: no complete answer within {limit:g}s")
                    chunks.append(chunk)
                raw = b"".join(chunks)
                status = resp.status_code
                retry_after = _retry_after(resp)
        except httpx.TimeoutException:
            raise _Retry(f"timeout: no answer within {limit:g}s") from None
        except httpx.HTTPError as exc:
            raise _Retry(f"connection error: {type(exc).__name__}: "
                         f"{self._redact(str(exc))[:200]}") from None
        latency = (time.perf_counter() - t0) * 1000.0
        if status in RETRY_STATUS:
            raise _Retry(f"HTTP {status}: {self._redact(_snippet(raw))}", retry_after)
        if status >= 400:
            hint = ""
            if status in (401, 403):
                hint = f" (check the key in ${self.config.api_key_env})"
            raise _Fail(f"HTTP {status}: {self._redact(_snippet(raw))}{hint}")
        try:
            data = parse_json(raw)
            choices = data["choices"]
            texts = tuple(str(c["message"]["content"]) for c in choices
                          if c.get("message", {}).get("content") is not None)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _Fail("malformed response: not a chat completion "
                        f"({self._redact(_snippet(raw))})") from None
        if not any(t.strip() for t in texts):
            raise _Fail("empty answer: the response has no message content")
        # an answer that echoes the key never reaches a verdict, a trace or the cache
        texts = tuple(self._redact(t) for t in texts)
        usage = data.get("usage") or {}
        try:
            pt, ct = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
        except (KeyError, TypeError, ValueError, OverflowError):
            pt, ct = -1, -1  # estimated by the caller from the text
        return CachedResponse(texts, pt, ct, round(latency, 3))


def _snippet(raw: bytes) -> str:
    text = raw[:4096].decode("utf-8", errors="replace")
    try:
        obj = json.loads(raw) if len(raw) <= 65536 else None
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            text = str(obj["error"].get("message", text))
    except (ValueError, RecursionError):
        pass
    text = " ".join(text.split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _retry_after(resp: httpx.Response) -> float | None:
    raw = resp.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


def _estimate_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """~4 characters a token; only when a server reports no usage."""
    return sum(len(m.get("content", "")) for m in messages) // 4 + 4 * len(messages)
