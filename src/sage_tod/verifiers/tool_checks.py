"""S1 for tool-agent criteria: argument grounding, confirmation, read order, policy rules.

Every answer is read off the log: the user's messages, the agent's messages and
the structured results of the calls made before the one judged. Where the log
cannot show the answer (a rule over a field no read returned, an id that some
result holds but nothing ties to what the user meant) the answer is ABSTAIN.

Grounding an argument leaf (docs/method.md, *Tool agents*):
1. the user stated it (normalised match, the slot's synonyms and readings): FALSE;
2. an earlier result holds it in a record the user referred to: a
   distinguishing field of the record is in the user's words ("my Visa card",
   "the one ending 4421", "the kettle"), the record came from a call whose
   arguments the user gave, it is the only record of its kind, or the agent
   named it and the user then agreed: FALSE;
3. results hold it only in records the user did not refer to while a sibling
   record is the one the user named: TRUE (the wrong member);
4. nothing in the log holds it (a string of 3+ characters): TRUE;
otherwise ABSTAIN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sage_tod.compiler.context import TurnContext
from sage_tod.compiler.time_limits import TimeLimit, stated_time_limits
from sage_tod.compiler.tool_calls import (
    CallSite,
    Declined,
    commit_sites,
    count_statement,
    declined_actions,
    handoff_sites,
    leaf_text,
    leaves,
    mapped_slot,
    read_entities,
    refused_sites,
    stated_arguments,
    unfinished_requests,
)
from sage_tod.contracts.criteria import EXACT, Decision, IUVArgs, Outcome, PCArgs, Span, UVArgs
from sage_tod.contracts.spec import ToolSpec, Workflow
from sage_tod.contracts.tool_rules import (
    ToolPreference,
    ToolRule,
    clock_minutes,
    evaluate_number,
    evaluate_rule,
)
from sage_tod.contracts.turns import ToolCall, Turn
from sage_tod.text.match import find_value
from sage_tod.text.money import money_amounts


@dataclass(frozen=True)
class PriorCall:
    """A successful call made before the judged one: where it is in the log."""

    index: int | None  # history position; None = earlier in this turn
    position: int  # in that entry's tool_calls
    call: ToolCall


@dataclass(frozen=True)
class Utterance:
    source: str  # "user" | "history.user" | "history.agent"
    index: int | None
    text: str


@dataclass
class ToolView:
    """The log as the judged call saw it."""

    users: list[Utterance]
    agents: list[Utterance]  # earlier agent messages, oldest first
    prior: list[PriorCall]


def tool_view(ctx: TurnContext, site: CallSite) -> ToolView:
    users: list[Utterance] = []
    agents: list[Utterance] = []
    prior: list[PriorCall] = []
    hist = ctx.turn.history or ()
    for i, h in enumerate(hist):
        if h.user:
            users.append(Utterance("history.user", i, h.user))
        for j, c in enumerate(h.tool_calls):
            if not c.error:
                prior.append(PriorCall(i, j, c))
        if h.agent:
            agents.append(Utterance("history.agent", i, h.agent))
    users.append(Utterance("user", None, ctx.turn.user))
    for j, c in enumerate((ctx.turn.tool_calls or ())[:site.index]):
        if not c.error:
            prior.append(PriorCall(None, j, c))
    return ToolView(users, agents, prior)


# ---------------------------------------------------------------------------------------------
# mentions


_SEPARATORS = str.maketrans("_#-", "   ")


def _norm(text: str) -> str:
    """Lower case, `_`, `#` and `-` as spaces, one character for one (so a match in the
    normalised text is a span of the original)."""
    return text.lower().translate(_SEPARATORS)


def mention_at(text: str, value: str) -> tuple[int, int] | None:
    """Where `text` names `value` as a whole token sequence, case- and punctuation-
    insensitive ("#W7043598" = "W7043598", "gift_card" = "gift card"), or None."""
    v = _norm(value).strip()
    if len(v) < 3 and not v.isdigit():
        return None
    if v.isdigit() and len(v) < 2:
        return None
    m = re.search(r"(?<![a-z0-9])" + re.escape(v) + r"(?![a-z0-9])", _norm(text))
    return None if m is None else (m.start(), m.end())


def _user_mention(view: ToolView, value: str, ctx: TurnContext, slot: str | None
                  ) -> Span | None:
    spec = ctx.spec.slot(slot) if slot is not None else None
    for u in reversed(view.users):
        hit = mention_at(u.text, value)
        if hit is None and spec is not None:
            f = find_value(u.text, value, spec)
            hit = None if f is None else (f.start, f.end)
        if hit is not None:
            return Span(source=u.source, index=u.index, start=hit[0], end=hit[1],
                        text=u.text[hit[0]:hit[1]])
    return None


_AFFIRM = re.compile(
    r"\b(yes|yeah|yep|yup|sure|correct|confirm\w*|ok(?:ay)?|absolutely|definitely|go ahead|"
    r"proceed|please do|do it|that'?s (?:right|correct|fine|good)|sounds good|perfect|"
    r"that works|works for me|let'?s do (?:it|that))\b", re.IGNORECASE)
_REFUSE = re.compile(r"^\W*(no|nope|wait|hold on|not yet|don'?t)\b", re.IGNORECASE)


_OPENING_YES = re.compile(  # used with .match at a sentence's offset
    r"\W*(yes|yeah|yep|yup|sure|correct|absolutely|definitely|ok(?:ay)?|oui|s[ií]|ja|sim)\b",
    re.IGNORECASE)
# an instruction that carries the action out ("Please cancel those two", "Use my Visa",
# "Go ahead with the change"): consent when it answers the agent's read-back
_CONSENT = re.compile(
    r"\W*(?:(?:ok(?:ay)?|great|perfect|thanks?|thank you|alright|fine)\W+)?"
    r"(?:(?:please|you can|you may|let'?s|i'?d like to|i want to|i'?ll)\W+)?"
    r"(go ahead|proceed|cancel|book|use|charge|change|update|modify|add|upgrade|return|"
    r"exchange|send|apply|make|do|process|confirm|go with)\b", re.IGNORECASE)
# the agent reads an action back and asks for the go-ahead
_READ_BACK = re.compile(r"\b(confirm|proceed|go ahead|would you like (?:me|us) to|shall i|"
                        r"should i|do you want (?:me|us) to|is that correct|is this correct|"
                        r"does (?:this|that|everything) look)\b", re.IGNORECASE)


def _sentences(text: str) -> Iterator[tuple[int, str]]:
    """(offset, sentence) of each sentence of `text`, for readers that judge a statement
    apart from a question."""
    pos = 0
    for sent in re.split(r"(?<=[.!?])\s+", text):
        start = text.find(sent, pos)
        pos = start + len(sent)
        yield start, sent


def _consents(text: str) -> re.Match[str] | None:
    """An instruction that carries the action out, in a statement, not a question."""
    if _REFUSE.search(text):
        return None
    for start, sent in _sentences(text):
        if not sent.rstrip().endswith("?"):
            m = _CONSENT.match(text, start)
            if m is not None:
                return m
    return None


def affirms(text: str) -> re.Match[str] | None:
    """Where the user says yes: a sentence that opens with a yes, or a statement (not a
    question: "Could you confirm the refund?" agrees to nothing) holding one; None when
    the message opens with a no."""
    if _REFUSE.search(text):
        return None
    for start, sent in _sentences(text):
        m = _OPENING_YES.match(text, start)
        if m is None and not sent.rstrip().endswith("?"):
            m = _AFFIRM.search(text, start, start + len(sent))
        if m is not None:
            return m
    return None


# ---------------------------------------------------------------------------------------------
# records in results


@dataclass(frozen=True)
class Hit:
    """A leaf of an earlier result equal to the argument value."""

    prior: PriorCall
    path: str
    record: Mapping[str, Any] | None  # the nearest object holding the leaf
    siblings: tuple[Mapping[str, Any], ...]  # the other records of its container


def _same(a: Any, b: str) -> bool:
    if isinstance(a, dict | list) or a is None:
        return False
    return _norm(leaf_text(a)).strip() == _norm(b).strip()


def _walk(node: Any, path: str, record: Mapping[str, Any] | None,
          siblings: tuple[Mapping[str, Any], ...]) -> Iterator[tuple[str, Any, Any, Any]]:
    if isinstance(node, dict):  # keys sorted: the same hits from a log and its turns file
        for k, v in sorted(node.items()):
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(v, dict | list):
                kids = _records(v)
                if kids and isinstance(v, dict) \
                        and all(isinstance(x, dict) for x in v.values()):
                    for kk, vv in sorted(v.items()):
                        yield from _walk(vv, f"{sub}.{kk}", vv,
                                         tuple(x for x in kids if x is not vv))
                elif kids and isinstance(v, list):
                    for jj, vv in enumerate(v):
                        if isinstance(vv, dict):
                            yield from _walk(vv, f"{sub}.{jj}", vv,
                                             tuple(x for x in kids if x is not vv))
                        else:
                            yield f"{sub}.{jj}", vv, node, siblings
                else:
                    yield from _walk(v, sub, node, siblings)
            else:
                yield sub, v, node, siblings
    elif isinstance(node, list):
        for j, v in enumerate(node):
            yield from _walk(v, f"{path}.{j}" if path else str(j), record, siblings)
    else:
        yield path, node, record, siblings


def _records(v: Any) -> list[Mapping[str, Any]]:
    items = v.values() if isinstance(v, dict) else v
    return [x for x in items if isinstance(x, dict)]


_ID_LIKE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z_])[\w#-]{4,}$|^\d{5,}$")


def is_id_like(value: str) -> bool:
    """Codes and ids ("gift_card_7773485", "#W7043598", "HAT021", "9494281769"): a result
    holding one holds that entity, whatever the field is called."""
    return _ID_LIKE.match(value.strip()) is not None


def result_hits(view: ToolView, value: str, name: str | None = None) -> list[Hit]:
    """Leaves of earlier results equal to `value`. A value that is not an id (a number,
    a date, a word) counts only under a field called like the argument (`name`): a 1 in
    `available_seats` is no support for `total_baggages: 1`."""
    out: list[Hit] = []
    loose = is_id_like(value) or name is None
    for p in view.prior:
        res = p.call.result
        if isinstance(res, str):
            if _same(res, value) and loose:
                out.append(Hit(p, "", None, ()))
            continue
        for path, leaf, record, siblings in _walk(res, "", None, ()):
            if _same(leaf, value) and (loose or path.rsplit(".", 1)[-1] == name):
                out.append(Hit(p, path, record if isinstance(record, dict) else None,
                               tuple(siblings)))
    return out


def _descriptive(record: Mapping[str, Any], depth: int = 0) -> Iterator[tuple[str, str]]:
    for k, v in sorted(record.items()):
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            yield str(k), leaf_text(v)
        elif isinstance(v, dict) and depth < 1:
            for kk, vv in _descriptive(v, depth + 1):
                yield f"{k}.{kk}", vv


def _field(record: Mapping[str, Any], dotted: str) -> str | None:
    node: Any = record
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return None if isinstance(node, dict | list) else leaf_text(node)


_STOP = frozenset({"with", "from", "that", "this", "have", "your", "yes", "the", "and", "for"})
# field values that are answers, not names: a user's "yes" names no record
_ANSWER_WORDS = frozenset({"yes", "no", "true", "false", "none", "null", "n/a", "ok"})


def _field_mentions(view: ToolView, record: Mapping[str, Any], value: str
                    ) -> tuple[int, Span | None]:
    """How many of `record`'s fields the user named (a whole value, or a word of 4+
    letters of a longer one: "the kettle" names "Electric Kettle"), and the first span."""
    score, first = 0, None
    for _key, text in _descriptive(record):
        plain = _norm(text).strip()
        if _same(text, value) or len(plain) < 2 or plain in _ANSWER_WORDS:
            continue  # "insurance: yes" is not named by the user's "Yes"
        words = [text] + [w for w in re.findall(r"[A-Za-z]{4,}", text)
                          if w.lower() not in _STOP and _norm(w) != _norm(text)]
        for w in words:
            hit_span = None
            for u in reversed(view.users):
                hit = _mentions(u.text, w, record, value) \
                    if not w.isdigit() or len(w) >= 2 else None
                if hit is not None:
                    hit_span = Span(source=u.source, index=u.index, start=hit[0],
                                    end=hit[1], text=u.text[hit[0]:hit[1]])
                    break
            if hit_span is not None:
                score += 1
                first = first or hit_span
                break
    return score, first


def _named_fields(view: ToolView, record: Mapping[str, Any], value: str,
                  siblings: tuple[Mapping[str, Any], ...]) -> tuple[Span | None, bool]:
    """(span, wrong): the record is the one the user named (it has the most named fields
    among its siblings, at least one), or `wrong` when a sibling has strictly more."""
    mine, span = _field_mentions(view, record, value)
    best_other = max((_field_mentions(view, s, value)[0] for s in siblings), default=0)
    if mine > 0 and mine >= best_other:
        return span, False
    return None, best_other > mine


# a mention's distinguishing digits: "the card ending in 7334", "last four digits 7334"
_ENDING_DIGITS = re.compile(r"^\W*(?:\w+\W+){0,2}?(?:(?:ending|ends)\W+(?:in|with)|"
                            r"last (?:four|4)(?: digits)?(?:\W+(?:are|is|of))?)\W*(\d{2,})",
                            re.IGNORECASE)


def _digits(record: Mapping[str, Any] | None, value: str) -> list[str]:
    """Every run of digits in `value` and in the record's field values."""
    texts = [value] + ([t for _, t in _descriptive(record)] if record is not None else [])
    return [d for t in texts for d in re.findall(r"\d+", t)]


