"""Property tests: any input to a reader gives a valid result or an `InputError`, never
another exception (spec, turns and verdicts readers, the resume scanner, the outcome
grammar). docs/guarantees.md names these tests."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sage_tod import InputError, demo, load_spec  # noqa: E402
from sage_tod.contracts.predicate import PredicateSyntaxError, parse_predicate, render  # noqa: E402
from sage_tod.contracts.spec import SpecBundle, parse_spec  # noqa: E402
from sage_tod.contracts.turns import load_turns  # noqa: E402
from sage_tod.contracts.verdicts import read_verdicts, scan_verdicts  # noqa: E402

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SPEC = load_spec(demo.spec_path())
VALID_TURN = json.loads(demo.turns_path().read_text().splitlines()[0])
VALID_VERDICT = {"format_version": 1, "dialogue_id": "d", "turn_id": 0, "workflow": "w",
                 "verdict": "acceptable", "confidence": 1.0, "classes": [], "criteria": [],
                 "config": "s1", "stages": ["S1"], "latency_ms": 0.1}

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(max_size=30))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                           max_leaves=20)


def _mutated(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid record with some fields replaced, dropped or added."""
    keys = st.sampled_from([*base, "extra", "history", "user_values", "agent_acts", "gold"])
    return st.dictionaries(keys, json_values, max_size=4).flatmap(
        lambda repl: st.sets(st.sampled_from(list(base)), max_size=2).map(
            lambda drop: {**{k: v for k, v in base.items() if k not in drop}, **repl}))


def _lines(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    as_json = strategy.map(lambda o: json.dumps(o, allow_nan=True).encode())
    line = as_json | st.binary(max_size=80)
    return st.lists(line, min_size=0, max_size=4).map(lambda ls: b"\n".join(ls)
                                                      + b"\n" * (len(ls) % 2))


def _file(data: bytes, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(suffix=suffix)
    with open(fd, "wb") as fh:
        fh.write(data)
    return Path(name)


@SETTINGS
@given(_lines(_mutated(VALID_TURN)))
def test_turns_reader_gives_turns_or_input_error(data: bytes) -> None:
    p = _file(data, ".jsonl")
    try:
        for skip in (False, True):
            try:
                tf = load_turns(p, SPEC, skip_invalid=skip)
            except InputError:
                continue
            assert all(r.turn.workflow in SPEC.workflows for r in tf.records)
    finally:
        p.unlink()


@SETTINGS
@given(_lines(_mutated(VALID_VERDICT)))
def test_verdicts_reader_gives_verdicts_or_input_error(data: bytes) -> None:
    p = _file(data, ".jsonl")
    try:
        try:
            vs = read_verdicts(p)
            assert all(v.verdict in {"failure", "acceptable", "undecided"} for v in vs)
        except InputError:
            pass
        size = p.stat().st_size
        try:
            found = scan_verdicts(p)
            assert 0 <= found.good <= size and len(found.keys) <= data.count(b"\n") + 1
        except InputError:
            pass
        assert p.stat().st_size == size  # scanning never changes the file
    finally:
        p.unlink()


spec_docs = st.fixed_dictionaries({"workflows": st.lists(st.fixed_dictionaries(
    {"id": st.text(max_size=5) | json_values,
     "slots": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])})
                       | st.sampled_from(["a", "b"]) | json_values, max_size=3),
     "required": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3),
     "order": st.none() | st.lists(st.lists(st.sampled_from(["a", "b", "c"]), max_size=2)
                                   | json_values, max_size=3),
     "outcome": st.none() | st.text(max_size=40) | json_values}), min_size=0, max_size=2)})


@SETTINGS
@given(spec_docs | json_values)
def test_spec_parser_gives_spec_or_input_error(doc: Any) -> None:
    try:
        bundle = parse_spec(doc)
    except InputError:
        return
    assert isinstance(bundle, SpecBundle) and bundle.workflows


@SETTINGS
@given(st.text(max_size=200) | st.binary(max_size=200))
def test_spec_file_reader_gives_spec_or_input_error(data: str | bytes) -> None:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    for suffix in (".yaml", ".json"):
        p = _file(raw, suffix)
        try:
            load_spec(p)
        except InputError:
            pass
        finally:
            p.unlink()


OUTCOME_WORDS = st.sampled_from(["a", "b", "(", ")", "and", "or", "not", "==", "!=",
                                 "filled(", "'x'", '"y"', "`s p`", "true", "false",
                                 "all_required", "1", "?", " "])


@SETTINGS
@given(st.lists(OUTCOME_WORDS, max_size=30).map(" ".join) | st.text(max_size=60))
def test_outcome_grammar_parses_or_says_where(text: str) -> None:
    try:
        node = parse_predicate(text)
    except PredicateSyntaxError:
        pass
    else:
        render(node)
        node.slots()
    doc = {"workflows": [{"id": "w", "slots": [{"name": "a"}, {"name": "b"}],
                          "required": ["a"], "outcome": text}]}
    try:
        wf = parse_spec(doc).workflows["w"]
    except InputError:
        return
    for state in ({}, {"a": "x"}, {"a": "x", "b": "y"}):
        assert isinstance(wf.outcome_holds(state), bool)
        wf.outcome_unmet(state)
