"""Workflow routing without the oracle (paper, Appendix C).

SAGE's headline numbers use the gold (service, intent) of each turn. A
deployment does not have it, so the router picks the workflow from the
dialogue itself:

- `mpnet`: a bi-encoder (all-mpnet-base-v2) embeds every workflow's
  service+intent description and the dialogue prefix; cosine similarity ranks
  the candidates (top-1 is the route; top-k is the shortlist).
- `llm`: the bi-encoder's top-8, rendered as schema headers, and the
  dialogue prefix go to an LLM that must pick one by number. An unusable
  answer falls back to the bi-encoder's top-1, with the reason kept.
- `oracle`: the turn's own `workflow` field (the gold route).

`route(spec, turns, method)` returns one workflow id per turn;
`route_detailed` also returns the ranked shortlist, the reason and the cost.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.contracts.turns import Turn, TurnRecord, transcript_lines
from sage_tod.llm.client import ChatRequest, LLMClient
from sage_tod.llm.config import LLMConfig, config_from_options
from sage_tod.llm.prompts import load_prompt
from sage_tod.routing.encoder import (
    Encoder,
    EncoderUnavailable,
    SentenceTransformerEncoder,
    assemble_mpnet,
    find_mpnet_parts,
    resolve_mpnet,
)

RouteMethod = Literal["oracle", "mpnet", "llm"]
METHODS: tuple[str, ...] = ("oracle", "mpnet", "llm")
SHORTLIST = 8
PREFIX_EXCHANGES: int | None = None  # whole prefix by default (paper); see docs/llm.md

__all__ = [
    "METHODS",
    "Encoder",
    "EncoderUnavailable",
    "Route",
    "Router",
    "SentenceTransformerEncoder",
    "accuracy",
    "assemble_mpnet",
    "candidate_text",
    "find_mpnet_parts",
    "prefix_text",
    "resolve_mpnet",
    "route",
    "route_chunks",
    "route_detailed",
]


@dataclass(frozen=True)
class Route:
    """One turn's route: the chosen id, the ranked shortlist, how and at what cost."""

    workflow: str
    ranked: tuple[str, ...]
    method: str
    reason: str = ""
    cost_usd: float = 0.0


def _humanise(name: str) -> str:
    name = re.sub(r"_\d+$", "", name)  # Restaurants_1 -> Restaurants
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)  # FindRestaurants -> Find Restaurants
    return name.replace("_", " ").replace("-", " ").strip()


def candidate_text(wf: Workflow, service_descriptions: Mapping[str, str] | None = None) -> str:
    """The service+intent description the encoder embeds for one workflow."""
    service, _, intent = wf.id.partition(".")
    head = f"{_humanise(service)}: {_humanise(intent)}" if intent else _humanise(service)
    parts = [head]
    sdesc = (service_descriptions or {}).get(service)
    if sdesc:
        parts.append(sdesc.rstrip(".") + ".")
    if wf.description:
        parts.append(wf.description.rstrip(".") + ".")
    return " ".join(parts)


def _turn(t: Turn | TurnRecord) -> Turn:
    """The turn itself, not checked against a spec: before routing its workflow is unknown
    (so `contracts.turns.as_turn`, which checks it, does not apply)."""
    return t.turn if isinstance(t, TurnRecord) else t


def prefix_text(turn: Turn, exchanges: int | None = PREFIX_EXCHANGES) -> str:
    """The dialogue prefix up to and including u_t (the agent's a_t is not yet known to a
    router that runs before the turn is evaluated, and is left out)."""
    lines = transcript_lines(turn.history or (), exchanges)
    lines.append(f"User: {turn.user}")
    return "\n".join(lines)


def _normalise(vecs: Sequence[Sequence[float]]) -> list[list[float]]:
    out = []
    for v in vecs:
        row = [float(x) for x in v]
        n = math.sqrt(sum(x * x for x in row)) or 1.0
        out.append([x / n for x in row])
    return out


