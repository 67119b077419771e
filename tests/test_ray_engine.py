"""`--engine ray` on a local Ray instance gives the plain engine's verdicts.

Slow (starting Ray and two actors takes 10-30 s on 2 cores): `pytest -m slow`,
which .ci/run runs after installing the `ray` extra. Skips without Ray.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.evaluation.evaluator import Evaluator

ray = pytest.importorskip("ray")
pytest.importorskip("pyarrow")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    from sage_tod.evaluation.ray_engine import init_ray

    yield init_ray(None, num_cpus=3)
    ray.shutdown()


def _plain(config: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    spec = load_spec(demo.spec_path())
    ev = Evaluator(spec, config, options=options)
    return [{**v.to_dict(), "latency_ms": 0} for v in
            ev.evaluate(load_turns(demo.turns_path(), spec).records)]


def _raw_turns() -> list[dict[str, Any]]:
    """The demo turns as an agent log would hold them: no gold, and no history (the
    engine must rebuild it before sharding)."""
    out = []
    for line in demo.turns_path().open():
        if line.strip():
            obj = json.loads(line)
            out.append({k: v for k, v in obj.items() if k not in ("gold", "meta", "history")})
    return out


@pytest.mark.parametrize("config", ["s1", "core"])
def test_ray_verdicts_equal_plain_verdicts(local_ray: Any, config: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from sage_tod.evaluation.ray_engine import evaluate_ray

    monkeypatch.setenv("SAGE_TOD_NLI_CACHE", "off")
    spec = load_spec(demo.spec_path())
    cache = tmp_path / "scores.sqlite"
    got = [{**v.to_dict(), "latency_ms": 0} for v in evaluate_ray(
        _raw_turns(), spec, config, workers=2, threads=1, batch_size=16,
        cache_path=cache)]
    assert got == _plain(config, {"cache_path": "off"})
    assert len(got) == 59
    if config == "core" and got[0]["stages"] == ["S1", "S2"]:
        # the workers' caches were merged into the main one
        db = sqlite3.connect(cache)
        assert db.execute("SELECT COUNT(*) FROM scores").fetchone()[0] > 0
        db.close()


def test_cli_engine_ray_writes_the_same_file(local_ray: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from sage_tod.cli.app import app

    monkeypatch.setenv("SAGE_TOD_NLI_CACHE", "off")
    args = ["evaluate", "--spec", str(demo.spec_path()), "--turns", str(demo.turns_path()),
            "-c", "s1", "-q", "--reproducible"]
    a = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "plain.jsonl")])
    b = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "ray.parquet"),
                                 "--engine", "ray", "--workers", "2", "--batch-size", "8"])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert [v.to_json() for v in read_verdicts(tmp_path / "ray.parquet")] == [
        v.to_json() for v in read_verdicts(tmp_path / "plain.jsonl")]

