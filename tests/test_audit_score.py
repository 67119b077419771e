"""`sage-tod audit score`: kappa and P/R/F1 against scikit-learn and a published table,
consensus and adjudication, and the checks on labels files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.outputs.audit_score import cohen_kappa, fleiss_kappa, kappa, prf_ci

runner = CliRunner()
LABELS = ("failure", "acceptable", "cant_tell")


@pytest.mark.parametrize("seed", range(8))
def test_cohen_kappa_equals_scikit_learn(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(5, 300)
    cats = LABELS[: rng.choice((2, 3))]
    a = [rng.choice(cats) for _ in range(n)]
    # a second rater who mostly agrees, so kappa is far from 0
    b = [x if rng.random() < 0.8 else rng.choice(cats) for x in a]
    ours = cohen_kappa(a, b)
    assert ours is not None
    assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_is_undefined_when_chance_agreement_is_total() -> None:
    a = ["failure"] * 6
    with pytest.warns(UserWarning):  # scikit-learn: "undefined", set to nan
        ref = cohen_kappa_score(a, a)
    assert np.isnan(ref) and cohen_kappa(a, a) is None


def test_fleiss_kappa_on_the_published_table() -> None:
    """Fleiss (1971)-style worked example, 10 subjects × 5 categories × 14 raters, as in
    Wikipedia's "Fleiss' kappa" article: P̄ = 0.378, P_e = 0.213, κ = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
             [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
             [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    k = fleiss_kappa(table)
    assert k is not None and round(k, 3) == 0.210
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])


def test_kappa_picks_cohen_for_two_and_fleiss_for_more() -> None:
    a, b, c = (["failure", "acceptable", "failure", "acceptable", "failure"],
               ["failure", "acceptable", "acceptable", "acceptable", "failure"],
               ["failure", "failure", "failure", "acceptable", "failure"])
    assert kappa([a, b]) == pytest.approx(cohen_kappa_score(a, b))
    rows = [[[a[i], b[i], c[i]].count(x) for x in ("acceptable", "failure")] for i in range(5)]
    assert kappa([a, b, c]) == pytest.approx(fleiss_kappa(rows))


@pytest.mark.parametrize("seed", range(5))
def test_prf_equals_scikit_learn_and_the_interval_holds_it(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(20, 200)
    gold = [rng.random() < 0.4 for _ in range(n)]
    pred = [g if rng.random() < 0.8 else not g for g in gold]
    res = prf_ci(gold, pred, n_boot=2000)
    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="binary",
                                                 pos_label=True, zero_division=0)
    for iv, ref in ((res.precision, p), (res.recall, r), (res.f1, f)):
        assert iv.point == pytest.approx(ref)
        assert iv.low <= iv.point <= iv.high and iv.high - iv.low < 0.6
    assert prf_ci(gold, pred, n_boot=2000) == res  # seeded


def test_weights_count_items_as_often_as_their_weight() -> None:
    gold = [True, True, False, False, True]
    pred = [True, False, True, False, True]
    w = [1, 3, 2, 1, 1]
    rep_g = [g for g, k in zip(gold, w, strict=True) for _ in range(k)]
    rep_p = [p for p, k in zip(pred, w, strict=True) for _ in range(k)]
    a = prf_ci(gold, pred, [float(x) for x in w], n_boot=200)
    b = prf_ci(rep_g, rep_p, n_boot=200)
    assert (a.tp, a.fp, a.fn, a.tn) == (b.tp, b.fp, b.fn, b.tn)
    assert a.f1.point == pytest.approx(b.f1.point)


def test_undefined_ratios_are_none_not_zero() -> None:
    res = prf_ci([False, False], [False, False], n_boot=50)
    assert res.precision.point is None and res.recall.point is None and res.f1.point is None


# --- the command, on an audit set of the demo dialogues ---------------------------------

def _audit(tmp_path: Path) -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    v = tmp_path / "v.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                            str(demo.turns_path()), "--out", str(v), "--config", "s1",
                            "--quiet"])
    assert r.exit_code == 0, r.output
    a = tmp_path / "audit"
    r = runner.invoke(app, ["audit", "sample", "--verdicts", str(v), "--turns",
                            str(demo.turns_path()), "--out", str(a), "--n", "12", "--seed", "1"])
    assert r.exit_code == 0, r.output
    items = [json.loads(x) for x in (a / "items.jsonl").read_text().splitlines()]
    return a, items, json.loads((a / "key.json").read_text())


def _labels(path: Path, audit: Path, annotator: str, labels: list[dict[str, Any]],
            **over: Any) -> Path:
    doc = {"format": "sage-tod-audit-labels", "version": 1,
           "audit_id": json.loads((audit / "audit.json").read_text())["audit_id"],
           "annotator": annotator, "labels": labels, **over}
    path.write_text(json.dumps(doc))
    return path


