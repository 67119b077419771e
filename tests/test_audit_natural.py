"""The project's own natural-failure audit (src/sage_tod/lab/data/natural_audit.jsonl),
reproduced through the three audit commands (docs/audit.md, "The project's own audit").

The audit had one reader: each of the 204 turns kept, corrected or dropped the label
the rule labeller gave it. Passed as two "annotators" (the labeller's raw label and
the reader's corrected one, a drop being "can't tell") with the corrected labels as
the adjudication, `audit score` must give the label agreement scikit-learn computes
from the audit file itself, and the tool's precision / recall / F1 that the
research scorer (`lab.natural_score`) computes from the audited slice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.lab.natural import AUDIT_FILE
from sage_tod.lab.natural_score import score_natural

runner = CliRunner()


def _data() -> Path | None:
    root = os.environ.get("SAGE_TOD_DATA")
    return Path(root) if root and (Path(root) / "mwzeval").is_dir() else None


@pytest.fixture(scope="module")
def natural(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if _data() is None:
        pytest.skip("needs $SAGE_TOD_DATA with mwzeval/ (docs/datasets.md)")
    out = tmp_path_factory.mktemp("natural")
    r = runner.invoke(app, ["slices", "natural", "--out", str(out)])
    assert r.exit_code == 0, r.output
    # rules only keeps the test fast; docs/audit.md shows the same commands with core
    r = runner.invoke(app, ["evaluate", "--spec", str(out / "multiwoz.yaml"), "--turns",
                            str(out / "natural-audited.jsonl"), "--out",
                            str(out / "verdicts.jsonl"), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    return out


def test_natural_audit_through_the_audit_commands(natural: Path, tmp_path: Path) -> None:
    turns, verdicts = natural / "natural-audited.jsonl", natural / "verdicts.jsonl"
    audit = tmp_path / "audit"
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(verdicts), "--turns",
                            str(turns), "--spec", str(natural / "multiwoz.yaml"), "--n", "200",
                            "--out", str(audit)])
    assert r.exit_code == 0, r.output
    key_tpl = "{system}/{dialogue_id}:{turn_id}"
    for name, field, extra in (("raw-labeller", "raw_label", []),
                               ("hand-audit", "corrected_label",
                                ["--map", "drop=cant_tell", "--note-field", "reason"])):
        r = runner.invoke(app, ["audit", "labels", str(audit), str(AUDIT_FILE), "--annotator",
                                name, "--label-field", field, "--key", key_tpl, "--out",
                                str(tmp_path / f"{name}.json"), *extra])
        assert r.exit_code == 0, r.output
    hand = str(tmp_path / "hand-audit.json")
    r = runner.invoke(app, ["audit", "score", str(audit), str(tmp_path / "raw-labeller.json"),
                            hand, "--adjudicated", hand, "--json", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "s.json").read_text())

    entries = [json.loads(x) for x in AUDIT_FILE.read_text().splitlines() if x.strip()]
    kept = [e for e in entries if e["corrected_label"] != "drop"]  # the audited slice
    assert res["items"] == len(kept)
    assert res["agreement"]["kappa"] == pytest.approx(cohen_kappa_score(
        [e["raw_label"] for e in kept], [e["corrected_label"] for e in kept]))
    assert res["agreement"]["raw_agreement"] == pytest.approx(
        sum(e["raw_label"] == e["corrected_label"] for e in kept) / len(kept))
    assert {d["item"] for d in res["disagreements"]} == {
        c["item"] for c in res["consensus"] if c["source"] == "adjudicated"}
    assert len(res["disagreements"]) == sum(e["raw_label"] != e["corrected_label"]
                                            for e in kept)
    assert all(d["adjudicated"]["label"] == d["labels"]["hand-audit"]["label"]
               for d in res["disagreements"])

    lines = [json.loads(x) for x in turns.read_text().splitlines()]
    vs = [d for d in map(json.loads, verdicts.read_text().splitlines()) if "dialogue_id" in d]
    ref = score_natural(lines, vs)
    o = res["tool"]["overall"]
    assert (o["tp"], o["fp"], o["fn"], o["tn"]) == (ref["tp"], ref["fp"], ref["fn"], ref["tn"])
    for name in ("precision", "recall", "f1"):
        assert o[name]["value"] == pytest.approx(ref[name])
