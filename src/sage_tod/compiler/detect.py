"""What the agent does in a_t: which slots it requests, whether it confirms.

When the agent exposes `agent_acts` they are used as given. Otherwise both are
read from the text, sentence by sentence. Detection is deliberately
conservative: offers ("Would you like me to book it?") are not requests, and a
confirmation must be a statement, not a question and not a refusal. A
confirmation that is only implied is marked as such, so S1 abstains on it
rather than guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sage_tod.compiler.cues import cue_tokens, slot_cues
from sage_tod.contracts.spec import Derived, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.normalize import basic_tokens, fold, spellings, token_text, tokens_with_spans
from sage_tod.text.sentences import sentences

_REQUEST_OPENERS = re.compile(
    r"^\s*(please\s+(tell|give|provide|let|share|confirm)|could you\s+(tell|give|provide|let|"
    r"share)|can you\s+(tell|give|provide|let|share)|may i (have|ask|get)|can i (have|get|ask)|"
    r"i('ll| will)? need\b|i('d| would) need\b|let me know)", re.IGNORECASE)
_OFFER_OPENERS = re.compile(
    r"^\s*(would you like (me )?to|shall i|should i|do you want me to|can i help|how can i help|"
    r"is there anything|anything else|can i do anything|would you like anything|"
    r"can i assist|may i help|do you need anything|would that be|does that (work|sound)|"
    r"is that (ok|okay|alright|fine|correct|right)|will that)", re.IGNORECASE)
_INTERROGATIVES: dict[str, tuple[str, ...]] = {
    "how many": ("number",),
    "how long": ("number",),
    "what time": ("time",),
    "when": ("time", "date"),
    "what day": ("date",),
    "which day": ("date",),
    "what date": ("date",),
}
# each interrogative as a word pattern, compiled once (not per sentence)
_INTERROGATIVE_RES = tuple((re.compile(rf"\b{phrase}\b"), types)
                           for phrase, types in _INTERROGATIVES.items())
# every interrogative holds "how" or "wh": a sentence with neither is searched for none
# of them (seven scans of the sentence spared, each tried at every position)
_INTERROGATIVE_SCREEN = re.compile("how|wh")
_STRONG_CONFIRM = [
    re.compile(p) for p in (
        r"\b(i|we)\s*(have|'ve|ve)\s+(now\s+|successfully\s+|just\s+|gone ahead and\s+)?"
        r"(booked|reserved|confirmed|scheduled|arranged|made)\b",
        r"\b(is|are|has been|have been|was|were)\s+(now\s+|all\s+|successfully\s+)?"
        r"(booked|reserved|confirmed|scheduled|arranged)\b",
        r"\b(booking|reservation|order)\s+(is|was|has been)\s+(now\s+)?"
        r"(successful|complete|completed|confirmed|made|done|placed)\b",
        r"\b(reference|confirmation|booking)\s+(number|code|no|#)\b",
        r"\byou('re| are)\s+all\s+set\b",
        r"\ball booked\b",
        r"\b(booking|reservation) confirmed\b",
    )
]
# A word one of which every match of `_STRONG_CONFIRM` and `_IMPLIED_CONFIRM` contains
# (each alternative of theirs holds one): a sentence without any is searched no further
_CONFIRM_WORDS = re.compile(r"book|reserv|confirm|schedul|arrang|made|order|reference|set|"
                            r"done|taken care|good to go|way|going ahead")
_IMPLIED_CONFIRM = re.compile(
    r"(?=[abcdgiort])"  # its first letters (test_round16_screens)
    r"\b(booked|reserved|confirmed|done|taken care of|all set|good to go|on (its|it's) way|"
    r"i('ll| will) (go ahead and )?(book|reserve)|going ahead)\b")
# "I will book a time later", "I'll book it once you decide": a promise, not a booking
_DEFERRAL = re.compile(r"\b(later|once you|when you|after you|if you|as soon as)\b")
# (the look-ahead lists the first letters of the words: a necessary condition, there to
# be fast; tests/test_round15_screens.py)
_REFUSAL = re.compile(
    r"(?=[nucfsawi])\b(not|n't|unable|cannot|can't|unfortunately|unsuccessful|failed|fail|"
    r"no availability|fully booked|sold out|already booked|couldn't|could not|wasn't|isn't)\b")
# a booking announced, not done ("i will book it for you"), and words of one done
_PROMISE = re.compile(r"\b(i will|i'll|i can|i could|let me|shall i|should i|"
                      r"would you like me to|do you want me to)\s+(go ahead and\s+)?"
                      r"(book|reserve|make)\b", re.IGNORECASE)
_DONE = re.compile(r"\b(booked|reserved|confirmed|successful|reference|ref)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Request:
    """A request for one slot, or for one of several when the wording is ambiguous."""

    candidates: tuple[str, ...]
    start: int
    end: int
    source: Literal["agent_acts", "text"]


@dataclass(frozen=True)
class Confirmation:
    """The agent confirms the workflow; `certainty` says how it was detected."""

    certainty: Literal["agent_acts", "cue", "implied"]
    start: int
    end: int
    cue: str


def _is_request_sentence(sentence: str) -> bool:
    if _OFFER_OPENERS.match(sentence):
        return False
    return sentence.rstrip().endswith("?") or bool(_REQUEST_OPENERS.match(sentence))


def detect_requests(turn: Turn, wf: Workflow) -> list[Request]:
    """Slots the agent asks the user for in a_t."""
    text = turn.agent
    if turn.agent_acts is not None:
        out = []
        for slot in turn.agent_acts.request:
            if slot in wf.slots:
                s, e = _cue_span(text, slot, wf)
                out.append(Request((slot,), s, e, "agent_acts"))
        return out
    return requests_in_text(text, wf)


def requests_in_text(text: str, wf: Workflow) -> list[Request]:
    """Slots an agent's utterance asks for, read from its words (`detect_requests`
    without dataset acts; the extractor reads the last agent turn's with it)."""
    cues = slot_cues(wf)
    found: list[Request] = []
    for sent in sentences(text):
        s, e, sentence = sent.start, sent.end, sent.text
        if not _is_request_sentence(sentence):
            continue
        folded = fold(sentence)
        toks = cue_tokens(sentence)
        hits = cues.slots_for(toks)
        for pattern, types in (_INTERROGATIVE_RES if _INTERROGATIVE_SCREEN.search(folded)
                               else ()):
            if pattern.search(folded):
                for spec in wf.slots.values():
                    if spec.type in types:
                        hits[spec.name] = hits.get(spec.name, 0) + 1
        if not hits:
            continue
        # A sentence that already names a value of a slot proposes it ("a table
        # for Friday?"), it does not ask for it.
        hits = _unnamed(sentence, hits, wf)
        if not hits:
            continue
        # slots named by a cue of their own are separate requests ("what time and for
        # how many people?"); otherwise the best-scoring slots form one ambiguous request
        unique = sorted(sl for sl in cues.unique_hits(toks) if sl in hits)
        if unique:
            found.extend(Request((slot,), s, e, "text") for slot in unique)
            continue
        best = max(hits.values())
        top = tuple(sorted(sl for sl, n in hits.items() if n == best))
        found.append(Request(top, s, e, "text"))
    return found


