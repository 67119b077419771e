"""Tool-agent turns: which calls commit, and the criteria each committing call raises.

A tool-calling agent's state is what it commits through its tools, and what it
may commit comes from the user's words and the results of its earlier reads.
So on a turn that carries `tool_calls`, each successful call of a tool some
workflow declares as committing is judged where it happens, in the workflow
that declares it (one conversation can cancel one order and return another):

- UV, one per argument leaf (lists and nested records element by element):
  does the value come from the user, or from a tool result about the entity
  the user referred to?
- IUV, deferred to the commit: a closed-set value the user asked for (a cabin,
  an airport, a trip type) in their latest message about that slot, which the
  call does not carry ("most recent statement wins": a change of mind counts);
- PC, one per precondition: the user's explicit yes just before the call, the
  reads that must come first (`after`), and the spec's CEL rules over the
  arguments and earlier results (`rules`).

The compiler decides nothing: S1 (`verifiers/tool_checks.py`) answers these.
This module also holds the conversation view both sides read (`ToolView`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sage_tod.compiler.context import TurnContext
from sage_tod.compiler.detect import Confirmation, detect_confirmation
from sage_tod.compiler.extract import Extraction, extract_user_values
from sage_tod.contracts.criteria import (
    EXACT,
    Criterion,
    FailureClass,
    IUVArgs,
    PCArgs,
    Span,
    UVArgs,
)
from sage_tod.contracts.spec import Derived, SpecBundle, ToolSpec, Workflow
from sage_tod.contracts.tool_rules import ToolRule, ToolTarget
from sage_tod.contracts.turns import ToolCall, Turn
from sage_tod.text.money import quoted_span


def is_tool_turn(ctx: TurnContext) -> bool:
    """A turn that carries `tool_calls` (even none), under a spec that declares committing
    tools, is judged by its calls, not by Δ_t. A spec whose tools only fill slots (a
    search, a choice) keeps the state-diff criteria: there is no commit to judge."""
    return ctx.turn.tool_calls is not None and ctx.spec.derived(
        "tool_calls.has_commits",
        lambda sp: any(ts.is_commit for wf in sp.workflows.values() for ts in wf.tools.values()))


@dataclass(frozen=True)
class CallSite:
    """One committing call of the turn, with the workflow and mapping that declare it."""

    index: int
    call: ToolCall
    workflow: Workflow
    tool: ToolSpec


def _commits(ts: ToolSpec) -> bool:
    return ts.is_commit


def _hands_off_by_rules(ts: ToolSpec) -> bool:
    return ts.handoff and bool(ts.rules)


def _call_site(ctx: TurnContext, i: int, call: ToolCall,
               judged: Callable[[ToolSpec], bool] = _commits) -> CallSite | None:
    """The call as a site of the tools `judged` picks (default: committing ones): the
    turn's own workflow wins when it declares the tool so; otherwise the first workflow
    of the spec that does; None for any other call (a read)."""
    own = ctx.workflow.tools.get(call.name)
    if own is not None and judged(own):
        return CallSite(i, call, ctx.workflow, own)
    wf = next((w for w in ctx.spec.workflows.values()
               if (t := w.tools.get(call.name)) is not None and judged(t)), None)
    return None if wf is None else CallSite(i, call, wf, wf.tools[call.name])


def commit_sites(ctx: TurnContext) -> list[CallSite]:
    """The successful committing calls of the turn, in call order. A call the tool
    refused changed nothing."""
    sites = (_call_site(ctx, i, c) for i, c in enumerate(ctx.turn.tool_calls or ())
             if not c.error)
    return [s for s in sites if s is not None]


def handoff_sites(ctx: TurnContext) -> list[CallSite]:
    """The turn's successful calls of a hand-off tool that has rules (a runbook's "before
    you transfer, check ..."), as call sites."""
    sites = (_call_site(ctx, i, c, _hands_off_by_rules)
             for i, c in enumerate(ctx.turn.tool_calls or ()) if not c.error)
    return [s for s in sites if s is not None]


def refused_sites(ctx: TurnContext) -> list[CallSite]:
    """The turn's committing calls the tool refused, as call sites: an attempt still
    answers to the policy's rules (a refusal the rules foresaw is an action the agent
    should not have tried), though it changed nothing. Not one that a successful
    committing call later in the turn made good."""
    done = [s.index for s in commit_sites(ctx)]
    sites = (_call_site(ctx, i, c) for i, c in enumerate(ctx.turn.tool_calls or ())
             if c.error and not any(d > i for d in done))
    return [s for s in sites if s is not None]


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, scalar) for every leaf of a JSON value, list items by index; object
    keys in sorted order, so a log and the turns file written from it (keys sorted) give
    the same criteria in the same order."""
    if isinstance(value, dict):
        for k, v in sorted(value.items()):
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for j, v in enumerate(value):
            yield from leaves(v, f"{prefix}.{j}" if prefix else str(j))
    elif value is not None:
        yield prefix, value


def leaf_text(value: Any) -> str:
    """A leaf as the text it would be written as in a message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mapped_slot(tool: ToolSpec, path: str) -> str | None:
    """The slot the spec maps an argument path to (`passengers.*.dob` covers
    `passengers.1.dob`), or None."""
    parts = path.split(".")
    for pattern, slot in tool.args.items():
        pp = pattern.split(".")
        if len(pp) == len(parts) and all(a in ("*", b) for a, b in zip(pp, parts, strict=True)):
            return slot
    return None


