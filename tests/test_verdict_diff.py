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
