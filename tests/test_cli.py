"""End-to-end CLI runs on the embedded demo and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app

runner = CliRunner()


def _strip_latency(path: Path) -> list[dict[str, object]]:
    rows = [json.loads(x) for x in path.read_text().splitlines()[1:]]  # after the header
    for r in rows:
        r.pop("latency_ms")
    return rows


def test_demo_prints_failures_with_evidence_and_repair() -> None:
    r = runner.invoke(app, ["demo", "--config", "s1"])
    assert r.exit_code == 0, r.output
    assert "failure(s), with evidence and repair" in r.output
    for cls in ("[IUV] TRUE", "[WNF] TRUE", "[PC] TRUE"):
        assert cls in r.output
    assert "repair: record value" in r.output and "do not confirm" in r.output


def test_evaluate_score_explain_on_demo(tmp_path: Path) -> None:
    out = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                            str(demo.turns_path()), "--out", str(out), "--config", "s1"])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()[1:]  # after the run header
    turns = [json.loads(x) for x in demo.turns_path().read_text().splitlines() if x.strip()]
    assert [(json.loads(x)["dialogue_id"], json.loads(x)["turn_id"]) for x in lines] == [
        (t["dialogue_id"], t["turn_id"]) for t in turns]
    r = runner.invoke(app, ["score", "--turns", str(demo.turns_path()), "--verdicts",
                            str(out), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    # S1 alone: every decided turn is right, and the undecided ones are listed
    assert rep["decided"]["f1"] == 1.0 and rep["fp"] == 0
    for cls in ("IUV", "WNF", "PC"):
        assert rep["class_recall"][cls]["recall"] == 1.0
    assert rep["undecided"], "UV paraphrase turns are left to S2"
    r = runner.invoke(app, ["score", "--turns", str(demo.turns_path()), "--verdicts", str(out)])
    assert "undecided" in r.output and "F1" in r.output
    r = runner.invoke(app, ["explain", str(out), "--turn", "demo-r09:1", "--turns",
                            str(demo.turns_path()), "--spec", str(demo.spec_path())])
    assert r.exit_code == 0 and "[WNF] TRUE" in r.output and "repair: ask for one of" in r.output


def test_resume_finishes_an_interrupted_run(tmp_path: Path) -> None:
    args = ["--spec", str(demo.spec_path()), "--turns", str(demo.turns_path()),
            "--config", "s1", "--quiet"]
    full = tmp_path / "full.jsonl"
    assert runner.invoke(app, ["evaluate", *args, "--out", str(full)]).exit_code == 0
    part = tmp_path / "part.jsonl"
    lines = full.read_text().splitlines(keepends=True)
    part.write_text("".join(lines[:10]) + lines[10][:25])  # killed mid-line
    # a killed run keeps its run header (written before the first verdict)
    r = runner.invoke(app, ["evaluate", *args, "--out", str(part)])
    assert r.exit_code == 2 and "--resume" in r.output
    r = runner.invoke(app, ["evaluate", *args, "--out", str(part), "--resume"])
    assert r.exit_code == 0, r.output
    assert _strip_latency(part) == _strip_latency(full)


BAD = {
    "malformed": ('{"dialogue_id": "d"', "malformed JSON"),
    "missing": ('{"dialogue_id": "d", "turn_id": 0}', "missing required field"),
    "workflow": ('{"dialogue_id": "d", "turn_id": 0, "workflow": "x", "user": "", "agent": "",'
                 ' "state_before": {}, "state_after": {}}', "unknown workflow id"),
    "slot": ('{"dialogue_id": "d", "turn_id": 0, "workflow": "taxi_booking", "user": "",'
             ' "agent": "", "state_before": {}, "state_after": {"zz": "1"}}', "not in the schema"),
    "nonstring": ('{"dialogue_id": "d", "turn_id": 0, "workflow": "taxi_booking", "user": "",'
                  ' "agent": "", "state_before": {}, "state_after": {"taxi-leaveat": 9}}',
                  "expected a string"),
    "empty": ("", "empty"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_with_one_line(tmp_path: Path, case: str) -> None:
    content, words = BAD[case]
    turns = tmp_path / "t.jsonl"
    turns.write_text(content + "\n" if content else "")
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns", str(turns),
                            "--out", str(tmp_path / "v.jsonl")])
    assert r.exit_code == 2
    assert words in r.output and str(turns) in r.output
    assert "Traceback" not in r.output


def test_skip_invalid_reports_and_evaluates_the_rest(tmp_path: Path) -> None:
    good = demo.turns_path().read_text().splitlines()[:3]
    turns = tmp_path / "t.jsonl"
    turns.write_text("\n".join([good[0], "{broken", *good[1:]]) + "\n")
    out = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns", str(turns),
                            "--out", str(out), "--skip-invalid", "--config", "s1"])
    assert r.exit_code == 0, r.output
    assert "skipped" in r.output and ":2:" in r.output
    assert len(out.read_text().splitlines()) == 1 + 3  # the run header and 3 verdicts


def test_bad_spec_and_unknown_config(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("workflows:\n  - id: w\n    slots: [{name: a}]\n    required: [b]\n")
    r = runner.invoke(app, ["evaluate", "--spec", str(spec), "--turns",
                            str(demo.turns_path()), "--out", str(tmp_path / "v.jsonl")])
    assert r.exit_code == 2 and "workflows[0].required[0]" in r.output
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                            str(demo.turns_path()), "--out", str(tmp_path / "v.jsonl"),
                            "--config", "fast"])
    assert r.exit_code == 2 and "unknown config" in r.output


def test_the_cli_runs_without_the_click_package(tmp_path: Path) -> None:
    """`pip install sage-tod` (no extra) brings no `click`: typer 0.2x vendors its own
    (`typer._click`), and only an extra's dependency (huggingface_hub) brought the
    package. The CLI must start with `click` not importable."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['click'] = None\n"
            "from sage_tod.cli import app\n"
            "from typer.testing import CliRunner\n"
            "r = CliRunner().invoke(app, ['--help'])\n"
            "assert r.exit_code == 0, r.output\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_typers_usage_errors_pass_through_the_guard() -> None:
    """A usage error typer raises inside a command (its `BadParameter`, whichever click
    it derives from) is typer's to report, not an `internal error`."""
    import typer

    from sage_tod.cli.errors import one_line_errors

    for exc in (typer.BadParameter("bad"), typer.Abort(), typer.Exit(3)):
        with pytest.raises(type(exc)), one_line_errors():
            raise exc


def test_a_missing_stage_note_keeps_the_extra_in_its_install_hint(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reason a stage is missing is text, not markup: "pip install 'sage-tod[nli]'"
    printed as "pip install 'sage-tod'" (rich read "[nli]" as a style tag) sent users
    of a plain install to the command that had left S2 out."""
    from types import SimpleNamespace

    from sage_tod.cli.app import _note_missing

    ev = SimpleNamespace(config="core", missing_stages={
        "S2": "S2 needs tokenizers: pip install 'sage-tod[nli]'"})
    _note_missing(ev)  # type: ignore[arg-type]
    assert "pip install 'sage-tod[nli]'" in capsys.readouterr().err
