"""The compiler: (W, h_<t, u_t, a_t, s_{t-1}, s_t) -> atomic criteria K_t.

Deterministic and stateless across turns: the same turn and spec always give
the same criteria, in the same order, with the same ids. The compiler decides
nothing; it states each question with the arguments and the minimal evidence
span a verifier needs, and marks which criteria need language understanding
(`nlu`, for S2) or are open-class (for S3).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sage_tod.compiler.assign import slot_words_of
from sage_tod.compiler.context import TurnContext
from sage_tod.compiler.cues import domain_words, slot_cues
from sage_tod.compiler.detect import agent_tables, detect_confirmation, detect_requests
from sage_tod.compiler.extract import extract_user_values
from sage_tod.compiler.kinds import BUILTIN_CRITERIA, CriterionKind, resolve_kinds
from sage_tod.compiler.lexicon import lexicon
from sage_tod.compiler.references import referents
from sage_tod.compiler.tool_calls import (
    commit_sites,
    compile_tool_iuv,
    compile_tool_pc,
    compile_tool_uv,
    handoff_tools,
    is_tool_turn,
)
from sage_tod.contracts.criteria import (
    Criterion,
    FailureClass,
    IUVArgs,
    PCArgs,
    Span,
    UVArgs,
    WNFArgs,
)
from sage_tod.contracts.spec import SpecBundle
from sage_tod.text.booleans import is_dontcare, normalize_boolean
from sage_tod.text.match import find_value
from sage_tod.text.normalize import basic


def _span(source: str, text: str, start: int | None, end: int | None) -> Span | None:
    if start is None or end is None:
        return None
    return Span(source=source, start=start, end=end, text=text[start:end])


def prepare(spec: SpecBundle) -> None:
    """Build the per-workflow tables the compiler reads (the value lexicon, the slot
    cues and domain words, the agent-turn tables) for every workflow of `spec` now, not
    on the first turn that needs each: the `Evaluator` calls it when it is built, so
    that work is reported with loading (`bench-speed`'s "model load s"), not inside the
    first turns' evaluation. The tables are what the first turn would have built
    (`contracts.spec.Derived`), so no answer changes."""
    for wf in spec.workflows.values():
        lexicon(wf)
        slot_cues(wf)
        domain_words(wf)
        agent_tables(wf)
        slot_words_of(wf)


def compile_turn(ctx: TurnContext, kinds: Sequence[CriterionKind] | None = None
                 ) -> list[Criterion]:
    """Every criterion of the turn, class by class (default: UV, IUV, WNF, PC, in that order)."""
    if kinds is None:
        kinds = resolve_kinds(BUILTIN_CRITERIA)
    return [c for kind in kinds for c in kind.compile(ctx)]


def _uv(ctx: TurnContext) -> list[Criterion]:
    if is_tool_turn(ctx):
        return compile_tool_uv(ctx)
    out = []
    for ch in ctx.diff:
        if ch.new is None:
            continue
        out.append(Criterion(
            id=f"UV:{ch.slot}",
            failure_class=FailureClass.UV,
            args=UVArgs(slot=ch.slot, value=ch.new, old=ch.old),
            question=(f"Is the value {ch.new!r} written to slot {ch.slot} supported by the "
                      "dialogue so far (h_<t and u_t)?"),
            evidence=None,
            nlu=True,
            open_class=True,
        ))
    return out


def _holds(ctx: TurnContext, slot: str, readings: tuple[str, ...]) -> bool:
    value = ctx.after.get(slot)
    if value is None:
        return False
    spec = ctx.spec.slot(slot, ctx.workflow)
    if spec is None:
        return any(ctx.workflow.equals(slot, value, r) for r in readings)
    if any(spec.normalize(value) == spec.normalize(r) for r in readings):
        return True
    # free text and dates are recorded in many spellings: "Monday next week" holds
    # "Monday", "Fresno" holds "Fresno, CA"; free text with a slip too ("portugese"
    # holds the user's "Portuguese", MultiWOZ SNG01608)
    fuzzy = spec.type == "free"
    return spec.type in {"free", "date"} and any(
        find_value(value, r, spec, fuzzy) is not None
        or find_value(r, value, spec, fuzzy) is not None
        for r in readings)


def _may_hold(ctx: TurnContext, candidates: Sequence[str], value: str) -> list[str]:
    """The slots whose value counts as recording `value`: its candidates, and every other
    slot of the workflow, since the extractor may have chosen the wrong sibling and a name
    may hold a type ("magdalene college" records "college").

    A waiver names no value, so a `dontcare` elsewhere records it only when this turn
    wrote it (the waiver may have been read for the wrong slot: "I don't care if it has
    subtitles" recorded as the caption language); one held from before is another
    waiver: "I don't care about the star rating as long as it's expensive" is not
    recorded by the parking the user waived a turn earlier (MultiWOZ MUL0014 turn 1).
    A yes/no value is recorded by its own slot only."""
    if is_dontcare(value):
        written = [ch.slot for ch in ctx.diff if ch.new is not None and is_dontcare(ch.new)]
        return [*candidates, *written]
    specs = [sp for c in candidates if (sp := ctx.workflow.slots.get(c)) is not None]
    if specs and all(sp.values and all(normalize_boolean(v) is not None for v in sp.values)
                     for sp in specs):
        # every yes/no slot may hold "yes": the parking's says nothing of the wifi ("No,
        # but I do need free wifi." with parking=yes and internet=no, MUL1189 turn 6)
        return list(candidates)
    return [*candidates, *ctx.workflow.slots]


def _iuv(ctx: TurnContext) -> list[Criterion]:
    out = []
    seen: set[tuple[str, ...]] = set()
    for ex in extract_user_values(ctx.turn, ctx.workflow, ctx.spec, after=ctx.after,
                                  before=ctx.before):
        key = (*ex.candidates, *ex.readings)
        if key in seen:  # the same value said again: one criterion (checked once: a long
            continue     # utterance may repeat a value thousands of times)
        seen.add(key)
        # recorded in a candidate slot, or in a slot of the workflow that could hold it (the
        # extractor may have picked the wrong sibling): not ignored; a slot its role word
        # chose must hold it itself (`Extraction.role_decided`: "going to Cambridge" with
        # Cambridge held as the departure is ignored, MultiWOZ PMUL1812 turn 3); so must
        # the slot of a value read from a name, which the name holds by construction
        own = ex.role_decided or ex.source == "named_value"
        may = ex.candidates if own else _may_hold(ctx, ex.candidates, ex.value)
        if any(_holds(ctx, s, ex.readings) for s in may):
            continue
        slots = " or ".join(ex.candidates)
        out.append(Criterion(
            id=f"IUV:{'|'.join(ex.candidates)}:{ex.value}",
            failure_class=FailureClass.IUV,
            args=IUVArgs(slot=ex.candidates[0], candidates=tuple(ex.candidates),
                         value=ex.value, readings=tuple(ex.readings),
                         confidence=round(ex.confidence, 4), source=ex.source,
                         state_after={s: ctx.after.get(s) for s in ex.candidates}),
            question=(f"The user supplied {ex.value!r} for {slots} in u_t; does s_t fail to "
                      "record it?"),
            evidence=_span("user", ctx.turn.user, ex.start, ex.end),
            nlu=not ex.exact,
            open_class=not ex.exact,
        ))
    return out


# u_t takes a value back or changes it: a value s_t then drops is no ignored value
_RETRACTION = re.compile(
    r"\b(cancel\w*|instead|change|changed|forget|remove|different|another|rather|"
    r"scratch|not (?:need|want)\w*|(?:do|does|did) ?n'?o?t (?:need|want)|no longer|anymore|"
    r"any more|never mind|nevermind|actually)\b", re.IGNORECASE)


def _dropped(ctx: TurnContext) -> list[Criterion]:
    """Values s_{t-1} held that s_t drops while u_t neither mentions nor retracts them.

    A published system that forgets the attraction when the user says goodbye, or
    the hotel when a taxi is booked, ignores a value the user gave earlier: the
    same failure as IUV, one turn later. A user who takes the value back ("I
    don't need the hotel after all"), talks about it again, or starts a new
    search in the turn's own workflow (s_t writes another of its slots) is not
    ignored, and nothing is compiled.
    """
    out: list[Criterion] = []
    if not any(ch.new is None and ch.old is not None for ch in ctx.diff):
        return out  # s_t drops nothing (most turns): no need to read u_t
    user = ctx.turn.user
    if _RETRACTION.search(user):
        return out
    written = {ch.slot for ch in ctx.diff if ch.new is not None}
    for ch in ctx.diff:
        if ch.new is not None or ch.old is None:
            continue
        # a new search in this turn's workflow ("a 2 star hotel in the east instead of the
        # Lensfield") resets the entity it had found: not an ignored value
        if ch.slot in ctx.workflow.slots and written & ctx.workflow.slots.keys():
            continue
        spec = ctx.spec.slot(ch.slot, ctx.workflow)
        if find_value(user, ch.old, spec) is not None:
            continue
        out.append(Criterion(
            id=f"IUV:{ch.slot}:{ch.old}",
            failure_class=FailureClass.IUV,
            args=IUVArgs(slot=ch.slot, candidates=(ch.slot,), value=ch.old,
                         readings=(ch.old,), confidence=1.0, source="dropped",
                         state_after={ch.slot: None}),
            question=(f"s_t-1 holds {ch.old!r} for {ch.slot} and s_t drops it; does u_t leave "
                      "it standing, so the value is ignored?"),
            evidence=None,
            nlu=False,
            open_class=False,
        ))
    return out


def _iuv_and_dropped(ctx: TurnContext) -> list[Criterion]:
    if is_tool_turn(ctx):
        # a tool agent's state lags the user by design: what the user asked for is
        # checked at the commit, not on the turn that reads it back
        return compile_tool_iuv(ctx)
    return [*_iuv(ctx), *_dropped(ctx)]


def _wnf(ctx: TurnContext) -> list[Criterion]:
    if is_tool_turn(ctx):
        return []  # the order of a tool agent's steps is stated as `after` reads
    out = []
    requests = detect_requests(ctx.turn, ctx.workflow)
    named = {r.candidates[0] for r in requests if len(r.candidates) == 1}
    for req in requests:
        label = "|".join(req.candidates)
        out.append(Criterion(
            id=f"WNF:{label}",
            failure_class=FailureClass.WNF,
            args=WNFArgs(slot=req.candidates[0], candidates=tuple(req.candidates),
                         source=req.source,
                         asked_with=tuple(sorted(named - set(req.candidates)))),
            question=(f"The agent requests {' or '.join(req.candidates)}; is that illegal next "
                      "under the workflow ordering given the state?"),
            evidence=_span("agent", ctx.turn.agent, req.start, req.end),
            nlu=False,
            open_class=len(req.candidates) > 1,
        ))
    return out


def _pc(ctx: TurnContext) -> list[Criterion]:
    if is_tool_turn(ctx):
        return compile_tool_pc(ctx)
    conf = detect_confirmation(ctx.turn, ctx.workflow)
    if conf is None:
        return []
    return [Criterion(
        id="PC",
        failure_class=FailureClass.PC,
        args=PCArgs(certainty=conf.certainty, cue=conf.cue,
                    outcome=ctx.workflow.outcome_text),
        question=("The agent confirms the workflow; is the outcome predicate "
                  f"[{ctx.workflow.outcome_text}] false?"),
        evidence=_span("agent", ctx.turn.agent, conf.start, conf.end),
        nlu=conf.certainty == "implied",
        open_class=conf.certainty == "implied",
    )]


# -- repair signals: the concrete state edit or action that resolves a fired criterion --------

def _fmt_set(items: Sequence[str]) -> str:
    return "{" + ", ".join(items) + "}"


def _repair_iuv(c: Criterion, ctx: TurnContext) -> str:
    a = c.args
    assert isinstance(a, IUVArgs)
    if a.tool is not None and a.source.startswith("tool_call:declined:"):
        return (f"the policy allows {a.tool} for what the user asked: carry it out after "
                "the user's explicit yes instead of declining or handing over")
    if a.tool is not None and a.source.startswith("tool_call:unfinished:"):
        return (f"the user asked for {a.value!r}: carry out {a.tool} after their explicit "
                "yes, or tell them why it cannot be done, before the conversation ends")
    if a.tool is not None and a.source.startswith("tool_call:prefer:"):
        return (f"the user asked for {a.value!r}: commit the {a.slot} option the reads listed "
                f"that has it (not {a.state_after.get(a.slot)!r}), or say why it cannot be "
                "chosen and ask")
    if a.tool is not None:
        return (f"call {a.tool} with {a.slot} = {a.value!r}, the value the user asked for "
                f"(not {a.state_after.get(a.slot)!r})")
    if a.source == "dropped":
        return f"keep value {a.value!r} in slot {a.slot}: u_t does not take it back"
    where = f" (span [{c.evidence.start},{c.evidence.end}] of u_t)" if c.evidence else ""
    if a.source == "accepted_offer":
        where = _offer_where(c, ctx) or where
    elif a.source == "same_as" and c.evidence is not None:
        held = referents(ctx.spec, ctx.workflow, a.slot, c.evidence.text, ctx.before,
                         ctx.after)
        named = ", ".join(f"{s} holds {v!r}" for s, v in held.items())
        if named:
            where = (f" (said as {c.evidence.text!r} at span [{c.evidence.start},"
                     f"{c.evidence.end}] of u_t: {named})")
    elif c.evidence is not None and basic(c.evidence.text) != basic(a.value):
        # the words are not the value ("dining alone" for 1, "two" for 2, "don't mind"
        # for dontcare): say them, so the developer sees what the tracker had to read
        where = (f" (said as {c.evidence.text!r} at span [{c.evidence.start},"
                 f"{c.evidence.end}] of u_t)")
    slot = a.slot if len(a.candidates) == 1 else " or ".join(a.candidates)
    return f"record value {a.value!r}{where} into slot {slot}"


def _offer_where(c: Criterion, ctx: TurnContext) -> str | None:
    """Where an accepted offer's value is: in the agent's last turn, not in u_t, whose
    evidence span is only the assent ("Yes"). A developer repairing the state tracker
    needs both, the offer it should have carried over and the words that accepted it."""
    a = c.args
    assert isinstance(a, IUVArgs)
    history = ctx.turn.history
    if not history:
        return None
    offered = find_value(history[-1].agent, a.value, ctx.spec.slot(a.slot, ctx.workflow))
    if offered is None:
        return None
    said = (f", accepted at span [{c.evidence.start},{c.evidence.end}] of u_t"
            if c.evidence else "")
    return f" (offered at span [{offered.start},{offered.end}] of the agent's last turn{said})"


# the longest rule condition a repair hint quotes
_REPAIR_CONDITION_CHARS = 160


def _repair_pc(c: Criterion, ctx: TurnContext) -> str:
    a = c.args
    if isinstance(a, PCArgs) and a.tool is not None:
        if a.certainty == "tool_confirmation":
            return (f"read the {a.tool} details back and wait for the user's explicit yes "
                    "before calling it")
        if a.certainty == "tool_claim":
            return f"do not tell the user it is done: {a.tool} was refused; say so, or retry"
        if a.certainty == "tool_order":
            return f"call {a.outcome.split(' succeeded')[0]} first; do not call {a.tool} yet"
        if a.certainty == "tool_handoff":
            return (f"handle the request ({a.cue!r}) with the tools: look the entity up, then "
                    f"do it or refuse it under the policy; call {a.tool} only for what no "
                    "tool can do")
        if a.certainty == "tool_count":
            return (f"act only on what the user asked for ({a.cue!r}); ask before calling "
                    f"{a.tool} for another one")
        # a long CEL condition says less than the rule's message; a short one says which
        cond = f" ({a.outcome} is false)" if len(a.outcome) <= _REPAIR_CONDITION_CHARS else ""
        if a.tool in handoff_tools(ctx.spec):
            return f"do not hand the user over yet: {a.cue}{cond}"
        return f"do not call {a.tool}: {a.cue}{cond}"
    unmet = sorted(ctx.workflow.outcome_unmet(ctx.after))
    return f"required slots {_fmt_set(unmet)} still empty, do not confirm"


def _repair_wnf(c: Criterion, ctx: TurnContext) -> str:
    legal = list(ctx.workflow.next_fields(ctx.after))
    if legal:
        return f"ask for one of {_fmt_set(legal)} first"
    return "do not request this slot yet; no required field is legal next"


def _repair_uv(c: Criterion, ctx: TurnContext) -> str:
    a = c.args
    assert isinstance(a, UVArgs)
    if a.tool is not None:
        site = next((s for s in commit_sites(ctx) if s.index == a.call), None)
        how = site.tool.grounding(a.path) if site is not None and a.path else "any"
        if how == "referred":
            return (f"argument {a.path} of {a.tool}: ask the user which one to use before "
                    f"the call; {a.value!r} was never chosen")
        if how == "user":
            return (f"argument {a.path} of {a.tool}: ask the user; {a.value!r} is not "
                    "something they said")
        return (f"argument {a.path} of {a.tool}: use the value the user gave or the one the "
                f"tool result shows for the entity the user meant, not {a.value!r}")
    return f"remove or justify value {a.value!r} in slot {a.slot}"


# the built-in classes, registered as `sage_tod.criteria` entry points (pyproject.toml)
UV = CriterionKind("UV", _uv, _repair_uv, "unsupported value: Δ_t writes a value nothing supports")
IUV = CriterionKind("IUV", _iuv_and_dropped, _repair_iuv,
                    "ignored user value: s_t drops a value u_t gives (or one u_t leaves standing)")
WNF = CriterionKind("WNF", _wnf, _repair_wnf,
                    "wrong next field: a request the ordering does not allow yet")
PC = CriterionKind("PC", _pc, _repair_pc,
                   "premature confirmation: confirming while the outcome predicate is false")