def names_other(text: str, end: int, record: Mapping[str, Any] | None, value: str) -> bool:
    """The mention ending at `end` carries digits ("credit card ending in 7334") that
    neither `value` nor its record ends with: it names another entity of that kind, so
    it neither grounds `value` nor counts as agreeing to it."""
    m = _ENDING_DIGITS.match(text[end:end + 48])
    if m is None:
        return False
    return not any(d.endswith(m.group(1)) for d in _digits(record, value))


def _mentions(text: str, t: str, record: Mapping[str, Any] | None, value: str
              ) -> tuple[int, int] | None:
    """`mention_at`, unless the mention's own digits point at another entity."""
    hit = mention_at(text, t)
    if hit is None or names_other(text, hit[1], record, value):
        return None
    return hit


def _agreed_after(view: ToolView, agent: Utterance) -> Utterance | None:
    """The user's message right after `agent`'s, when it agrees (a yes, or an
    instruction to go ahead)."""
    after = agent.index if agent.index is not None else -1
    nxt = next((u for u in view.users
                if (u.index if u.index is not None else 10**9) > after), None)
    if nxt is not None and (affirms(nxt.text) or _consents(nxt.text)):
        return nxt
    return None


def _agent_named_then_yes(view: ToolView, texts: list[str], value: str,
                          record: Mapping[str, Any] | None = None) -> bool:
    """The agent named one of `texts` (as `value` or its record, not qualified as another
    entity of the kind) and the user's next message agreed to it, without naming another
    one of the kind ("yes, use my credit card ending in 7334" picks that card)."""
    named = [t for t in texts if len(_norm(t).strip()) >= 3]
    for a in view.agents:
        if not any(_mentions(a.text, t, record, value) for t in named):
            continue
        reply = _agreed_after(view, a)
        if reply is None:
            continue
        if any((at := mention_at(reply.text, t)) is not None
               and names_other(reply.text, at[1], record, value) for t in named):
            continue
        return True
    return False


