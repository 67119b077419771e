"""Kill a real `sage-tod evaluate` with SIGKILL twice, resume, compare byte for byte."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from sage_tod import demo

COPIES = 120  # 59 demo turns x 120 = 7080 turns: a few seconds of S1 work


def _big_turns(tmp_path: Path) -> Path:
    lines = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    out = tmp_path / "big.jsonl"
    with out.open("w") as fh:
        for k in range(COPIES):
            for obj in lines:
                fh.write(json.dumps({**obj, "dialogue_id": f"{obj['dialogue_id']}-{k}"}) + "\n")
    return out


def _cmd(turns: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sage_tod.cli.app", "evaluate", "--spec", str(demo.spec_path()),
            "--turns", str(turns), "--out", str(out), "--config", "s1", "--quiet",
            "--reproducible", "--batch-size", "16", *extra]


def _n_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kill_twice_then_resume_gives_identical_file(tmp_path: Path) -> None:
    turns = _big_turns(tmp_path)
    total = COPIES * 59
    ref = tmp_path / "ref.jsonl"
    subprocess.run(_cmd(turns, ref), check=True, timeout=300)
    assert _n_lines(ref) == total + 1  # the run header, then one verdict per turn

    run = tmp_path / "run.jsonl"
    rng = random.Random(1234)
    kills = 0
    flags: tuple[str, ...] = ()
    while kills < 2:
        start = _n_lines(run)
        proc = subprocess.Popen(_cmd(turns, run, *flags), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # wait until it has written more, then kill it at a random further point
        deadline = time.time() + 120
        target = start + rng.randint(200, 1500)
        while _n_lines(run) < target and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            assert 0 < _n_lines(run) < total
        else:  # finished before we could kill it: start over with a fresh file
            run.unlink()
            flags = ()
            continue
        flags = ("--resume",)
    subprocess.run(_cmd(turns, run, "--resume"), check=True, timeout=300)
    assert run.read_bytes() == ref.read_bytes()
