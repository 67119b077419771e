"""The S1 speed-ups return what the plain definitions return.

`text.match` memoises per-text token indexes, skips a fuzzy pass that could
only repeat the exact one, reads graded forms from the index and scores
near-name windows and typos with rapidfuzz (checked against plain dynamic
programs, and against the difflib ratio and hand-written one-edit check it
replaced); `SlotSpec` memoises
keys and surface forms; the evaluator holds the garbage collector during a
batch. Each is checked here against the definition it replaces, on generated
texts, so a shortcut that changes an answer fails.
"""

from __future__ import annotations

import gc
from difflib import SequenceMatcher

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sage_tod import demo
from sage_tod.contracts.spec import SlotSpec, load_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.evaluation.evaluator import Evaluator, gc_paused
from sage_tod.text import match
from sage_tod.text.keys import normalize_typed
from sage_tod.text.normalize import basic_tokens, fold, tokens_with_spans

_WORDS = ["caffe", "cafe", "uno", "cheap", "cheaper", "cheapest", "the", "hotel", "lensfield",
          "lensfeld", "christ", "'s", "college", "north", "centre", "city", "a", "b&b", "and",
          "guesthouse", "guest", "house", "pizza", "hut", "nightclubs", "night", "club", "s",
          "cambridge", "cambrige", "artworks", "cheaply", "not", "too", "pricey", "or", "2",
          "two", "at",
          "17:15", "5pm", "for", "people", "nights", "expensive"]
texts = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=14).map(" ".join)
values = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join)


