from __future__ import annotations

import pytest

from sage_tod.contracts.spec import SlotSpec
from sage_tod.text.keys import normalize_typed
from sage_tod.text.match import find_value
from sage_tod.text.normalize import basic, is_unset, synonym_table
from sage_tod.text.numbers import read_number
from sage_tod.text.times import find_times, normalize_time


def test_case_whitespace_punctuation_and_spelling_variants() -> None:
    assert basic("  Centre ") == basic("center") == "centre"
    assert basic("Pizza-Hut,  City Centre!") == "pizza hut city centre"
    assert basic("Cambridge") != basic("London")


@pytest.mark.parametrize(("raw", "expected"), [
    ("6:30 pm", "18:30"), ("18:30", "18:30"), ("6.30pm", "18:30"), ("6pm", "18:00"),
    ("12 am", "00:00"), ("12pm", "12:00"), ("noon", "12:00"), ("1830", "18:30"),
    ("7", "07:00"), ("7:05 a.m.", "07:05"),
])
def test_times_12_and_24_hour(raw: str, expected: str) -> None:
    assert normalize_time(raw) == expected


@pytest.mark.parametrize("raw", ["25:00", "13 pm", "soon", "7:75"])
def test_non_times_are_rejected(raw: str) -> None:
    assert normalize_time(raw) is None


def test_number_words() -> None:
    assert read_number("two") == read_number("2") == "2"
    assert read_number("2.0") == "2"
    assert read_number("a few") is None


def test_typed_normalisation_uses_synonyms_and_dontcare() -> None:
    slot = SlotSpec(name="area", type="categorical", values=("centre", "north"),
                    synonyms={"centre": ("downtown", "city centre")})
    assert slot.normalize("Downtown") == slot.normalize("centre") == slot.normalize("Center")
    assert slot.normalize("north") != slot.normalize("centre")
    assert normalize_typed("don't care", "categorical") == normalize_typed("dontcare", "free")
    assert synonym_table(["a"], {"a": ["b"]}) == {"a": "a", "b": "a"}


def test_unset_values() -> None:
    assert is_unset(None) and is_unset("") and is_unset("not mentioned")
    assert not is_unset("north")


def test_find_times_readings() -> None:
    (tm,) = find_times("we arrive at 7:30")
    assert tm.readings == {"07:30", "19:30"} and tm.relation == "at"
    assert find_times("a table for 7 people") == []
    assert find_times("half past seven in the evening")[0].readings == {"19:30"}
    assert find_times("quarter to seven in the morning")[0].readings == {"06:45"}


def test_find_value_spans_point_at_the_text() -> None:
    text = "A table for two at 6:30 pm downtown, please."
    people = SlotSpec(name="people", type="number")
    hit = find_value(text, "2", people)
    assert hit is not None and text[hit.start:hit.end] == "two"
    t = find_value(text, "18:30", SlotSpec(name="t", type="time"))
    assert t is not None and text[t.start:t.end] == "6:30 pm"
    area = SlotSpec(name="area", type="categorical", values=("centre",),
                    synonyms={"centre": ("downtown",)})
    a = find_value(text, "centre", area)
    assert a is not None and text[a.start:a.end] == "downtown"
    assert find_value(text, "19:30", SlotSpec(name="t", type="time")) is None


def test_free_values_ignore_a_leading_article() -> None:
    name = SlotSpec(name="name", type="free")
    assert name.normalize("the Lensfield Hotel") == name.normalize("lensfield hotel")
    assert name.normalize("the") == "the"
    hit = find_value("I'd like the Lensfield Hotel", "lensfield hotel", name)
    assert hit is not None
    hit2 = find_value("I'd like Lensfield Hotel", "the lensfield hotel", name)
    assert hit2 is not None
    area = SlotSpec(name="area", type="categorical", values=("a",))
    assert area.normalize("the a") != area.normalize("a")  # only free text is folded