def compile_tool_uv(ctx: TurnContext) -> list[Criterion]:
    out: list[Criterion] = []
    for site in commit_sites(ctx):
        for path, value in leaves(site.call.arguments):
            how = site.tool.grounding(path)
            if how == "free":
                continue
            text = leaf_text(value)
            if not text.strip():
                continue
            slot = mapped_slot(site.tool, path) or path
            out.append(Criterion(
                id=f"UV:call{site.index}:{path}",
                failure_class=FailureClass.UV,
                args=UVArgs(slot=slot, value=text, tool=site.call.name, call=site.index,
                            path=path),
                question=(f"Does argument {path} = {text!r} of {site.call.name} come from the "
                          "user, or from a tool result about the entity the user referred to?"),
                nlu=False, open_class=True,
            ))
    return out


# a tool agent telling the user an action went through: "has been cancelled", "is now
# booked", "successfully updated" (the dialogue cues of detect.py are about bookings)
_DONE = re.compile(
    r"\b(?:has|have) (?:now )?been (?:successfully )?(?:booked|cancell?ed|updated|modified|"
    r"changed|upgraded|downgraded|returned|exchanged|refunded|processed|added|sent|issued|"
    r"placed|submitted)\b|\b(?:is|are) (?:now )?(?:booked|confirmed|cancell?ed)\b|"
    r"\bsuccessfully (?:booked|cancell?ed|updated|modified|changed|processed|placed)\b",
    re.IGNORECASE)


def _done_claim(text: str) -> re.Match[str] | None:
    """A statement (not a question) that says the action went through."""
    for m in _DONE.finditer(text):
        end = text.find("?", m.end())
        stop = min((i for i in (text.find(".", m.end()), text.find("!", m.end()),
                                text.find("\n", m.end())) if i >= 0), default=len(text))
        if end < 0 or end > stop:
            return m
    return None


def refused_commits(ctx: TurnContext) -> list[tuple[int, ToolCall]]:
    """The turn's committing calls the tool refused (`error`)."""
    return [(i, c) for i, c in enumerate(ctx.turn.tool_calls or ())
            if c.error and ctx.spec.tool_workflows(c.name)]


def _claim_after_refusal(ctx: TurnContext) -> list[Criterion]:
    """The agent tells the user it is done ("Your flight is booked.") in a turn whose
    committing calls were all refused: a confirmation nothing backs (PC)."""
    refused = refused_commits(ctx)
    if not refused or commit_sites(ctx):
        return []
    conf = detect_confirmation(ctx.turn, ctx.workflow)
    if conf is None or conf.certainty == "implied":
        done = _done_claim(ctx.turn.agent)
        if done is None:
            return []
        conf = Confirmation("cue", done.start(), done.end(), done.group(0))
    i, call = refused[-1]
    return [Criterion(
        id=f"PC:call{i}:claimed", failure_class=FailureClass.PC,
        args=PCArgs(certainty="tool_claim", cue=conf.cue,
                    outcome=f"{call.name} succeeded in this turn", tool=call.name, call=i,
                    rule="claimed"),
        question=(f"The agent says it is done, but {call.name} was refused; does it confirm "
                  "what did not happen?"),
        evidence=Span(source="agent", start=conf.start, end=conf.end, text=conf.cue),
    )]


def user_messages(ctx: TurnContext) -> list[tuple[str, int | None, str]]:
    """The user's messages up to this turn, newest first: (source, history index, text)
    — the order every "the user's latest word on …" reader scans."""
    hist = ctx.turn.history or ()
    out: list[tuple[str, int | None, str]] = [("user", None, ctx.turn.user)]
    out += [("history.user", i, hist[i].user) for i in range(len(hist) - 1, -1, -1)
            if hist[i].user]
    return out


_COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# how many entities the user asked an action for: "both", "those two", "all three",
# "only this one"
_COUNT = re.compile(
    r"\b(?:(both)|(?:these|those|the) (two)|all (?:of )?(?:the |my )?(three|four|five|six|[3-9])"
    r"|(?:only|just) (?:this|that|the) (one))\b", re.IGNORECASE)