@dataclass(frozen=True)
class _AgentTables:
    """Per workflow (`_TABLES`): each listed slot's value forms as folded token strings
    padded with spaces (what `_names_a_value` looks for), and the confirmation cues'
    tokens; both were rebuilt for every agent sentence."""

    value_forms: dict[str, tuple[str, ...]]
    confirmation_cues: tuple[tuple[str, ...], ...]  # the non-empty ones
    # every spelling of every cue's first token (`spellings`): a sentence whose
    # `token_text` holds none says no cue
    cue_needles: tuple[str, ...]

    @staticmethod
    def build(wf: Workflow) -> _AgentTables:
        forms = {name: tuple(f" {' '.join(basic_tokens(f))} " for v in spec.values
                             for f in spec.surface_forms(v))
                 for name, spec in wf.slots.items() if spec.values}
        cues = tuple(c for c in (tuple(basic_tokens(c)) for c in wf.confirmation_cues) if c)
        needles = tuple(dict.fromkeys(sp for cue in cues for sp in spellings(cue[0])))
        return _AgentTables(forms, cues, needles)


_TABLES: Derived[Workflow, _AgentTables] = Derived("detect.agent_tables", _AgentTables.build)


def agent_tables(wf: Workflow) -> _AgentTables:
    """The workflow's agent-turn tables, built the first time they are asked for."""
    return _TABLES.of(wf)


