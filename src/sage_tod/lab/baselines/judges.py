"""The three LLM-as-judge baseline families, each in `tr` and `st` form.

They are holistic: one judgement per turn, no criteria, no stages. Each
returns a `sage_tod.contracts.verdicts.Verdict` (config = baseline name, criteria = [],
stages = []) so scoring, bootstrap and reports treat them exactly like SAGE.
A model answer that cannot be used (HTTP error, timeout, unparseable) makes
the turn `undecided` - it is never turned into a label - and the reason is
kept in the `Judgement` returned alongside.

Cost is the sum of the turn's calls at list price; latency is the sum of the
turn's call latencies (the paper's sequential harness: G-Eval's six samples
one after the other), measured on the original call when an answer comes
from the cache.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import FailureClass
from sage_tod.contracts.safejson import parse_json
from sage_tod.contracts.verdicts import Verdict
from sage_tod.lab.baselines.context import DEFAULT_HISTORY, Mode, context_block, workflow_text
from sage_tod.llm.client import ChatRequest, ChatResult, LLMClient
from sage_tod.llm.prompts import load_prompt

Label = Literal["failure", "acceptable", "undecided"]
GEVAL_SAMPLES = 6
GEVAL_THRESHOLD = 3.0
FRUGAL_THRESHOLD = 0.8
_CLASSES = {c.value: c for c in FailureClass}


@dataclass(frozen=True)
class Judgement:
    """A baseline's verdict plus what produced it (scores, escalation, reasons)."""

    verdict: Verdict
    scores: tuple[float, ...] = ()
    mean_score: float | None = None
    model_confidence: float | None = None
    escalated: bool = False
    calls: int = 0
    cached_calls: int = 0
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """For a trace file next to the verdicts (contains no key and no prompt)."""
        return {"key": self.verdict.key, "config": self.verdict.config,
                "verdict": self.verdict.verdict, "scores": list(self.scores),
                "mean_score": self.mean_score, "model_confidence": self.model_confidence,
                "escalated": self.escalated, "calls": self.calls,
                "cached_calls": self.cached_calls, "reasons": list(self.reasons),
                "cost_usd": self.verdict.cost_usd, "latency_ms": self.verdict.latency_ms}


# -- parsing -------------------------------------------------------------------------------

_SCALE = re.compile(r"\(\s*1\s*[-–to]+\s*5\s*\)", re.I)
_SCORE = re.compile(r"acceptability[^0-9\n]{0,24}?([1-5](?:\.\d+)?)(?![\d.])", re.I)


def parse_geval_score(text: str | None) -> float | None:
    """The last "Acceptability (1-5): N" in a filled form, N in [1, 5]; None if absent."""
    if not text:
        return None
    found = _SCORE.findall(_SCALE.sub("", text))
    if not found:
        return None
    value = float(found[-1])
    return value if 1.0 <= value <= 5.0 else None


def extract_json_object(text: str | None) -> dict[str, object] | None:
    """The one JSON object in an answer (code fences and surrounding prose tolerated).

    Read with the bounded reader: a model answer nested thousands deep (or holding
    NaN, a huge number) is no object, so the judge abstains on that turn instead of
    the run stopping.

    >>> extract_json_object('{"a": ' * 5000 + '1' + '}' * 5000) is None
    True
    """
    if not text:
        return None
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = parse_json(text[start:end + 1])
    except ValueError:  # malformed, or outside the bounded reader's limits
        return None
    return obj if isinstance(obj, dict) else None


@dataclass(frozen=True)
class JudgeAnswer:
    label: Literal["failure", "acceptable"]
    failure_class: FailureClass | None
    confidence: float | None


def parse_judge_json(text: str | None, *, clean_word: str,
                     need_confidence: bool = False) -> tuple[JudgeAnswer | None, str]:
    """{"verdict": "failure"|<clean_word>, "class": ..., "confidence": ...}; (None, why) if not."""
    obj = extract_json_object(text)
    if obj is None:
        snippet = " ".join((text or "").split())[:100]
        return None, f"no JSON object in answer: {snippet!r}"
    verdict = str(obj.get("verdict", "")).strip().lower()
    if verdict not in ("failure", clean_word):
        return None, f"verdict must be failure or {clean_word}, got {obj.get('verdict')!r}"
    label: Literal["failure", "acceptable"] = "failure" if verdict == "failure" else "acceptable"
    note = ""
    cls_raw = obj.get("class")
    cls: FailureClass | None = None
    if isinstance(cls_raw, str) and cls_raw.strip().upper() in _CLASSES:
        cls = _CLASSES[cls_raw.strip().upper()]
    elif cls_raw not in (None, "", "null", "none", "None"):
        note = f"ignored unknown class tag {cls_raw!r}"
    conf: float | None = None
    if need_confidence:
        raw = obj.get("confidence")
        try:
            conf = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None, f"confidence is not a number: {raw!r}"
        if 1.0 < conf <= 100.0:
            conf /= 100.0  # a percentage
        if not 0.0 <= conf <= 1.0:
            return None, f"confidence out of range: {raw!r}"
    return JudgeAnswer(label, cls if label == "failure" else None, conf), note