def stated_count(text: str) -> tuple[int, re.Match[str]] | None:
    """The number of entities a message asks an action for, and where it says so."""
    m = _COUNT.search(text)
    if m is None:
        return None
    word = next(g for g in m.groups() if g is not None).lower()
    return (2 if word == "both" else _COUNT_WORDS.get(word) or int(word)), m


def count_statement(ctx: TurnContext) -> tuple[int, re.Match[str], str, int | None] | None:
    """The user's newest message stating how many entities to act on."""
    for source, index, text in user_messages(ctx):
        found = stated_count(text)
        if found is not None:
            return found[0], found[1], source, index
    return None


def _target_count(ctx: TurnContext, site: CallSite) -> list[Criterion]:
    """PC: the user said how many ("cancel both"); the distinct targets this tool acts on
    from that message through this call must not be more."""
    if site.tool.target is None:
        return []
    found = count_statement(ctx)
    if found is None:
        return []
    n, m, source, index = found
    name, i = site.call.name, site.index
    return [Criterion(
        id=f"PC:call{i}:targets", failure_class=FailureClass.PC,
        args=PCArgs(certainty="tool_count", cue=m.group(0),
                    outcome=f"at most {n} {site.tool.target.arg} acted on by {name}",
                    tool=name, call=i, rule="targets"),
        question=(f"The user asked for {m.group(0)!r}; does {name} act on more "
                  f"{site.tool.target.arg}s than that?"),
        evidence=Span(source=source, index=index, start=m.start(), end=m.end(),
                      text=m.group(0)),
    )]


# the user asks for a person: a hand-off on the user's demand is the user's choice
_WANTS_HUMAN = re.compile(r"\b(?:human|real person|supervisor|manager|representative|"
                          r"live agent|someone (?:else|who)|transfer me|speak (?:with|to) "
                          r"(?:someone|a person))\b", re.IGNORECASE)
# the agent says no, in any words: a hand-off after a refusal passes on what the agent
# already denied ("I am unable to offer compensation", "changes are not permitted")
_DENIES = re.compile(
    r"\b(?:unable to|not able to|cannot|can ?not|can't|won't be able to|not (?:allowed|"
    r"permitted|eligible|possible)|no (?:way|ability) to|(?:don't|do not) have the "
    r"ability)\b", re.IGNORECASE)
# the agent offers the hand-off ("Would you like me to transfer you?")
_OFFERS_HANDOFF = re.compile(r"\btransfer(?:ring)? (?:you|your)\b|\b(?:the|a) transfer\b",
                             re.IGNORECASE)


@dataclass(frozen=True)
class Handoff:
    """A hand-off to a human while the user asks for an action a committing tool does."""

    tool: str  # the hand-off tool called
    index: int  # its position in the turn's calls
    requested: str  # the committing tool the request asks for
    source: str  # "user" | "history.user"
    at: int | None
    start: int
    end: int
    cue: str


def handoff_requests(ctx: TurnContext) -> list[Handoff]:
    """A successful call of a `handoff` tool, when the user's last two messages ask for
    what a committing tool does (its `requested` cue, asked for, not a question about
    the policy), the agent neither tried that tool in the conversation nor refused in
    this turn or its previous message, and the user did not ask for a person: the
    policy allows a hand-off only for requests outside the tools' scope, and a request
    the policy forbids is the agent's to refuse."""
    calls = ctx.turn.tool_calls or ()
    transfers = handoff_tools(ctx.spec)
    hand = next(((i, c) for i, c in enumerate(calls) if not c.error and c.name in transfers),
                None)
    if hand is None:
        return []
    hist = ctx.turn.history or ()
    before = hist[-1].agent if hist else ""
    if _DENIES.search(ctx.turn.agent) or _DENIES.search(before):
        return []
    users: list[tuple[str, int | None, str]] = [("user", None, ctx.turn.user)]
    if hist:
        users.append(("history.user", len(hist) - 1, hist[-1].user))
    if any(_WANTS_HUMAN.search(text) for _, _, text in users):
        return []
    if _OFFERS_HANDOFF.search(before) and _YES_START.match(ctx.turn.user):
        return []  # the user took the hand-off the agent offered
    tried = {c.name for h in hist for c in h.tool_calls} | {c.name for c in calls}
    for name, pattern in _REQUEST_CUES.of(ctx.spec).items():
        if name in tried:
            continue  # done, or refused by the tool: the hand-off follows an attempt
        for source, at, text in users:
            m = _requests(text, pattern)
            if m is not None:
                return [Handoff(hand[1].name, hand[0], name, source, at, m.start(), m.end(),
                                m.group(0))]
    return []


