"""u_t read once: the one analysis of a user turn that every extractor reader shares.

The extractor's readers (values the state records, categorical forms, times,
counts, dates, places, people, descriptors, typed names, waivers, offers) each
used to rebuild the cleaned states from the `Turn` (`Turn.after()`, which folds
every value to test `is_unset`) and to ask the text layer again for the same
utterance's sentences, clause marks, clock times and dates, each request
handing out a fresh copy from a process-wide memo; and the extractor computed
its own per-sentence flags (questions about an entity, searching questions) and
clause starts beside them. `UserTurn` holds all of it for one turn: the states
as the turn context built them (or built once here), and each reading of the
text computed the first time a reader or the resolver asks, and kept. It lives
as long as one `extract_user_values` call, so it needs no bound. Every reader
takes it (`UserTurn.of` reads a bare `Turn` for callers outside the extractor).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping

from sage_tod.compiler.cues import cue_tokens, slot_cues
from sage_tod.compiler.detect import requests_in_text
from sage_tod.compiler.entity_words import EntityWords
from sage_tod.compiler.mentions import Mention
from sage_tod.contracts.spec import SpecBundle, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.dates import DateMention, find_dates
from sage_tod.text.match import find_value, is_negated, text_tokens
from sage_tod.text.normalize import Token, basic, tokens_with_spans
from sage_tod.text.sentences import Sentence, sentences
from sage_tod.text.times import TimeMention, find_times

# a negation does not reach past a clause boundary ("No, the 8th.", "not Friday, Saturday")
CLAUSE_END = re.compile(r"[,;:.!?]")

# a question among the options the agent listed ("Do either of those have free parking?",
# "Are any of them in the moderate price range?"): a search, its values constraints
# (MultiWOZ validation: 21 of 25 such questions add a value to the gold state); "all of
# them" and "both of them" ask about the options, they do not narrow them
_AMONG = (r"(?:do|does|are|is|have|has)\s+(?:any|either|one|some)\s+of\s+"
          r"(?:them|those|these|the)\b")
# Sentences that ask about an entity rather than state a constraint.
_QUESTION_ABOUT_ENTITY = re.compile(
    r"^\s*(is|are|does|do|did|was|were|what'?s|what is|what are|could you tell me|can you tell me)"
    r"\b.*\?\s*$", re.IGNORECASE,
)
# ... but "is there / are there any ... in Phoenix?" searches, it does not verify
_SEARCH_QUESTION = re.compile(
    r"^\s*(is there|are there|is anything|are any|is anyone|do you have|does anyone|"
    r"do they have any)\b|^\s*" + _AMONG, re.IGNORECASE)
# "what's the weather in Cotati on the 7th?": asks about a value, yet the date and the
# place it names are constraints of the search
_WHAT_QUESTION = re.compile(r"^\s*(what'?s|what is|what are|what will|could you tell me|"
                            r"can you tell me)\b", re.IGNORECASE)
# "Are there any cheap guesthouses in the north?": a search for entities with these
# values, so its values are constraints, stated as surely as in a statement; so is a
# search put as a question about what exists ("Is there one that leaves after 11:15?",
# "Do you know of any afghan restaurants in the centre?", "Can you tell me if there are
# any cinemas in the west part of town?") and a question whether a booking can be had
# ("Is it available for a 5 night stay for 2 on Wednesday?", "Do they have room on that
# same day at 14:45?"), whose values are the booking's
_SEARCH_FOR_ENTITIES = re.compile(
    r"^\s*(?:are there any|are there|is there any|is there an?|do you have any|do you have an?"
    r"|is there (?:one|anything|something|anywhere|somewhere)"
    r"|do you have (?:one|anything|something|anywhere)|do you know of (?:any|an?)"
    r"|(?:can|could) you (?:tell me|check|see|find out|let me know) (?:if|whether) there"
    r" (?:is|are)"
    r"|(?:is|would) (?:it|that|this|there) (?:be )?available"
    r"|(?:do|does|would) (?:they|you|it) have (?:room|availability|space|a table|a room)"
    r"|are any|" + _AMONG + r")\b", re.IGNORECASE)
# a wh-question or a request to be told that asks what exists, not about the entity at
# hand: "What is there to do in the Centre part of Cambridge?", "Can you tell me about
# some attractions in the east?", "Can you tell me what guesthouses are available in the
# east?", "What is a fun place to go in the west of town?" (MultiWOZ val PMUL3410,
# PMUL2350, PMUL2821, MUL1843: the gold records the area of each)
_WH_SEARCH = re.compile(
    r"^\s*(?:(?:hi|hello|ok|okay|great|thanks|thank you|yes|so|also)\s*[,.!]?\s+)*"
    r"(?:what|which|where|can you tell me|could you tell me|tell me|do you know)\b[^?]*?"
    r"\b(?:is there|are there|there is|there are|to do|to see|to visit|to go|to stay|to eat"
    r"|available|about (?:some|any|the)\s+\w+s|about \w+s|what \w+s|which \w+s"
    r"|any \w+s|some \w+s|(?:a|an) (?:\w+ )?(?:place|spot|attraction|restaurant|hotel"
    r"|guesthouse))\b", re.IGNORECASE)
# words that point at the entity at hand: such a question asks about it, it searches nothing
_AT_HAND = re.compile(r"\b(?:it|its|it's|they|their|them|that one|this one|the one"
                      r"|(?<!is )(?<!are )there(?! (?:is|are)\b)|that place|this place)\b",
                      re.IGNORECASE)
# a yes/no question about the entity at hand, embedded in a request ("Also find out if
# they offer vegetarian dishes.", "Can you check whether the hotel has parking?"): it
# asks, as a question about the entity does; "check if there are any ..." searches, and
# "see if they have an opening at 14:30" asks for a booking, whose values it states
_EMBEDDED_QUESTION = re.compile(
    r"(?=[acfkstvw])"  # its first letters
    r"\b(?:find out|check|see|know|tell me|ask|ask you|wondering|wonder|confirm|verify)\s+"
    r"(?:if|whether)\s+(?:they|it|its|it's|the|that|this|those|these)\b"
    r"(?![^.!?]*\b(?:available|availability|opening|openings|vacancy|vacancies|room for"
    r"|space for|a table|seats|tickets|book|booking|reserve|reservation|accommodate)\b)",
    re.IGNORECASE)
# what may come before a bare answer's value (`UserTurn.answered`): an acknowledgement,
# "just", "it is", an article
_BARE_ANSWER = re.compile(
    r"\s*(?:(?:yes|yeah|ok|okay|sure|um|uh|oh|well|hmm)\s*[,.!]?\s+)?(?:(?:just|only)\s+)?"
    r"(?:(?:it|that|this)\s*(?:is|'s| 's|will be|'ll be|would be)\s+)?(?:the\s+)?\Z",
    re.IGNORECASE)
# conjunctions after which a clause has its own polarity (`UserTurn.clause_negated`)
_OWN_POLARITY = re.compile(r"\b(?:but|as long as|so long as|provided|although|though"
                           r"|however|just)\b", re.IGNORECASE)
# a negation anywhere in a clause ("It doesn't need to have free parking")
_NEGATION = re.compile(r"\b(?:not|no|never|without|nt|n't|dont|doesnt|isnt)\b|n't\b",
                       re.IGNORECASE)

Spans = list[tuple[int, int]]


def inside(spans: Spans, at: int) -> bool:
    """Some [start, end) of `spans` holds offset `at`."""
    return any(s <= at < e for s, e in spans)


class UserTurn:
    """One turn's user text and states, each reading computed once (module docstring)."""

    def __init__(self, turn: Turn, after: Mapping[str, str] | None = None,
                 before: Mapping[str, str] | None = None,
                 others: frozenset[str] = frozenset(),
                 entities: EntityWords | None = None,
                 spec: SpecBundle | None = None) -> None:
        self.turn = turn
        # the whole spec, for a reading across workflows ("the same area as the
        # restaurant", `references.py`); None when the caller gave none
        self.spec = spec
        self.text = turn.user
        # the words that name the spec's other workflows and not the turn's own
        # (`extract._OTHER_WORDS`): a search that names one searches another workflow
        self.others = others
        # the spec's words that describe each entity workflow (`entity_words`): an offer
        # of another workflow's entity is no offer for this one (None: no spec given)
        self.entities = entities
        # s_t and s_{t-1} with unset values removed (`Turn.after()`), read-only
        self.after: Mapping[str, str] = turn.after() if after is None else after
        self.before: Mapping[str, str] = turn.before() if before is None else before
        # (agent text, workflow id) -> the names that text offers (`offers.offered_in`):
        # the acceptance and the said-back readers both read the agent's last turn
        self.offers: dict[tuple[str, str], tuple[str, ...]] = {}
        # workflow id -> the names u_t types for it (`names.find_typed_names`): the
        # categorical reader (a value word inside a typed name is part of the name) and
        # the typed-name reader both read them
        self.typed: dict[str, list[Mention]] = {}
        # each reading below, computed the first time a reader asks (plain attributes,
        # not `functools.cached_property`, whose lock costs more than most readings here:
        # a `UserTurn` lives within one call, in one thread)
        self._sentences: tuple[Sentence, ...] | None = None
        self._times: tuple[TimeMention, ...] | None = None
        self._dates: tuple[DateMention, ...] | None = None
        self._said: frozenset[str] | None = None
        self._clause_ends: list[int] | None = None
        self._entity_questions: Spans | None = None
        self._search_questions: Spans | None = None
        self._entity_searches: Spans | None = None
        self._asked: dict[str, tuple[tuple[frozenset[str], frozenset[str]], ...]] = {}

    @staticmethod
    def of(turn: Turn | UserTurn) -> UserTurn:
        """`turn` as read by the extractor: a `Turn` is read here, without the turn
        context's states (a caller outside the extractor: tests, tools)."""
        return turn if isinstance(turn, UserTurn) else UserTurn(turn)

    def agent_said(self, value: str) -> bool:
        """The agent said `value` in one of its last two turns (the user may be echoing
        it, or picking it from a list)."""
        return any(find_value(h.agent, value, None) for h in (self.turn.history or ())[-2:])

    @property
    def last_agent(self) -> str:
        """The agent's turn before u_t ("" at the start of a dialogue)."""
        history = self.turn.history or ()
        return history[-1].agent if history else ""

    def asked(self, wf: Workflow) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
        """The requests of the agent's last turn ("And what is your destination?", "How
        many tickets would you like?", `detect.requests_in_text`), each as the slots of
        `wf` it asks for and the slots any cue word of its sentence points at (a request
        detected for one slot may name another: "departure" cues the leaving time too,
        so "What are your departure and destination stations?" is read as a request for
        the destination alone): what a bare answer in u_t gives."""
        got = self._asked.get(wf.id)
        if got is None:
            agent, cues = self.last_agent, slot_cues(wf)
            got = self._asked[wf.id] = tuple(
                (frozenset(r.candidates),
                 frozenset(cues.slots_for(cue_tokens(agent[r.start:r.end]))))
                for r in requests_in_text(agent, wf))
        return got

    def answered(self, wf: Workflow, start: int, slots: Iterable[str]) -> str | None:
        """The one of `slots` a bare answer at `start` gives: the value opens u_t
        ("London Liverpool Street.", "It is leicester.", "Just one, please.") and the
        agent's last turn asked for that slot in a sentence whose words point at no
        other of them. A tool agent's workflow is left out, as in `assign.role_decides`:
        its user answers with the records that exist."""
        if wf.tools or not _BARE_ANSWER.match(self.text, 0, start):
            return None
        among = set(slots)
        hits = {slot for asked, _ in self.asked(wf) for slot in asked if slot in among}
        if len(hits) != 1:
            return None
        slot = next(iter(hits))
        if any(slot in asked and (cued & among) - {slot} for asked, cued in self.asked(wf)):
            return None  # "Where are you going to and from?": both roles asked
        return slot

    @property
    def sentences(self) -> tuple[Sentence, ...]:
        """`text.sentences.sentences(u_t)`."""
        if self._sentences is None:
            self._sentences = tuple(sentences(self.text))
        return self._sentences

    def sentence_at(self, at: int) -> Sentence | None:
        """The sentence of u_t holding offset `at` (None between sentences): they are
        disjoint and in order, so at most one holds it."""
        sents = self.sentences
        k = bisect_right([st.start for st in sents], at) - 1
        return sents[k] if k >= 0 and at < sents[k].end else None

    @property
    def times(self) -> tuple[TimeMention, ...]:
        """`text.times.find_times(u_t)`."""
        if self._times is None:
            self._times = tuple(find_times(self.text))
        return self._times

    @property
    def dates(self) -> tuple[DateMention, ...]:
        """`text.dates.find_dates(u_t)`."""
        if self._dates is None:
            self._dates = tuple(find_dates(self.text))
        return self._dates

    @property
    def tokens(self) -> tuple[Token, ...]:
        """`normalize.tokens_with_spans(u_t)` (kept by its own memo: S1 and S2 read it)."""
        return tokens_with_spans(self.text)

    @property
    def said(self) -> frozenset[str]:
        """The content tokens of u_t (`match.text_tokens`)."""
        if self._said is None:
            self._said = text_tokens(self.text)
        return self._said

    @property
    def clause_ends(self) -> list[int]:
        """Where the clause marks of u_t end, in order (`CLAUSE_END`)."""
        if self._clause_ends is None:
            self._clause_ends = [m.end() for m in CLAUSE_END.finditer(self.text)]
        return self._clause_ends

    def clause_start(self, at: int) -> int:
        """Where the clause holding offset `at` starts (after the last clause mark that
        ends at or before it)."""
        ends = self.clause_ends
        k = bisect_right(ends, at)
        return ends[k - 1] if k else 0

    def negated(self, at: int) -> bool:
        """A negation or a contrast among the three words before `at`, within its clause
        ("not in the north", "rather than the north"; "No, the 8th." is a correction; "no
        later than 17:15" is a bound): `match.is_negated`."""
        return is_negated(self.text, at, since=self.clause_start(at))

    def clause_negated(self, at: int) -> bool:
        """A negation anywhere in the clause before `at`, at most 120 characters back
        ("It doesn't need to have free parking", "no"), or among the three words before
        it: the wider scope, for a wish said with a verb (`descriptors.py`) or a yes/no
        value ("free parking"), where the negation may sit far before the value."""
        text = self.text
        clause = text[max(0, at - 120, self.clause_start(at)):at]
        # "That doesn't matter as long as it has free wifi", "I'm not picky but it should
        # have free WiFi": a conjunction opens a clause of its own polarity
        opens = [m.end() for m in _OWN_POLARITY.finditer(clause)]
        if opens:
            clause = clause[opens[-1]:]
        return bool(_NEGATION.search(clause)) or is_negated(text, at)

    @property
    def entity_questions(self) -> Spans:
        """The sentences that ask about an entity ("is it in the north?"), and the rest of
        a sentence from a question about it embedded in a request ("find out if they
        offer vegetarian dishes"): their values state nothing."""
        if self._entity_questions is None:
            out: Spans = []
            for s in self.sentences:
                if _QUESTION_ABOUT_ENTITY.match(s.text):
                    out.append((s.start, s.end))
                elif (m := _EMBEDDED_QUESTION.search(s.text)) is not None:
                    out.append((s.start + m.start(), s.end))
            self._entity_questions = out
        return self._entity_questions

    @property
    def search_questions(self) -> Spans:
        """Questions that search ("is there anything in Phoenix?", "what's the weather on
        the 7th?"): the dates, places and names they carry are constraints."""
        if self._search_questions is None:
            self._search_questions = [
                (s.start, s.end) for s in self.sentences
                if (_WHAT_QUESTION.match(s.text) or _SEARCH_QUESTION.match(s.text))
                and s.text.endswith("?")]
        return self._search_questions

    @property
    def entity_searches(self) -> Spans:
        """Searches for this workflow's entities ("are there any attractions in the
        centre?" searches another workflow: `others` are its words, plural or not)."""
        if self._entity_searches is None:
            others = self.others
            self._entity_searches = [
                (s.start, s.end) for s in self.sentences
                if (_SEARCH_FOR_ENTITIES.match(s.text) or (
                    _WH_SEARCH.match(s.text) and not _AT_HAND.search(s.text)))
                and s.text.endswith("?")
                and not {t[:-1] if t.endswith("s") else t
                         for t in basic(s.text).split()} & others]
        return self._entity_searches