def _args_from_user(view: ToolView, call: ToolCall, ctx: TurnContext) -> bool:
    leaves_ = [leaf_text(v) for _, v in leaves(call.arguments)]
    return bool(leaves_) and all(_user_mention(view, t, ctx, None) is not None for t in leaves_)


def _result_span(hit: Hit) -> Span:
    text = json.dumps(hit.record, ensure_ascii=False, sort_keys=True)[:300] \
        if hit.record is not None \
        else leaf_text(hit.prior.call.result)[:300]
    return Span(source="tool_result", index=hit.prior.index, start=0, end=len(text), text=text,
                call=hit.prior.position, path=hit.path or None)


# ---------------------------------------------------------------------------------------------
# decisions


def _site(ctx: TurnContext, call: int | None, for_rule: bool = False) -> CallSite | None:
    """The committing call `call` of the turn; `for_rule` (the sites rules are judged at):
    a refused one or a hand-off with rules too."""
    for s in commit_sites(ctx) + (refused_sites(ctx) + handoff_sites(ctx) if for_rule else []):
        if s.index == call:
            return s
    return None


def decide_tool_uv(a: UVArgs, ctx: TurnContext) -> Decision:
    """Where an argument leaf comes from: the user's words, or a tool result about the
    entity the user referred to (docs/method.md)."""
    return _decide_uv(a, ctx, link=True)


def _decide_uv(a: UVArgs, ctx: TurnContext, link: bool) -> Decision:
    site = _site(ctx, a.call)
    if site is None or a.path is None:
        return Decision.abstain("the call is not in this turn")
    how = site.tool.grounding(a.path)
    view = tool_view(ctx, site)
    value = a.value
    said = _user_mention(view, value, ctx, a.slot if ctx.spec.slot(a.slot) else None)
    if said is not None and how != "result":
        return Decision(Outcome.FALSE, 1.0, f"the user said {said.text!r}", said)
    if how == "referred":
        return _referred(a, ctx, view, value)
    if how == "user":
        if _norm(value).strip() in ("0", "false", "no", "none"):
            return Decision(Outcome.FALSE, 0.8, f"{a.path} = {value!r} adds nothing the user "
                            "would have to ask for")
        if _agent_named_then_yes(view, [value], value):
            return Decision(Outcome.FALSE, 0.8, f"the agent proposed {value!r} and the user "
                            "agreed")
        return Decision(Outcome.TRUE, 0.8, f"{a.path} = {value!r} must come from the user, who "
                        "never said it")
    leaf_name = next((p for p in reversed(a.path.split(".")) if not p.isdigit()), a.path)
    hits = result_hits(view, value, leaf_name)
    wrong: Hit | None = None
    for hit in hits:
        rec = hit.record
        if rec is None:  # a scalar result (an id found by the user's name and zip)
            if _args_from_user(view, hit.prior.call, ctx):
                return Decision(Outcome.FALSE, 0.9, f"{hit.prior.call.name} returned it for "
                                "what the user gave", _result_span(hit))
            continue
        named, other = _named_fields(view, rec, value, hit.siblings)
        if named is not None:
            return Decision(Outcome.FALSE, 0.9, f"{hit.prior.call.name}'s result holds it in "
                            f"the record the user named ({named.text!r})", named)
        if not hit.siblings:
            return Decision(Outcome.FALSE, 0.9, f"the only record of its kind in "
                            f"{hit.prior.call.name}'s result", _result_span(hit))
        texts = [t for _, t in _descriptive(rec)]
        if _agent_named_then_yes(view, [value, *texts], value, rec):
            return Decision(Outcome.FALSE, 0.8, f"the agent named this record of "
                            f"{hit.prior.call.name}'s result and the user agreed",
                            _result_span(hit))
        if other:  # the user's words pick out a sibling record
            wrong = wrong or hit
    if said is not None:
        return Decision(Outcome.FALSE, 0.8, f"the user said {said.text!r}", said)
    if wrong is not None:
        return Decision(Outcome.TRUE, 0.8, f"{value!r} is in {wrong.prior.call.name}'s result, "
                        "but in a record the user did not refer to; the user named another one",
                        _result_span(wrong))
    linked = _sibling_link(a, ctx, site, view, value) if link else None
    if linked is not None:
        return linked
    if hits:
        return Decision.abstain(f"{value!r} is in an earlier result, but nothing ties that "
                                "record to what the user referred to")
    if _agent_named_then_yes(view, [value], value):
        return Decision(Outcome.FALSE, 0.8, f"the agent proposed {value!r} and the user agreed")
    norm = _norm(value).strip()
    slot = ctx.spec.slot(a.slot)
    if slot is not None and slot.type != "free":
        # a value of a closed set (a trip type, a cabin) the agent inferred: S1 cannot say
        return Decision.abstain(f"{value!r} is not in the log as written; a {slot.type} value "
                                "may be implied")
    if len(norm) >= 3 and not re.fullmatch(r"[\d.\s]+", norm) and how != "result":
        return Decision(Outcome.TRUE, 0.9, f"nothing in the log holds {value!r}: not the user's "
                        "words, not an earlier result")
    if how == "result":
        return Decision(Outcome.TRUE, 0.8, f"{a.path} must come from a tool result; none holds "
                        f"{value!r}")
    return Decision.abstain(f"{value!r} is not in the log as written (a computed or implied "
                            "value?)")


def _element(arguments: Mapping[str, Any], parts: Sequence[str]) -> Any:
    node: Any = arguments
    for part in parts:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _holds_both(view: ToolView, anchor: str, value: str) -> Hit | None:
    """An earlier read whose result has a record holding `anchor` and `value` (or holding
    `anchor`, the read having been asked for `value`: a flight search by date lists its
    flights without the date)."""
    for p in view.prior:
        asked = any(_same(v, value) for _, v in leaves(p.call.arguments))
        for path, leaf, record, siblings in _walk(p.call.result, "", None, ()):
            if not isinstance(record, dict) or not _same(leaf, anchor):
                continue
            if asked or any(_same(v, value) for v in record.values()):
                return Hit(p, path, record, tuple(siblings))
    return None


