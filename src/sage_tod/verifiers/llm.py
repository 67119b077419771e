"""S3: the focused single-criterion LLM stage (SAGE-LLM = S1 + S2 + S3).

S3 sees only what the cascade could not settle: criteria marked `open_class`
that S1 and S2 abstained on. For each it sends one short prompt - the
criterion restated so that "true" always means *the failure fires*, the
minimal evidence (the criterion's span, the few utterances and slot values it
is about) and the instruction to answer true/false/abstain - never the
transcript. Short, criterion-local prompts are cheap, cacheable and can run in
parallel (paper, "S3").

Why restate instead of sending `Criterion.question` verbatim: the compiled
questions do not share one polarity (the UV question asks whether the value
*is supported*, where "yes" means no failure), and an LLM answer of "true"
must mean the same thing for every class.

A verifier never guesses: an HTTP error, a timeout, an empty or unparseable
answer, or an explicit "abstain" all abstain with the reason recorded. A
decided answer gets the fixed margin `llm_margin` (default 0.5): the model's
word is not a calibrated probability, and it should rank below S1's 1.0 for
selective evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import (
    Criterion,
    Decision,
    IUVArgs,
    Outcome,
    PCArgs,
    Span,
    UVArgs,
    WNFArgs,
)
from sage_tod.contracts.safejson import parse_json
from sage_tod.contracts.turns import transcript_lines
from sage_tod.llm.config import (
    LLMConfig,
    LLMNotConfigured,
    LLMSettingsError,
    config_from_options,
)
from sage_tod.llm.prompts import load_prompt
from sage_tod.verifiers.base import Item, StageUnavailable

if TYPE_CHECKING:  # the HTTP client (httpx) loads only when S3 is actually built
    from sage_tod.llm.client import ChatRequest, ChatResult, LLMClient

DEFAULT_MARGIN = 0.5
HISTORY_EXCHANGES = 4
_ANSWERS = {"true": Outcome.TRUE, "false": Outcome.FALSE, "abstain": Outcome.ABSTAIN}
_STRIP = " \t*`'\".:;,!()[]_"


@dataclass(frozen=True)
class S3Prompt:
    """What one criterion asks the model, before templating."""

    question: str
    evidence: str
    true_means: str
    false_means: str


def parse_answer(text: str | None) -> tuple[Outcome | None, str]:
    """Strictly read true/false/abstain from an answer; (None, why) when it is not one.

    Accepted: the first non-empty line is one of the three words (case,
    markdown emphasis and trailing punctuation ignored, an "Answer:" prefix
    allowed), or a JSON object whose "answer" is one of them. "yes"/"no",
    two words, or a word buried in prose are rejected: their polarity would be a guess.
    """
    if text is None or not text.strip():
        return None, "empty answer"
    raw = text.strip()
    if raw.startswith("```"):
        raw = raw.strip("`").removeprefix("json").strip()
    if raw.startswith("{"):
        try:
            obj = parse_json(raw)  # bounded: a deeply nested answer is unparseable, no crash
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            word = str(obj.get("answer", "")).strip().lower()
            if word in _ANSWERS:
                return _ANSWERS[word], str(obj.get("reason", "")).strip()
            return None, f"unparseable answer: {_clip(raw)}"
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    first = lines[0].strip().strip(_STRIP).lower()
    first = re.sub(r"^(final\s+)?answer\s*[:\-]\s*", "", first).strip(_STRIP)
    if first in _ANSWERS:
        reason = " ".join(ln.strip() for ln in lines[1:]).strip()
        reason = re.sub(r"^(reason|because)\s*[:\-]\s*", "", reason, flags=re.I)
        return _ANSWERS[first], reason
    return None, f"unparseable answer: {_clip(raw)}"


def _clip(text: str, n: int = 120) -> str:
    one = " ".join(text.split())
    return repr(one[:n] + ("…" if len(one) > n else ""))


def _mark(text: str, span: Span | None) -> str:
    """The utterance with the evidence span in «guillemets», so the model sees what is meant."""
    if span is None or not (0 <= span.start <= span.end <= len(text)):
        return text
    return f"{text[:span.start]}«{text[span.start:span.end]}»{text[span.end:]}"


def _slot_line(ctx: TurnContext, slot: str) -> str:
    spec = ctx.spec.slot(slot, ctx.workflow)
    desc = spec.description if spec is not None and spec.description else ""
    return f"{slot} ({desc})" if desc else slot


def _may_ask(ctx: TurnContext, slot: str) -> bool:
    """Mirrors S1: optional slots any time; required ones once their prerequisites are
    filled before the turn or by the turn's own state update."""
    wf = ctx.workflow
    if slot not in wf.slots or wf.is_optional(slot):
        return True
    return not wf.missing_prereqs(slot, ctx.before) or not wf.missing_prereqs(slot, ctx.after)


