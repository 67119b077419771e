"""The CI gate: thresholds, regressions, the Markdown summary, exit codes, step outputs.

Verdicts come from evaluating the shipped demo dialogues with the rules-only
config (`s1`), so the expected counts are computed from those verdicts here,
not hard-coded: a change in the evaluator moves both sides together.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import Evaluator, InputError, demo, load_spec, load_turns
from sage_tod.cli import app
from sage_tod.contracts.verdicts import Verdict
from sage_tod.integrations.gate import (
    Thresholds,
    _md,
    markdown_summary,
    run_gate,
    worst_turns,
)
from sage_tod.outputs.scoring import score

runner = CliRunner()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Verdict], list]:
    spec = load_spec(demo.spec_path())
    records = load_turns(demo.turns_path(), spec).records
    vs = list(Evaluator(spec, "s1").evaluate(records))
    path = tmp_path_factory.mktemp("gate") / "verdicts.jsonl"
    path.write_text("".join(v.to_json() + "\n" for v in vs), encoding="utf-8")
    return path, vs, records


def test_thresholds_pass_and_fail_on_the_measured_rates(demo_run):
    _, vs, _ = demo_run
    counts = Counter(v.verdict for v in vs)
    rate = counts["failure"] / len(vs)
    assert 0 < rate < 1  # the demo has both kinds
    ok = run_gate(vs, Thresholds(max_failure_rate=rate))
    bad = run_gate(vs, Thresholds(max_failure_rate=rate - 0.01))
    assert ok.passed and not bad.passed
    assert [c.status for c in bad.checks] == ["fail"]
    classes = Counter(str(c) for v in vs for c in v.classes)
    fired = next(c for c in ("IUV", "WNF", "PC", "UV") if classes[c])
    res = run_gate(vs, Thresholds(max_class={fired: classes[fired] - 1, "UV": 99}))
    assert [(c.name, c.status) for c in res.checks] == [(f"{fired} turns", "fail"),
                                                       ("UV turns", "pass")]
    und = counts["undecided"] / len(vs)
    assert run_gate(vs, Thresholds(max_undecided_rate=und)).passed
    assert not run_gate(vs, Thresholds(max_undecided_rate=und - 0.01)).passed


def test_conversation_failure_rate_counts_conversations_not_turns(demo_run, tmp_path,
                                                                 monkeypatch):
    path, vs, _ = demo_run
    dialogues = {v.dialogue_id for v in vs}
    failed = {v.dialogue_id for v in vs if v.verdict == "failure"}
    assert 0 < len(failed) < len(dialogues)  # the demo has both kinds of conversation
    rate = len(failed) / len(dialogues)
    assert rate != pytest.approx(sum(v.verdict == "failure" for v in vs) / len(vs))
    ok = run_gate(vs, Thresholds(max_conversation_failure_rate=rate))
    bad = run_gate(vs, Thresholds(max_conversation_failure_rate=rate - 0.01))
    assert ok.passed and not bad.passed
    assert [c.name for c in bad.checks] == ["conversation failure rate"]
    assert bad.conversations["failure"] == len(failed)
    assert f"{len(dialogues)} conversation(s): {len(failed)} failure" in markdown_summary(bad)
    outputs = tmp_path / "out.txt"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    r = runner.invoke(app, ["gate", str(path), "--max-conversation-failure-rate",
                            f"{rate - 0.01:.4f}"])
    assert r.exit_code == 1 and "conversation failure rate" in r.output
    got = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert float(got["conversation-failure-rate"]) == pytest.approx(rate, abs=1e-4)
    with pytest.raises(InputError, match="between 0 and 1"):
        Thresholds(max_conversation_failure_rate=-0.1)


def test_min_f1_uses_scoring_and_is_skipped_without_gold(demo_run):
    _, vs, records = demo_run
    gold = [(r.turn.key, r.gold) for r in records]
    f1 = score(gold, vs).full.f1
    assert run_gate(vs, Thresholds(min_f1=f1), gold=gold).passed
    res = run_gate(vs, Thresholds(min_f1=min(1.0, f1 + 0.01)), gold=gold)
    assert not res.passed and res.score is not None and res.score.full.f1 == f1
    skipped = run_gate(vs, Thresholds(min_f1=0.9))
    assert skipped.passed and skipped.checks[0].status == "skipped"
    assert "no gold" in skipped.checks[0].note


def test_regressions_are_turns_acceptable_in_the_baseline_that_fail_now(demo_run):
    _, vs, _ = demo_run
    failing = [v for v in vs if v.verdict == "failure"][:2]
    fixed = next(v for v in vs if v.verdict == "acceptable")
    # the baseline said these two failures were fine, and the acceptable one failed
    baseline = [v.model_copy(update={"verdict": "acceptable"}) if v in failing
                else v.model_copy(update={"verdict": "failure"}) if v is fixed else v
                for v in vs]
    res = run_gate(vs, Thresholds(), baseline=baseline[:-1])
    assert [v.key for v in res.regressions] == [v.key for v in failing]
    assert res.fixed == [fixed.key]
    assert res.baseline_missing == []
    assert not res.passed and res.checks[-1].value == "2"
    assert run_gate(vs, Thresholds(max_regressions=2), baseline=baseline).passed
    text = markdown_summary(res, worst=3)
    assert "Regressions (2)" in text and f"`{failing[0].key}`" in text
    # regressions are listed first among the worst turns
    assert [v.key for v in worst_turns(res, 2)] == [v.key for v in failing]
    first_bullet = text.split("### Worst turns")[1].split("\n- ")[1]
    assert first_bullet.startswith(f"**`{failing[0].key}`**")
    assert "**regression**" in first_bullet


def test_summary_shows_counts_checks_evidence_repairs_and_the_report_link(demo_run):
    _, vs, records = demo_run
    turns = {r.turn.key: r.turn for r in records}
    res = run_gate(vs, Thresholds(max_failure_rate=0.0))
    text = markdown_summary(res, turns=turns, report_link="out dir/report.html", worst=2)
    counts = Counter(v.verdict for v in vs)
    assert text.startswith("## sage-tod gate: ❌ failed")
    assert f"| failure | {counts['failure']} |" in text
    assert "| failure rate |" in text and "❌ fail" in text
    first = worst_turns(res, 2)[0]
    assert f"**`{first.key}`**" in text
    fired = next(c for c in first.criteria if c.decision.value == "true")
    assert fired.repair and "repair:" in text
    assert fired.evidence is not None and f'"{fired.evidence.text}"' in text
    assert f"  - user: {_md(turns[first.key].user)}" in text
    assert "(out%20dir/report.html)" in text
    assert text.count("\n- **`") == 2


def test_summary_escapes_markdown_in_utterances(demo_run):
    _, vs, records = demo_run
    v = next(v for v in vs if v.verdict == "failure")
    turn = next(r.turn for r in records if r.turn.key == v.key)
    nasty = turn.model_copy(update={"user": "a | b <script> [x](y)\nnext"})
    text = markdown_summary(run_gate([v], Thresholds()), turns={v.key: nasty})
    assert "a \\| b \\<script\\> \\[x\\](y) next" in text


def test_long_lists_say_how_many_more(demo_run):
    _, vs, _ = demo_run
    many = [v.model_copy(update={"dialogue_id": f"d{i}", "verdict": "failure"}) for i, v in
            enumerate(vs[:31])]
    now = [v.model_copy(update={"verdict": "acceptable"}) for v in many]
    res = run_gate(now, Thresholds(), baseline=many)
    assert len(res.fixed) == 31
    text = markdown_summary(res)
    line = next(x for x in text.splitlines() if x.startswith("Fixed since the baseline (31)"))
    assert line.count("`d") == 30 and line.endswith(" and 1 more")
    res = run_gate(many, Thresholds(), baseline=now)
    text = markdown_summary(res)
    regressions = text.split("### Regressions (31)")[1].split("\n\n")[1]
    assert regressions.endswith(" and 1 more")


def test_ids_with_pipes_backticks_newlines_and_markup_stay_inside_their_code_span(demo_run):
    _, vs, _ = demo_run
    v = next(v for v in vs if v.verdict == "failure")
    nasty = v.model_copy(update={"dialogue_id": "a|b`c``d\n# <b>e</b> [x](y)",
                                 "workflow": "wf|`**x**`"})
    text = markdown_summary(run_gate([nasty], Thresholds()))
    bullet = next(x for x in text.splitlines() if x.startswith("- **"))
    assert bullet.startswith("- **``` a|b`c``d # <b>e</b> [x](y):")
    assert "wf\\|\\`\\*\\*x\\*\\*\\`" in bullet
    assert "\n# " not in text  # the newline in the id did not start a heading


def test_bad_thresholds_are_input_errors():
    with pytest.raises(InputError, match="between 0 and 1"):
        Thresholds(max_failure_rate=1.5)
    with pytest.raises(InputError, match="'X-1' is not a class name"):
        Thresholds(max_class={"X-1": 1})
    assert Thresholds(max_class={"MyPluginClass": 0}).max_class == {"MyPluginClass": 0}
    with pytest.raises(InputError, match="no verdicts"):
        run_gate([], Thresholds())


def test_cli_exit_codes_summary_file_step_summary_and_outputs(demo_run, tmp_path, monkeypatch):
    path, vs, _ = demo_run
    step = tmp_path / "step.md"
    step.write_text("earlier step\n", encoding="utf-8")
    outputs = tmp_path / "out.txt"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    summary = tmp_path / "pr" / "comment.md"
    r = runner.invoke(app, ["gate", str(path), "--turns", str(demo.turns_path()),
                            "--max-failure-rate", "1", "--summary", str(summary)])
    assert r.exit_code == 0, r.output
    assert summary.read_text(encoding="utf-8").startswith("## sage-tod gate: ✅ passed")
    assert step.read_text(encoding="utf-8").startswith("earlier step\n## sage-tod gate")
    got = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    n_fail = sum(v.verdict == "failure" for v in vs)
    assert got["passed"] == "true" and got["failures"] == str(n_fail)
    assert float(got["failure-rate"]) == pytest.approx(n_fail / len(vs), abs=1e-4)
    r = runner.invoke(app, ["gate", str(path), "--max-class", "IUV=0", "--json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert data["passed"] is False and data["checks"][0]["name"] == "IUV turns"
    # an existing summary is not replaced without --overwrite
    before = summary.read_text(encoding="utf-8")
    r = runner.invoke(app, ["gate", str(path), "--max-class", "IUV=0", "--summary", str(summary)])
    assert r.exit_code == 2 and "--overwrite" in r.output
    assert summary.read_text(encoding="utf-8") == before
    r = runner.invoke(app, ["gate", str(path), "--max-class", "IUV=0", "--summary", str(summary),
                            "--overwrite"])
    assert r.exit_code == 1 and "failed" in summary.read_text(encoding="utf-8")


@pytest.mark.parametrize("args, message", [
    (["missing.jsonl"], "file not found"),
    (["{v}", "--max-class", "PC"], "expected CLASS=N"),
    (["{v}", "--max-class", "Z-Z=1"], "unknown class 'Z-Z'"),
    (["{v}", "--max-class", "XYZ=0"],
     "unknown class 'XYZ' in 'XYZ=0'; known classes: IUV, WNF, PC, UV"),
    (["{v}", "--min-f1", "2"], "between 0 and 1"),
    (["{bad}"], ":2:"),
])
def test_cli_bad_input_exits_2_with_one_line(demo_run, tmp_path, args, message):
    path, _, _ = demo_run
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().splitlines()[0] + "\n{not json\n", encoding="utf-8")
    argv = ["gate"] + [a.format(v=path, bad=bad) for a in args]
    r = runner.invoke(app, argv)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
