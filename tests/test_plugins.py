"""The plugin mechanism, proven with the worked example of docs/api.md.

The example module and its entry points are installed as a real (if minimal)
distribution on a path of its own, and `sage-tod` runs in a subprocess that
sees it: the same discovery a `pip install my_checks` gives.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sage_tod import demo, read_verdicts
from sage_tod.compiler import CRITERIA
from sage_tod.compiler.kinds import CriterionKind
from sage_tod.evaluation import CONFIGS, Evaluator, StageConfig
from sage_tod.plugins import UnknownName
from sage_tod.verifiers import STAGES

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
# the demo restaurant spec: area is already in s_{t-1}, and the agent asks for it again
REASK_TURN = {
    "dialogue_id": "plug-1", "turn_id": 0, "workflow": "restaurant_booking",
    "user": "Something Italian, please.",
    "agent": "Which area of town would you like?",
    "state_before": {"restaurant-area": "centre"},
    "state_after": {"restaurant-area": "centre", "restaurant-food": "italian"},
    "agent_acts": {"request": ["restaurant-area"], "confirm": False},
}


def _block(tag: str) -> str:
    m = re.search(rf"```\w+ {tag}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert m, f"docs/api.md has no {tag} block"
    return m.group(1)


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`my_checks` installed as a distribution: module + dist-info with entry_points.txt."""
    site = tmp_path_factory.mktemp("site")
    (site / "my_checks.py").write_text(_block("plugin-example"), encoding="utf-8")
    info = site / "my_checks-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my_checks\nVersion: 0.1\n")
    groups = tomllib.loads(_block("plugin-entry-points"))["project"]["entry-points"]
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) + "\n"
        for group, entries in groups.items()), encoding="utf-8")
    return site


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return subprocess.run([sys.executable, "-m", "sage_tod.cli", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_builtins_come_from_entry_points() -> None:
    assert {"S1", "S2", "S3"} <= set(STAGES.names())
    assert {"UV", "IUV", "WNF", "PC"} <= set(CRITERIA.names())
    assert {"core", "llm", "s1"} <= set(CONFIGS.names())
    with pytest.raises(UnknownName, match=r"available: .*core"):
        CONFIGS.get("nope")


def test_plugin_from_an_installed_package(plugin_site: Path, tmp_path: Path) -> None:
    listed = _run(plugin_site, "configs")
    assert listed.returncode == 0, listed.stderr
    assert "core_reask" in listed.stdout and "REASK-rules" in listed.stdout
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps(REASK_TURN) + "\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    run = _run(plugin_site, "evaluate", "--spec", str(demo.spec_path()), "--turns", str(turns),
               "--out", str(out), "--config", "core_reask")
    assert run.returncode in (0, 1), run.stderr
    v = read_verdicts(out)[0].to_dict()  # the header's config and stages put back
    reask = [c for c in v["criteria"] if c["class"] == "REASK"]
    assert len(reask) == 1 and reask[0]["decided_by"] == "REASK-rules"
    assert reask[0]["decision"] == "true" and "already in the state" in reask[0]["repair"]
    assert v["verdict"] == "failure" and v["classes"][-1] == "REASK"
    assert v["stages"][-1] == "REASK-rules"


def test_a_configuration_without_the_plugin_class_is_unchanged() -> None:
    """Run-time registration: a kind registered but not named by `core` compiles nothing."""
    def never(ctx: object) -> list[object]:
        raise AssertionError("core must not compile a plugin class")
    CRITERIA.register("NEVER", CriterionKind("NEVER", never, lambda c, x: ""))  # type: ignore[arg-type]
    CONFIGS.register("core_never", StageConfig("core_never", ("S1",), "test",
                                               criteria=("UV", "IUV", "WNF", "PC", "NEVER")))
    try:
        ev = Evaluator(demo.spec_path(), config="s1")
        v = ev.evaluate_turn(REASK_TURN)
        assert all(c.failure_class != "NEVER" for c in v.criteria)
        with pytest.raises(AssertionError, match="must not compile"):
            Evaluator(demo.spec_path(), config="core_never").evaluate_turn(REASK_TURN)
    finally:
        CRITERIA.unregister("NEVER")
        CONFIGS.unregister("core_never")