def _handoff(ctx: TurnContext) -> list[Criterion]:
    """PC on a hand-off: the request it passes on is one the agent's tools serve."""
    return [Criterion(
        id=f"PC:call{h.index}:handoff", failure_class=FailureClass.PC,
        args=PCArgs(certainty="tool_handoff", cue=h.cue,
                    outcome=f"the request is outside what {h.requested} and the other "
                            "committing tools do", tool=h.tool, call=h.index,
                    rule=f"handoff:{h.requested}"),
        question=(f"The user asked for {h.cue!r}, a request for {h.requested}; did the agent "
                  "hand the user over without trying or refusing it?"),
        evidence=Span(source=h.source, index=h.at, start=h.start, end=h.end, text=h.cue),
    ) for h in handoff_requests(ctx)]


def compile_tool_pc(ctx: TurnContext) -> list[Criterion]:
    out: list[Criterion] = _claim_after_refusal(ctx) + _handoff(ctx)
    for site in commit_sites(ctx):
        out.extend(_target_count(ctx, site))
        name, i = site.call.name, site.index
        if site.tool.confirmation == "explicit":
            out.append(Criterion(
                id=f"PC:call{i}:confirmation", failure_class=FailureClass.PC,
                args=PCArgs(certainty="tool_confirmation", cue=name,
                            outcome="the user said yes to this action just before the call",
                            tool=name, call=i, rule="confirmation"),
                question=(f"Did the user explicitly confirm {name} in the message just before "
                          "the call?"),
                open_class=True,
            ))
        for read in site.tool.after:
            out.append(Criterion(
                id=f"PC:call{i}:after:{read}", failure_class=FailureClass.PC,
                args=PCArgs(certainty="tool_order", cue=name,
                            outcome=f"{read} succeeded before {name}", tool=name, call=i,
                            rule=f"after:{read}"),
                question=f"Was {read} called successfully before {name}?",
            ))
        out.extend(_rule_criteria(ctx, site))
    for site in refused_sites(ctx) + handoff_sites(ctx):
        out.extend(_rule_criteria(ctx, site))
    return out


def _quoted_charges(ctx: TurnContext) -> Span | None:
    """The charges the agent's message before this turn quoted ("the additional cost will
    be $597"): the evidence of a rule over the transcript's amounts, what the user said
    yes to."""
    hist = ctx.turn.history or ()
    text = hist[-1].agent if hist else ""
    at = quoted_span(text) if text else None
    if at is None:
        return None
    return Span(source="history.agent", index=len(hist) - 1, start=at[0], end=at[1],
                text=text[at[0]:at[1]])


def _reads_quote(rule: ToolRule) -> bool:
    """The rule reads the amounts of the transcript's messages."""
    text = f"{rule.when or ''} {rule.check}"
    return "transcript" in text and re.search(r"\.(?:quoted|amounts)\b", text) is not None


def _rule_criteria(ctx: TurnContext, site: CallSite) -> list[Criterion]:
    """PC, one per policy rule of the call's tool; a rule over the amounts the agent
    quoted has that quote as its evidence."""
    out: list[Criterion] = []
    name, i = site.call.name, site.index
    reads_quote = [_reads_quote(r) for r in site.tool.rules]
    quote = _quoted_charges(ctx) if any(reads_quote) else None
    for rule, quoted in zip(site.tool.rules, reads_quote, strict=True):
        cond = rule.check if rule.when is None else f"{rule.when} => {rule.check}"
        out.append(Criterion(
            id=f"PC:call{i}:rule:{rule.id}", failure_class=FailureClass.PC,
            args=PCArgs(certainty="tool_rule", cue=rule.message or rule.id,
                        outcome=cond, tool=name, call=i, rule=rule.id),
            question=(f"Does the policy rule {rule.id!r} hold for this {name} call"
                      f"{': ' + rule.message if rule.message else ''}"
                      f"{' (the tool refused it)' if site.call.error else ''}?"),
            evidence=quote if quoted else None,
        ))
    return out


@dataclass(frozen=True)
class Statement:
    """The values the user's latest message about a slot states for it."""

    values: tuple[Extraction, ...]
    source: str  # "user" | "history.user"
    index: int | None


def latest_statement(ctx: TurnContext, wf: Workflow, slot: str) -> Statement | None:
    """The newest user message that states a value for `slot` alone (an extraction whose
    only candidate is the slot: "from Denver to Seattle" states no origin by itself)."""
    hist = ctx.turn.history or ()
    for source, index, text in user_messages(ctx):
        before = hist if index is None else hist[:index]
        probe = Turn(dialogue_id=ctx.turn.dialogue_id, turn_id=ctx.turn.turn_id, workflow=wf.id,
                     user=text, agent="", state_before={}, state_after={}, history=before)
        found = tuple(e for e in extract_user_values(probe, wf, ctx.spec)
                      if e.candidates == (slot,))
        if found:
            return Statement(found, source, index)
    return None


