"""S1: deterministic rules over the schema, the state pair and the ordering.

S1 decides what the schema, state and ordering settle and abstains on the
rest: a value not found verbatim may be a paraphrase (S2's job), an ambiguous
request may or may not be legal, an implied confirmation may not be one.
Every decision has margin 1.0; it costs nothing and takes microseconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sage_tod.compiler.context import TurnContext
from sage_tod.compiler.cues import slot_cues
from sage_tod.compiler.detect import promised_booking
from sage_tod.contracts.criteria import (
    EXACT,
    Criterion,
    Decision,
    IUVArgs,
    Outcome,
    PCArgs,
    Span,
    UVArgs,
    WNFArgs,
)
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.text.booleans import is_dontcare
from sage_tod.text.match import ValueQuery, find_dontcare, is_negated
from sage_tod.text.normalize import basic_tokens, fold
from sage_tod.text.numbers import read_number
from sage_tod.text.times import find_times, has_unread_clock, normalize_time
from sage_tod.verifiers.base import Item
from sage_tod.verifiers.roles import Role, other_domain, other_role, workflow_words
from sage_tod.verifiers.tool_checks import decide_tool_iuv, decide_tool_pc, decide_tool_uv

PcState = Literal["after", "before"]
# "No, thank you. What's the address?" declines the agent's offer to book, not the place
# (Each `(?=[...])` in the patterns below lists the first characters of the words after
# it: a necessary condition, there to be fast; without one, a pattern that starts with
# `\b` is tried in full at every position of the text. tests/test_round15_screens.py)
_CLAUSE_END = re.compile(r"[,.;:!?]|(?=[btah])\b(but|though|although|however)\b")
_CLOCK = re.compile(r"(?=\d)\b(\d{1,2})[:.]\d{2}\b")
_SAME = re.compile(r"(?=[saebnc])\b(same|as well|all of us|everyone|both|near|nearby|close to|"
                   r"around there)\b")
_LEADING_NO = re.compile(r"^\W*(no|nope|nah|not really)\b(?!\W*(thanks|thank you)\b)")
_REJECTION_EXPLICIT = re.compile(
    r"^\W*not that\b|"
    r"\b(something else|another one|a different one|other options?|don'?t like|"
    r"not interested|none of (those|them))\b")
# an agent question a plain "no" answers without rejecting the place it named
_BOOKING_QUESTION = re.compile(r"\b(book|booking|reserve|reservation|anything else|"
                               r"help (you )?with|something else)\b")
WnfState = Literal["either", "before"]


class SymbolicVerifier:
    """S1. `pc_state`/`wnf_state` choose which state PC and WNF read (docs/method.md)."""

    name = "S1"

    def __init__(self, pc_state: PcState = "after", wnf_state: WnfState = "either") -> None:
        self.pc_state = pc_state
        self.wnf_state = wnf_state

    def fingerprint(self) -> dict[str, object]:
        """Everything besides the turns that can change S1's answers: the states PC and
        WNF read, and the clock-time rule's switch (`SAGE_TOD_S1_TIMES`), read now as
        `_time_nowhere` reads it for every criterion."""
        return {"pc_state": self.pc_state, "wnf_state": self.wnf_state,
                "times": os.environ.get("SAGE_TOD_S1_TIMES", "1") != "0"}

    def prepare_spec(self, spec: SpecBundle) -> None:
        """Build the role tables S1 reads for every workflow of `spec` (`verifiers.roles`),
        as the first turn would; the `Evaluator` calls it when it is built."""
        for wf in spec.workflows.values():
            workflow_words(wf)

    def accepts(self, criterion: Criterion) -> bool:
        return isinstance(criterion.args, UVArgs | IUVArgs | WNFArgs | PCArgs)

    def decide(self, items: Sequence[Item]) -> list[Decision]:
        return [self._decide_one(it.criterion, it.ctx) for it in items]

    def _decide_one(self, c: Criterion, ctx: TurnContext) -> Decision:
        a = c.args
        if isinstance(a, UVArgs | PCArgs | IUVArgs) and a.tool is not None:
            if isinstance(a, IUVArgs):
                return decide_tool_iuv(a, ctx)
            return decide_tool_uv(a, ctx) if isinstance(a, UVArgs) else decide_tool_pc(a, ctx)
        if isinstance(a, UVArgs):
            return _uv(a, ctx)
        if isinstance(a, IUVArgs):
            return _iuv(a, ctx)
        if isinstance(a, WNFArgs):
            return _wnf(a, ctx, self.wnf_state)
        if isinstance(a, PCArgs):
            return self._pc(a, ctx)
        return Decision.abstain(f"S1 has no rule for criterion class {c.failure_class}")

    def _pc(self, a: PCArgs, ctx: TurnContext) -> Decision:
        wf = ctx.workflow
        state = ctx.after if self.pc_state == "after" else ctx.before
        label = "s_t" if self.pc_state == "after" else "s_{t-1}"
        if wf.outcome_holds(state):
            return Decision(Outcome.FALSE, 1.0,
                            f"outcome predicate holds in {label}: confirming is allowed")
        unmet = sorted(wf.outcome_unmet(state))
        if a.certainty == "implied":
            promised = decide_promise(ctx.turn.agent)
            if promised is not None:
                return promised
            return Decision.abstain(
                f"outcome predicate is false in {label} (unmet: {', '.join(unmet)}) but the "
                f"confirmation is only implied ({a.cue!r})")
        return Decision(Outcome.TRUE, 1.0,
                        f"agent confirms while the outcome predicate is false in {label}; "
                        f"unmet: {', '.join(unmet)}")


def decide_promise(agent: str) -> Decision | None:
    """FALSE when a_t only announces a booking ("I will book it for you") and reports
    none done (`compiler.detect.promised_booking`): its implied confirmation confirms
    nothing. S1 decides it, so the rule holds without S2; S2 asks the same function for
    a cascade without S1."""
    promise = promised_booking(agent)
    if promise is None:
        return None
    return Decision(Outcome.FALSE, 1.0, f"a_t promises a booking ({promise!r}); it confirms none")


def _history_sources(ctx: TurnContext) -> list[tuple[str, int | None, str]]:
    """h_<t ∪ {u_t}: the current user turn first, then history newest first."""
    return _turn_texts(ctx).sources


class _TurnTexts:
    """What S1 reads of one turn's h_<t ∪ {u_t} whatever the value: the sources in
    order, which agent offers the user turned down, whether u_t carries another
    workflow's value over. Worked out once per turn, not once per value checked
    (`_turn_texts`); the utterances themselves are read once per text
    (`text.match.reading`, shared with the extractor and with later turns)."""

    __slots__ = ("_declined", "ctx", "same_again", "sources")

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        out: list[tuple[str, int | None, str]] = [("user", None, ctx.turn.user)]
        hist = ctx.turn.history or ()
        for i in range(len(hist) - 1, -1, -1):
            out.append(("history.user", i, hist[i].user))
            out.append(("history.agent", i, hist[i].agent))
        self.sources = out
        # "the same group", "near the restaurant": u_t carries another workflow's value over
        self.same_again = _SAME.search(fold(ctx.turn.user)) is not None
        self._declined: dict[int, bool] = {}

    def declined(self, index: int) -> bool:
        """Did the user turn down the offer of history[index].agent (`_declines`)?"""
        got = self._declined.get(index)
        if got is None:
            hist = self.ctx.turn.history or ()
            reply = hist[index + 1].user if index + 1 < len(hist) else self.ctx.turn.user
            got = self._declined[index] = _declines(hist[index].agent, reply)
        return got


# The turn read last: a batch hands S1 a turn's criteria one after another, so one entry
# serves every value of the turn. It holds its context, so `is` cannot match a reused
# id; it is read once per call, so another thread replacing it returns no wrong turn.
_LAST_TURN: list[_TurnTexts | None] = [None]


def _turn_texts(ctx: TurnContext) -> _TurnTexts:
    last = _LAST_TURN[0]
    if last is not None and last.ctx is ctx:
        return last
    got = _LAST_TURN[0] = _TurnTexts(ctx)
    return got


def _dontcare_support(ctx: TurnContext, slot: str) -> Span | None:
    """A user's "any"/"doesn't matter" that is about `slot`.

    A dontcare cue supports `dontcare` for a slot only in a user turn whose
    sentence names the slot, or that answers an agent question about it; an
    "anything else?" elsewhere in the dialogue says nothing about this slot.
    """
    wf = ctx.workflow if slot in ctx.workflow.slots else next(
        (w for w in ctx.spec.workflows.values() if slot in w.slots), ctx.workflow)
    cues = slot_cues(wf)
    hist = ctx.turn.history or ()
    turns: list[tuple[str, int | None, str, str]] = [
        ("user", None, ctx.turn.user, hist[-1].agent if hist else "")]
    for i in range(len(hist) - 1, -1, -1):
        turns.append(("history.user", i, hist[i].user, hist[i - 1].agent if i else ""))
    for source, index, text, prompt in turns:
        hit = find_dontcare(text)
        if hit is None:
            continue
        about = slot in cues.slots_for(basic_tokens(text)) or slot in cues.slots_for(
            basic_tokens(prompt))
        if about:
            return Span(source=source, index=index, start=hit.start, end=hit.end,
                        text=text[hit.start:hit.end])
    return None


def _slot_workflow(ctx: TurnContext, slot: str) -> Workflow:
    if slot in ctx.workflow.slots:
        return ctx.workflow
    return next((w for w in ctx.spec.workflows.values() if slot in w.slots), ctx.workflow)


@dataclass(frozen=True)
class Support:
    """Where a value is stated for its slot, and where it is stated only in another role."""

    span: Span | None
    misplaced: tuple[tuple[Span, Role], ...] = ()


def slot_support(ctx: TurnContext, slot: str, value: str) -> Support:
    """The first mention of `value` in h_<t ∪ {u_t} that is about `slot` (newest first).

    A mention whose role words make it another slot's value of the same type
    ("for 3 nights" for a party size, "from cambridge" for a destination,
    `verifiers.roles`) supports nothing and is kept in `misplaced`; so is an
    agent's offer the user turned down.
    """
    if is_dontcare(value):
        return Support(_dontcare_support(ctx, slot))
    spec = ctx.spec.slot(slot, ctx.workflow)
    wf = _slot_workflow(ctx, slot)
    boolean = value.strip().lower() in ("yes", "no", "true", "false")
    turn = _turn_texts(ctx)
    same_again = turn.same_again
    query = ValueQuery(value, spec, fuzzy=True)  # prepared once for every utterance
    misplaced: list[tuple[Span, Role]] = []
    for source, index, text in turn.sources:
        hits = query.find(text)
        # an offer the user turned down supports nothing; asked only of an offer that
        # states the value (`declined` reads the reply, and the answer is the same
        # whenever it is asked: a text without the value adds nothing either way)
        if not hits or (source == "history.agent" and index is not None
                        and turn.declined(index)):
            continue
        for hit in hits:
            span = Span(source=source, index=index, start=hit.start, end=hit.end,
                        text=text[hit.start:hit.end])
            role = other_role(text, hit.start, hit.end, slot, wf)
            if role is None and not same_again:
                role = other_domain(text, hit.start, hit.end, slot, wf,
                                    ctx.spec.workflows.values(), value)
            if role is None and source != "history.agent" and not boolean and _negated(
                    text, hit.start):
                role = Role(frozenset(), "not")  # "not too pricey or cheap"
            if role is None:
                return Support(span, tuple(misplaced))
            misplaced.append((span, role))
    if not misplaced and spec is not None and spec.type == "number":
        misplaced = _count_in_times(ctx, value, wf)
    return Support(None, tuple(misplaced))


def _count_in_times(ctx: TurnContext, value: str, wf: Workflow) -> list[tuple[Span, Role]]:
    """A count that appears only as the hour of a clock time ("the one for 7:35" is no
    party of 7): the mention belongs to the workflow's time slots."""
    n = read_number(value)
    times = frozenset(s for s, sp in wf.slots.items() if sp.type == "time")
    if n is None or not times:
        return []
    out: list[tuple[Span, Role]] = []
    for source, index, text in _history_sources(ctx):
        for m in _CLOCK.finditer(text):
            if str(int(m[1])) == n:
                out.append((Span(source=source, index=index, start=m.start(), end=m.end(),
                                 text=m[0]), Role(times, m[0])))
    return out


