"""`evaluate` streams: peak memory does not grow with the number of turns.

Two subprocess runs (1,000 and 8,000 rules-only turns) must peak within 40 MB
of each other; holding every record and verdict (the old behaviour, 1.4 GB
at 100k turns) grows ~14 kB a turn, ~100 MB here. The 100k-turn measurement
is in docs/results-trust.md. docs/guarantees.md names this test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sage_tod import demo

SRC = str(Path(__file__).resolve().parents[1] / "src")
# VmHWM (this program's own peak), not ru_maxrss: on Linux ru_maxrss survives exec, so a
# child forked from a pytest that loaded torch would report pytest's peak
CHILD = """
import resource, sys
from sage_tod.cli import main
def peak_kb():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    main()
finally:
    print("MAXRSS_KB", peak_kb(), file=sys.stderr)
"""


def _turns(path: Path, n: int) -> None:
    base = [json.loads(x) for x in demo.turns_path().read_text().splitlines()]
    with path.open("w") as fh:
        k = 0
        while n > 0:
            for t in base[:n]:
                fh.write(json.dumps({**t, "dialogue_id": f"{t['dialogue_id']}-{k}"}) + "\n")
            n -= len(base)
            k += 1


def _peak_mb(tmp: Path, n: int) -> float:
    turns, out = tmp / f"t{n}.jsonl", tmp / f"v{n}.jsonl"
    _turns(turns, n)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, "evaluate", "--spec", str(demo.spec_path()), "--turns",
         str(turns), "--out", str(out), "--config", "s1"],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "SAGE_TOD_NLI_CACHE": "off"},
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert sum(1 for _ in out.open()) == n + 1  # the run header, then one line per turn
    kb = next(int(line.split()[1]) for line in r.stderr.splitlines()
              if line.startswith("MAXRSS_KB"))
    return kb / 1024


def test_peak_memory_does_not_grow_with_the_turns(tmp_path: Path) -> None:
    small, large = _peak_mb(tmp_path, 1_000), _peak_mb(tmp_path, 8_000)
    assert large - small < 40, (small, large)
    assert large < 500