def stated_arguments(ctx: TurnContext, wf: Workflow, tool: ToolSpec) -> dict[str, str]:
    """The top-level arguments of `tool` mapped to a categorical slot whose value the user
    stated (their latest word on it, `latest_statement`), other than the target: what a
    request the agent did not carry out says about how it would have been made ("upgrade
    to business" gives `cabin`). An argument the user never stated is absent, and a rule
    can test for it with `has(args.<name>)`. Only arguments a rule of the tool reads are
    looked for (each is an extraction over the user's messages)."""
    read = frozenset().union(*(r.args_read for r in tool.rules))
    out: dict[str, str] = {}
    for path, slot in tool.args.items():
        if path not in read or (tool.target is not None and path == tool.target.arg):
            continue
        spec = ctx.spec.slot(slot, wf)
        if spec is None or spec.type != "categorical":
            continue
        st = latest_statement(ctx, wf, slot)
        if st is not None:
            out[path] = spec.normalize(st.values[-1].value)
    return out


def latest_cue(ctx: TurnContext, cue: str) -> tuple[re.Match[str], str, int | None] | None:
    """The user's newest message matching `cue` (case-insensitive): the match, the
    message's source and history index."""
    pattern = re.compile(cue, re.IGNORECASE)
    for source, index, text in user_messages(ctx):
        m = pattern.search(text)
        if m is not None:
            return m, source, index
    return None


_ORDINAL = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}  # a preference's `rank`


def _preferences(ctx: TurnContext, site: CallSite) -> list[Criterion]:
    """IUV for a choice the user asked for ("the cheapest"): raised when a user message
    matches the preference's cue; S1 compares the committed option with the others."""
    out: list[Criterion] = []
    for pref in site.tool.prefer:
        found = latest_cue(ctx, pref.cue)
        if found is None:
            continue
        m, source, index = found
        if pref.unless is not None and re.search(pref.unless, m.string, re.IGNORECASE):
            continue
        items = site.call.arguments.get(pref.items)
        if not isinstance(items, list) or not items:
            continue
        chosen = ", ".join(" ".join(leaf_text(it.get(f)) for f in pref.same if f in it)
                           for it in items if isinstance(it, dict))
        out.append(Criterion(
            id=f"IUV:call{site.index}:prefer:{pref.id}", failure_class=FailureClass.IUV,
            args=IUVArgs(slot=pref.items, candidates=(pref.items,), value=m.group(0),
                         readings=(m.group(0),), confidence=1.0,
                         source=f"tool_call:prefer:{pref.id}",
                         state_after={pref.items: chosen}, tool=site.call.name,
                         call=site.index),
            question=(f"The user asked for {m.group(0)!r}; is the {pref.items} option "
                      f"{site.call.name} commits the one with the "
                      f"{'lowest' if pref.rank == 1 else _ORDINAL[pref.rank] + ' lowest distinct'} "
                      f"{pref.id} key among the options the reads listed?"),
            evidence=Span(source=source, index=index, start=m.start(), end=m.end(),
                          text=m.group(0)),
        ))
    return out


# the agent declines an action: "I'm unable to cancel", "is not eligible for a refund",
# "I can't process that"; not a missing detail ("cannot cancel without your user id")
_REFUSAL = re.compile(
    r"\b(?:(?:(?:unable|not able|won't be able|am not allowed) to|cannot|can ?not|can't|"
    r"is not possible to) (?:\w+ ){0,2}?(?:cancel|process|modify|change|return|exchange|"
    r"refund|book|update|upgrade|downgrade)\w*(?! (?:\w+ ){0,4}?(?:without|until|unless|"
    r"before|first))|"
    r"(?:cannot|can't|can ?not) be (?:modified|changed|cancell?ed|upgraded|refunded|"
    r"returned|exchanged)|"
    r"(?:is|are) not (?:eligible|cancell?able|refundable)|(?:does|do) not qualify)\b",
    re.IGNORECASE)


def handoff_tools(spec: SpecBundle) -> frozenset[str]:
    """The tools the spec marks `handoff: true` (a transfer to a human), in any workflow."""
    return frozenset(name for wf in spec.workflows.values() for name, ts in wf.tools.items()
                     if ts.handoff)


def read_entities(calls: Iterable[ToolCall], target: ToolTarget) -> tuple[str, ...]:
    """The entities (`target.result_key` of each record) that successful calls of the
    target's read tools returned, oldest first, each once: what a declined or handed-off
    request could have acted on."""
    return tuple(dict.fromkeys(
        leaf_text(c.result.get(target.result_key)) for c in calls
        if c.name in target.read and not c.error and isinstance(c.result, dict)
        and c.result.get(target.result_key) is not None))