def _sibling_link(a: UVArgs, ctx: TurnContext, site: CallSite, view: ToolView, value: str,
                  ) -> Decision | None:
    """A leaf of a list element (a flight's `date`) is grounded by the element's id
    (its `flight_number`) when that id is grounded and an earlier result holds the two
    together: the agent copied the record the user chose, field by field. None when no
    sibling id links it."""
    assert a.path is not None
    parts = a.path.split(".")
    element = _element(site.call.arguments, parts[:-1]) if len(parts) > 1 else None
    if not isinstance(element, dict):
        return None
    for key, sib in sorted(element.items()):
        text = leaf_text(sib) if not isinstance(sib, dict | list) else ""
        if key == parts[-1] or not is_id_like(text):
            continue
        hit = _holds_both(view, text, value)
        if hit is None:
            continue
        path = ".".join([*parts[:-1], key])
        slot = mapped_slot(site.tool, path) or a.slot
        linked = _decide_uv(UVArgs(slot=slot, value=text, path=path, tool=a.tool,
                                   call=a.call), ctx, link=False)
        if linked.outcome is Outcome.FALSE:
            return Decision(Outcome.FALSE, min(linked.margin, 0.9),
                            f"{hit.prior.call.name}'s result lists it with {key} {text!r}, "
                            f"which is grounded ({linked.rationale})", _result_span(hit))
    return None


def _referred(a: UVArgs, ctx: TurnContext, view: ToolView, value: str) -> Decision:
    """`ground: referred`: the user must have chosen it — named it, named its record, or
    agreed to the agent naming it. Being the only record, or in a result, is not a choice
    (a payment method the policy makes the user pick)."""
    for hit in result_hits(view, value):
        if hit.record is None:
            continue
        named, _ = _named_fields(view, hit.record, value, hit.siblings)
        if named is not None:
            return Decision(Outcome.FALSE, 0.9, f"the user named this record "
                            f"({named.text!r})", named)
        texts = [t for k, t in _descriptive(hit.record) if not k.endswith("amount")]
        texts += _id_words(value)
        if _agent_named_then_yes(view, [value, *texts], value, hit.record):
            return Decision(Outcome.FALSE, 0.8, "the agent named it and the user agreed",
                            _result_span(hit))
    if _agent_named_then_yes(view, [value, *_id_words(value)], value):
        return Decision(Outcome.FALSE, 0.8, f"the agent proposed {value!r} and the user agreed")
    original = _original_payment(ctx, view, value, a.call)
    if original is not None:
        return original
    for u in reversed(view.users):
        for w in _id_words(value):
            at = _mentions(u.text, w, None, value)
            if at is not None:
                return Decision(Outcome.FALSE, 0.8, f"the user named its kind ({w!r})",
                                Span(source=u.source, index=u.index, start=at[0],
                                     end=at[1], text=u.text[at[0]:at[1]]))
    return Decision(Outcome.TRUE, 0.8, f"{a.path} = {value!r}: the user never chose it (not "
                    "named, not agreed to when the agent named it)")


# "my original payment method", "the same card", "the card I paid with": a reference to
# how the entity the call acts on was paid, which its record (a payment history) holds
_ORIGINAL = re.compile(
    r"\b(?:original|same|initial|previous)\s+(?:form of\s+|mode of\s+)?(?:payment|card|"
    r"credit card|gift card|method)|\b(?:card|method) (?:I|we) (?:originally )?(?:paid|used)\b",
    re.IGNORECASE)


def _chose_other(view: ToolView, since: Utterance, value: str) -> bool:
    """A user message from `since` on names another entity of `value`'s kind by its
    digits ("my credit card ending in 7334" when `value` is credit_card_4959530): the
    user's newest word on which one wins over an earlier reference."""
    start = -1 if since.index is None else since.index
    kinds = _id_words(value)
    for u in view.users:
        if (u.index if u.index is not None else 10**9) < start:
            continue
        for w in kinds:
            at = mention_at(u.text, w)
            if at is not None and names_other(u.text, at[1], None, value):
                return True
    return False


def _original_payment(ctx: TurnContext, view: ToolView, value: str, call: int | None
                      ) -> Decision | None:
    """The user referred to the original payment (said it, or agreed when the agent
    said it) and the record of the entity this call acts on holds `value`."""
    site = _site(ctx, call)
    if site is None:
        return None
    _, target = rule_bindings(ctx, site, view)
    if target is None or not any(_same(v, value) for _, v in leaves(target.call.result)):
        return None
    said = next((u for u in reversed(view.users) if _ORIGINAL.search(u.text)), None)
    if said is None:
        agent = next((a for a in reversed(view.agents) if _ORIGINAL.search(a.text)), None)
        said = None if agent is None else _agreed_after(view, agent)
    if said is None or _chose_other(view, said, value):
        return None
    m = _ORIGINAL.search(said.text)
    span = None if m is None else Span(source=said.source, index=said.index, start=m.start(),
                                       end=m.end(), text=m.group(0))
    return Decision(Outcome.FALSE, 0.8, f"the user referred to the original payment, and "
                    f"{target.call.name}'s record of what the call acts on holds {value!r}",
                    span if span is not None else _result_span_of(target))


def _result_span_of(p: PriorCall) -> Span:
    text = json.dumps(p.call.result, ensure_ascii=False, sort_keys=True)[:300]
    return Span(source="tool_result", index=p.index, start=0, end=len(text), text=text,
                call=p.position)


# the fields a rule reads: `target.cabin`, `results.get_user_details.membership`
_RULE_FIELD = re.compile(r"\b(target|result|results\.[A-Za-z_]\w*)\.([A-Za-z_]\w*)")


def rule_span(rule: ToolRule, bindings: Mapping[str, Any], target: PriorCall | None,
              view: ToolView, key: str | None = None, site: CallSite | None = None
              ) -> Span | None:
    """The facts a rule was decided on: the fields its `when` and `check` read from the
    record the call acts on (or from the latest result of the read they name), as a
    `{field: value}` record, with the field's path when it reads one. Shown as the
    support of the decision, it says *why* ("cabin: basic_economy, insurance: no"), not
    just which record; the target's `key` field comes first, to say which entity. A
    rule that reads no record field shows the target record."""
    fields: dict[str, list[str]] = {}
    for m in _RULE_FIELD.finditer(f"{rule.when or ''} {rule.check}"):
        fields.setdefault(m.group(1), [])
        if m.group(2) not in fields[m.group(1)]:
            fields[m.group(1)].append(m.group(2))
    for owner, names in fields.items():
        index: int | None
        if owner == "result":  # this call's own result (what the change charged)
            if site is None:
                continue
            index, position, record = None, site.index, bindings.get("result")
        else:
            if owner == "target":
                prior, record = target, bindings.get("target")
            else:
                tool = owner.removeprefix("results.")
                prior = next((p for p in reversed(view.prior) if p.call.name == tool
                              and p.call.result is not None), None)
                record = None if prior is None else prior.call.result
            if prior is None:
                continue
            index, position = prior.index, prior.position
        if not isinstance(record, dict):
            continue
        facts = {n: record[n] for n in names if n in record}
        if not facts:
            continue
        if owner in ("target", "result") and key is not None and key in record \
                and key not in facts:
            facts = {key: record[key], **facts}
        text = _facts_text(facts, key)
        return Span(source="tool_result", index=index, start=0, end=len(text), text=text,
                    call=position,
                    path=names[0] if len(names) == 1 and names[0] in facts else None)
    return None if target is None else _result_span_of(target)


