"""The import-linter contracts hold, and they can fail.

`make test` runs `lint-imports` on the tree; this test proves the contracts are
not vacuous: a copy of the package with one runtime module importing the lab
side is rejected, naming the offending import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=src)


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (dev extra)")
def test_contracts_hold_and_can_fail(tmp_path: Path) -> None:
    assert _lint(ROOT / "src").returncode == 0
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "sage_tod", copy / "sage_tod",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "sage_tod" / "evaluation" / "aggregate.py"
    target.write_text(target.read_text(encoding="utf-8")
                      + "\nfrom sage_tod.lab import stats  # noqa: E402,F401\n", encoding="utf-8")
    run = _lint(copy)
    assert run.returncode != 0
    assert "sage_tod.evaluation.aggregate -> sage_tod.lab.stats" in run.stdout
    assert "The runtime never imports the research side" in run.stdout