def _cosine_rank(queries: Sequence[Sequence[float]], cands: Sequence[Sequence[float]]
                 ) -> list[list[int]]:
    """Candidate indices best first for each query (ties: spec order, so it is stable)."""
    try:
        import numpy as np
    except ImportError:  # pure Python: fine for tests and small specs
        qn, cn = _normalise(queries), _normalise(cands)
        ranks = []
        for q in qn:
            sims = [sum(a * b for a, b in zip(q, c, strict=True)) for c in cn]
            ranks.append(sorted(range(len(cn)), key=lambda i: (-sims[i], i)))
        return ranks
    qa = np.asarray(queries, dtype=np.float64)
    ca = np.asarray(cands, dtype=np.float64)
    qa /= np.maximum(np.linalg.norm(qa, axis=1, keepdims=True), 1e-12)
    ca /= np.maximum(np.linalg.norm(ca, axis=1, keepdims=True), 1e-12)
    sim_matrix = qa @ ca.T
    return [list(map(int, np.lexsort((np.arange(len(ca)), -sim_row))))
            for sim_row in sim_matrix]


_PICK = re.compile(r"^\W*(?:candidate|workflow|option|number)?\s*#?\s*(\d+)\b", re.I)


def parse_pick(text: str | None, ids: Sequence[str]) -> tuple[int | None, str]:
    """Which candidate (0-based) an LLM answer names: a number 1..k on the first line, or
    exactly one of the candidate ids anywhere; (None, why) otherwise."""
    if not text or not text.strip():
        return None, "empty answer"
    first = text.strip().splitlines()[0]
    m = _PICK.match(first)
    if m:
        k = int(m.group(1))
        if 1 <= k <= len(ids):
            return k - 1, ""
        return None, f"candidate number {k} out of range 1..{len(ids)}"
    named = [i for i, wid in enumerate(ids) if wid.lower() in text.lower()]
    if len(named) == 1:
        return named[0], ""
    snippet = " ".join(text.split())[:80]
    return None, f"unparseable answer: {snippet!r}"


class Router:
    """Ranks a spec's workflows for dialogue prefixes; optionally asks an LLM to pick."""

    def __init__(self, spec: SpecBundle, encoder: Encoder | None = None, *,
                 client: LLMClient | None = None, shortlist: int = SHORTLIST,
                 exchanges: int | None = PREFIX_EXCHANGES,
                 service_descriptions: Mapping[str, str] | None = None) -> None:
        self.spec = spec
        self.ids = list(spec.workflows)
        self._encoder = encoder
        self.client = client
        self.shortlist = max(1, shortlist)
        self.exchanges = exchanges
        self.texts = [candidate_text(spec.workflows[w], service_descriptions) for w in self.ids]
        self._cand_vecs: Sequence[Sequence[float]] | None = None

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = SentenceTransformerEncoder()
        return self._encoder

    def rank(self, turns: Sequence[Turn | TurnRecord]) -> list[list[str]]:
        """All workflow ids, best first, for each turn."""
        if not turns:
            return []
        if self._cand_vecs is None:
            self._cand_vecs = self.encoder.encode(self.texts)
        qv = self.encoder.encode([prefix_text(_turn(t), self.exchanges) for t in turns])
        return [[self.ids[i] for i in order] for order in _cosine_rank(qv, self._cand_vecs)]

    def _header(self, wid: str) -> str:
        wf = self.spec.workflows[wid]
        req = ", ".join(wf.required) or "none"
        opt = ", ".join(s for s in wf.slots if s not in wf.required) or "none"
        return f"{wid}: {wf.description or _humanise(wid)} (required: {req}; optional: {opt})"

    def pick(self, turns: Sequence[Turn | TurnRecord], ranked: Sequence[Sequence[str]]
             ) -> list[Route]:
        """The LLM-on-shortlist step for already ranked turns."""
        if self.client is None:
            raise ValueError("the llm router needs an LLM client")
        prompt = load_prompt("router")
        reqs = []
        for t, r in zip(turns, ranked, strict=True):
            short = list(r[:self.shortlist])
            cands = "\n".join(f"{i}. {self._header(w)}" for i, w in enumerate(short, start=1))
            system, user = prompt.render(candidates=cands,
                                         dialogue=prefix_text(_turn(t), self.exchanges))
            reqs.append(ChatRequest.of(system, user, max_tokens=8))
        out = []
        for r, res in zip(ranked, self.client.chat_many(reqs), strict=True):
            ids = tuple(r[:self.shortlist])
            if not res.ok:
                out.append(Route(ids[0], tuple(r), "llm", f"LLM call failed ({res.error}); "
                                 "fell back to the encoder's top-1", res.cost_usd))
                continue
            idx, why = parse_pick(res.text, ids)
            if idx is None:
                out.append(Route(ids[0], tuple(r), "llm",
                                 f"{why}; fell back to the encoder's top-1", res.cost_usd))
            else:
                out.append(Route(ids[idx], tuple(r), "llm", "", res.cost_usd))
        return out

    def route(self, turns: Sequence[Turn | TurnRecord], method: RouteMethod) -> list[Route]:
        if method == "oracle":
            return [Route(_turn(t).workflow, (_turn(t).workflow,), "oracle") for t in turns]
        ranked = self.rank(turns)
        if method == "mpnet":
            return [Route(r[0], tuple(r), "mpnet") for r in ranked]
        if method == "llm":
            return self.pick(turns, ranked)
        raise ValueError(f"unknown route method {method!r}; use one of {', '.join(METHODS)}")