def _negated(text: str, start: int) -> bool:
    """A negation among the three words before `start`, within the same clause
    (`match.is_negated`: "no later than 21:45" is a bound, no negation)."""
    clause_start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    if clause_start == 0:
        return is_negated(text, start)
    if text.isascii() and text[clause_start - 1] in _TOKENLESS_ENDS:
        # the same tokens as the clause's own string (proof at `_TOKENLESS_ENDS`), read
        # from the text's tokens instead of tokenising a new string for every mention
        return is_negated(text, start, since=clause_start)
    return is_negated(text[clause_start:], start - clause_start)


# Clause ends that no token holds. An ASCII text's tokens are the token pattern's
# matches in its lowercase, and that pattern has no look-behind: where no token runs
# across the clause start (it is right after one of these), the text's tokens that
# begin at or after it are the clause string's tokens, shifted. `is_negated` with
# `since` keeps exactly those of the last six before `start`; the last six of the
# clause's own are the same tokens. ":" is left out ("10:30" is one token), and so are
# the word clause ends ("but:30" would be one).
_TOKENLESS_ENDS = frozenset(",.;!?")


def find_support(ctx: TurnContext, slot: str, value: str) -> Span | None:
    """Where h_<t ∪ {u_t} states `value` for `slot` (normalised, in its role), or None."""
    return slot_support(ctx, slot, value).span


