"""Golden snapshots: extraction and verdicts (`s1`, `core`) must stay as committed.

Every refactoring of the compiler or the cascade must leave these turns as they were;
a change that means to move them regenerates the files and the reviewed `git diff` of
tests/fixtures/golden is the record of what moved (docs/guarantees.md, "Golden
snapshots"). Regenerate with:

    SAGE_TOD_UPDATE_GOLDEN=1 pytest tests/test_golden.py

What a line holds and how two are compared: tests/golden_snapshots.py; where the turns
come from: tests/golden_sources.py. The parts built from `$SAGE_TOD_DATA` skip, with the
missing files named, where the data directory lacks them.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path

import pytest

from golden_snapshots import (
    GOLDEN_DIR,
    UPDATE_COMMAND,
    UPDATE_ENV,
    Evaluators,
    Row,
    Source,
    compare,
    expected_keys,
    read_rows,
    report,
    row_change,
    row_id,
    turn_key,
    write_rows,
)
from golden_sources import (
    FIXTURES,
    NOT_TURNS,
    data_slice_sources,
    demo_sources,
    fixture_sources,
    fixture_turn_files,
    natural_sources,
)
from sage_tod.lab.datasets.paths import DataMissing, data_root

UPDATING = os.environ.get(UPDATE_ENV, "").strip() not in ("", "0")


@pytest.fixture(scope="session")
def evaluators(tmp_path_factory: pytest.TempPathFactory) -> Evaluators:
    return Evaluators(tmp_path_factory.mktemp("golden-nli") / "scores.sqlite")


def _data_or_skip(make: Callable[[Path], list[Source]]) -> list[Source]:
    try:
        return make(data_root())
    except DataMissing as exc:
        pytest.skip(f"golden data part needs $SAGE_TOD_DATA with the corpora: {exc}")


@pytest.fixture(scope="session")
def golden_sources(tmp_path_factory: pytest.TempPathFactory
                   ) -> dict[str, Callable[[], list[Source]]]:
    """Each snapshot file's sources, built at most once per session."""
    built: dict[str, list[Source]] = {}
    makers: dict[str, Callable[[], list[Source]]] = {
        "demo.jsonl": demo_sources,
        "fixtures.jsonl": lambda: fixture_sources(tmp_path_factory.mktemp("golden-fix")),
        "data-slices.jsonl": lambda: _data_or_skip(
            lambda root: data_slice_sources(tmp_path_factory.mktemp("golden-data"), root)),
        "data-natural.jsonl": lambda: _data_or_skip(natural_sources),
    }

    def getter(name: str) -> Callable[[], list[Source]]:
        def get() -> list[Source]:
            if name not in built:
                built[name] = makers[name]()
            return built[name]
        return get
    return {name: getter(name) for name in makers}


def current_rows(sources: list[Source], snapshot: list[Row], ev: Evaluators) -> list[Row]:
    """Today's lines for the turns the snapshot names. A source whose every turn is kept
    (the demo, the fixtures) is evaluated whole, so a turn added to it shows up as new;
    a sampled source evaluates its stored ids, and a source new to the file its sample."""
    keys = expected_keys(snapshot)
    rows: list[Row] = []
    for s in sources:
        rows += ev.rows(s, None if s.pick is None or s.name not in keys else keys[s.name])
    return rows


def check_file(path: Path, sources: list[Source], ev: Evaluators) -> str | None:
    """The readable report of what differs from the snapshot file; None when nothing does."""
    if not path.exists():
        return f"{path} is missing; create it with {UPDATE_COMMAND}"
    old = read_rows(path)
    new = current_rows(sources, old, ev)
    changes = compare(old, new)
    if not changes:
        return None
    texts = {(s.name, turn_key(t)): str(t.get("user", "")) for s in sources for t in s.turns}
    return report(path.name, len({*map(row_id, old), *map(row_id, new)}), changes, texts)


@pytest.mark.parametrize("name", ["demo.jsonl", "fixtures.jsonl", "data-slices.jsonl",
                                  "data-natural.jsonl"])
def test_golden_snapshot_unchanged(name: str, evaluators: Evaluators,
                                   golden_sources: dict[str, Callable[[], list[Source]]]
                                   ) -> None:
    sources = golden_sources[name]()
    path = GOLDEN_DIR / name
    if UPDATING:
        rows = [r for s in sources for r in evaluators.rows(s)]
        write_rows(path, rows)
        assert rows, f"{name}: no turns"
        return
    problem = check_file(path, sources, evaluators)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_every_turn_fixture_is_in_the_snapshot() -> None:
    """A turns or log file added under tests/fixtures must join fixtures.jsonl."""
    present = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*")
               if p.is_file() and "golden" not in p.relative_to(FIXTURES).parts
               and not any(fnmatch(p.name, pat) or fnmatch(str(p), pat) for pat in NOT_TURNS)}
    assert present - fixture_turn_files() == set(), "add them to tests/golden_sources.py"
    assert fixture_turn_files() <= present  # and the list names no file that is gone