def _plain_content_tokens(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple((t, a, b) for t, a, b in tokens_with_spans(text)
                 if not (t == "s" and a > 0 and text[a - 1] in "'\u2019 "
                         and "'" in fold(text[max(0, a - 2):a])))


def _plain_similar(text: str, needle: list[str]) -> list[tuple[int, int]]:
    n, want = len(needle), " ".join(needle)
    if n < 2 or len(want) < 8:
        return []
    toks = _plain_content_tokens(text)
    out = []
    for i in range(len(toks) - n + 1):
        got = " ".join(t for t, _, _ in toks[i:i + n])
        if got[0] == want[0] and SequenceMatcher(None, got, want).ratio() >= 0.9:
            out.append((toks[i][1], toks[i + n - 1][2]))
    return out


def _lcs(a: str, b: str) -> int:
    """Longest common subsequence, the textbook dynamic program."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev, row = row, [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
    return row[-1]


def _lcs_similar(text: str, needle: list[str]) -> list[tuple[int, int]]:
    """The name screen's definition: 2·LCS / (|window| + |name|) >= .9."""
    n, want = len(needle), " ".join(needle)
    if n < 2 or len(want) < 8:
        return []
    toks = _plain_content_tokens(text)
    return [(toks[i][1], toks[i + n - 1][2]) for i in range(len(toks) - n + 1)
            if (got := " ".join(t for t, _, _ in toks[i:i + n]))[0] == want[0]
            and 2.0 * _lcs(got, want) / (len(got) + len(want)) >= 0.9]


@settings(max_examples=400, deadline=None)
@given(texts, values)
def test_indexes_and_name_screen_equal_the_definitions(text: str, value: str) -> None:
    toks, by_token = match.reading(text).index()
    assert toks == _plain_content_tokens(text)
    assert by_token == {t: [i for i, (u, _, _) in enumerate(toks) if u == t]
                        for t in {u for u, _, _ in toks}}
    needle = basic_tokens(value)
    assert match._similar_spans(text, needle) == _lcs_similar(text, needle)
    # ... and accepts every window the difflib ratio it replaced accepted: difflib's
    # matching blocks never exceed the LCS, and can fall short of it ("cheap cheap
    # cheaper" vs "cheap cheaper cheaper"), so the new screen may accept a few more
    # (docs/method.md; none on the bench or natural slices)
    assert set(_plain_similar(text, needle)) <= set(match._similar_spans(text, needle))


def _plain_one_edit(a: str, b: str) -> bool:
    """The hand-written check the typo test used before rapidfuzz's OSA distance."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1:]


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="abc", min_size=5, max_size=8),
       st.text(alphabet="abc", min_size=5, max_size=8))
def test_typo_check_is_one_edit(tail: str, other: str) -> None:
    tok, want = "c" + tail, "c" + other  # a typo keeps the first letter
    assert match._same_or_typo(tok, want) == (tok == want or _plain_one_edit(tok, want))


_CATEGORICAL = SlotSpec(name="hotel-pricerange", type="categorical",
                        values=("cheap", "moderate", "expensive"),
                        synonyms={"cheap": ("inexpensive",)})
_FREE = SlotSpec(name="restaurant-name")


@settings(max_examples=400, deadline=None)
@given(texts, values)
def test_fuzzy_shortcut_and_graded_forms_change_no_answer(text: str, value: str) -> None:
    for slot in (_FREE, _CATEGORICAL):
        exact = match.find_values(text, value, slot)
        fuzzy = match.find_values(text, value, slot, fuzzy=True)
        forms = [basic_tokens(f) for f in slot.surface_forms(value)]
        if exact and not any(len(w) >= 6 and w.isalpha() for f in forms for w in f):
            assert fuzzy == exact  # no typo possible: the fuzzy pass adds nothing
    # "a cheaper hotel" (or "cheaply") states cheap when "cheap" itself is not said: every
    # graded token, in reading order
    got = match.find_values(text, "cheap", _CATEGORICAL)
    if not any(t in ("cheap", "inexpensive") for t, _, _ in tokens_with_spans(text)):
        want = [(a, b) for t, a, b in tokens_with_spans(text)
                if t in ("cheaper", "cheapest", "cheaply")]
        assert [(f.start, f.end) for f in got] == want


@settings(max_examples=300, deadline=None)
@given(values)
def test_slot_memo_equals_the_plain_key(value: str) -> None:
    for slot in (_FREE, _CATEGORICAL, SlotSpec(name="hotel-book_people", type="number"),
                 SlotSpec(name="train-leaveat", type="time")):
        assert slot.normalize(value) == normalize_typed(value, slot.type, slot.table)
        assert slot.normalize(value) == slot.normalize(value)
        forms = slot.surface_forms(value)
        forms.append("mutated")  # a caller's list is its own
        assert "mutated" not in slot.surface_forms(value)


def test_slot_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import sage_tod.contracts.spec as spec_mod

    monkeypatch.setattr(spec_mod, "_KEYS_MAX", 5)
    slot = SlotSpec(name="x")
    for i in range(12):
        assert slot.normalize(f"Value {i}") == f"value {i}"
    assert len(slot._keys) <= 5


def test_the_collector_is_held_during_a_batch_and_restored() -> None:
    bundle = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), bundle).records
    ev = Evaluator(bundle, "s1")
    seen: list[bool] = []
    real = ev._evaluate_batch_now

    def spy(turns):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return real(turns)

    ev._evaluate_batch_now = spy  # type: ignore[method-assign]
    assert gc.isenabled()
    plain = [v.to_dict() for v in ev.evaluate(records)]
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()  # someone else's choice is left alone
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SAGE_TOD_GC_PAUSE", "0")
        seen.clear()
        again = [v.to_dict() for v in ev.evaluate(records)]
        assert seen and all(seen)
    for a, b in zip(plain, again, strict=True):
        a.pop("latency_ms"), b.pop("latency_ms")
        assert a == b


@settings(max_examples=400, deadline=None)
@given(texts, values)
def test_anchor_screen_never_hides_a_match(text: str, value: str) -> None:
    # `_categorical` skips find_value when the text holds none of the value's anchors
    anchors = match.anchor_tokens(value)
    if anchors is not None and anchors.isdisjoint(match.text_tokens(text)):
        assert match.find_value(text, value, None) is None
    assert match.anchor_tokens("dontcare") is None  # found by its cues: never screened


def test_workflow_tables_are_built_once_and_are_not_its_identity() -> None:
    from sage_tod.compiler.cues import slot_cues
    from sage_tod.contracts.spec import Derived, parse_spec

    doc = {"workflows": [{"id": "w", "slots": [{"name": "hotel-area"}]}]}
    a, b = parse_spec(doc).workflow("w"), parse_spec(doc).workflow("w")
    assert a is not None and b is not None
    calls: list[str] = []

    def build(wf: object) -> list[str]:
        calls.append("built")
        return ["table"]

    assert a.derived("t", build) is a.derived("t", build) and calls == ["built"]
    table = Derived("t", build)  # a typed key: its own table, however the string reads
    assert table.of(a) is table.of(a) and table.of(a) is not a.derived("t", build)
    assert calls == ["built", "built"] and table.of(b) is not table.of(a)
    assert slot_cues(a) is slot_cues(a)
    assert a == b  # a memo does not make two equal workflows differ