# -- the judges -----------------------------------------------------------------------------


def _verdict(ctx: TurnContext, config: str, label: Label, confidence: float,
             classes: Sequence[FailureClass], results: Sequence[ChatResult]) -> Verdict:
    return Verdict(
        dialogue_id=ctx.turn.dialogue_id, turn_id=ctx.turn.turn_id, workflow=ctx.turn.workflow,
        verdict=label, confidence=round(confidence, 6), classes=list(classes), criteria=[],
        config=config, stages=[], latency_ms=round(sum(r.latency_ms for r in results), 3),
        cost_usd=round(sum(r.cost_usd for r in results), 8))


def _call_note(r: ChatResult) -> str:
    return f"{r.model}: {r.error}"


class Judge:
    """Common shape: build the requests of a batch of turns, send them, read them."""

    family = ""

    def __init__(self, mode: Mode, *, history: int = DEFAULT_HISTORY) -> None:
        self.mode: Mode = mode
        self.history = history

    @property
    def name(self) -> str:
        return f"{self.family}_{self.mode}"

    def fill(self, prompt: str, ctx: TurnContext) -> tuple[str, str]:
        return load_prompt(prompt).render(workflow=workflow_text(ctx.workflow),
                                          context=context_block(ctx, self.mode, self.history))

    def judge(self, contexts: Sequence[TurnContext]) -> list[Judgement]:
        raise NotImplementedError


class GEvalJudge(Judge):
    """CoT form filling, n samples of a 1-5 acceptability score, averaged and thresholded.

    Samples are separate calls with seeds 0..n-1 (so each is its own cache
    entry and servers that ignore `n` still give n answers); at temperature 0
    they may coincide, which is the paper's protocol. failure iff the mean of
    the usable scores is below `threshold`; confidence = |mean - threshold| / 2.
    """

    family = "geval"

    def __init__(self, mode: Mode, client: LLMClient, *, samples: int = GEVAL_SAMPLES,
                 threshold: float = GEVAL_THRESHOLD, history: int = DEFAULT_HISTORY,
                 max_tokens: int = 300) -> None:
        super().__init__(mode, history=history)
        if samples < 1 or not 1.0 <= threshold <= 5.0:
            raise ValueError("geval samples must be >= 1 and threshold in [1, 5]")
        self.client, self.samples, self.threshold = client, samples, threshold
        self.max_tokens = max_tokens

    def judge(self, contexts: Sequence[TurnContext]) -> list[Judgement]:
        reqs = []
        for ctx in contexts:
            system, user = self.fill("geval", ctx)
            reqs += [ChatRequest.of(system, user, seed=i, max_tokens=self.max_tokens)
                     for i in range(self.samples)]
        results = self.client.chat_many(reqs)
        out = []
        for k, ctx in enumerate(contexts):
            rs = results[k * self.samples:(k + 1) * self.samples]
            scores: list[float] = []
            reasons: list[str] = []
            for r in rs:
                if not r.ok:
                    reasons.append(_call_note(r))
                    continue
                s = parse_geval_score(r.text)
                if s is None:
                    snippet = " ".join((r.text or "").split())[-80:]
                    reasons.append(f"no acceptability score in answer: …{snippet!r}")
                else:
                    scores.append(s)
            if scores:
                mean = sum(scores) / len(scores)
                label: Label = "failure" if mean < self.threshold else "acceptable"
                conf = min(1.0, abs(mean - self.threshold) / 2.0)
            else:
                mean, label, conf = None, "undecided", 0.0
                reasons.insert(0, "no usable sample")
            out.append(Judgement(
                verdict=_verdict(ctx, self.name, label, conf, [], rs), scores=tuple(scores),
                mean_score=None if mean is None else round(mean, 6),
                calls=len(rs), cached_calls=sum(r.cached for r in rs), reasons=tuple(reasons)))
        return out


