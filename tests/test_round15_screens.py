"""Round 15 of the speed work: each shortcut against the code it replaces.

The clock-time reader's patterns got screens and a look-ahead the regex engine runs
fast, the sentence splitter strips each piece once, and S1 asks whether the user
turned an offer down only of an offer that states the value. Each is checked here
against the previous form (kept below as the reference), on generated texts full of
digits, time words, separators and white space of several kinds, and on the demo
turns for S1.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sage_tod import demo
from sage_tod.compiler import detect
from sage_tod.compiler.context import make_context
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import Turn, load_turns
from sage_tod.text import match, times
from sage_tod.text.normalize import basic_tokens, fold
from sage_tod.text.sentences import Sentence, sentences
from sage_tod.verifiers import symbolic

_PIECES = ["at", "by", "7", "07", "12", "1830", "18:30", "6.30", "6:30", "12 30", "2 30",
           "0930hrs", "1300 hours", "1200h", "pm", "a.m.", "o'clock", "noon", "midday",
           "midnight", "one", "seven", "twelve", "half", "past", "quarter", "to", "in",
           "the", "evening", "morning", "night", "21st", "for", "3", "people", "minutes",
           "phone", "often", "mid", "nine", "ten", "2030", "£5.50", "cb21ab", "01223 351880",
           ",", ".", "?", "!", ";", ":", " ", "  ", "\t", "\n", "\u00a0", "\u2003", "x",
           "Noon", "TEN", "\u0663", "\u00bd"]
texts = st.lists(st.sampled_from(_PIECES), min_size=0, max_size=14).map("".join)
spaced = st.lists(st.sampled_from(_PIECES), min_size=0, max_size=14).map(" ".join)

# the patterns as they were before the screens: the reference
_OLD_TIME_RE = re.compile(times._TIME_RE.pattern.removeprefix(r"(?=[\dnm])"))


def _folded(text: str) -> str:
    folded = fold(text)
    return folded if len(folded) == len(text) else text.lower()


@settings(max_examples=1500, deadline=None)
@given(st.one_of(texts, spaced))
@example("at 12 30 and by 1830 hours, noon or midnight")
@example("\u0663\u0663 30")
def test_time_screens_change_no_reading(text: str) -> None:
    """`_maybe_time` is `_MAYBE_TIME`, each screen is a necessary condition of its
    pattern, `_BARE_HOUR_SCREEN` finds a needle exactly when one is in the text, and the
    look-ahead leaves `_TIME_RE`'s matches as they were."""
    folded = _folded(text)
    assert times._maybe_time(folded) == (times._MAYBE_TIME.search(folded) is not None)
    if times._HOURS_SCREEN.search(folded) is None:
        assert times._HOURS_RE.search(folded) is None
    if times._SPACED_SCREEN.search(folded) is None:
        assert times._SPACED_RE.search(folded) is None
    assert (times._BARE_HOUR_SCREEN.search(folded) is not None) == any(
        w in folded for w in times._BARE_HOUR_NEEDLES)
    assert ([m.groupdict() | {"span": m.span()} for m in times._TIME_RE.finditer(folded)]
            == [m.groupdict() | {"span": m.span()} for m in _OLD_TIME_RE.finditer(folded)])


def _old_sentences(text: str, semicolons: bool = False) -> list[Sentence]:
    """`sentences` as it was: three strips per piece."""
    pattern = re.compile(r"[^.!?;]+[.!?;]*" if semicolons else r"[^.!?]+[.!?]*")
    out = []
    for m in pattern.finditer(text):
        raw = m.group()
        if not raw.strip():
            continue
        lead = len(raw) - len(raw.lstrip())
        trail = len(raw) - len(raw.rstrip())
        out.append(Sentence(m.start() + lead, m.end() - trail, raw.strip()))
    return out


