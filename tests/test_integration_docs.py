"""The runnable examples in docs/integrations.md run, offline, with the real libraries.

Each ```python NAME-example block runs as a script in a fresh directory; a
block whose library is not installed is skipped (the extras run in
`make test-integrations`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"
BLOCKS = dict(re.findall(r"```python ([\w-]+)-example\n(.*?)```", DOC.read_text(), re.S))
NEEDS = {"mlflow": "mlflow", "mlflow-session": "mlflow", "deepeval": "deepeval",
         "inspect": "inspect_ai"}
# what each example prints, computed by sage-tod in the example's own comment
EXPECT = {"deepeval": r"^0\.5 False$", "inspect": r"^0\.0 0 of 1 turn", "mlflow": r"^0\.\d+$",
          "mlflow-session": r"sage_tod"}


def test_every_example_is_known():
    assert set(BLOCKS) == set(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_runs(name, tmp_path):
    if importlib.util.find_spec(NEEDS[name]) is None:
        pytest.skip(f"{NEEDS[name]} is not installed (pip install 'sage-tod[{NEEDS[name]}]')")
    script = tmp_path / f"example_{name.replace('-', '_')}.py"  # not deepeval.py
    script.write_text(BLOCKS[name], encoding="utf-8")
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "INSPECT_DISPLAY": "none",
           "DEEPEVAL_CACHE_FOLDER": str(tmp_path / ".deepeval"),
           "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"}
    for key in ("OPENAI_API_KEY", "MLFLOW_TRACKING_URI"):
        env.pop(key, None)
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, text=True,
                       capture_output=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert re.search(EXPECT[name], r.stdout, re.M), r.stdout[-2000:]