def user_call_span(rule: ToolRule, ctx: TurnContext) -> Span | None:
    """For a rule over `user_calls` (a runbook step over what the user's phone showed):
    the user's newest device call the rule names, by tool name or by a string it looks
    for in a result ("Status Bar:"), as a `user_tool_result` span (`index`: the history
    entry, null for this turn's; `call`: its position in that entry's `user_tool_calls`)."""
    text = f"{rule.when or ''} {rule.check}"
    if "user_calls" not in text:
        return None
    words = {w for lit in re.findall(r'"([^"]+)"', text) for w in lit.split("|") if w}
    entries: list[tuple[int | None, tuple[ToolCall, ...]]] = [
        (None, ctx.turn.user_tool_calls),
        *((i, h.user_tool_calls) for i, h in reversed(list(enumerate(ctx.turn.history or ()))))]
    for index, calls in entries:
        for pos in range(len(calls) - 1, -1, -1):
            c = calls[pos]
            shown = c.result if isinstance(c.result, str) else json.dumps(c.result)
            if c.name in words or any(w in shown for w in words):
                body = f"{c.name}: {shown}"[:300]
                return Span(source="user_tool_result", index=index, start=0, end=len(body),
                            text=body, call=pos)
    return None


def _facts_text(facts: dict[str, Any], key: str | None, limit: int = 300) -> str:
    """The facts as JSON of at most `limit` characters, still JSON: the largest values
    (a list of flights) give way first, the entity's key and the short facts a rule
    turns on (cabin, insurance, status) stay."""
    facts = dict(facts)
    text = json.dumps(facts, ensure_ascii=False, sort_keys=True)
    while len(text) > limit and len(facts) > 1:
        drop = max((k for k in facts if k != key),
                   key=lambda k: len(json.dumps(facts[k], ensure_ascii=False)))
        del facts[drop]
        text = json.dumps(facts, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit]


def _id_words(value: str) -> list[str]:
    """The words of an id that say what it is: "gift_card_5634230" -> ["gift card"]."""
    words = " ".join(w for w in re.split(r"[_\W\d]+", value) if len(w) >= 3)
    return [words] if len(words) >= 4 and words.lower() != value.lower() else []


def decide_tool_iuv(a: IUVArgs, ctx: TurnContext) -> Decision:
    """The user's last word on a closed-set slot is not in the call: exact readings
    decide it (the compiler raises the criterion only when the call lacks the value).
    A preference ("the cheapest") is decided over the options the reads listed."""
    if a.source.startswith("tool_call:prefer:"):
        return _preference(a, ctx, a.source.removeprefix("tool_call:prefer:"))
    if a.source.startswith("tool_call:declined:"):
        return _declined_allowed(a, ctx)
    if a.source.startswith("tool_call:unfinished:"):
        return _unfinished_request(a, ctx)
    if a.confidence < EXACT:
        return Decision.abstain(f"the reading of {a.value!r} is not certain "
                                f"({a.confidence:.2f})")
    return Decision(Outcome.TRUE, a.confidence, f"the user last asked for {a.value!r} for "
                    f"{a.slot}; {a.tool} commits {a.state_after.get(a.slot)!r}")


def decide_tool_pc(a: PCArgs, ctx: TurnContext) -> Decision:
    if a.certainty == "tool_handoff":
        return _handoff(a, ctx)
    if a.certainty == "tool_claim":
        return Decision(Outcome.TRUE, 0.9, f"the agent confirms ({a.cue[:60]!r}) while "
                        f"{a.tool} was refused in this turn and nothing else committed")
    site = _site(ctx, a.call, for_rule=a.certainty == "tool_rule")
    if site is None:
        return Decision.abstain("the call is not in this turn")
    view = tool_view(ctx, site)
    if a.certainty == "tool_confirmation":
        return _confirmation(ctx, site)
    if a.certainty == "tool_count":
        return _targets(a, ctx, site)
    if a.certainty == "tool_order":
        read = (a.rule or "").removeprefix("after:")
        done = [p for p in view.prior if p.call.name == read]
        if done:
            return Decision(Outcome.FALSE, 1.0, f"{read} succeeded before the call")
        return Decision(Outcome.TRUE, 1.0, f"{site.call.name} was called before any successful "
                        f"{read}")
    rule = next((r for r in site.tool.rules if r.id == a.rule), None)
    if rule is None:
        return Decision.abstain(f"the spec has no rule {a.rule!r} for {site.call.name}")
    bindings, target = rule_bindings(ctx, site, view)
    judged = judge_rule(rule, bindings, site.call.name)
    if judged.value is None:
        return Decision.abstain(judged.reason)
    if not judged.applies:
        return Decision(Outcome.FALSE, 1.0, judged.reason)
    span = rule_span(rule, bindings, target, view,
                     None if site.tool.target is None else site.tool.target.result_key, site
                     ) or user_call_span(rule, ctx)
    if judged.value:
        return Decision(Outcome.FALSE, 1.0, f"rule {rule.id!r} holds", span)
    tried = " (the tool refused the call: the agent tried what the policy rules out)" if (
        site.call.error) else ""
    return Decision(Outcome.TRUE, 1.0, f"rule {rule.id!r} is false: "
                    f"{rule.message or rule.check}{tried}", span)


@dataclass(frozen=True)
class RuleJudgement:
    """A rule on one call: whether it applies (`when`), whether it holds (None: the log
    cannot say), and the reason when it does not apply or cannot be evaluated."""

    applies: bool
    value: bool | None
    reason: str = ""


def judge_rule(rule: ToolRule, bindings: Mapping[str, Any], tool: str) -> RuleJudgement:
    """`when`, then `check`, on the bindings of a call of `tool`. A rule that cannot be
    evaluated because a read it names never succeeded says so, not in CEL's words ("no
    matching overload for _?_:_")."""
    unread = [n for n in re.findall(r"\bresults\.([A-Za-z_]\w*)",
                                    f"{rule.when or ''} {rule.check}")
              if n not in bindings["results"]]
    why_unread = f"no successful {unread[0]} before {tool}" if unread else ""
    if not why_unread and not isinstance(bindings.get("result"), dict | list) and re.search(
            r"\bresult\.", f"{rule.when or ''} {rule.check}"):
        why_unread = f"{tool} returned no record (refused or empty) for `result` to show"
    if rule.when is not None:
        w = evaluate_rule(rule.when, bindings)
        if w.value is None:
            return RuleJudgement(True, None, f"cannot tell whether rule {rule.id!r} applies: "
                                 f"{why_unread or w.reason}")
        if not w.value:
            return RuleJudgement(False, True, f"rule {rule.id!r} does not apply ({rule.when})")
    r = evaluate_rule(rule.check, bindings)
    if r.value is None:
        return RuleJudgement(True, None, f"rule {rule.id!r} cannot be evaluated on this log: "
                             f"{why_unread or r.reason}")
    return RuleJudgement(True, r.value)


Option = tuple[Mapping[str, Any], ...]


