"""Parquet turns in, Parquet verdicts out: the same records and verdicts as JSONL."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.contracts.verdicts import read_verdicts

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from sage_tod.contracts.parquet import (  # noqa: E402
    VerdictParquetWriter,
    write_turns_parquet,
)


def _demo_objs() -> list[dict[str, object]]:
    return [json.loads(line) for line in demo.turns_path().open() if line.strip()]


def test_turns_round_trip_through_parquet(tmp_path: Path) -> None:
    spec = load_spec(demo.spec_path())
    path = tmp_path / "turns.parquet"
    assert write_turns_parquet(_demo_objs(), path) == 59
    from_pq = load_turns(path, spec).records
    from_jsonl = load_turns(demo.turns_path(), spec).records
    assert [r.turn for r in from_pq] == [r.turn for r in from_jsonl]  # history filled too
    assert [r.gold for r in from_pq] == [r.gold for r in from_jsonl]


def test_struct_columns_read_like_json_columns(tmp_path: Path) -> None:
    spec = load_spec(demo.spec_path())
    objs = _demo_objs()[:6]
    table = pa.Table.from_pylist([{k: v for k, v in o.items() if k != "meta"} for o in objs])
    path = tmp_path / "structs.parquet"
    pq.write_table(table, path)  # states become structs, history a list of structs
    got = load_turns(path, spec).records
    want = load_turns(demo.turns_path(), spec).records[:6]
    assert [r.turn.state_after for r in got] == [r.turn.state_after for r in want]
    assert [r.turn.user for r in got] == [r.turn.user for r in want]


def test_a_bad_row_names_the_row_and_field(tmp_path: Path) -> None:
    spec = load_spec(demo.spec_path())
    objs = _demo_objs()[:3]
    objs[1] = {**objs[1], "workflow": "no_such_workflow"}
    path = tmp_path / "bad.parquet"
    write_turns_parquet(objs, path)
    with pytest.raises(InputError) as exc:
        load_turns(path, spec)
    assert "bad.parquet:2:" in str(exc.value) and "workflow" in str(exc.value)


def test_verdicts_round_trip_and_cli_writes_parquet(tmp_path: Path) -> None:
    from sage_tod.cli.app import app

    out = tmp_path / "v.parquet"
    jl = tmp_path / "v.jsonl"
    turns_pq = tmp_path / "turns.parquet"
    write_turns_parquet(_demo_objs(), turns_pq)
    r1 = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                                  str(turns_pq), "--out", str(out), "-c", "s1", "-q",
                                  "--reproducible"])
    assert r1.exit_code == 0, r1.output
    r2 = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                                  str(demo.turns_path()), "--out", str(jl), "-c", "s1",
                                  "-q", "--reproducible"])
    assert r2.exit_code == 0, r2.output
    assert [v.to_json() for v in read_verdicts(out)] == [v.to_json() for v in
                                                          read_verdicts(jl)]
    cols = pq.read_table(out).column_names
    assert {"dialogue_id", "turn_id", "verdict", "classes", "json"} <= set(cols)
    # writer round trip directly
    again = tmp_path / "again.parquet"
    with VerdictParquetWriter(again) as w:
        for v in read_verdicts(jl):
            w.write(v)
    assert read_verdicts(again) == read_verdicts(jl)
    resume = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()),
                                      "--turns", str(turns_pq), "--out", str(out),
                                      "-c", "s1", "--resume"])
    assert resume.exit_code == 2 and "JSONL" in resume.output


def test_missing_pyarrow_is_one_clear_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.parquet"
    write_turns_parquet(_demo_objs()[:2], path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(InputError) as exc:
        load_turns(path, load_spec(demo.spec_path()))
    assert "pip install 'sage-tod[parquet]'" in str(exc.value)


def test_parquet_verdicts_carry_the_run_header(tmp_path: Path) -> None:
    from sage_tod.cli.app import app
    from sage_tod.contracts.verdicts import read_header

    out = tmp_path / "v.parquet"
    r = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                                 str(demo.turns_path()), "--out", str(out), "-c", "s1", "-q"])
    assert r.exit_code == 0, r.output
    head = read_header(out)
    assert head is not None and head.config == "s1" and head.stages == ["S1"]
    assert head.inputs["turns_sha256"] and head.fingerprints["S1"]["times"] is True
    first = json.loads(pq.read_table(out).column("json")[0].as_py())
    assert "config" not in first and "stages" not in first  # stated once, in the header
    assert all(v.config == "s1" and v.stages == ["S1"] for v in read_verdicts(out))


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9, 0.999])
def test_a_parquet_file_cut_short_is_one_located_error(tmp_path: Path, keep: float) -> None:
    """A copy interrupted mid-way (turns or verdicts): one InputError, never a traceback."""
    from sage_tod.cli.app import app

    turns_pq = tmp_path / "turns.parquet"
    write_turns_parquet(_demo_objs() * 40, turns_pq)
    verdicts_pq = tmp_path / "v.parquet"
    with VerdictParquetWriter(verdicts_pq) as w:
        for v in read_verdicts(demo_verdicts(tmp_path)):
            w.write(v)
    for full in (turns_pq, verdicts_pq):
        data = full.read_bytes()
        cut = tmp_path / f"cut-{full.name}"
        cut.write_bytes(data[: int(len(data) * keep)])
        if full is turns_pq:
            with pytest.raises(InputError, match="not a readable Parquet file"):
                load_turns(cut, load_spec(demo.spec_path()))
            r = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()),
                                         "--turns", str(cut), "--out",
                                         str(tmp_path / "o.jsonl"), "-c", "s1", "-q",
                                         "--overwrite"])
        else:
            with pytest.raises(InputError, match="not a readable Parquet file"):
                read_verdicts(cut)
            r = CliRunner().invoke(app, ["explain", str(cut)])
        assert r.exit_code == 2 and "not a readable Parquet file" in r.output, r.output
        assert "Traceback" not in r.output


def demo_verdicts(tmp: Path) -> Path:
    from sage_tod.cli.app import app

    out = tmp / "demo.jsonl"
    r = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                                 str(demo.turns_path()), "--out", str(out), "-c", "s1", "-q",
                                 "--overwrite"])
    assert r.exit_code == 0, r.output
    return out