@settings(max_examples=1500, deadline=None)
@given(st.one_of(texts, spaced), st.booleans())
@example("  Hi there .  \u2003 Is it free?\n\n;  ", True)
@example(" . . ", False)
def test_sentences_strip_once(text: str, semicolons: bool) -> None:
    assert sentences(text, semicolons=semicolons) == _old_sentences(text, semicolons)


def _old_slot_support(ctx: symbolic.TurnContext, slot: str, value: str) -> symbolic.Support:
    """`slot_support` as it was: the declined check before the look-up."""
    if symbolic.is_dontcare(value):
        return symbolic.Support(symbolic._dontcare_support(ctx, slot))
    spec = ctx.spec.slot(slot, ctx.workflow)
    wf = symbolic._slot_workflow(ctx, slot)
    boolean = value.strip().lower() in ("yes", "no", "true", "false")
    turn = symbolic._turn_texts(ctx)
    query = match.ValueQuery(value, spec, fuzzy=True)
    misplaced: list[tuple[symbolic.Span, symbolic.Role]] = []
    for source, index, text in turn.sources:
        if source == "history.agent" and index is not None and turn.declined(index):
            continue
        for hit in query.find(text):
            span = symbolic.Span(source=source, index=index, start=hit.start, end=hit.end,
                                 text=text[hit.start:hit.end])
            role = symbolic.other_role(text, hit.start, hit.end, slot, wf)
            if role is None and not turn.same_again:
                role = symbolic.other_domain(text, hit.start, hit.end, slot, wf,
                                             ctx.spec.workflows.values(), value)
            if role is None and source != "history.agent" and not boolean and \
                    symbolic._negated(text, hit.start):
                role = symbolic.Role(frozenset(), "not")
            if role is None:
                return symbolic.Support(span, tuple(misplaced))
            misplaced.append((span, role))
    if not misplaced and spec is not None and spec.type == "number":
        misplaced = symbolic._count_in_times(ctx, value, wf)
    return symbolic.Support(None, tuple(misplaced))


def test_slot_support_asks_declined_only_of_a_stating_offer() -> None:
    """On every demo turn, every slot and every value written anywhere in the demo (so
    values absent from a turn and values the agent offered are both asked), S1's support
    is the one the declined-first loop gave."""
    spec: SpecBundle = load_spec(demo.spec_path())
    turns: list[Turn] = [r.turn for r in load_turns(demo.turns_path(), spec).records]
    values = sorted({(s, v) for t in turns for s, v in (t.state_after or {}).items() if v})
    asked = 0
    for turn in turns:
        ctx = make_context(spec, turn)
        for slot, value in values:
            if slot not in ctx.workflow.slots:
                continue
            assert symbolic.slot_support(ctx, slot, value) == _old_slot_support(
                ctx, slot, value)
            asked += 1
    assert asked > 100