@dataclass(frozen=True)
class Declined:
    """An action the user asked for that the agent declined in this turn: the tool that
    would do it and the entity it would act on."""

    tool: str
    workflow: Workflow
    spec: ToolSpec
    candidates: tuple[str, ...]  # entities the reads returned, not acted on, oldest first
    cue: str
    start: int
    end: int


# the agent offers to act, or asks the user to confirm it: "I can update the passenger
# information for you", "Please confirm if you want to change the passenger to Omar Rossi"
_OFFERS = re.compile(r"\b(?:i can(?!['’]t|not)|i['’]ll|i will(?! not)|i['’]d be happy to|"
                     r"would you like me to|shall i|(?:please|can you) confirm)\b", re.IGNORECASE)


def pursuing_sentences(agent: str, tool: str, requested: str | None) -> list[str]:
    """The sentences of the agent's message that ask about, or offer, the very action —
    they read the tool's `requested` cue, or its verb and object ("Which passenger's name
    would you like to update?" for `update_reservation_passengers`): there the agent is
    taking the request forward, whatever else it said cannot be done. A sentence that
    itself declines ("Since I cannot cancel ..., this is beyond what I can handle")
    offers nothing."""
    words = tool.lower().split("_")
    verb, obj = words[0], words[-1].removesuffix("s")
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", agent):
        if ("?" not in sentence and not _OFFERS.search(sentence)) or _REFUSAL.search(sentence):
            continue
        low = sentence.lower()
        if (requested is not None and re.search(requested, sentence, re.IGNORECASE)) or (
                len(words) > 1 and re.search(rf"\b{re.escape(verb)}", low)
                and re.search(rf"\b{re.escape(obj)}", low)):
            out.append(sentence)
    return out


def declined_actions(ctx: TurnContext) -> list[Declined]:
    """Committing tools with a target whose verb ("cancel" for `cancel_reservation`) the
    user's recent messages use, when the agent declines in this turn (a refusal, or a
    hand-off to a human) and nothing committed that tool on the entity: the entity is the
    ones a `target.read` tool returned (S1 picks the one the user referred to)."""
    calls = ctx.turn.tool_calls or ()
    m = _REFUSAL.search(ctx.turn.agent)
    transfers = handoff_tools(ctx.spec)
    handed = any(c.name in transfers for c in calls)
    if m is None and not handed:
        return []
    hist = ctx.turn.history or ()
    recent = " ".join([ctx.turn.user, *(h.user for h in hist[-2:])]).lower()
    earlier = [c for h in hist for c in h.tool_calls] + list(calls)
    out: list[Declined] = []
    seen: set[str] = set()
    for wf in ctx.spec.workflows.values():
        for name, ts in wf.tools.items():
            if name in seen or not ts.is_commit or ts.target is None or not ts.rules:
                continue
            if ts.requested is not None:  # how users ask for it, when the spec says
                if not re.search(ts.requested, recent, re.IGNORECASE):
                    continue
            else:
                verb = name.split("_")[0]
                if len(verb) < 4 or not re.search(rf"\b{re.escape(verb)}", recent):
                    continue
            t = ts.target
            done = {leaf_text(c.arguments.get(t.arg)) for c in earlier
                    if c.name == name and not c.error}
            left = tuple(i for i in read_entities(earlier, t) if i not in done)
            pursued = pursuing_sentences(ctx.turn.agent, name, ts.requested)
            if pursued and not any(i.lower() in p.lower() for i in left for p in pursued):
                # the agent takes the request itself forward; one that offers it for a
                # named entity ("Would you like to proceed with canceling NQNU5R?") may
                # still decline it for another
                continue
            if done:
                # the request was carried out on one entity: another is declined only if
                # the user named it
                left = tuple(i for i in left if i.lower() in recent)
            if not left:
                continue
            seen.add(name)
            cue = (m.group(0), m.start(), m.end()) if m is not None else (
                "transfer_to_human_agents", 0, 0)
            out.append(Declined(name, wf, ts, left, *cue))
    return out


def _declined(ctx: TurnContext) -> list[Criterion]:
    """IUV for a declined request: the user asked for the action, the agent declined it,
    and S1 asks whether the policy's rules would have allowed it."""
    out: list[Criterion] = []
    for d in declined_actions(ctx):
        arg = d.spec.target.arg if d.spec.target is not None else "target"
        out.append(Criterion(
            id=f"IUV:declined:{d.tool}", failure_class=FailureClass.IUV,
            args=IUVArgs(slot=arg, candidates=(arg,), value=d.candidates[-1],
                         readings=d.candidates, confidence=1.0,
                         source=f"tool_call:declined:{d.tool}", state_after={arg: None},
                         tool=d.tool),
            question=(f"The user asked for {d.tool} and the agent declined; would the "
                      "policy's rules have allowed it for the entity the user meant?"),
            evidence=None if d.end == 0 else Span(source="agent", start=d.start, end=d.end,
                                                  text=d.cue),
        ))
    return out


