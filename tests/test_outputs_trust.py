"""No data loss, no mixed files: overwrite refusal, atomic writes, the lock, the run header.

docs/guarantees.md names these tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sage_tod
from sage_tod import demo
from sage_tod.cli import app
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.verdicts import read_header, read_verdicts
from sage_tod.outputs.files import LineFile, OutputLocked, open_lines, write_atomic
from sage_tod.outputs.sink import sidecar_path

runner = CliRunner()
ARGS = ["--spec", str(demo.spec_path()), "--turns", str(demo.turns_path()), "--config", "s1",
        "--quiet", "--reproducible"]
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _evaluate(out: Path, *more: str) -> object:
    return runner.invoke(app, ["evaluate", *ARGS, "--out", str(out), *more])


def test_every_writing_command_refuses_to_overwrite(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    assert _evaluate(verdicts).exit_code == 0  # type: ignore[attr-defined]
    mine = tmp_path / "mine.txt"
    mine.write_text("precious\n")
    commands = [
        ["evaluate", *ARGS, "--out", str(mine)],
        ["report", str(verdicts), "--out", str(mine)],
        ["demo", "--config", "s1", "--out", str(mine)],
    ]
    for argv in commands:
        r = runner.invoke(app, argv)
        assert r.exit_code == 2 and "--overwrite" in r.stderr, (argv, r.output)
        assert mine.read_text() == "precious\n"
    r = runner.invoke(app, ["report", str(verdicts), "--out", str(mine), "--overwrite"])
    assert r.exit_code == 0 and mine.read_text().lower().startswith("<!doctype html")


def test_resume_on_a_file_that_is_not_verdicts_leaves_it_untouched(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    for text in ("my notes\n", "my notes without newline", '{"a": 1}\n{"b": 2}\n'):
        notes.write_text(text)
        r = _evaluate(notes, "--resume")
        assert r.exit_code == 2 and "not a verdicts file" in r.stderr  # type: ignore[attr-defined]
        assert notes.read_text() == text
        assert not sidecar_path(notes).exists()


def test_resume_refuses_a_different_run(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5]))
    other_turns = tmp_path / "turns.jsonl"
    other_turns.write_text(demo.turns_path().read_text().replace("centre", "center", 1))
    for change in (["--config", "no_s2"], ["--pc-state", "before"],
                   ["--turns", str(other_turns)]):
        argv = ["evaluate", *ARGS, "--out", str(out), "--resume", *change]
        r = runner.invoke(app, argv)
        assert r.exit_code == 2 and "different run" in r.stderr, (change, r.output)
        assert out.read_text() == "".join(lines[:5])
    r = _evaluate(out, "--resume")
    assert r.exit_code == 0 and out.read_text() == "".join(lines)  # type: ignore[attr-defined]


def test_resume_of_a_format_1_file_without_header_refuses(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    before = out.read_text().splitlines(keepends=True)
    out.write_text("".join(before[1:]))  # what sage-tod wrote before the header existed
    r = _evaluate(out, "--resume")
    assert r.exit_code == 2 and "no run header" in r.stderr  # type: ignore[attr-defined]
    assert out.read_text() == "".join(before[1:])


def test_header_names_code_spec_turns_config_and_stages(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    head = json.loads(out.read_text().splitlines()[0])
    assert head["record"] == "sage-tod run" and head["format_version"] == 2
    assert head["sage_tod"]["version"] == sage_tod.__version__
    assert len(head["inputs"]["spec_sha256"]) == 64
    assert len(head["inputs"]["turns_sha256"]) == 64
    assert head["config"] == "s1" and head["stages"] == ["S1"]
    assert head["fingerprints"]["S1"] == {"pc_state": "after", "wnf_state": "either",
                                          "times": True}
    assert "created" not in head  # --reproducible: reruns are byte-identical
    assert head["environment"]["python"].count(".") == 2
    # the verdict lines leave out what the header says; the reader puts it back
    first = json.loads(out.read_text().splitlines()[1])
    assert not {"config", "stages", "format_version", "missing"} & set(first)
    v = read_verdicts(out)[0]
    assert v.config == "s1" and v.stages == ["S1"] and v.format_version == 2
    assert not sidecar_path(out).exists()


def test_resume_refuses_another_s1_switch_naming_the_field(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:4]))
    monkeypatch.setenv("SAGE_TOD_S1_TIMES", "0")
    r = _evaluate(out, "--resume")
    assert r.exit_code == 2 and "fingerprints.S1.times (True then, False now)" in r.stderr
    assert out.read_text() == "".join(lines[:4])


def test_format_1_files_still_read(tmp_path: Path) -> None:
    """A verdicts file of format 1 (no header, every field on every line) reads as before."""
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    new = read_verdicts(out)
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({**v.to_dict(), "format_version": 1}) + "\n"
                           for v in new))
    back = read_verdicts(old)
    assert [v.model_copy(update={"format_version": 2}) for v in back] == new
    assert read_header(old) is None and read_header(out) is not None


def test_resume_names_a_damaged_middle_line_and_can_cut_there(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    full = out.read_text()
    lines = full.splitlines(keepends=True)
    damaged = "".join(lines[:5]) + '{"dialogue_id": "x", garbage\n' + "".join(lines[6:])
    out.write_text(damaged)
    r = _evaluate(out, "--resume")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    assert "line 6" in r.stderr and "--truncate-at-damage" in r.stderr  # type: ignore
    assert out.read_text() == damaged
    r = _evaluate(out, "--resume", "--truncate-at-damage")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert "cut at damaged line 6" in r.stderr  # type: ignore[attr-defined]
    assert out.read_text() == full


def test_a_held_lock_refuses_a_second_writer(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    assert _evaluate(out).exit_code == 0  # type: ignore[attr-defined]
    before = out.read_bytes()
    with LineFile(out, fresh=False):
        r = _evaluate(out, "--resume")
        assert r.exit_code == 2 and "another sage-tod run" in r.stderr  # type: ignore
        r = _evaluate(out, "--overwrite")
        assert r.exit_code == 2 and "another sage-tod run" in r.stderr  # type: ignore
    assert out.read_bytes() == before
    with open_lines(tmp_path / "x.jsonl", overwrite=False), pytest.raises(OutputLocked):
        LineFile(tmp_path / "x.jsonl", fresh=False).open()


def test_two_concurrent_resumes_never_interleave(tmp_path: Path) -> None:
    """Two real processes resume one file at once: one runs, the other exits 2 at once,
    and the file holds each turn exactly once."""
    turns = tmp_path / "turns.jsonl"
    base = [json.loads(x) for x in demo.turns_path().read_text().splitlines()]
    with turns.open("w") as fh:
        for k in range(40):
            for t in base:
                fh.write(json.dumps({**t, "dialogue_id": f"{t['dialogue_id']}-{k}"}) + "\n")
    out = tmp_path / "v.jsonl"
    argv = [sys.executable, "-c", "from sage_tod.cli import main; main()", "evaluate",
            "--spec", str(demo.spec_path()), "--turns", str(turns), "--out", str(out),
            "--config", "s1", "--quiet", "--resume"]
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "SAGE_TOD_NLI_CACHE": "off"}
    first = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and out.stat().st_size > 0):
        time.sleep(0.05)
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    first_err = first.communicate(timeout=300)[1]
    codes = sorted([first.returncode, second.returncode])
    if codes == [0, 0]:  # the first had finished before the second started: no overlap
        pytest.skip("the first run finished before the second started")
    assert codes == [0, 2], (first_err, second.stderr)
    assert "another sage-tod run" in (second.stderr + first_err)
    keys = [(v["dialogue_id"], v["turn_id"])
            for v in map(json.loads, out.read_text().splitlines()[1:])]
    assert len(keys) == len(set(keys))


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    import os as _os

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_os, "fsync", boom)
    with pytest.raises(InputError, match="No space left"):
        write_atomic(target, "new", overwrite=True)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temp file left


def test_a_stream_output_writes_nothing_beside_it() -> None:
    """`--out /dev/stdout` streams the verdicts; nothing is written into /dev."""
    r = runner.invoke(app, ["evaluate", *ARGS, "--out", "/dev/stdout"])
    assert r.exit_code == 0, r.output
    assert not Path("/dev/stdout.meta.json").exists()
    assert not Path("/proc/self/fd/1.meta.json").exists()
