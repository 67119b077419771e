"""Every hostile input ends in one `error:` line and exit status 2, never a traceback.

The corpus is `tests/hostile/corpus.py` (docs/guarantees.md names this test).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile.corpus import CASES, FILES, Case

runner = CliRunner()


def _fill(text: str, tmp: Path) -> str:
    return text.format(demo_spec=demo.spec_path(), demo_turns=demo.turns_path(),
                       files=FILES, tmp=tmp)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_one_error_line(case: Case, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if not case.root_ok and os.geteuid() == 0:
        pytest.skip("permissions do not bind root")
    if case.make is not None:
        case.make(tmp_path)
    for k, v in case.env.items():
        monkeypatch.setenv(k, _fill(v, tmp_path))
    monkeypatch.setenv("SAGE_TOD_NLI_CACHE", "off")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    r = runner.invoke(app, [_fill(a, tmp_path) for a in case.argv])
    stderr = r.stderr
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output and 'File "' not in stderr, r.output
    errors = [ln for ln in stderr.splitlines() if ln.startswith(("error:", "internal error:"))]
    assert len(errors) == 1 and errors[0].startswith("error:"), stderr
    assert case.expect.lower() in errors[0].lower(), errors[0]
    # a refused command changed none of the user's files
    for p, data in before.items():
        if p.name != "v.jsonl":
            assert p.read_bytes() == data, f"{p} was changed"