def build_prompt(c: Criterion, ctx: TurnContext,
                 history_exchanges: int = HISTORY_EXCHANGES) -> S3Prompt:
    """The criterion restated with polarity "true = failure" and its minimal evidence."""
    a = c.args
    if isinstance(a, UVArgs):
        old = a.old
        recent = transcript_lines(ctx.turn.history or (), history_exchanges)
        lines = [f"Slot: {_slot_line(ctx, a.slot)}",
                 f"Value the agent's state writes in this turn: {a.value!r}"
                 + (f" (was {old!r})" if old else ""),
                 "Dialogue so far:" if recent else "Dialogue so far: (this is the first turn)",
                 *recent, f"User (this turn): {ctx.turn.user}"]
        return S3Prompt(
            question=(f"Is the value {a.value!r} for {a.slot} unsupported, i.e. neither "
                      "stated nor implied by the user, nor offered by the agent and accepted "
                      "by the user, in the dialogue shown?"),
            evidence="\n".join(lines),
            true_means="the dialogue shown does not support the value (a failure)",
            false_means="the dialogue shown supports the value")
    if isinstance(a, IUVArgs):
        cands: list[str] = list(a.candidates or [a.slot])
        held = ", ".join(f"{s} = {ctx.after.get(s)!r}" if ctx.after.get(s) else f"{s} unset"
                         for s in cands)
        lines = [f"User (this turn): {_mark(ctx.turn.user, c.evidence)}",
                 "Slot(s): " + "; ".join(_slot_line(ctx, s) for s in cands),
                 f"State after the turn: {held}"]
        slots = " or ".join(cands)
        return S3Prompt(
            question=(f"Does the user give {a.value!r} as the {slots} in this turn, although "
                      "the state after the turn does not record it?"),
            evidence="\n".join(lines),
            true_means="the user gave that value for that slot and it was not recorded "
                       "(a failure)",
            false_means="the user did not give that value for that slot in this turn")
    if isinstance(a, WNFArgs):
        cands = list(a.candidates or [a.slot])
        ok = [s for s in cands if _may_ask(ctx, s)]
        not_yet = [s for s in cands if s not in ok]
        lines = [f"Agent (this turn): {_mark(ctx.turn.agent, c.evidence)}",
                 "The marked request is for one of: "
                 + "; ".join(_slot_line(ctx, s) for s in cands),
                 f"May be asked now: {', '.join(ok) or 'none of them'}",
                 f"May not be asked yet: {', '.join(not_yet) or 'none of them'}"]
        return S3Prompt(
            question="Is the agent asking for a field that may not be asked yet?",
            evidence="\n".join(lines),
            true_means="the agent asks for a field that may not be asked yet (a failure)",
            false_means="the agent asks only for fields that may be asked now")
    # PC: an implied confirmation while the outcome predicate is false
    unmet = sorted(ctx.workflow.outcome_unmet(ctx.after))
    lines = [f"Agent (this turn): {_mark(ctx.turn.agent, c.evidence)}",
             f"Required information still missing: {', '.join(unmet) or 'none'}"]
    return S3Prompt(
        question=("Does the agent tell the user that the task is confirmed or completed "
                  "(booked, reserved, done)?"),
        evidence="\n".join(lines),
        true_means="the agent confirms or completes the task although information is "
                   "missing (a failure)",
        false_means="the agent does not confirm or complete the task")