def _declines(offer: str, reply: str) -> bool:
    """Does `reply` turn down what the agent's `offer` named?

    A plain "no" answers the offer's last question: when that question is
    about booking or anything else ("Can I help you book?", "Anything else?"),
    the user declines the booking, not the place ("No, I just need the phone
    number"); explicit rejections ("something else", "not that one") always count.
    """
    low = fold(reply)
    if _REJECTION_EXPLICIT.search(low):
        return True
    if not _LEADING_NO.search(low):
        return False
    questions = [q for q in re.split(r"(?<=[.!?])\s+", fold(offer)) if q.rstrip().endswith("?")]
    last = questions[-1] if questions else fold(offer)
    return not _BOOKING_QUESTION.search(last)


def _uv(a: UVArgs, ctx: TurnContext) -> Decision:
    slot, value = a.slot, a.value
    sup = slot_support(ctx, slot, value)
    span = sup.span
    if span is not None:
        where = span.source if span.index is None else f"{span.source}[{span.index}]"
        return Decision(Outcome.FALSE, 1.0, f"value stated in {where}: {span.text!r}", span)
    if sup.misplaced:
        span, role = sup.misplaced[0]
        where = span.source if span.index is None else f"{span.source}[{span.index}]"
        if not role.slots:
            return Decision(Outcome.TRUE, 1.0, f"{value!r} is stated only negated: "
                            f"{span.text!r} in {where}", span)
        return Decision(Outcome.TRUE, 1.0,
                        f"{value!r} is stated only in another slot's role: {span.text!r} in "
                        f"{where} goes with {role.word!r} ({', '.join(sorted(role.slots))}), "
                        f"not {slot}", span)
    unread = _time_nowhere(ctx, slot, value)
    if unread is not None:
        return Decision(Outcome.TRUE, 0.9, unread)
    return Decision.abstain(
        f"{value!r} is not stated verbatim or as a schema synonym in h_<t ∪ u_t; "
        "it may be a paraphrase")


