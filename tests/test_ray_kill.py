"""Kill a Ray worker of a real `sage-tod evaluate --engine ray` run, resume, compare.

Slow (a Ray instance in a child process; ~50 s on 2 cores): `pytest -m slow`, which
`.ci/run` runs after installing the `ray` extra. In its own module so no Ray instance of
another test is alive in this process while it kills workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sage_tod import demo
from sage_tod.contracts.verdicts import read_verdicts

pytest.importorskip("ray")
pytestmark = pytest.mark.slow


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _descends_from(pid: int, root: int) -> bool:
    seen = 0
    cur: int | None = pid
    while cur not in (None, 0, 1) and seen < 64:
        if cur == root:
            return True
        cur = _parent(cur)
        seen += 1
    return False


def _ray_workers(root: int) -> list[int]:
    """PIDs of the Ray worker processes under `root` (the `evaluate` run) that hold tasks
    or actors (`ray::<name>`, not `ray::IDLE`), found through /proc: no psutil, and never
    a worker of another Ray instance on the machine."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == root:
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if cmd.startswith("ray::") and not cmd.startswith("ray::IDLE") \
                and _descends_from(int(p.name), root):
            out.append(int(p.name))
    return out


def test_a_ray_worker_killed_mid_run_gives_the_same_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL a Ray worker while `evaluate --engine ray` runs: the run either survives
    (Ray restarts the actor and retries its blocks) or stops, and `--resume` finishes it;
    either way the verdicts equal an uninterrupted plain run's, in order."""
    import os
    import signal
    import subprocess
    import sys
    import time

    monkeypatch.setenv("SAGE_TOD_NLI_CACHE", "off")
    lines = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    turns = tmp_path / "big.jsonl"
    with turns.open("w") as fh:
        for k in range(40):  # 2,360 turns
            for obj in lines:
                fh.write(json.dumps({**obj, "dialogue_id": f"{obj['dialogue_id']}-{k}"}) + "\n")
    common = [sys.executable, "-m", "sage_tod.cli.app", "evaluate", "--spec",
              str(demo.spec_path()), "--turns", str(turns), "-c", "s1", "-q", "--reproducible"]
    ref = tmp_path / "plain.jsonl"
    subprocess.run([*common, "--out", str(ref)], check=True, timeout=300)
    out = tmp_path / "ray.jsonl"
    ray_args = ["--engine", "ray", "--workers", "2", "--batch-size", "8"]
    proc = subprocess.Popen([*common, "--out", str(out), *ray_args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    killed: list[int] = []
    deadline = time.time() + 240
    while not killed and proc.poll() is None and time.time() < deadline:
        workers = _ray_workers(proc.pid)
        if workers and out.exists() and out.stat().st_size > 0:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])
        time.sleep(0.05)
    rc = proc.wait(timeout=300)
    print(f"killed {killed}, run exit status {rc}")  # shown with -s: which path was taken
    if not killed:
        pytest.skip("the run ended before a Ray worker could be killed")
    if rc != 0:  # the run stopped: what it wrote is kept, --resume finishes it
        subprocess.run([*common, "--out", str(out), *ray_args, "--resume"], check=True,
                       timeout=300)
    assert [v.to_json() for v in read_verdicts(out)] == [
        v.to_json() for v in read_verdicts(ref)]
