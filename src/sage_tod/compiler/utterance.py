"""u_t read once: the one analysis of a user turn that every extractor reader shares.

The extractor's readers (values the state records, categorical forms, times,
counts, dates, places, people, descriptors, typed names, waivers, offers) each
used to rebuild the cleaned states from the `Turn` (`Turn.after()`, which folds
every value to test `is_unset`) and to ask the text layer again for the same
utterance's sentences, clause marks, clock times and dates, each request
handing out a fresh copy from a process-wide memo. `UserTurn` holds them for
one turn: the states as the turn context built them (or built once here), and
each reading of the text computed the first time a reader asks and kept. It
lives as long as one `extract_user_values` call, so it needs no bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sage_tod.contracts.turns import Turn
from sage_tod.text.dates import DateMention, find_dates
from sage_tod.text.match import text_tokens
from sage_tod.text.normalize import Token, tokens_with_spans
from sage_tod.text.sentences import Sentence, sentences
from sage_tod.text.times import TimeMention, find_times

# a negation does not reach past a clause boundary ("No, the 8th.", "not Friday, Saturday")
CLAUSE_END = re.compile(r"[,;:.!?]")


class UserTurn:
    """One turn's user text and states, each reading computed once (module docstring)."""

    def __init__(self, turn: Turn, after: Mapping[str, str] | None = None,
                 before: Mapping[str, str] | None = None) -> None:
        self.turn = turn
        self.text = turn.user
        # s_t and s_{t-1} with unset values removed (`Turn.after()`), read-only
        self.after: Mapping[str, str] = turn.after() if after is None else after
        self.before: Mapping[str, str] = turn.before() if before is None else before
        # (agent text, workflow id) -> the names that text offers (`offers.offered_in`):
        # the acceptance and the said-back readers both read the agent's last turn
        self.offers: dict[tuple[str, str], tuple[str, ...]] = {}
        # each reading below, computed the first time a reader asks (plain attributes,
        # not `functools.cached_property`, whose lock costs more than most readings here:
        # a `UserTurn` lives within one call, in one thread)
        self._sentences: tuple[Sentence, ...] | None = None
        self._times: tuple[TimeMention, ...] | None = None
        self._dates: tuple[DateMention, ...] | None = None
        self._said: frozenset[str] | None = None
        self._clause_ends: list[int] | None = None

    @property
    def last_agent(self) -> str:
        """The agent's turn before u_t ("" at the start of a dialogue)."""
        history = self.turn.history or ()
        return history[-1].agent if history else ""

    @property
    def sentences(self) -> tuple[Sentence, ...]:
        """`text.sentences.sentences(u_t)`."""
        if self._sentences is None:
            self._sentences = tuple(sentences(self.text))
        return self._sentences

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
