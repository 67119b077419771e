"""`sage-tod bench diff`: the identity check every speed change is measured with."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.lab.verdict_diff import diff_runs


def _run(tmp: Path, name: str) -> Path:
    out = tmp / name
    res = CliRunner().invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                                   str(demo.turns_path()), "--out", str(out), "--config", "s1",
                                   "--quiet"])
    assert res.exit_code == 0, res.output
    return out


def _edit(path: Path, line: int, change: dict[str, object]) -> None:
    """Change verdict number `line` (from 0; the file's first line is the run header)."""
    rows = path.read_text().splitlines()
    d = json.loads(rows[line + 1])
    d.update(change)
    rows[line + 1] = json.dumps(d)
    path.write_text("\n".join(rows) + "\n")


def test_same_verdicts_with_other_latencies_are_identical(tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a.jsonl"), _run(tmp_path, "b.jsonl")
    _edit(b, 0, {"latency_ms": 999.0})
    (d,) = diff_runs(a, b)
    assert d.turns == 59 and d.changed == []
    res = CliRunner().invoke(app, ["bench", "diff", str(a), str(b)])
    assert res.exit_code == 0 and "59 turns compared: identical" in res.output


def test_a_changed_label_and_a_changed_wording_are_told_apart(tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a.jsonl"), _run(tmp_path, "b.jsonl")
    first = json.loads(a.read_text().splitlines()[1])
    flipped = "acceptable" if first["verdict"] == "failure" else "failure"
    _edit(b, 0, {"verdict": flipped})
    second = json.loads(a.read_text().splitlines()[4])
    crits = second["criteria"]
    assert crits, "the demo's fourth turn has criteria"
    crits[0]["rationale"] = "reworded"
    _edit(b, 3, {"criteria": crits})
    (d,) = diff_runs(a, b)
    assert [c.key for c in d.changed] == [f"{first['dialogue_id']}:{first['turn_id']}",
                                          f"{second['dialogue_id']}:{second['turn_id']}"]
    assert d.relabelled == 1 and d.redecided == 1
    assert d.changed[1].field == "criteria" and not d.changed[1].decided
    res = CliRunner().invoke(app, ["bench", "diff", str(a), str(b)])
    assert res.exit_code == 1
    assert "2 of 59 turns differ, 1 in a decision, 1 in the label" in res.output
    assert f"{first['verdict']} -> {flipped}" in res.output
    assert "(wording/margins only)" in res.output


def test_directories_compare_file_by_file_and_bad_paths_exit_2(tmp_path: Path) -> None:
    for side in ("x", "y"):
        (tmp_path / side / "runs" / "demo").mkdir(parents=True)
    a = _run(tmp_path, "x/runs/demo/s1.jsonl")
    b = _run(tmp_path, "y/runs/demo/s1.jsonl")
    assert a.read_text() != "" and b.exists()
    only = tmp_path / "y" / "runs" / "demo" / "core.jsonl"
    only.write_text(a.read_text())
    diffs = {d.name: d for d in diff_runs(tmp_path / "x", tmp_path / "y")}
    assert diffs["demo/s1.jsonl"].changed == []
    assert len(diffs["demo/core.jsonl"].changed) == 59  # on one side only
    assert all(c.before is None for c in diffs["demo/core.jsonl"].changed)
    bad = CliRunner().invoke(app, ["bench", "diff", str(a), str(tmp_path / "nope.jsonl")])
    assert bad.exit_code == 2 and "no such file" in bad.output
    mixed = CliRunner().invoke(app, ["bench", "diff", str(a), str(tmp_path / "x")])
    assert mixed.exit_code == 2 and "two files or two directories" in mixed.output


def test_diff_and_explain_show_the_run_header(tmp_path: Path, monkeypatch) -> None:
    """Two runs that differ in a switch: `bench diff` names the header field beside the
    verdicts; `explain` starts with the run that made the file."""
    a = _run(tmp_path, "a.jsonl")
    monkeypatch.setenv("SAGE_TOD_S1_TIMES", "0")
    b = _run(tmp_path, "b.jsonl")
    res = CliRunner().invoke(app, ["bench", "diff", str(a), str(b)])
    assert "run headers differ in fingerprints.S1.times (True then, False now)" in res.output
    assert "created" not in res.output.split("run headers differ in")[1].split("\n")[0]
    res = CliRunner().invoke(app, ["explain", str(a)])
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[0]
    assert first.startswith("run: sage-tod ") and "config s1, stages S1" in first
    assert "S1: pc_state=after, wnf_state=either, times=True" in res.output


def _as_format_1(src: Path, dst: Path) -> Path:
    """`src` (format 2) written as sage-tod wrote verdicts before run headers: no header,
    every field on every line, `format_version` 1."""
    from sage_tod.contracts.verdicts import iter_verdicts

    dst.write_text("".join(json.dumps({**v.to_dict(), "format_version": 1}) + "\n"
                           for v in iter_verdicts(src)))
    return dst


def test_format_1_against_format_2_differs_in_the_header_not_in_every_turn(
        tmp_path: Path) -> None:
    """The same verdicts in a format-1 and a format-2 file: `format_version` is one header
    difference (with which side has no header), not 59 changed turns."""
    new = _run(tmp_path, "new.jsonl")
    old = _as_format_1(new, tmp_path / "old.jsonl")
    assert old.read_text().splitlines()[0].startswith('{"format_version": 1')
    (d,) = diff_runs(old, new)
    assert d.turns == 59 and d.changed == [] and d.redecided == 0
    assert d.header == ["format_version (1 then, 2 now)",
                        "run header (only in new.jsonl; old.jsonl has none: format 1, "
                        "written before run headers)"]
    res = CliRunner().invoke(app, ["bench", "diff", str(old), str(new)])
    assert res.exit_code == 0, res.output
    assert "run headers differ in format_version (1 then, 2 now)" in res.output
    assert "59 turns compared: identical" in res.output
    # a real change across the formats is still one turn, named by its field
    _edit(new, 3, {"verdict": "undecided"})
    (d,) = diff_runs(old, new)
    assert [(c.field, c.decided) for c in d.changed] == [("verdict", True)]
    res = CliRunner().invoke(app, ["bench", "diff", str(old), str(new)])
    assert res.exit_code == 1 and "1 of 59 turns differ, 1 in a decision" in res.output
    # two format-1 files: no header to compare, nothing differs
    (d,) = diff_runs(old, _as_format_1(_run(tmp_path, "again.jsonl"), tmp_path / "o2.jsonl"))
    assert d.header == [] and d.changed == []