def _unnamed(sentence: str, hits: dict[str, int], wf: Workflow) -> dict[str, int]:
    """`hits` without the slots `sentence` names a value of (`_names_a_value`), the
    sentence tokenised once for all of them, and only when one has values to name."""
    forms = _TABLES.of(wf).value_forms
    if not any(forms.get(slot) for slot in hits):
        return dict(hits)
    joined = f" {' '.join(basic_tokens(sentence))} "
    return {slot: n for slot, n in hits.items()
            if not _names_a_value(sentence, slot, wf, joined)}


def _names_a_value(sentence: str, slot: str, wf: Workflow, joined: str | None = None
                   ) -> bool:
    """Does `sentence` name a value of `slot`? `joined` is the sentence's tokens joined
    and padded with spaces, when the caller has them already (the same string for
    every slot asked about)."""
    forms = _TABLES.of(wf).value_forms.get(slot)
    if not forms:
        return False
    if joined is None:
        joined = f" {' '.join(basic_tokens(sentence))} "
    return any(f in joined for f in forms)


def _cue_span(text: str, slot: str, wf: Workflow) -> tuple[int, int]:
    """Best-effort span in a_t for an act-declared request: the sentence naming the slot."""
    cues = slot_cues(wf)
    for sent in sentences(text):
        if slot in cues.slots_for(cue_tokens(sent.text)):
            return sent.start, sent.end
    return 0, len(text)


def detect_confirmation(turn: Turn, wf: Workflow) -> Confirmation | None:
    """Whether a_t confirms the workflow, and how sure the detection is."""
    text = turn.agent
    if turn.agent_acts is not None and turn.agent_acts.confirm is not None:
        if not turn.agent_acts.confirm:
            return None
        span = _confirmation_span(text, wf)
        s, e = span[:2] if span else (0, len(text))
        return Confirmation("agent_acts", s, e, text[s:e])
    span = _confirmation_span(text, wf)
    if span is None:
        return None
    s, e, strong = span
    return Confirmation("cue" if strong else "implied", s, e, text[s:e])


def promised_booking(text: str) -> str | None:
    """The words by which a_t announces a booking it has not made ("I will book it for
    you", "shall I reserve"), when a_t reports none done (no "booked", "reference", ...);
    else None.

    An implied confirmation in such a turn confirms nothing: the NLI model reads "I
    will book it" as "something has been booked", and S2 used to be the only stage that
    knew better, so without S2 the promise was left open. S1 decides it now (and S2, for
    a cascade without S1, reads the same rule from here).
    """
    promise = _PROMISE.search(text)
    if promise is None or _DONE.search(text):
        return None
    return promise.group()


def _confirmation_span(text: str, wf: Workflow) -> tuple[int, int, bool] | None:
    implied: tuple[int, int, bool] | None = None
    tables = _TABLES.of(wf)
    cue_tokens, needles = tables.confirmation_cues, tables.cue_needles
    for sent in sentences(text):
        s, sentence = sent.start, sent.text
        if sentence.rstrip().endswith("?"):
            continue
        folded = fold(sentence)
        if _REFUSAL.search(folded):
            continue
        # a cue's first token is spelt in the sentence's `token_text` as one of its
        # `spellings` wherever the cue is said: a sentence with none is not tokenised
        raw = token_text(sentence)
        if any(sp in raw for sp in needles):
            toks = tokens_with_spans(sentence)
            words = tuple(t for t, _, _ in toks)
            for cue in cue_tokens:
                n = len(cue)
                for i in range(len(words) - n + 1):
                    if words[i:i + n] == cue:
                        return s + toks[i][1], s + toks[i + n - 1][2], True
        if _CONFIRM_WORDS.search(folded) is None:
            continue
        for pat in _STRONG_CONFIRM:
            m = pat.search(folded)
            if m:
                return s + m.start(), s + m.end(), True
        m = _IMPLIED_CONFIRM.search(folded)
        if m and implied is None and not _DEFERRAL.search(folded):
            implied = (s + m.start(), s + m.end(), False)
    return implied
