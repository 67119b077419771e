"""The composite GitHub Action: action.yml wires inputs to action/run.sh, and run.sh
does on a runner what it says, with the environment a runner gives a step
(RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_REPOSITORY, ...).

The script runs for real here; only the install step is skipped
(`install: none`) since this test environment already has sage-tod on PATH.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sage_tod import demo

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
SCRIPT = ROOT / "action" / "run.sh"
BIN = Path(sys.executable).parent


def _env(tmp: Path, **inputs: str) -> dict[str, str]:
    """What a runner provides to the step, plus the step's INPUT_* mapping."""
    for name in ("temp", "ws"):
        (tmp / name).mkdir(exist_ok=True)
    (tmp / "summary.md").touch()
    (tmp / "output.txt").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.update({
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(tmp / "temp"), "GITHUB_WORKSPACE": str(tmp / "ws"),
        "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_RUN_ID": "4242", "SAGE_TOD_ACTION_PATH": str(ROOT),
        "INPUT_SPEC": str(demo.spec_path()), "INPUT_TURNS": str(demo.turns_path()),
        "INPUT_CONFIG": "s1", "INPUT_INSTALL": "none", "INPUT_WORST": "3",
        "INPUT_FAIL_ON_GATE": "true",
    })
    env.update(inputs)
    return env


def _run(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT)], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=300, check=False)


def _outputs(tmp: Path) -> dict[str, str]:
    return dict(line.split("=", 1)
                for line in (tmp / "output.txt").read_text().splitlines() if line)


needs_cli = pytest.mark.skipif(shutil.which("sage-tod", path=str(BIN)) is None,
                               reason="the sage-tod console script is not installed beside "
                                      "this Python (pip install -e .)")


def test_action_yml_passes_every_input_to_the_script():
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    assert step["run"] == 'bash "$SAGE_TOD_ACTION_PATH/action/run.sh"'
    env = step["env"]
    for name in action["inputs"]:
        if name in ("python-version", "upload-artifact"):
            continue  # used by the other steps
        var = "INPUT_" + name.upper().replace("-", "_")
        assert env[var] == f"${{{{ inputs.{name} }}}}"
    used = set(re.findall(r"\bINPUT_[A-Z0-9_]+", SCRIPT.read_text(encoding="utf-8")))
    assert used <= set(env), used - set(env)
    for name, out in action["outputs"].items():
        assert out["value"] == f"${{{{ steps.run.outputs.{name} }}}}"


@needs_cli
def test_script_evaluates_reports_gates_and_writes_runner_files(tmp_path):
    env = _env(tmp_path, INPUT_MAX_FAILURE_RATE="1", INPUT_MAX_CLASS="UV=100 PC=100")
    r = _run(env, tmp_path / "ws")
    assert r.returncode == 0, r.stderr
    out = _outputs(tmp_path)
    assert out["passed"] == "true"
    assert out["dir"] == str(tmp_path / "temp" / "sage-tod")
    verdicts = Path(out["verdicts"]).read_text(encoding="utf-8").splitlines()[1:]  # header
    turns = [line for line in demo.turns_path().read_text().splitlines() if line.strip()]
    assert len(verdicts) == len(turns)
    failures = sum(json.loads(v)["verdict"] == "failure" for v in verdicts)
    assert out["failures"] == str(failures) and failures > 0
    assert Path(out["report"]).read_text(encoding="utf-8").startswith("<!doctype html>")
    summary = Path(out["summary"]).read_text(encoding="utf-8")
    assert summary == (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "| UV turns |" in summary and "| PC turns |" in summary
    assert "https://github.com/acme/agent/actions/runs/4242#artifacts" in summary


@needs_cli
def test_script_fails_the_step_on_a_failed_gate_unless_told_not_to(tmp_path):
    r = _run(_env(tmp_path, INPUT_MAX_FAILURE_RATE="0"), tmp_path / "ws")
    assert r.returncode == 1
    assert "gate failed: failure rate" in r.stderr
    assert _outputs(tmp_path)["passed"] == "false"
    assert "❌ failed" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    r = _run(_env(tmp_path, INPUT_MAX_FAILURE_RATE="0", INPUT_FAIL_ON_GATE="false"),
             tmp_path / "ws")
    assert r.returncode == 0 and "::warning" in r.stdout + r.stderr


@needs_cli
def test_script_compares_against_a_baseline(tmp_path):
    r = _run(_env(tmp_path), tmp_path / "ws")
    assert r.returncode == 0, r.stderr
    first = Path(_outputs(tmp_path)["verdicts"])
    head, *lines = first.read_text(encoding="utf-8").splitlines()  # the run header first
    rows = [json.loads(line) for line in lines]
    flipped = [row["dialogue_id"] + ":" + str(row["turn_id"]) for row in rows
               if row["verdict"] == "failure"][:1]
    for row in rows:
        if row["verdict"] == "failure" and f"{row['dialogue_id']}:{row['turn_id']}" in flipped:
            row["verdict"] = "acceptable"
    baseline = tmp_path / "baseline.jsonl"
    baseline.write_text(head + "\n" + "".join(json.dumps(row) + "\n" for row in rows),
                        encoding="utf-8")
    env = _env(tmp_path, INPUT_BASELINE=str(baseline), INPUT_OUTPUT_DIR=str(tmp_path / "o2"))
    r = _run(env, tmp_path / "ws")
    assert r.returncode == 1
    assert _outputs(tmp_path)["regressions"] == "1"
    assert f"`{flipped[0]}`" in (tmp_path / "o2" / "summary.md").read_text(encoding="utf-8")


def test_script_rejects_missing_files_with_exit_2(tmp_path):
    r = _run(_env(tmp_path, INPUT_TURNS=str(tmp_path / "nope.jsonl")), tmp_path / "ws")
    assert r.returncode == 2
    assert "::error title=sage-tod::turns not found" in r.stderr