def _time_nowhere(ctx: TurnContext, slot: str, value: str) -> str | None:
    """Why a clock time no text of h_<t ∪ u_t reads as is unsupported, or None.

    A clock time has few paraphrases and the time reader covers them ("2 in the
    afternoon", "quarter past eleven", "noon"): when no mention anywhere reads as
    the value, a paraphrase is not what S2 would find, and its claim ("Someone
    says 13:45.") is entailed by any other time in u_t. Off with
    `SAGE_TOD_S1_TIMES=0`.
    """
    if os.environ.get("SAGE_TOD_S1_TIMES", "1") == "0":
        return None
    spec = ctx.spec.slot(slot, ctx.workflow)
    if spec is None or spec.type != "time" or normalize_time(value) is None:
        return None
    texts = [text for _, _, text in _history_sources(ctx)]
    if any(has_unread_clock(text) for text in texts):
        return None  # "at 11 Peas Hill", "by half seven": a number the reader did not take
    said = sorted({r for text in texts for m in find_times(text) for r in m.readings})
    shown = ", ".join(said[:6]) + (" ..." if len(said) > 6 else "")
    return (f"no time stated in h_<t ∪ u_t reads as {value!r} for {slot}"
            + (f" (times read: {shown})" if said else " (no time is stated at all)"))