# the check itself can fail


def _perturbed(tmp_path: Path, edit: Callable[[list[Row]], None]) -> Path:
    rows = read_rows(GOLDEN_DIR / "demo.jsonl")
    edit(rows)
    p = tmp_path / "demo.jsonl"
    write_rows(p, rows)
    return p


def _first_with_criteria(rows: list[Row]) -> Row:
    return next(r for r in rows if r["criteria"])


def test_a_changed_decision_is_reported_turn_criterion_old_and_new(
        tmp_path: Path, evaluators: Evaluators,
        golden_sources: dict[str, Callable[[], list[Source]]]) -> None:
    holder: dict[str, Row] = {}

    def edit(rows: list[Row]) -> None:
        r = _first_with_criteria(rows)
        holder["row"] = copy.deepcopy(r)
        c = r["core"]["criteria"][0]
        c["decision"] = "true" if c["decision"] != "true" else "false"
        c["decided_by"] = "S9"
    path = _perturbed(tmp_path, edit)
    problem = check_file(path, golden_sources["demo.jsonl"](), evaluators)
    assert problem is not None
    row = holder["row"]
    real = row["core"]["criteria"][0]
    assert f"1 of {len(read_rows(path))} turn(s) differ" in problem
    assert "[decided] demo " + row["key"] in problem
    decided_by = json.dumps(real["decided_by"])  # null when no stage decided
    assert (f"core {real['id']}: decision " in problem and f"-> {real['decision']}, "
            f"decided_by S9 -> {decided_by}" in problem)
    assert "user: " in problem and UPDATE_COMMAND in problem


def test_margin_args_and_missing_turns_are_reported_as_such(
        tmp_path: Path, evaluators: Evaluators,
        golden_sources: dict[str, Callable[[], list[Source]]]) -> None:
    picked: dict[str, Row] = {}

    def edit(rows: list[Row]) -> None:
        with_crit = [r for r in rows if r["criteria"]]
        a, b = with_crit[0], with_crit[1]
        picked["a"], picked["b"] = copy.deepcopy(a), copy.deepcopy(b)
        a["s1"]["criteria"][0]["margin"] += 0.5  # a detail: same decision and stage
        b["criteria"][0]["args"] = {**b["criteria"][0]["args"], "value": "golden-test"}
        rows.remove(with_crit[2])  # today's evaluation has a turn the snapshot lacks
        rows.append({**with_crit[3], "key": "nowhere:0"})  # and lacks one it names
    path = _perturbed(tmp_path, edit)
    problem = check_file(path, golden_sources["demo.jsonl"](), evaluators)
    assert problem is not None
    a, b = picked["a"], picked["b"]
    assert "4 of" in problem and "(2 decided" in problem and "2 detail only" in problem
    assert f"[detail] demo {a['key']}" in problem
    assert f"s1 {a['s1']['criteria'][0]['id']}: margin " in problem
    assert f"[detail] demo {b['key']}" in problem
    old_value = json.dumps(b["criteria"][0]["args"]["value"])
    assert (f"extraction: {b['criteria'][0]['id']}: args.value \"golden-test\" -> {old_value}"
            in problem)
    assert "new turn, not in the snapshot" in problem
    assert "[decided] demo nowhere:0" in problem and "no such turn now" in problem


def test_a_margin_is_compared_at_four_decimals_not_bit_for_bit() -> None:
    row = _first_with_criteria(read_rows(GOLDEN_DIR / "demo.jsonl"))
    crit = row["core"]["criteria"][0]

    def with_margin(delta: float) -> Row:
        new = copy.deepcopy(row)
        new["core"]["criteria"][0]["margin"] = round(crit["margin"] + delta, 4)
        return new
    assert row_change(row, with_margin(0.0001)) is None  # a rounding step on another CPU
    change = row_change(row, with_margin(0.0003))
    assert change is not None and not change.decided
    assert change.lines == [f"core {crit['id']}: margin {crit['margin']} -> "
                            f"{round(crit['margin'] + 0.0003, 4)}"]


def test_a_changed_input_turn_is_told_apart(
        tmp_path: Path, evaluators: Evaluators,
        golden_sources: dict[str, Callable[[], list[Source]]]) -> None:
    def edit(rows: list[Row]) -> None:
        rows[0]["input"] = "0" * 16
    problem = check_file(_perturbed(tmp_path, edit), golden_sources["demo.jsonl"](),
                         evaluators)
    assert problem is not None and "input turn changed" in problem


def test_the_unchanged_demo_snapshot_passes(
        evaluators: Evaluators, golden_sources: dict[str, Callable[[], list[Source]]]) -> None:
    """The control for the three tests above: the same check on the committed file."""
    if UPDATING:
        pytest.skip("regenerating")
    assert check_file(GOLDEN_DIR / "demo.jsonl", golden_sources["demo.jsonl"](),
                      evaluators) is None
