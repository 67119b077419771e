"""S2: encoder/NLI grounding with a confidence gate.

S2 takes the criteria the compiler marked `nlu` (every UV value, non-exact
IUV extractions, implied confirmations), states each as an NLI claim, and
decides only when the margin m = p(ent) - p(contra) is clear: |m| >= tau
(default 0.15, chosen on the dev split as Appendix J does), abstaining
otherwise. |m| is the decision's confidence. For UV the margin can instead be
p(ent) - p(neutral) - p(contra) (`uv_margin: rest`): a value nobody mentioned is
neutral, and under the paper's margin it would sit at m ~ 0 and never fire.
The claim design (template, window, uv_margin, tau, PC template) comes from the
options, else from the model directory's `sage_tod_claims.json` (so a model
trained for one design runs with it), else from the measured defaults. For UV it also asks the
paraphrase encoder whether a value the diff introduces is a paraphrase of
something the user said; encoder support and a clear NLI contradiction
disagreeing is an abstention, not a coin toss.

A missing model is not a crash and not a guess: the stage is built, abstains
on everything with the reason, and says once where it looked for a model.
Model errors abstain with the error as the reason.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import (
    EXTRACTION_FLOOR,
    Criterion,
    CriterionArgs,
    Decision,
    IUVArgs,
    Outcome,
    PCArgs,
    Span,
    SpanSource,
    UVArgs,
)
from sage_tod.contracts.errors import InputError
from sage_tod.verifiers.base import Item, StageUnavailable
from sage_tod.verifiers.symbolic import decide_promise

log = logging.getLogger("sage_tod.nli")

# chosen as in Appendix J: the tau of maximum F1 on the 40-turn dev split (docs/nli.md)
DEFAULT_TAU = 0.15
IUV_TEMPLATE = "wants_desc"
_WARNED: set[str] = set()


def warn_once(message: str) -> None:
    """One message per process, however many evaluators build S2."""
    if message not in _WARNED:
        _WARNED.add(message)
        log.warning("%s", message)


@dataclass(frozen=True)
class _Plan:
    """Which pairs an item needs (indices into the batch's pair list)."""

    pairs: tuple[int, ...]


class NLIVerifier:
    """S2. Built by the `S2` factory from options; `scorer=None` means no model."""

    name = "S2"

    def __init__(self, scorer: Any | None, *, tau: float = DEFAULT_TAU,
                 template: str | None = None, window: str | None = None,
                 paraphrase: Any | None = None, unavailable: str | None = None,
                 pc_state: str = "after", uv_margin: str | None = None,
                 pc_template: str | None = None, pc_window: str | None = None,
                 meaning_claims: bool | tuple[str, ...] = True) -> None:
        from sage_tod.nli.claims import (
            DEFAULT_PC_TEMPLATE,
            DEFAULT_PC_WINDOW,
            DEFAULT_TEMPLATE,
            DEFAULT_UV_MARGIN,
            DEFAULT_WINDOW,
            PC_TEMPLATES,
            PC_WINDOWS,
            TEMPLATES,
            UV_MARGINS,
            WINDOWS,
        )

        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau must be in [0, 1], got {tau}")
        self.scorer = scorer
        self.tau = float(tau)
        self.template = template or DEFAULT_TEMPLATE
        self.window = window or DEFAULT_WINDOW
        if self.template not in TEMPLATES:
            raise ValueError(f"unknown claim template {self.template!r}")
        if self.window not in WINDOWS:
            raise ValueError(f"unknown premise window {self.window!r}")
        self.uv_margin = uv_margin or DEFAULT_UV_MARGIN
        if self.uv_margin not in UV_MARGINS:
            raise ValueError(f"unknown UV margin {self.uv_margin!r}")
        self.pc_template = pc_template or DEFAULT_PC_TEMPLATE
        self.pc_window = pc_window or DEFAULT_PC_WINDOW
        if self.pc_template not in PC_TEMPLATES:
            raise ValueError(f"unknown PC template {self.pc_template!r}")
        if self.pc_window not in PC_WINDOWS:
            raise ValueError(f"unknown PC window {self.pc_window!r}")
        self.paraphrase = paraphrase
        # UV claims from the slot's meaning (claims.meaning_claim) for the value kinds
        # named (True: claims.DEFAULT_MEANING_KINDS); off reproduces the template claims
        self.meaning_claims = meaning_claims
        self.unavailable = unavailable
        self.pc_state = pc_state

    def fingerprint(self) -> dict[str, object]:
        """What determines S2's answers besides the turns (a resume must not mix two)."""
        be = getattr(self.scorer, "backend", None)
        return {"model": getattr(be, "model_key", None), "backend": getattr(be, "name", None),
                "max_length": getattr(getattr(be, "tokenizer", None), "max_length", None),
                "tau": self.tau, "template": self.template, "window": self.window,
                "uv_margin": self.uv_margin, "pc_template": self.pc_template,
                "pc_window": self.pc_window, "pc_state": self.pc_state,
                "paraphrase": self.paraphrase is not None,
                **({"paraphrase_int8": True}
                   if getattr(self.paraphrase, "int8", False) else {}),
                **({"paraphrase_model": _paraphrase_key(self.paraphrase)}
                   if self.paraphrase is not None else {}),
                "meaning_claims": (self.meaning_claims if isinstance(self.meaning_claims, bool)
                                   else sorted(self.meaning_claims)),
                "runtime": _runtime_versions(getattr(be, "name", None))}

    def warmup(self) -> None:
        """Load what loads lazily (paraphrase weights, ONNX session) before timing starts."""
        if self.paraphrase is not None:
            self.paraphrase.embed(["warm up"])
        if self.scorer is not None:
            self.scorer.backend.score([("warm up", "warm up")])

    def accepts(self, criterion: Criterion) -> bool:
        return criterion.nlu and isinstance(criterion.args, UVArgs | IUVArgs | PCArgs)

    # -- batching -------------------------------------------------------------------------

    def decide(self, items: Sequence[Item]) -> list[Decision]:
        if self.scorer is None:
            # the full story (where S2 looked, how to get a model) is logged once;
            # each criterion carries the short form
            why = (self.unavailable or "no NLI model").split(". Get one:")[0]
            return [Decision.abstain(f"S2 unavailable: {why} (`sage-tod models which`)")
                    for _ in items]
        from sage_tod.nli.claims import iuv_pairs, pc_pair, uv_pair

        count = self.scorer.backend.tokenizer.count
        pairs: list[tuple[str, str]] = []
        plans: list[_Plan | Decision] = []
        for it in items:
            c, ctx = it.criterion, it.ctx
            a = c.args
            if isinstance(a, UVArgs):
                new = [uv_pair(ctx, a.slot, a.value, template=self.template,
                               window_name=self.window, count=count,
                               meaning=self.meaning_claims)]
            elif isinstance(a, IUVArgs):
                if a.confidence < EXTRACTION_FLOOR:
                    plans.append(Decision.abstain(
                        f"extraction confidence {a.confidence} is below the floor "
                        f"{EXTRACTION_FLOOR}"))
                    continue
                new = iuv_pairs(ctx, list(a.candidates), a.value, template=IUV_TEMPLATE)
            else:
                held = self._pc_holds(ctx)
                if held is not None:
                    plans.append(held)
                    continue
                new = [pc_pair(ctx, self.pc_template, self.pc_window)]
            plans.append(_Plan(tuple(range(len(pairs), len(pairs) + len(new)))))
            pairs.extend(new)
        try:
            probs = self.scorer.score(pairs)  # one batched model call for the whole chunk
        except Exception as exc:  # a verifier never guesses: errors abstain with the reason
            return [Decision.abstain(f"S2 model error: {type(exc).__name__}: {exc}")
                    for _ in items]
        self._prefetch_paraphrase(items, plans, probs)
        out: list[Decision] = []
        for it, plan in zip(items, plans, strict=True):
            if isinstance(plan, Decision):
                out.append(plan)
                continue
            got = [(pairs[i], probs[i]) for i in plan.pairs]
            a = it.criterion.args
            try:
                if isinstance(a, UVArgs):
                    out.append(self._uv(a, it.ctx, got[0]))
                elif isinstance(a, IUVArgs):
                    out.append(self._iuv(a, got))
                else:
                    out.append(self._pc(got[0]))
            except Exception as exc:
                out.append(Decision.abstain(f"S2 error: {type(exc).__name__}: {exc}"))
        return out

    # -- per class --------------------------------------------------------------------------

    def _needs_paraphrase(self, a: CriterionArgs, ctx: TurnContext, m: float) -> bool:
        """State-gated: a closed-set value this turn's diff introduces, not already entailed.

        Free-text values are left to S1 (exact and synonym matches) and NLI: the encoder
        only separates a value from its siblings when the slot has a closed value set,
        a categorical slot's `values`. A free slot's `values` are known values, not a
        closed set (a catalogue of names, `restaurant-food`'s cuisines): comparing an
        n-gram with a catalogue's hundreds of names cost half the encoder's work on the
        700-turn MultiWOZ slice and supported no value on any benchmark or natural slice
        (docs/results-speed.md, round 18).
        """
        if self.paraphrase is None or not isinstance(a, UVArgs) or m >= self.tau:
            return False
        slot, value = a.slot, a.value
        spec = ctx.spec.slot(slot, ctx.workflow)
        if spec is None or spec.type != "categorical" or not spec.values:
            return False
        return any(ch.slot == slot and ch.new == value for ch in ctx.diff)

    def _paraphrase_sources(self, ctx: TurnContext) -> list[tuple[str, int | None]]:
        """The user utterances of the NLI premise window (u_t by default), with their
        history position (None for u_t)."""
        from sage_tod.nli.claims import dialogue, window

        kept = set(window(dialogue(ctx), self.window))
        hist = ctx.turn.history or ()
        out: list[tuple[str, int | None]] = [
            (h.user, i) for i, h in enumerate(hist) if h.user.strip() and h.user.strip() in kept]
        return [*out, (ctx.turn.user, None)]

    def _paraphrase_texts(self, ctx: TurnContext) -> list[str]:
        return [t for t, _ in self._paraphrase_sources(ctx)]

    def _prefetch_paraphrase(self, items: Sequence[Item], plans: Sequence[_Plan | Decision],
                             probs: Sequence[tuple[float, float, float]]) -> None:
        """Embed every n-gram and value form of the chunk in one encoder call."""
        if self.paraphrase is None:
            return
        from sage_tod.nli.paraphrase import ngrams, value_forms

        texts: list[str] = []
        for it, plan in zip(items, plans, strict=True):
            if isinstance(plan, Decision):
                continue
            p = probs[plan.pairs[0]]
            a = it.criterion.args
            if not isinstance(a, UVArgs) or not self._needs_paraphrase(a, it.ctx, self._uv_m(p)):
                continue
            slot = a.slot
            texts += [g.text for g in ngrams(self._paraphrase_texts(it.ctx))]
            spec = it.ctx.spec.slot(slot, it.ctx.workflow)
            texts += value_forms(a.value, spec)
        if not texts:
            return
        try:
            self.paraphrase.embed(texts)
        except Exception as exc:  # the encoder is optional evidence; NLI still decides
            warn_once(f"S2 paraphrase encoder unavailable ({type(exc).__name__}: {exc}); "
                      "deciding with NLI alone")
            self.paraphrase = None

    def _uv_m(self, p: tuple[float, float, float]) -> float:
        from sage_tod.nli.claims import uv_margin

        return uv_margin(p, self.uv_margin)

    def _gate(self, m: float) -> bool:
        return abs(m) >= self.tau

    def _uv(self, a: UVArgs, ctx: TurnContext,
            got: tuple[tuple[str, str], tuple[float, float, float]]) -> Decision:
        from sage_tod.nli.claims import uv_margin

        (_premise, hyp), p = got
        m = uv_margin(p, self.uv_margin)
        value, slot = a.value, a.slot
        nli = (f"NLI m={m:+.2f} (ent {p[0]:.2f}, neutral {p[1]:.2f}, contra {p[2]:.2f}) for "
               f"{hyp!r}")
        if m >= self.tau:
            return Decision(Outcome.FALSE, round(m, 6),
                            f"the premise (window {self.window}) entails the value: {nli}")
        support = self._paraphrase(a, ctx, m)
        if support is not None:
            span, sim, runner = support
            said = f"{span.text!r} paraphrases {value!r} (cosine {sim:.2f}" + (
                f", next value {runner:.2f})" if runner is not None else ")")
            if m <= -self.tau:
                return Decision.abstain(f"signals disagree: {said}, but {nli}", abs(m))
            return Decision(Outcome.FALSE, round(max(sim, m), 6),
                            f"value supported: {said}; {nli}", span)
        if not self._gate(m):
            return Decision.abstain(f"margin below tau={self.tau:.2f}: {nli}", abs(m))
        if m > 0:
            return Decision(Outcome.FALSE, round(m, 6),
                            f"the premise (window {self.window}) entails the value: {nli}")
        return Decision(Outcome.TRUE, round(-m, 6),
                        f"the dialogue does not support {value!r} for {slot}: {nli}")

    def _paraphrase(self, a: UVArgs, ctx: TurnContext, m: float
                    ) -> tuple[Span, float, float | None] | None:
        if self.paraphrase is None or not self._needs_paraphrase(a, ctx, m):
            return None
        from sage_tod.nli.paraphrase import find_paraphrase

        slot, value = a.slot, a.value
        sources = self._paraphrase_sources(ctx)
        texts = [t for t, _ in sources]
        try:
            sup = find_paraphrase(self.paraphrase, texts, value, ctx.spec.slot(slot, ctx.workflow))
        except Exception as exc:  # the encoder is optional evidence; NLI still decides
            warn_once(f"S2 paraphrase encoder unavailable ({type(exc).__name__}: {exc}); "
                      "deciding with NLI alone")
            self.paraphrase = None
            return None
        if sup is None:
            return None
        g = sup.gram
        index = sources[g.utterance][1]
        source: SpanSource = "user" if index is None else "history.user"
        return (Span(source=source, index=index, start=g.start, end=g.end, text=g.text),
                sup.similarity, sup.runner_up)

    def _iuv(self, a: IUVArgs,
             got: list[tuple[tuple[str, str], tuple[float, float, float]]]) -> Decision:
        ms = [(p[0] - p[2], h) for (_, h), p in got]
        best, hyp = max(ms, key=lambda x: x[0])
        value = a.value
        if best >= self.tau:
            return Decision(Outcome.TRUE, round(best, 6),
                            f"u_t entails that the user supplied {value!r} (m={best:+.2f} for "
                            f"{hyp!r}), and s_t does not record it")
        if best <= -self.tau:
            return Decision(Outcome.FALSE, round(-best, 6),
                            f"u_t contradicts every reading of {value!r} as a slot value "
                            f"(best m={best:+.2f})")
        return Decision.abstain(f"margin below tau={self.tau:.2f}: best m={best:+.2f} for "
                                f"{hyp!r}", abs(best))

    def _pc_holds(self, ctx: TurnContext) -> Decision | None:
        state = ctx.after if self.pc_state == "after" else ctx.before
        if ctx.workflow.outcome_holds(state):
            return Decision(Outcome.FALSE, 1.0, "outcome predicate holds: confirming is allowed")
        # "I will book it for you" is entailed as "something has been booked" by the NLI
        # model, but it announces a booking that has not happened yet: S1's rule, which
        # S1 decides first; S2 keeps it for a cascade without S1 (`no_s1`)
        return decide_promise(ctx.turn.agent)

    def _pc(self, got: tuple[tuple[str, str], tuple[float, float, float]]) -> Decision:
        (_, hyp), p = got
        m = p[0] - p[2]
        if m >= self.tau:
            return Decision(Outcome.TRUE, round(m, 6),
                            f"a_t entails {hyp!r} (m={m:+.2f}) while the outcome predicate is "
                            "false")
        if m <= -self.tau:
            return Decision(Outcome.FALSE, round(-m, 6),
                            f"a_t contradicts {hyp!r} (m={m:+.2f}): not a confirmation")
        return Decision.abstain(f"margin below tau={self.tau:.2f}: m={m:+.2f} for {hyp!r}",
                                abs(m))


def _paraphrase_key(para: Any) -> str | None:
    """The paraphrase encoder's weights, by content hash (None when it cannot be found)."""
    try:
        from sage_tod.nli.backend import model_fingerprint
        from sage_tod.nli.paraphrase import default_model_path

        return model_fingerprint(getattr(para, "model_path", None) or default_model_path())
    except Exception:  # a missing optional encoder package: S2 then runs without it
        return None


def _runtime_versions(backend: str | None) -> dict[str, str | None]:
    """The libraries S2's scores depend on: the tokenizer and the runtime that ran."""
    from sage_tod.contracts.run_record import package_versions

    runtime = ("torch",) if backend == "torch" else ("onnxruntime",)
    return package_versions("tokenizers", *runtime)


def _opt(options: dict[str, Any], key: str, env: str | None = None) -> Any:
    v = options.get(key)
    if v is None and env is not None:
        v = os.environ.get(env)
    return v


def _check_packages() -> None:
    missing = []
    for mod in ("numpy", "tokenizers"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    have_runtime = False
    for mod in ("onnxruntime", "torch"):
        try:
            __import__(mod)
            have_runtime = True
            break
        except ImportError:
            continue
    if missing or not have_runtime:
        need = ", ".join(missing + ([] if have_runtime else ["onnxruntime or torch"]))
        raise StageUnavailable(f"S2 needs {need}: pip install 'sage-tod[nli]'")


def _tau_option(raw: Any, where: str) -> float | None:
    if raw in (None, ""):
        return None
    try:
        tau = float(raw)
    except (TypeError, ValueError):
        raise InputError(where, f"tau must be a number in [0, 1], got {raw!r}",
                         field="tau") from None
    if not 0.0 <= tau <= 1.0:  # NaN fails this too
        raise InputError(where, f"tau must be a number in [0, 1], got {raw!r}", field="tau")
    return tau


def _choice(options: dict[str, Any], key: str, known: Any, env: str | None = None) -> Any:
    v = _opt(options, key, env)
    if v not in (None, "") and v not in known:
        raise InputError("<options>", f"unknown {key} {v!r} (known: {', '.join(known)})",
                         field=key)
    return v or None


def build_s2(options: dict[str, Any]) -> NLIVerifier:
    """Options: nli_model, tau, cache_path, backend, threads, template, window, uv_margin,
    pc_template, pc_window, paraphrase (bool), paraphrase_int8 (bool, default off),
    meaning_claims (off or kinds), nli_batch_size, pc_state.
    Unknown keys are ignored. Every option is checked before a model is loaded or
    exported, so a bad value costs nothing; a model that was named (option or
    $SAGE_TOD_NLI_MODEL) but cannot be found or loaded is an `InputError`, never a silent
    fallback to another model."""
    _check_packages()
    from sage_tod.nli.claims import (
        PC_TEMPLATES,
        PC_WINDOWS,
        TEMPLATES,
        UV_MARGINS,
        WINDOWS,
        model_claims,
        parse_meaning_kinds,
    )
    from sage_tod.nli.resolve import ENV_MODEL, resolve_model
    from sage_tod.nli.runtime import get_scorer

    opt_tau = _tau_option(_opt(options, "tau", "SAGE_TOD_NLI_TAU"), "--tau / SAGE_TOD_NLI_TAU")
    chosen = {"template": _choice(options, "template", TEMPLATES),
              "window": _choice(options, "window", WINDOWS),
              "uv_margin": _choice(options, "uv_margin", UV_MARGINS, "SAGE_TOD_NLI_UV_MARGIN"),
              "pc_template": _choice(options, "pc_template", PC_TEMPLATES),
              "pc_window": _choice(options, "pc_window", PC_WINDOWS)}
    raw_meaning = _opt(options, "meaning_claims", "SAGE_TOD_NLI_MEANING_CLAIMS")
    try:
        meaning = parse_meaning_kinds(None if raw_meaning is None else str(raw_meaning))
    except ValueError as exc:
        raise InputError("<options>", str(exc), field="meaning_claims") from None
    raw_int8 = _opt(options, "paraphrase_int8", "SAGE_TOD_PARAPHRASE_INT8")
    para_int8 = None if raw_int8 in (None, "") else _on(raw_int8, "paraphrase_int8")
    pc_state = options.get("pc_state", "after")
    if pc_state not in ("after", "before"):
        raise InputError("<options>", f"pc_state must be after or before, got {pc_state!r}",
                         field="pc_state")
    try:
        batch = int(_opt(options, "nli_batch_size") or 32)
        if batch < 1:
            raise ValueError
    except (TypeError, ValueError):
        raise InputError("<options>", "nli_batch_size must be a positive whole number",
                         field="nli_batch_size") from None
    named = _opt(options, "nli_model")
    res = resolve_model(named)
    if res.model is None:
        if named or os.environ.get(ENV_MODEL):
            where = "--nli-model" if named else f"${ENV_MODEL}"
            raise InputError(where, f"no NLI model at {named or os.environ.get(ENV_MODEL)!r} "
                                    "(a Hugging Face model directory with config.json, or a "
                                    "hub id when a hub is reachable)")
        warn_once(res.missing_message())
        raise StageUnavailable(res.missing_message().split(". Get one:")[0])
    # the claim design: an option, then its env variable, then what the model directory
    # declares (an adapted model is run the way it was trained), then the defaults;
    # read (and checked) before the model loads, which may mean a long ONNX export
    shipped = model_claims(res.model)
    tau = opt_tau if opt_tau is not None else _tau_option(shipped.get("tau"), res.model)
    scorer, why = get_scorer(
        model=res.model, backend=_opt(options, "backend", "SAGE_TOD_NLI_BACKEND")
        or "auto", cache_path=options.get("cache_path"), threads=_opt(options, "threads"),
        batch_size=batch)
    if scorer is None:
        raise InputError(res.model, why or "the NLI model could not be loaded")
    common: dict[str, Any] = {
        "tau": DEFAULT_TAU if tau is None else tau,
        **{k: v or shipped.get(k) for k, v in chosen.items()}, "pc_state": pc_state,
        "meaning_claims": meaning}
    para = None
    if str(options.get("paraphrase", "1")).lower() not in ("0", "false", "no", "off"):
        from sage_tod.nli.runtime import DEFAULT_PARAPHRASE_INT8, get_paraphrase

        para = get_paraphrase(_opt(options, "threads"), options.get("cache_path"),
                              int8=DEFAULT_PARAPHRASE_INT8 if para_int8 is None else para_int8)
    return NLIVerifier(scorer, paraphrase=para, **common)


def _on(value: object, field: str) -> bool:
    """A yes/no option given as a bool or as text (1/0, true/false, on/off, yes/no)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise InputError("<options>", f"{field} must be on or off, got {value!r}", field=field)