class LLMVerifier:
    """S3. Decides open-class criteria with one focused call each, in parallel."""

    name = "S3"

    def __init__(self, client: LLMClient, *, margin: float = DEFAULT_MARGIN,
                 history_exchanges: int = HISTORY_EXCHANGES, max_tokens: int = 64) -> None:
        if not 0.0 < margin <= 1.0:
            raise ValueError(f"llm_margin must be in (0, 1], got {margin}")
        self.client = client
        self.margin = margin
        self.history_exchanges = history_exchanges
        self.max_tokens = max_tokens
        self._prompt = load_prompt("s3")

    def fingerprint(self) -> dict[str, object]:
        """Endpoint and model (never the key): what a resume must not mix."""
        cfg = self.client.config
        return {"endpoint": cfg.chat_url, "model": cfg.model, "margin": self.margin,
                "temperature": cfg.temperature, "history_exchanges": self.history_exchanges}

    def accepts(self, criterion: Criterion) -> bool:
        # open-class criteria of the built-in classes: S3's prompts state those four
        return criterion.open_class and isinstance(criterion.args,
                                                   UVArgs | IUVArgs | WNFArgs | PCArgs)

    def request(self, item: Item) -> ChatRequest:
        p = build_prompt(item.criterion, item.ctx, self.history_exchanges)
        wf = item.ctx.workflow
        system, user = self._prompt.render(
            workflow=f"{wf.id}" + (f" - {wf.description}" if wf.description else ""),
            evidence=p.evidence, question=p.question, true_means=p.true_means,
            false_means=p.false_means)
        from sage_tod.llm.client import ChatRequest

        return ChatRequest.of(system, user, max_tokens=self.max_tokens)

    def decide(self, items: Sequence[Item]) -> list[Decision]:
        requests = []
        out: list[Decision | None] = []
        for it in items:
            try:
                requests.append(self.request(it))
                out.append(None)
            except (KeyError, ValueError, TypeError) as exc:  # a criterion S3 cannot phrase
                out.append(Decision.abstain(f"S3 cannot phrase this criterion: {exc}"))
        results = iter(self.client.chat_many(requests))
        return [d if d is not None else self._decision(next(results)) for d in out]

    def _decision(self, res: ChatResult) -> Decision:
        cost = res.cost_usd
        tag = f"{res.model}{', cached' if res.cached else ''}"
        if not res.ok:
            return Decision(Outcome.ABSTAIN, 0.0, f"S3 call failed ({tag}): {res.error}",
                            cost_usd=cost)
        outcome, reason = parse_answer(res.text)
        if outcome is None:
            return Decision(Outcome.ABSTAIN, 0.0, f"S3 ({tag}): {reason}", cost_usd=cost)
        if outcome is Outcome.ABSTAIN:
            return Decision(Outcome.ABSTAIN, 0.0,
                            f"S3 ({tag}) abstained: {reason or 'no reason given'}",
                            cost_usd=cost)
        return Decision(outcome, self.margin,
                        f"S3 ({tag}) answered {outcome.value}: {reason or 'no reason given'}",
                        cost_usd=cost)


def _build(options: dict[str, Any]) -> LLMVerifier:
    try:
        config: LLMConfig = config_from_options(options)
    except LLMSettingsError:
        raise  # a setting given but unusable is an input error, not a missing stage
    except LLMNotConfigured as exc:
        raise StageUnavailable(f"S3 needs an LLM endpoint: {exc}") from None
    margin = float(options.get("llm_margin") or DEFAULT_MARGIN)
    hist = options.get("llm_history_exchanges")
    from sage_tod.llm.client import LLMClient

    return LLMVerifier(LLMClient(config), margin=margin,
                       history_exchanges=HISTORY_EXCHANGES if hist is None else int(hist))


def build_s3(options: dict[str, Any]) -> LLMVerifier:
    return _build(options)