def _without_lookahead(p: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern as it was: its first-character look-ahead taken out."""
    out = re.sub(r"\(\?=(?:\[[^\]]*\]|\\d)\)", "", p.pattern, count=1)
    assert out != p.pattern
    return re.compile(out, p.flags)


_LOOKAHEADS = {
    "times._CLOCKISH": times._CLOCKISH, "times._HOUR_WORD": times._HOUR_WORD,
    "symbolic._CLAUSE_END": symbolic._CLAUSE_END, "symbolic._SAME": symbolic._SAME,
    "symbolic._CLOCK": symbolic._CLOCK, "detect._REFUSAL": detect._REFUSAL,
}
# every alternative of those patterns, in several cases, beside digits and separators
_ALTERNATIVES = sorted({w for p in _LOOKAHEADS.values()
                        for w in re.findall(r"[a-z']+(?: [a-z']+)*", p.pattern)})
_LA_WORDS = [*_ALTERNATIVES, *(w.upper() for w in _ALTERNATIVES), *(
    w.title() for w in _ALTERNATIVES), "7", "12", "7:30", "11.45", "half", "x", "but:30",
    "nbut", "butter", "\u017fame", ",", ".", "?", " ", "-", "'"]
la_texts = st.lists(st.sampled_from(_LA_WORDS), min_size=0, max_size=12).map(" ".join)
la_glued = st.lists(st.sampled_from(_LA_WORDS), min_size=0, max_size=12).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(la_texts, la_glued), st.integers(min_value=0, max_value=80))
@example("not that, but at 7 and around ten although it is the same", 40)
def test_first_character_lookaheads_change_no_match(text: str, end: int) -> None:
    """Each pattern with its look-ahead finds what it found without it, in the whole text
    and up to an end position (as `symbolic._negated` searches)."""
    for name, p in _LOOKAHEADS.items():
        old = _without_lookahead(p)
        for folded in (text, text.lower()):
            assert ([(m.span(), m.groups()) for m in p.finditer(folded)]
                    == [(m.span(), m.groups()) for m in old.finditer(folded)]), name
            assert ([m.span() for m in p.finditer(folded, 0, end)]
                    == [m.span() for m in old.finditer(folded, 0, end)]), name


def test_every_interrogative_holds_the_screen_words() -> None:
    """`detect_requests` searches a sentence for the interrogatives only when it holds
    "how" or "wh": every one of them does."""
    assert all(detect._INTERROGATIVE_SCREEN.search(p) for p in detect._INTERROGATIVES)


_REQ_WORDS = ["what", "time", "when", "how", "many", "long", "which", "day", "date",
              "people", "would", "you", "like", "area", "price", "range", "cheap", "north",
              "centre", "book", "please", "tell", "me", "the", "?", ".", ",", "What", "HOW",
              "whenever", "show", "anyhow"]
req_texts = st.lists(st.sampled_from(_REQ_WORDS), min_size=0, max_size=14).map(" ".join)


def _old_detect_requests(turn: Turn, wf: symbolic.Workflow) -> list[detect.Request]:
    """`detect_requests` without the interrogative screen and with a sentence tokenised
    for every slot asked about (as it was)."""
    saved = detect._INTERROGATIVE_SCREEN
    detect._INTERROGATIVE_SCREEN = re.compile("")  # finds "" everywhere: never screens
    try:
        out = detect.detect_requests(turn, wf)
    finally:
        detect._INTERROGATIVE_SCREEN = saved
    return out


@settings(max_examples=400, deadline=None)
@given(req_texts)
@example("What time and for how many people would you like?")
def test_request_screen_changes_no_request(agent: str) -> None:
    spec = load_spec(demo.spec_path())
    for wf in spec.workflows.values():
        turn = Turn(dialogue_id="d", turn_id=0, workflow=wf.id, user="", agent=agent,
                    state_before={}, state_after={})
        assert detect.detect_requests(turn, wf) == _old_detect_requests(turn, wf)
        for sent in sentences(agent):
            joined = f" {' '.join(basic_tokens(sent.text))} "
            for slot in wf.slots:
                assert detect._names_a_value(sent.text, slot, wf, joined) == \
                    detect._names_a_value(sent.text, slot, wf)


@settings(max_examples=800, deadline=None)
@given(st.one_of(st.sampled_from(sorted({p for ps in match.SPECIAL_WORDS.values() for p in ps}
                                        | set(match.SPECIAL_WORDS))),
                 st.text(alphabet="abcdefghilmnorstuvwxy", min_size=6, max_size=12)),
       st.sampled_from(["", "x", "e", "s"]))
def test_needle_typos_read_from_the_first_letter_table(word: str, tail: str) -> None:
    """`_needles` reads the rewritten words whose pieces may be a typo of a long word from
    `_SPECIAL_BY_FIRST`; the words it finds are those a scan of every one finds, in the
    same order."""
    w = word + tail
    if not (len(w) >= 6 and w.isalpha()):
        return
    every = [raw for raw, pieces in match.SPECIAL_WORDS.items()
             if any(match._same_or_typo(p, w) for p in pieces)]
    table = [raw for raw, pieces in match._SPECIAL_BY_FIRST.get(w[0], ())
             if any(match._same_or_typo(p, w) for p in pieces)]
    assert table == every