def _options(call: ToolCall) -> list[Option]:
    """The options a read listed: each element a record, or a list of records. A field
    a record leaves out (or null) but the read was asked for is the read's argument: a
    search for flights on a date lists flights of that date."""
    def filled(rec: Mapping[str, Any]) -> Mapping[str, Any]:
        missing = {k: v for k, v in call.arguments.items() if rec.get(k) is None}
        return {**rec, **missing} if missing else rec

    out: list[Option] = []
    result = call.result
    for el in result if isinstance(result, list) else ():
        if isinstance(el, dict):
            out.append((filled(el),))
        elif isinstance(el, list) and el and all(isinstance(r, dict) for r in el):
            out.append(tuple(filled(r) for r in el))
    return out


def _option_key(pref: ToolPreference, option: Option, bindings: Mapping[str, Any]
                ) -> tuple[float | None, bool, str]:
    """(the option's key, whether it was available, why the key is unknown): the sum of
    `key` over its records, or with `over: option` `key` once over all of them."""
    total = 0.0
    available = True
    if pref.over == "option":
        k, why = evaluate_number(pref.key, {**bindings, "option": [dict(r) for r in option]})
        if k is None:
            return None, False, why
        total = k
    for rec in option:
        b = {**bindings, "item": dict(rec)}
        if pref.over == "item":
            k, why = evaluate_number(pref.key, b)
            if k is None:
                return None, False, why
            total += k
        if pref.available is not None:
            ok = evaluate_rule(pref.available, b)
            available = available and ok.value is True
    return total, available, ""


def _within(pref: ToolPreference, option: Option, limits: Sequence[TimeLimit]) -> bool:
    """The option keeps every time limit the user stated ("arrive before 7 am"): its first
    record's departure, its last record's arrival (`ToolPreference.times`). A time the
    option does not give is no reason to drop it."""
    for lim in limits:
        rec = option[-1] if lim.event == "arrive" else option[0]
        at = clock_minutes(rec.get(pref.times[lim.event]))
        if at is not None and not lim.admits(at):
            return False
    return True


def _describe(pref: ToolPreference, option: Option) -> str:
    return " + ".join(" ".join(leaf_text(r.get(f)) for f in pref.same if f in r) for r in option)


def _preference(a: IUVArgs, ctx: TurnContext, pref_id: str) -> Decision:
    """The committed option against every available option of the same read: the user
    asked for the lowest key ("the cheapest"), so a lower one is a failure — or, with
    `rank` n, for the n-th lowest distinct key ("the second cheapest") — unless the user
    named the committed option themselves."""
    site = _site(ctx, a.call)
    if site is None:
        return Decision.abstain("the call is not in this turn")
    pref = next((p for p in site.tool.prefer if p.id == pref_id), None)
    if pref is None:
        return Decision.abstain(f"the spec has no preference {pref_id!r} for {site.call.name}")
    items = [it for it in site.call.arguments.get(pref.items) or () if isinstance(it, dict)]
    view = tool_view(ctx, site)
    bindings, _ = rule_bindings(ctx, site, view)

    def picked(rec: Mapping[str, Any]) -> bool:
        return any(all(f in it and _same(rec.get(f), leaf_text(it[f])) for f in pref.same)
                   for it in items)

    limits = ([lim for lim in stated_time_limits(u.text for u in view.users)
               if lim.event in pref.times] if pref.times else [])
    groups: dict[str, list[tuple[PriorCall, Option]]] = {}
    for p in view.prior:
        if p.call.name in pref.options:
            key = json.dumps(p.call.arguments, sort_keys=True, default=str)
            opts = groups.setdefault(key, [])
            seen = [o for _, o in opts]
            opts.extend((p, o) for o in _options(p.call) if o not in seen)
    checked = 0
    for opts in groups.values():
        mine = [o for _, o in opts if all(picked(r) for r in o)]
        if not mine:
            continue
        chosen = max(mine, key=len)
        cost, _, why = _option_key(pref, chosen, bindings)
        if cost is None:
            return Decision.abstain(f"preference {pref.id!r}: the committed option's key "
                                    f"cannot be evaluated ({why})")
        checked += 1
        # the available options by key, within the time limits the user stated; the one
        # the user asked for is the one at the rank-th lowest distinct key (the committed
        # option's own key among them)
        keyed = [(k, p, o) for p, o in opts
                 for k, ok, _ in [_option_key(pref, o, bindings)] if k is not None and ok
                 and _within(pref, o, limits)]
        distinct = sorted({round(k, 6) for k, _, _ in keyed} | {round(cost, 6)})
        if distinct.index(round(cost, 6)) == pref.rank - 1:
            continue
        wanted = distinct[pref.rank - 1] if len(distinct) >= pref.rank else None
        best = next(((k, p, o) for k, p, o in sorted(keyed, key=lambda x: x[0])
                     if wanted is not None and abs(k - wanted) < 1e-6), None)
        if best is None:
            continue
        named = _user_named(view, chosen, pref)
        if named is not None:
            return Decision(Outcome.FALSE, 0.8, f"the user named the option themselves "
                            f"({named.text!r})", named)
        k, src, option = best
        text = json.dumps([{f: r.get(f) for f in pref.same} for r in option],
                          ensure_ascii=False, sort_keys=True)[:300]
        span = Span(source="tool_result", index=src.index, start=0, end=len(text), text=text,
                    call=src.position)
        return Decision(Outcome.TRUE, 0.9, f"the user asked for {a.value!r}"
                        f"{' (' + pref.message + ')' if pref.message else ''}: "
                        f"{_describe(pref, chosen)} has key {cost:g}, but "
                        f"{src.call.name} also listed {_describe(pref, option)} at {k:g}",
                        span)
    if not checked:
        return Decision.abstain(f"preference {pref.id!r}: the committed {pref.items} are in no "
                                f"result of {', '.join(pref.options)}")
    within = (" within the times the user stated (" + ", ".join(
        f"{lim.event} {'by' if lim.bound == 'upper' else 'from'} {lim.text[lim.start:lim.end]}"
        for lim in limits) + ")") if limits else ""
    if pref.rank == 1:
        return Decision(Outcome.FALSE, 1.0, f"no available option the reads listed{within} "
                        f"has a lower {pref.id} key than the committed one")
    return Decision(Outcome.FALSE, 1.0, f"the committed option has the {pref.id} key the "
                    f"user asked for among the available options the reads listed{within}")


def _user_named(view: ToolView, option: Option, pref: ToolPreference) -> Span | None:
    """A user message naming an id-like field of the option (a flight number)."""
    for rec in option:
        for f in pref.same:
            v = leaf_text(rec.get(f)) if rec.get(f) is not None else ""
            if not is_id_like(v):
                continue
            for u in reversed(view.users):
                at = mention_at(u.text, v)
                if at is not None:
                    return Span(source=u.source, index=u.index, start=at[0], end=at[1],
                                text=u.text[at[0]:at[1]])
    return None