# a request taken back or never made: "don't cancel", "no need to", "instead of changing"
_NOT_ASKED = re.compile(r"\b(?:\w+n[’']?t|do not|will not|not|never|no need to|instead of|"
                        r"rather than|without|keep(?:ing)?)\W+(?:\w+\W+){0,3}$", re.IGNORECASE)
# a question about the policy, not a request: "what is the fee to change ...?"
_INFO_QUESTION = re.compile(r"^\W*(?:what|how|why|when|where|which|who|is|are|does|do|did|"
                            r"will it|would it)\b", re.IGNORECASE)


# how a sentence asks for an action: "please", "I'd like to", "can you", "go ahead and"
_ASKING = re.compile(r"\b(?:please|i(?:'d| would) like|i want|i need|i wish|(?:can|could|would|"
                     r"will) you|go ahead|proceed|let'?s|i(?:'d| would) prefer|i authori[sz]e|"
                     r"i(?:'m| am) (?:asking|requesting))\b", re.IGNORECASE)


@dataclass(frozen=True)
class Unfinished:
    """A request for a committing tool that nothing carried out by the last turn."""

    tool: str
    source: str  # "user" | "history.user"
    index: int | None
    start: int
    end: int
    cue: str


def _requests(text: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """A message's last mention of a tool's `requested` cue (the user's newest word on
    the action), when it asks for the action: not negated just before it ("I won't
    proceed with the cancellation"), not in a question about the policy, in a sentence
    that asks ("please", "I'd like", "can you") or opens with it."""
    found = list(pattern.finditer(text))
    m = found[-1] if found else None
    if m is None or _NOT_ASKED.search(text[max(0, m.start() - 40):m.start()]):
        return None
    head = max(text.rfind(".", 0, m.start()), text.rfind("!", 0, m.start()),
               text.rfind("?", 0, m.start()), text.rfind("\n", 0, m.start()))
    tail = min((i for i in (text.find(".", m.end()), text.find("!", m.end()),
                            text.find("?", m.end())) if i >= 0), default=len(text))
    sentence = text[head + 1:tail + 1]
    if sentence.rstrip().endswith("?") and _INFO_QUESTION.match(sentence):
        return None
    if not (_ASKING.search(sentence) or re.match(r"\W*(?:and\W+)?$", text[head + 1:m.start()])):
        return None  # a mention ("Checked bags: 0"), not a request
    return m


_YES_START = re.compile(r"\W*(?:yes|yeah|yep|sure|ok(?:ay)?|correct|confirm(?:ed)?|please do|"
                        r"go ahead|please proceed|that'?s (?:right|correct)|sounds good)\b",
                        re.IGNORECASE)


def unfinished_requests(ctx: TurnContext) -> list[Unfinished]:
    """On the conversation's last turn (`Turn.last`): each committing tool with a
    `requested` cue that the user's last message asks for (or the message before, when
    the last one says yes), with no successful call of the tool after it, while the agent
    neither declined (a refusal, judged by `IUV:declined`) nor handed the user over: the
    conversation ends with the action the user asked for not done. Only when the agent
    answered the last message: a log that ends on the user's request shows no omission.

    A request made earlier counts too when the agent never even read what the tool would
    act on (no successful call of the tool's `target.read` in the conversation): "I'll
    need your reservation ID" to a user who has none, the user leaving to look for it,
    while the tools could have found it. A request the agent looked into and the user then
    let drop is not read as one left open."""
    if not ctx.turn.last:
        return []
    # a user who leaves right after asking gave the agent no turn to act on that message
    answered = bool(ctx.turn.agent.strip() or ctx.turn.tool_calls)
    transfers = handoff_tools(ctx.spec)
    hist = ctx.turn.history or ()
    entries: list[tuple[str, int | None, str, str, tuple[ToolCall, ...]]] = [
        ("history.user", i, h.user, h.agent, h.tool_calls) for i, h in enumerate(hist)]
    entries.append(("user", None, ctx.turn.user, ctx.turn.agent, ctx.turn.tool_calls or ()))
    cues = _REQUEST_CUES.of(ctx.spec)
    out: list[Unfinished] = []
    for name, pattern in cues.items():
        # pending at the end: asked in the last message, or asked in the one before and
        # the last one says yes to the agent's reply
        k = len(entries) - 1
        m = _requests(entries[k][2], pattern) if answered else None
        if m is None and answered and k > 0 and _YES_START.match(entries[k][2]):
            k -= 1
            m = _requests(entries[k][2], pattern)
        if m is None:
            # asked earlier, and what the tool acts on was never looked up
            target = _commit_target(ctx.spec, name)
            if target is None or read_entities(
                    (c for e in entries for c in e[4]), target):
                continue
            asked = len(entries) - 1 if answered else len(entries) - 2
            k, m = next(((i, r) for i in range(asked + 1)
                         for r in [_requests(entries[i][2], pattern)] if r is not None),
                        (0, None))
            if m is None:
                continue
        # the tools whose cue reads the same words ("change the address" asks for the
        # order's or the account's): any of them carries the request out
        doers = {n for n, p in cues.items() if any(
            o.start() < m.end() and m.start() < o.end() for o in p.finditer(entries[k][2]))}
        after = entries[k:]
        calls = [c for e in after for c in e[4]]
        if any(c.name in doers and not c.error for c in calls):
            continue
        if any(c.name in transfers for c in calls) or any(
                _REFUSAL.search(e[3]) for e in after):
            continue
        source, index = entries[k][0], entries[k][1]
        out.append(Unfinished(name, source, index, m.start(), m.end(), m.group(0)))
    return out


def _commit_target(spec: SpecBundle, tool: str) -> ToolTarget | None:
    """The `target` of the committing tool `tool` in the first workflow declaring it."""
    for wf in spec.workflows.values():
        ts = wf.tools.get(tool)
        if ts is not None and ts.is_commit:
            return ts.target
    return None


def _build_request_cues(spec: SpecBundle) -> dict[str, re.Pattern[str]]:
    out: dict[str, re.Pattern[str]] = {}
    for wf in spec.workflows.values():
        for name, ts in wf.tools.items():
            if ts.is_commit and ts.requested is not None and name not in out:
                out[name] = re.compile(ts.requested, re.IGNORECASE)
    return out


# each committing tool's `requested` cue, compiled once per spec
_REQUEST_CUES: Derived[SpecBundle, dict[str, re.Pattern[str]]] = Derived(
    "tool_calls.request_cues", _build_request_cues)


def _unfinished(ctx: TurnContext) -> list[Criterion]:
    """IUV, once at the end: the user asked for an action that no call carried out."""
    return [Criterion(
        id=f"IUV:unfinished:{u.tool}", failure_class=FailureClass.IUV,
        args=IUVArgs(slot=u.tool, candidates=(u.tool,), value=u.cue, readings=(u.cue,),
                     confidence=1.0, source=f"tool_call:unfinished:{u.tool}",
                     state_after={u.tool: None}, tool=u.tool),
        question=(f"The user asked for {u.cue!r}; did the conversation end without a "
                  f"successful {u.tool} call after it?"),
        evidence=Span(source=u.source, index=u.index, start=u.start, end=u.end, text=u.cue),
    ) for u in unfinished_requests(ctx)]


def compile_tool_iuv(ctx: TurnContext) -> list[Criterion]:
    out: list[Criterion] = _declined(ctx) + _unfinished(ctx)
    for site in commit_sites(ctx):
        out.extend(_preferences(ctx, site))
        by_slot: dict[str, list[str]] = {}
        for path, value in leaves(site.call.arguments):
            slot = mapped_slot(site.tool, path)
            if slot is not None:
                by_slot.setdefault(slot, []).append(leaf_text(value))
        for slot, values in by_slot.items():
            spec = ctx.spec.slot(slot, site.workflow)
            if spec is None or spec.type != "categorical":
                continue
            st = latest_statement(ctx, site.workflow, slot)
            if st is None:
                continue
            held = {spec.normalize(v) for v in values}
            if any(spec.normalize(r) in held for e in st.values for r in e.readings):
                continue  # the call carries what the user said last
            ex = st.values[-1]
            text = ctx.turn.user if st.index is None else (ctx.turn.history or ())[st.index].user
            span = None if ex.start is None or ex.end is None else Span(
                source=st.source, index=st.index, start=ex.start, end=ex.end,
                text=text[ex.start:ex.end])
            out.append(Criterion(
                id=f"IUV:call{site.index}:{slot}", failure_class=FailureClass.IUV,
                args=IUVArgs(slot=slot, candidates=(slot,), value=ex.value,
                             readings=tuple(ex.readings), confidence=round(ex.confidence, 4),
                             source=f"tool_call:{ex.source}",
                             state_after={slot: ", ".join(values)},
                             tool=site.call.name, call=site.index),
                question=(f"The user last asked for {ex.value!r} ({slot}); does "
                          f"{site.call.name} commit {', '.join(values)!r} instead?"),
                evidence=span, nlu=ex.confidence < EXACT, open_class=ex.confidence < EXACT,
            ))
    return out