def _rater(items: list[dict[str, Any]], seed: int, agree_with: list[str] | None = None
           ) -> list[str]:
    rng = random.Random(seed)
    if agree_with is None:
        return [rng.choice(("failure", "acceptable", "acceptable", "cant_tell")) for _ in items]
    return [x if rng.random() < 0.7 else rng.choice(LABELS) for x in agree_with]


def _rows(items: list[dict[str, Any]], labs: list[str], cls: str | None = None
          ) -> list[dict[str, Any]]:
    return [{"item": i["item"], "label": lab, "class": cls if lab == "failure" else None,
             "note": ""} for i, lab in zip(items, labs, strict=True)]


def test_score_two_annotators_against_scikit_learn(tmp_path: Path) -> None:
    a_dir, items, key = _audit(tmp_path)
    la = _rater(items, 1)
    lb = _rater(items, 2, la)
    fa = _labels(tmp_path / "a.json", a_dir, "ann", _rows(items, la, "IUV"))
    fb = _labels(tmp_path / "b.json", a_dir, "bo", _rows(items, lb, "IUV"))
    out = tmp_path / "score.json"
    r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa), str(fb), "--json", str(out),
                            "--markdown", str(tmp_path / "score.md")])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    ag = res["agreement"]
    assert ag["statistic"] == "Cohen's kappa"
    assert ag["kappa"] == pytest.approx(cohen_kappa_score(la, lb))
    assert ag["raw_agreement"] == pytest.approx(
        np.mean([x == y for x, y in zip(la, lb, strict=True)]))
    decided = [(x, y) for x, y in zip(la, lb, strict=True) if "cant_tell" not in (x, y)]
    if len({v for pair in decided for v in pair}) > 1:
        assert ag["kappa_decided"] == pytest.approx(
            cohen_kappa_score([x for x, _ in decided], [y for _, y in decided]))
    iuv_a = ["y" if x == "failure" else "n" for x in la]
    iuv_b = ["y" if x == "failure" else "n" for x in lb]
    if len(set(iuv_a + iuv_b)) > 1:
        assert ag["per_class"]["IUV"]["kappa"] == pytest.approx(cohen_kappa_score(iuv_a, iuv_b))
    # consensus: agreed failure/acceptable items; the rest listed for adjudication
    agreed = [i["item"] for i, x, y in zip(items, la, lb, strict=True)
              if x == y and x != "cant_tell"]
    assert [c["item"] for c in res["consensus"] if c["label"]] == agreed
    assert {d["item"] for d in res["disagreements"]} == {
        i["item"] for i, x, y in zip(items, la, lb, strict=True) if x != y}
    # the tool against the consensus, as scikit-learn computes it
    verdict = {k["item"]: k["verdict"] for k in key["items"]}
    cons = {c["item"]: c["label"] for c in res["consensus"] if c["label"]}
    g = [cons[i] == "failure" for i in cons]
    p = [verdict[i] == "failure" for i in cons]
    pr, rc, f1, _ = precision_recall_fscore_support(g, p, average="binary", pos_label=True,
                                                    zero_division=0)
    o = res["tool"]["overall"]
    assert o["n"] == len(cons)
    for name, ref in (("precision", pr), ("recall", rc), ("f1", f1)):
        if o[name]["value"] is not None:
            assert o[name]["value"] == pytest.approx(ref)
    conf = res["tool"]["confusion"]
    assert sum(sum(r.values()) for r in conf.values()) == len(cons)
    md = (tmp_path / "score.md").read_text()
    assert "Cohen's kappa" in md and "The tool against the consensus" in md
    assert md.splitlines()[0] in r.output


def test_adjudication_resolves_the_disagreements(tmp_path: Path) -> None:
    a_dir, items, _ = _audit(tmp_path)
    la = ["failure"] * 6 + ["acceptable"] * 6
    lb = ["failure"] * 4 + ["acceptable"] * 6 + ["cant_tell"] * 2
    fa = _labels(tmp_path / "a.json", a_dir, "ann", _rows(items, la, "UV"))
    fb = _labels(tmp_path / "b.json", a_dir, "bo", _rows(items, lb, "PC"))
    r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa), str(fb), "--json",
                            str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "s.json").read_text())
    dis = {d["item"]: d["what"] for d in res["disagreements"]}
    assert [dis[i["item"]] for i in items[:4]] == ["class"] * 4  # both failure, UV vs PC
    assert all(dis[i["item"]] == "label" for i in items[4:6] + items[10:])
    assert res["tool"]["per_class_items"] == 4  # agreed acceptable; class-less failures out
    adj = _labels(tmp_path / "adj.json", a_dir, "judge",
                  _rows(items[:6], ["failure"] * 6, "UV") + _rows(items[10:], ["acceptable"] * 2))
    r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa), str(fb), "--adjudicated",
                            str(adj), "--json", str(tmp_path / "s2.json")])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "s2.json").read_text())
    labels = [c["label"] for c in res["consensus"]]
    assert labels == ["failure"] * 6 + ["acceptable"] * 6
    assert {c["source"] for c in res["consensus"][:6]} == {"adjudicated"}
    assert res["tool"]["items"] == 12 and res["tool"]["per_class_items"] == 12