def rule_bindings(ctx: TurnContext, site: CallSite, view: ToolView
                  ) -> tuple[dict[str, Any], PriorCall | None]:
    """The names a CEL rule sees for this call (contracts/tool_rules.py)."""
    latest: dict[str, Any] = {}
    for p in view.prior:
        if p.call.result is not None:
            latest[p.call.name] = p.call.result
    target: PriorCall | None = None
    t = site.tool.target
    if t is not None:
        want = site.call.arguments.get(t.arg)
        if want is not None:
            # the entity as last seen: a read of it, or a committed change that returned it
            # (a cabin upgrade before a flight change makes the new cabin the one that counts)
            for p in reversed(view.prior):
                res = p.call.result
                if (p.call.name in t.read or ctx.spec.tool_workflows(p.call.name)) \
                        and isinstance(res, dict) \
                        and _same(res.get(t.result_key), leaf_text(want)):
                    target = p
                    break
    every: dict[str, list[Any]] = {}
    for p in view.prior:
        if p.call.result is not None:
            every.setdefault(p.call.name, []).append(p.call.result)
    bindings: dict[str, Any] = {
        "args": dict(site.call.arguments),
        "results": latest,
        "calls": [{"name": p.call.name, "arguments": dict(p.call.arguments),
                   "result": p.call.result} for p in view.prior],
        "context": dict(ctx.spec.context),
        "target": None if target is None else _as_written(
            target, bool(ctx.spec.tool_workflows(target.call.name))),
        "reads": every,
        "result": site.call.result,
        "transcript": transcript(ctx),
        "user_calls": [{"name": c.name, "arguments": dict(c.arguments), "result": c.result}
                       for c in [*(c for h in ctx.turn.history or ()
                                   for c in h.user_tool_calls), *ctx.turn.user_tool_calls]],
    }
    return bindings, target


def _as_written(target: PriorCall, committed: bool) -> Any:
    """The entity as a committed change left it: the record the call returned, with the
    call's own scalar arguments over the fields they name (some backends return the
    record as it was before the change: a cabin upgrade still reads the old cabin)."""
    rec = target.call.result
    if not committed or not isinstance(rec, dict):
        return rec
    over = {k: v for k, v in target.call.arguments.items()
            if k in rec and not isinstance(v, dict | list)}
    return {**rec, **over} if over else rec


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "text": text, "amounts": money_amounts(text),
            "quoted": money_amounts(text, quoted=True)}


# the last turn's transcript: every rule of every call of a turn binds the same one, and
# reading the amounts of the whole history again for each rule cost more than the rules
_LAST_TRANSCRIPT: list[tuple[Turn, list[dict[str, Any]]]] = []


def transcript(ctx: TurnContext) -> list[dict[str, Any]]:
    """The conversation up to this turn's user message, oldest first: `{role, text,
    amounts, quoted}` (`amounts`: the money amounts the message states, as doubles;
    `quoted`: those it presents as a charge, refund, cost or difference). Built once per
    turn; callers must not change it (CEL reads a converted copy)."""
    if _LAST_TRANSCRIPT and _LAST_TRANSCRIPT[0][0] is ctx.turn:
        return _LAST_TRANSCRIPT[0][1]
    out = _transcript(ctx)
    _LAST_TRANSCRIPT[:] = [(ctx.turn, out)]
    return out