class SingleJudge(Judge):
    """One call at temperature 0: failure/clean and an optional class tag."""

    family = "single"

    def __init__(self, mode: Mode, client: LLMClient, *, history: int = DEFAULT_HISTORY,
                 max_tokens: int = 64) -> None:
        super().__init__(mode, history=history)
        self.client, self.max_tokens = client, max_tokens

    def judge(self, contexts: Sequence[TurnContext]) -> list[Judgement]:
        reqs = [ChatRequest.of(*self.fill("single", c), max_tokens=self.max_tokens)
                for c in contexts]
        out = []
        for ctx, r in zip(contexts, self.client.chat_many(reqs), strict=True):
            ans, note = (None, _call_note(r)) if not r.ok else parse_judge_json(
                r.text, clean_word="clean")
            if ans is None:
                v = _verdict(ctx, self.name, "undecided", 0.0, [], [r])
            else:
                cls = [ans.failure_class] if ans.failure_class else []
                v = _verdict(ctx, self.name, ans.label, 1.0, cls, [r])
            out.append(Judgement(verdict=v, calls=1, cached_calls=int(r.cached),
                                 reasons=(note,) if note else ()))
        return out


class FrugalJudge(Judge):
    """FrugalGPT-style cascade: the cheap model answers every turn with a confidence;
    a turn whose cheap answer is unusable or below `threshold` is asked again of the
    strong model, whose answer then stands (unusable -> undecided)."""

    family = "frugal"

    def __init__(self, mode: Mode, cheap: LLMClient, strong: LLMClient, *,
                 threshold: float = FRUGAL_THRESHOLD, history: int = DEFAULT_HISTORY,
                 max_tokens: int = 64) -> None:
        super().__init__(mode, history=history)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("frugal threshold must be in [0, 1]")
        self.cheap, self.strong, self.threshold = cheap, strong, threshold
        self.max_tokens = max_tokens

    def _read(self, r: ChatResult) -> tuple[JudgeAnswer | None, str]:
        if not r.ok:
            return None, _call_note(r)
        ans, note = parse_judge_json(r.text, clean_word="acceptable", need_confidence=True)
        return ans, f"{r.model}: {note}" if note else ""

    def judge(self, contexts: Sequence[TurnContext]) -> list[Judgement]:
        reqs = [ChatRequest.of(*self.fill("frugal", c), max_tokens=self.max_tokens)
                for c in contexts]
        first = self.cheap.chat_many(reqs)
        read = [self._read(r) for r in first]
        up = [i for i, (a, _) in enumerate(read)
              if a is None or (a.confidence or 0.0) < self.threshold]
        second = dict(zip(up, self.strong.chat_many([reqs[i] for i in up]), strict=True))
        out = []
        for i, ctx in enumerate(contexts):
            results = [first[i]]
            ans, note = read[i]
            reasons = [note] if note else []
            if i in second:
                results.append(second[i])
                reasons.append("escalated: " + ("cheap answer unusable" if ans is None else
                                                f"cheap confidence {ans.confidence:.2f} < "
                                                f"{self.threshold:.2f}"))
                ans, note2 = self._read(second[i])
                if note2:
                    reasons.append(note2)
            if ans is None:
                v = _verdict(ctx, self.name, "undecided", 0.0, [], results)
            else:
                cls = [ans.failure_class] if ans.failure_class else []
                v = _verdict(ctx, self.name, ans.label, ans.confidence or 0.0, cls, results)
            out.append(Judgement(verdict=v, model_confidence=None if ans is None
                                 else ans.confidence, escalated=i in second,
                                 calls=len(results), cached_calls=sum(r.cached for r in results),
                                 reasons=tuple(reasons)))
        return out


def calibrate_threshold(mean_scores: Sequence[float | None], gold_failure: Sequence[bool],
                        default: float = GEVAL_THRESHOLD) -> float:
    """The G-Eval cut (failure iff mean < t) that maximises failure-F1 on a dev split.

    Candidates are midpoints between adjacent distinct scores (and the ends);
    ties go to the candidate nearest `default`. Turns without a score are left out.
    """
    pairs = [(s, g) for s, g in zip(mean_scores, gold_failure, strict=True) if s is not None]
    if not pairs or not any(g for _, g in pairs):
        return default
    vals = sorted({s for s, _ in pairs})
    cands = [vals[0] - 0.01, *((a + b) / 2 for a, b in itertools.pairwise(vals)),
             vals[-1] + 0.01]
    best: tuple[float, float, float] | None = None
    for t in cands:
        tp = sum(1 for s, g in pairs if s < t and g)
        fp = sum(1 for s, g in pairs if s < t and not g)
        fn = sum(1 for s, g in pairs if s >= t and g)
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        key = (f1, -abs(t - default), -t)
        if best is None or key > best:
            best = key
    assert best is not None
    return round(-best[2], 6)
