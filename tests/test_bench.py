"""The benchmark harness on a tiny slice directory built from the demo."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.turns import read_gold_labels
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.lab.bench import compute_results, run_one, slice_infos, verdict_path
from sage_tod.lab.bench_report import write_report
from sage_tod.outputs.scoring import score


def _slices(tmp_path: Path) -> Path:
    d = tmp_path / "slices"
    (d / "specs").mkdir(parents=True)
    shutil.copy(demo.spec_path(), d / "specs" / "demo.yaml")
    shutil.copy(demo.turns_path(), d / "demo.jsonl")
    manifest = {"slices": {"mw-mixed": {"file": "demo.jsonl", "spec": "specs/demo.yaml"}}}
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_bench_run_results_and_report_are_reproducible(tmp_path: Path) -> None:
    sdir = _slices(tmp_path)
    out = tmp_path / "bench"
    info = slice_infos(sdir)["mw-mixed"]
    for cfg in ("s1", "no_s2"):
        run_one(info, cfg, out)
    # resume: cut the file in the middle of a line, run again -> same verdict keys
    p = verdict_path(out, "mw-mixed", "s1")
    full = p.read_bytes()
    p.write_bytes(full[: len(full) // 2])
    run_one(info, "s1", out)
    assert [v.key for v in read_verdicts(p)] == [
        json.loads(x)["dialogue_id"] + ":" + str(json.loads(x)["turn_id"])
        for x in full.decode().splitlines()[1:]]  # after the run header
    assert p.read_bytes().splitlines()[0] == full.splitlines()[0]  # the header is kept
    res = compute_results(out, sdir)
    m = res["slices"]["mw-mixed"]["configs"]["s1"]
    expected = score(read_gold_labels(info.turns), read_verdicts(p))
    assert m["n"] == 59 and abs(m["f1"] - expected.full.f1) < 1e-12
    assert m["class_recall"]["WNF"]["recall"] == 1.0
    assert m["routing"]["S1"] > 0.9 and m["paid_calls_per_turn"] == 0.0
    assert "no_s2" in res["slices"]["mw-mixed"]["configs"]
    rep = write_report(res, out, sdir)
    first = _digest(rep)
    assert set(first) == {"tables.md", "pareto.png", "risk_coverage.png", "class_recall.png"}
    r = CliRunner().invoke(app, ["bench", "report", "--out", str(out), "--slices-dir",
                                 str(sdir)])
    assert r.exit_code == 0, r.output
    assert _digest(rep) == first
    text = (rep / "tables.md").read_text()
    assert "Table 1" in text and "Table 10" in text and "MW-mixed" in text


def test_bench_report_without_runs(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["bench", "report", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "no runs" in r.output


def test_bench_runs_have_a_header_and_refuse_to_mix_runs(tmp_path: Path) -> None:
    """A bench file is written like an `evaluate` file: run header, lock, resume checks."""
    from sage_tod.contracts.verdicts import read_header
    from sage_tod.outputs.files import LineFile

    sdir = _slices(tmp_path)
    out = tmp_path / "bench"
    info = slice_infos(sdir)["mw-mixed"]
    p = run_one(info, "s1", out)
    head = read_header(p)
    assert head is not None and head.config == "s1" and head.inputs["slice"] == "mw-mixed"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[:10]))
    with pytest.raises(InputError, match=r"different run.*pc_state"):
        run_one(info, "s1", out, options={"pc_state": "before"})
    assert p.read_text() == "".join(lines[:10])
    with LineFile(p, fresh=False), pytest.raises(InputError, match="another sage-tod run"):
        run_one(info, "s1", out)
    before = [v.model_copy(update={"latency_ms": 0}) for v in read_verdicts(p)]
    run_one(info, "s1", out)
    after = [v.model_copy(update={"latency_ms": 0}) for v in read_verdicts(p)]
    assert p.read_text().splitlines()[:10] == "".join(lines[:10]).splitlines()
    assert len(after) == len(lines) - 1 and after[:9] == before