def _iuv(a: IUVArgs, ctx: TurnContext) -> Decision:
    cands = a.candidates
    held = {s: ctx.after.get(s) for s in cands}
    if a.source == "dropped":
        return Decision(Outcome.TRUE, 1.0,
                        f"s_t-1 held {a.value!r} for {cands[0]}; s_t drops it and u_t does not "
                        "take it back")
    if a.confidence >= EXACT and len(cands) == 1:
        now = held[cands[0]]
        state = "unfilled" if now is None else f"holding {now!r}"
        # "going to Cambridge" with Cambridge held as the departure: say where it went
        key = fold(a.value).strip()
        sibling = [s for s, v in ctx.after.items()
                   if s not in cands and v is not None and fold(v).strip() == key]
        moved = f" (s_t holds it for {', '.join(sibling)})" if sibling else ""
        return Decision(Outcome.TRUE, 1.0,
                        f"user supplied {a.value!r} for {cands[0]}, but s_t leaves it "
                        f"{state}{moved}")
    return Decision.abstain(
        f"user may have supplied {a.value!r} for {' or '.join(cands)} "
        f"(extraction confidence {a.confidence:.2f}); not recorded, but the "
        "extraction is not certain")


def _legality(slot: str, ctx: TurnContext, wnf_state: WnfState,
              asked_with: frozenset[str] = frozenset()) -> tuple[bool, str]:
    wf = ctx.workflow
    if slot not in wf.slots:
        return True, f"{slot} is not a slot of workflow {wf.id}"
    if wf.is_optional(slot):
        return True, f"{slot} is optional and may be requested any time"
    if not wf.missing_prereqs(slot, ctx.before):
        return True, f"{slot} is legal next under s_{{t-1}}"
    # an agent that proposes a value for a prerequisite in this very turn ("How about
    # the Acorn? How many nights?") has supplied it; only declared acts count
    offered = {s for s, v in (ctx.turn.agent_acts.inform if ctx.turn.agent_acts else {}).items()
               if v.strip()}
    if wnf_state == "before":
        return False, (f"{slot} requires {wf.describe_missing(slot, ctx.before)} first, "
                       "unfilled in s_{t-1}")
    if not wf.missing_prereqs(slot, ctx.after):
        return True, (f"{slot} became legal this turn (prerequisites "
                      f"{wf.describe_missing(slot, ctx.before)} filled in s_t)")
    if not wf.missing_prereqs(slot, ctx.after, offered):
        return True, (f"{slot} is legal: the agent offers "
                      f"{wf.describe_missing(slot, ctx.after)} in a_t (agent_acts.inform)")
    if not wf.missing_prereqs(slot, ctx.after, offered | asked_with):
        return True, (f"{slot} is asked together with its prerequisites "
                      f"{wf.describe_missing(slot, ctx.after)} in a_t")
    return False, (f"{slot} requires {wf.describe_missing(slot, ctx.after)} first, still "
                   "unfilled in s_t")


def _wnf(a: WNFArgs, ctx: TurnContext, wnf_state: WnfState) -> Decision:
    asked_with = frozenset(a.asked_with)
    verdicts = [(s, *_legality(s, ctx, wnf_state, asked_with)) for s in a.candidates]
    legal = [v for v in verdicts if v[1]]
    if len(legal) == len(verdicts):
        return Decision(Outcome.FALSE, 1.0, "; ".join(v[2] for v in verdicts))
    if not legal:
        return Decision(Outcome.TRUE, 1.0, "; ".join(v[2] for v in verdicts))
    return Decision.abstain("the request is ambiguous between legal and illegal slots: "
                            + "; ".join(v[2] for v in verdicts))


def build_s1(options: dict[str, Any]) -> SymbolicVerifier:
    pc_state = options.get("pc_state", "after")
    wnf_state = options.get("wnf_state", "either")
    if pc_state not in ("after", "before") or wnf_state not in ("either", "before"):
        raise ValueError("pc_state must be after|before and wnf_state either|before")
    return SymbolicVerifier(pc_state=pc_state, wnf_state=wnf_state)