def test_three_annotators_use_fleiss(tmp_path: Path) -> None:
    a_dir, items, _ = _audit(tmp_path)
    base = _rater(items, 5)
    raters = [base, _rater(items, 6, base), _rater(items, 7, base)]
    files = [str(_labels(tmp_path / f"{n}.json", a_dir, n, _rows(items, lab)))
             for n, lab in zip(("x", "y", "z"), raters, strict=True)]
    r = runner.invoke(app, ["audit", "score", str(a_dir), *files, "--json",
                            str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    ag = json.loads((tmp_path / "s.json").read_text())["agreement"]
    rows = [[[rt[i] for rt in raters].count(c) for c in sorted({x for rt in raters for x in rt})]
            for i in range(len(items))]
    assert ag["statistic"] == "Fleiss' kappa"
    assert ag["kappa"] == pytest.approx(fleiss_kappa(rows))
    assert ag["pairwise_cohen"]["x / y"] == pytest.approx(cohen_kappa_score(raters[0],
                                                                            raters[1]))


@pytest.mark.parametrize(("case", "message"), [
    ("unknown", "unknown item 'item-999'"),
    ("duplicate", "duplicate label for"),
    ("missing", "items have no label"),
    ("other_audit", "labels are for audit 000000000000"),
    ("same_annotator", "annotator 'ann' also made"),
    ("bad_label", "labels.0.label"),
    ("class_on_acceptable", "a class is given but the label is acceptable"),
    ("not_json", "not valid JSON"),
])
def test_labels_are_checked_with_one_line_errors(tmp_path: Path, case: str,
                                                 message: str) -> None:
    a_dir, items, _ = _audit(tmp_path)
    good = _rows(items, ["acceptable"] * len(items))
    fa = _labels(tmp_path / "a.json", a_dir, "ann", good)
    rows = [dict(x) for x in good]
    over: dict[str, Any] = {}
    name = "bo"
    if case == "unknown":
        rows.append({"item": "item-999", "label": "failure"})
    elif case == "duplicate":
        rows.append(dict(rows[0]))
    elif case == "missing":
        rows = rows[:-2]
    elif case == "other_audit":
        over["audit_id"] = "000000000000"
    elif case == "same_annotator":
        name = "ann"
    elif case == "bad_label":
        rows[0]["label"] = "broken"
    elif case == "class_on_acceptable":
        rows[0]["class"] = "IUV"
    fb = _labels(tmp_path / "b.json", a_dir, name, rows, **over)
    if case == "not_json":
        fb.write_text("{not json")
    r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa), str(fb)])
    assert r.exit_code == 2, r.output
    assert message in r.output and str(fb) in r.output.replace("\n", "")
    assert "Traceback" not in r.output
    if case == "missing":
        r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa), str(fb),
                                "--allow-missing", "--json", str(tmp_path / "s.json")])
        assert r.exit_code == 0, r.output
        assert json.loads((tmp_path / "s.json").read_text())["items"] == len(items) - 2


def test_an_edited_items_file_is_refused(tmp_path: Path) -> None:
    a_dir, items, _ = _audit(tmp_path)
    text = (a_dir / "items.jsonl").read_text()
    (a_dir / "items.jsonl").write_text(text.replace(items[0]["user"], "something else", 1))
    fa = _labels(tmp_path / "a.json", a_dir, "ann", _rows(items, ["acceptable"] * len(items)))
    r = runner.invoke(app, ["audit", "score", str(a_dir), str(fa)])
    assert r.exit_code == 2 and "changed after sampling" in r.output


def test_labels_from_rows_map_values_and_name_bad_rows(tmp_path: Path) -> None:
    a_dir, items, _ = _audit(tmp_path)
    rows = [{"conv": i["dialogue_id"], "t": i["turn_id"], "lab": "ok" if k % 2 else "bad",
             "cls": "UV"} for k, i in enumerate(items)]
    rows.append({"conv": "elsewhere", "t": 0, "lab": "ok"})
    src = tmp_path / "sheet.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "carol.json"
    base = ["audit", "labels", str(a_dir), str(src), "--annotator", "carol", "--key",
            "{conv}:{t}", "--label-field", "lab", "--class-field", "cls", "--out", str(out)]
    r = runner.invoke(app, base)
    assert r.exit_code == 2 and "label 'bad' is not one of" in r.output and ":1:" in r.output
    r = runner.invoke(app, [*base, "--map", "ok=acceptable", "--map", "bad=failure"])
    assert r.exit_code == 0, r.output
    assert "1 row(s) for turns outside the audit set skipped" in r.output
    got = json.loads(out.read_text())["labels"]
    assert [x["item"] for x in got] == [i["item"] for i in items]
    assert [(x["label"], x["class"]) for x in got][:2] == [("failure", "UV"),
                                                          ("acceptable", None)]