def route_detailed(spec: SpecBundle, turns: Sequence[Turn | TurnRecord], method: str, *,
                   encoder: Encoder | None = None,
                   client_config: LLMConfig | Mapping[str, Any] | None = None,
                   client: LLMClient | None = None, shortlist: int = SHORTLIST,
                   exchanges: int | None = PREFIX_EXCHANGES,
                   service_descriptions: Mapping[str, str] | None = None) -> list[Route]:
    """`route` with the shortlist, reasons and costs."""
    if method not in METHODS:
        raise ValueError(f"unknown route method {method!r}; use one of {', '.join(METHODS)}")
    made: LLMClient | None = None
    if method == "llm" and client is None:
        cfg = (client_config if isinstance(client_config, LLMConfig)
               else config_from_options(client_config or {}))
        client = made = LLMClient(cfg)
    try:
        router = Router(spec, encoder, client=client, shortlist=shortlist, exchanges=exchanges,
                        service_descriptions=service_descriptions)
        return router.route(turns, method)  # type: ignore[arg-type]
    finally:
        if made is not None:
            made.close()


def route_chunks(spec: SpecBundle, chunks: Iterable[Sequence[Turn | TurnRecord]],
                 method: str, *, encoder: Encoder | None = None,
                 client_config: LLMConfig | Mapping[str, Any] | None = None,
                 client: LLMClient | None = None, shortlist: int = SHORTLIST,
                 exchanges: int | None = PREFIX_EXCHANGES,
                 service_descriptions: Mapping[str, str] | None = None
                 ) -> Iterator[list[str]]:
    """`route` of each chunk of turns, as the chunks come: one router (encoder and LLM
    client made once, on the first chunk) for all, so a long input is routed in
    bounded memory. A turn's route reads only its own dialogue prefix, so cutting the
    input into chunks changes no choice of a deterministic encoder (MPNet's vectors
    can differ in their last bits with the other texts of an encoder batch; docs/llm.md).
    """
    if method not in METHODS:
        raise ValueError(f"unknown route method {method!r}; use one of {', '.join(METHODS)}")
    made: LLMClient | None = None
    router: Router | None = None
    try:
        for turns in chunks:
            if router is None:
                if method == "llm" and client is None:
                    cfg = (client_config if isinstance(client_config, LLMConfig)
                           else config_from_options(client_config or {}))
                    client = made = LLMClient(cfg)
                router = Router(spec, encoder, client=client, shortlist=shortlist,
                                exchanges=exchanges,
                                service_descriptions=service_descriptions)
            yield [r.workflow for r in router.route(turns, method)]  # type: ignore[arg-type]
    finally:
        if made is not None:
            made.close()


def route(spec: SpecBundle, turns: Sequence[Turn | TurnRecord], method: str, *,
          encoder: Encoder | None = None,
          client_config: LLMConfig | Mapping[str, Any] | None = None, **kw: Any) -> list[str]:
    """One workflow id per turn, by `method` (oracle | mpnet | llm)."""
    return [r.workflow for r in route_detailed(spec, turns, method, encoder=encoder,
                                               client_config=client_config, **kw)]


def accuracy(routes: Sequence[Route], gold: Sequence[str], k: int = SHORTLIST
             ) -> dict[str, float]:
    """top-1 (the chosen route) and top-k (gold in the ranked shortlist) accuracy."""
    if not routes:
        return {"n": 0, "top1": 0.0, f"top{k}": 0.0}
    n = len(routes)
    top1 = sum(r.workflow == g for r, g in zip(routes, gold, strict=True)) / n
    topk = sum(g in r.ranked[:k] for r, g in zip(routes, gold, strict=True)) / n
    return {"n": n, "top1": round(top1, 4), f"top{k}": round(topk, 4)}