def _transcript(ctx: TurnContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for h in ctx.turn.history or ():
        if h.user:
            out.append(_message("user", h.user))
        if h.agent:
            out.append(_message("agent", h.agent))
    out.append(_message("user", ctx.turn.user))
    return out


def _targets(a: PCArgs, ctx: TurnContext, site: CallSite) -> Decision:
    """The distinct targets `site`'s tool acted on since the user's count statement,
    through this call, against the count ("both" = 2)."""
    t = site.tool.target
    found = count_statement(ctx)
    if t is None or found is None:
        return Decision.abstain("no count statement or no target for this tool")
    n, _, _, index = found
    hist = ctx.turn.history or ()
    calls = [c for j, h in enumerate(hist) if index is not None and j >= index
             for c in h.tool_calls]
    calls += list((ctx.turn.tool_calls or ())[:site.index + 1])
    ids = list(dict.fromkeys(leaf_text(c.arguments.get(t.arg)) for c in calls
                             if c.name == site.call.name and not c.error
                             and c.arguments.get(t.arg) is not None))
    if len(ids) > n:
        return Decision(Outcome.TRUE, 0.85, f"the user asked for {a.cue!r} ({n}); "
                        f"{site.call.name} has now acted on {len(ids)}: {', '.join(ids)}")
    return Decision(Outcome.FALSE, 0.85, f"{len(ids)} of the {n} the user asked for")


def _handoff(a: PCArgs, ctx: TurnContext) -> Decision:
    """A hand-off of a request a committing tool serves (the compiler raises it only when
    the log shows the request, the hand-off, and neither an attempt nor a refusal) is a
    failure, unless a `handoff` rule of that tool is false for an entity the reads
    returned: the policy sends that case to a human."""
    requested = (a.rule or "").removeprefix("handoff:")
    for wf in ctx.spec.workflows.values():
        ts = wf.tools.get(requested)
        if ts is None or ts.target is None or not any(r.handoff for r in ts.rules):
            continue
        index = a.call if a.call is not None else 0
        view = tool_view(ctx, CallSite(index, ToolCall(name=requested), wf, ts))
        stated = stated_arguments(ctx, wf, ts)
        for want in read_entities((p.call for p in view.prior), ts.target):
            bindings, target = _probe(ctx, view, requested, wf, ts, index, want, stated)
            for rule in (r for r in ts.rules if r.handoff):
                judged = judge_rule(rule, bindings, requested)
                if judged.applies and judged.value is False:
                    return Decision(Outcome.FALSE, 1.0, f"the policy sends this to a human: "
                                    f"rule {rule.id!r} is false for {want!r} "
                                    f"({rule.message or rule.check})",
                                    rule_span(rule, bindings, target, view,
                                              ts.target.result_key))
        break
    # the reads the agent made before it are said too: "without an attempt" read as if
    # the agent had looked nothing up (τ²-bench airline whissle task 7 reads both
    # reservations, then transfers)
    made = [c for h in ctx.turn.history or () for c in h.tool_calls]
    made += [c for c in ctx.turn.tool_calls or () if c.name != a.tool]
    called = list(dict.fromkeys(c.name for c in made))
    looked = f" (it had called {', '.join(called)})" if called else ""
    return Decision(Outcome.TRUE, 0.9, f"the user asked for {a.cue!r}, a request for "
                    f"{requested}, and {a.tool} handed the user over without calling "
                    f"{requested} or declining the request{looked}")


def _probe(ctx: TurnContext, view: ToolView, tool: str, workflow: Workflow, spec: ToolSpec,
           index: int, want: str, stated: Mapping[str, str]
           ) -> tuple[dict[str, Any], PriorCall | None]:
    """The rule bindings of a call the agent did not make: `tool` on the entity `want` at
    position `index` of the turn (a declined or handed-off request judged as if it had
    been made), with the arguments the user stated for it (`stated_arguments`, read once
    by the caller for every entity), and the read record of that entity."""
    assert spec.target is not None
    arguments: dict[str, Any] = {**stated, spec.target.arg: want}
    site = CallSite(index, ToolCall(name=tool, arguments=arguments), workflow, spec)
    return rule_bindings(ctx, site, view)


def _declined_allowed(a: IUVArgs, ctx: TurnContext) -> Decision:
    """The declined action as a call (`{target.arg: entity}`) against every rule of its
    tool: one false rule makes the refusal right; all true make it a failure (the policy
    allowed what the user asked for); a rule the log cannot evaluate (an argument only a
    real call would carry) abstains."""
    d = next((x for x in declined_actions(ctx) if x.tool == a.tool), None)
    if d is None or d.spec.target is None:
        return Decision.abstain("the declined action is not in this turn")
    probe = CallSite(len(ctx.turn.tool_calls or ()), ToolCall(name=d.tool), d.workflow,
                     d.spec)
    view = tool_view(ctx, probe)
    # the entity the user meant: one the user named by id, then one the declining
    # message names by id (what the agent refused), then the read record with the most
    # fields the user named
    scored: list[tuple[int, str]] = []
    for cand in d.candidates:
        rec = next((p.call.result for p in reversed(view.prior)
                    if p.call.name in d.spec.target.read and isinstance(p.call.result, dict)
                    and _same(p.call.result.get(d.spec.target.result_key), cand)), None)
        if rec is not None:
            said = _user_mention(view, cand, ctx, None) is not None
            refused = mention_at(ctx.turn.agent, cand) is not None
            scored.append((_field_mentions(view, rec, cand)[0] + 100 * said + 50 * refused,
                           cand))
    if not scored:
        return Decision.abstain(f"no read of what {d.tool} would act on")
    best = max(n for n, _ in scored)
    meant = [c for n, c in scored if n == best]
    # which entity the user meant may stay open; the answer need not: declining is right
    # when a rule is false for every entity they may have meant, wrong when all hold
    stated = stated_arguments(ctx, d.workflow, d.spec)
    judged = [_declined_one(ctx, d, probe, view, want, stated) for want in meant]
    if len({j.outcome for j in judged}) == 1:
        if len(meant) == 1 or judged[0].outcome is Outcome.ABSTAIN:
            return judged[0]
        j = judged[0]
        return Decision(j.outcome, j.margin, f"the same for each entity the user may have "
                        f"meant ({', '.join(meant)}); {j.rationale}", j.evidence)
    return Decision.abstain(f"cannot tell which of {', '.join(meant)} the user meant, and "
                            "the policy's answer differs between them")


def _declined_one(ctx: TurnContext, d: Declined, probe: CallSite, view: ToolView,
                  want: str, stated: Mapping[str, str]) -> Decision:
    """The declined action on one entity, against every rule of its tool: a false rule
    decides, wherever it stands in the list; a rule the request cannot settle (it reads
    an argument the user never stated, or the result of a call never made) abstains only
    when no rule is false."""
    assert d.spec.target is not None
    bindings, target = _probe(ctx, view, d.tool, d.workflow, d.spec, probe.index, want,
                              stated)
    if target is None:
        return Decision.abstain(f"no read of {want!r} to judge {d.tool} against")
    span = _result_span_of(target)
    open_reason = ""
    for rule in d.spec.rules:
        judged = judge_rule(rule, bindings, d.tool)
        if judged.value is None:
            unstated = sorted(rule.args_read - set(bindings["args"]))
            open_reason = open_reason or (
                f"rule {rule.id!r} reads {', '.join('args.' + n for n in unstated)}, which "
                "the user did not state for the request" if unstated else judged.reason)
        elif not judged.value:
            return Decision(Outcome.FALSE, 1.0, f"declining was right: rule {rule.id!r} is "
                            f"false for {want!r} ({rule.message or rule.check})",
                            rule_span(rule, bindings, target, view,
                                      d.spec.target.result_key))
    if open_reason:
        return Decision.abstain(f"for the declined {d.tool}: {open_reason}")
    return Decision(Outcome.TRUE, 0.85, f"the user asked for {d.tool} on {want!r}; every "
                    f"rule of the policy holds for it, and the agent declined ({d.cue!r})",
                    span)


def _unfinished_request(a: IUVArgs, ctx: TurnContext) -> Decision:
    """The compiler raises the criterion only where the log shows it: the user's newest
    request for the tool, no successful call of it after, no refusal or hand-off."""
    u = next((x for x in unfinished_requests(ctx) if x.tool == a.tool), None)
    if u is None:
        return Decision.abstain("the request is not open on this turn")
    where = "in the last message" if u.index is None else f"at turn {u.index}"
    return Decision(Outcome.TRUE, 0.8, f"the user asked for {u.cue!r} ({where}); the "
                    f"conversation ends with no successful {a.tool} call after it, and the "
                    "agent neither declined nor handed over",
                    Span(source=u.source, index=u.index, start=u.start, end=u.end, text=u.cue))


def _refused_before(ctx: TurnContext, site: CallSite) -> bool:
    """An earlier call of the same tool in the conversation was refused (a payment method
    not found, no seats): the action was asked for before this retry."""
    earlier = [c for h in ctx.turn.history or () for c in h.tool_calls]
    earlier += list((ctx.turn.tool_calls or ())[:site.index])
    return any(c.error and c.name == site.call.name for c in earlier)


def _target_of(site: CallSite) -> str | None:
    t = site.tool.target
    v = None if t is None else site.call.arguments.get(t.arg)
    return None if v is None else leaf_text(v)


def _retried_with(ctx: TurnContext, site: CallSite) -> str | None:
    """The refused tool this call is retried with: its own earlier refused attempt, or,
    for a call made together with a retry, the retried tool. An earlier successful
    committing call of this turn on the same entity may be a retry of a refused attempt
    (the flight change the user confirmed with its bags was refused for the payment; "use
    the gift card ..." carries the flight change and the bags on that reservation)."""
    if _refused_before(ctx, site):
        return site.call.name
    mine = _target_of(site)
    if mine is None:
        return None
    return next((s.call.name for s in commit_sites(ctx) if s.index < site.index
                 and _target_of(s) == mine and _refused_before(ctx, s)), None)


def _confirmation(ctx: TurnContext, site: CallSite) -> Decision:
    user = ctx.turn.user
    hist = ctx.turn.history or ()
    asked = hist[-1].agent if hist else ""
    yes = affirms(user)
    read_back = _READ_BACK.search(asked) is not None
    if yes is not None:
        g = 1 if yes.lastindex else 0  # the yes word itself, not the punctuation before it
        span = Span(source="user", start=yes.start(g), end=yes.end(g), text=yes.group(g))
        if "?" in asked or read_back:
            return Decision(Outcome.FALSE, 1.0, "the user said yes to the agent's question "
                            "just before the call", span)
        return Decision(Outcome.FALSE, 0.7, "the user said yes just before the call", span)
    if read_back:
        m = _consents(user)
        if m is not None:
            span = Span(source="user", start=m.start(1), end=m.end(1), text=m.group(1))
            return Decision(Outcome.FALSE, 0.8, "the user told the agent to carry out the "
                            "action it had read back", span)
    retried = _retried_with(ctx, site)
    if retried is not None:
        m = _consents(user)
        if m is not None:  # a retry: the user supplies what the refused attempt lacked
            span = Span(source="user", start=m.start(1), end=m.end(1), text=m.group(1))
            return Decision(Outcome.FALSE, 0.8, f"the user told the agent to carry on after "
                            f"an earlier {retried} was refused", span)
    text = user[:200]
    return Decision(Outcome.TRUE, 0.85, f"no explicit yes from the user before {site.call.name}",
                    Span(source="user", start=0, end=len(text), text=text))
