"""Slice building: sizes and class counts, byte-identical rebuilds, valid turn files, CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sage_tod.cli.data import slices_app, specs_export
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.lab.datasets import multiwoz
from sage_tod.lab.slices import BuildConfig, allocate, build, proportional, split_even

FIX = Path(__file__).parent / "fixtures" / "datasets"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data"
SMALL = BuildConfig(mw_per_domain=2, mw_injected=4, uv_per_domain=1, uv_injected=3,
                    dev_per_domain=1, dev_injected=4, sgd_workflows=3, sgd_turns=6,
                    sgd_max_per_intent=2, sgd_injected=3)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("slices")
    return out, build(out, cfg=SMALL, root=FIX)


def _lines(p: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in p.read_text().splitlines()]


def test_sizes_and_class_counts(built: tuple[Path, dict[str, Any]]) -> None:
    out, m = built
    s = m["slices"]
    assert s["mw-mixed"]["n"] == 10 and s["mw-mixed"]["labels"]["failure"] == 4
    assert s["mw-mixed"]["classes"] == {"IUV": 1, "WNF": 1, "PC": 1, "UV": 1}
    assert Counter(t["workflow"] for t in _lines(out / "mw_mixed.jsonl")) == dict.fromkeys(
        multiwoz.DOMAINS, 2)
    assert s["uv-rich"]["classes"]["UV"] == 3 and s["uv-rich"]["n"] == 5
    assert s["dev"]["n"] == 5 and sum(s["dev"]["classes"].values()) == 4
    assert s["sgd"]["n"] == 6 and s["sgd"]["labels"]["failure"] == 3
    assert s["sgd"]["workflows"] == 3
    assert max(Counter(t["workflow"] for t in _lines(out / "sgd.jsonl")).values()) <= 2
    for v in range(1, 6):
        assert s[f"sgd-x-v{v}"]["classes"] == s["sgd"]["classes"]


def test_every_slice_line_loads_against_its_spec(built: tuple[Path, dict[str, Any]]) -> None:
    out, m = built
    for info in m["slices"].values():
        spec = load_spec(out / info["spec"])
        tf = load_turns(out / info["file"], spec)
        assert len(tf.records) == info["n"]
        assert all(r.gold is not None for r in tf.records)
        raw = _lines(out / info["file"])
        assert all("history" in t for t in raw)  # sampled turns carry their history
        ev = Evaluator(spec, "s1")
        assert len(list(ev.evaluate(tf.records))) == info["n"]


def test_rebuild_is_byte_identical(built: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, _ = built
    build(tmp_path, cfg=SMALL, root=FIX)
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    for f in files:
        assert (out / f).read_bytes() == (tmp_path / f).read_bytes(), f


def test_seed_changes_the_sample(built: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, _ = built
    build(tmp_path, ["mw-mixed"], BuildConfig(**{**SMALL.__dict__, "seed": 1}), FIX)
    assert (out / "mw_mixed.jsonl").read_bytes() != (tmp_path / "mw_mixed.jsonl").read_bytes()


def test_multiwoz_slices_use_disjoint_dialogues(built: tuple[Path, dict[str, Any]]) -> None:
    out, _ = built
    ids = [{t["dialogue_id"] for t in _lines(out / f)}
           for f in ("mw_mixed.jsonl", "uv_rich.jsonl", "dev.jsonl")]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    for f in ("mw_mixed.jsonl", "sgd.jsonl"):
        rows = _lines(out / f)
        assert len({t["dialogue_id"] for t in rows}) == len(rows)  # one turn per dialogue


def test_never_reads_the_multiwoz_test_split(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    real = multiwoz.load_dialogues

    def guarded(split: str, *a: Any, **k: Any) -> Any:
        assert split != "test", "slices must not read the MultiWOZ test split"
        return real(split, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(multiwoz, "load_dialogues", guarded)
    build(tmp_path, ["mw-mixed", "uv-rich", "dev"], SMALL, FIX)


def test_no_acts_writes_text_only(tmp_path: Path) -> None:
    build(tmp_path, ["mw-mixed"], BuildConfig(**{**SMALL.__dict__, "acts": False}), FIX)
    rows = _lines(tmp_path / "mw_mixed.jsonl")
    assert rows and all("user_values" not in t and "agent_acts" not in t for t in rows)
    assert json.loads((tmp_path / "manifest.json").read_text())["acts"] is False


def test_allocation_helpers() -> None:
    assert split_even(126, 4) == [32, 32, 31, 31]
    assert proportional(151, [8, 8, 7]) == [53, 52, 46]  # largest remainders
    m, short = allocate({"WNF": 4, "UV": 4}, [4, 4], [{"WNF": 0, "UV": 9}, {"WNF": 9, "UV": 9}])
    assert [r["WNF"] for r in m] == [0, 4] and [r["UV"] for r in m] == [4, 0] and not short
    m, short = allocate({"PC": 3, "UV": 1}, [2, 2], [{"PC": 1, "UV": 9}, {"PC": 0, "UV": 9}])
    assert short == {"PC": 2} and sum(sum(r.values()) for r in m) == 4  # total still holds


def test_cli_build_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(slices_app, ["build", "--out", str(tmp_path / "o"), "--data", str(FIX),
                                     "--slices", "dev"])
    assert res.exit_code == 0, res.output
    assert "dev" in res.output and (tmp_path / "o" / "dev.jsonl").exists()
    res = runner.invoke(slices_app, ["build", "--out", str(tmp_path / "a"), "--data", str(FIX),
                                     "--slices", "abcd-uv"])
    assert res.exit_code == 2
    assert "abcd_v1.1.json.gz" in res.output and not (tmp_path / "a").exists()
    res = runner.invoke(slices_app, ["build", "--out", str(tmp_path / "b"), "--data", str(FIX),
                                     "--slices", "nope"])
    assert res.exit_code == 2 and "unknown slice" in res.output


def test_specs_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SAGE_TOD_DATA", str(FIX))
    for ds, variant in (("multiwoz", None), ("sgd", None), ("sgd", "v3"), ("abcd", None)):
        p = tmp_path / f"{ds}-{variant}.yaml"
        specs_export(ds, p, variant)
        assert load_spec(p).workflows
    specs_export("sgd", None, None)
    assert "Restaurants_2.ReserveRestaurant" in capsys.readouterr().out
    import typer
    with pytest.raises(typer.Exit) as exc:
        specs_export("nope", None, None)
    assert exc.value.exit_code == 2


@pytest.mark.skipif(not (REAL / multiwoz.SPLIT_FILES["val"]).exists()
                    or not (REAL / "sgd/test/schema.json").exists(), reason="no shared data")
def test_real_build_matches_the_paper(tmp_path: Path) -> None:
    m = build(tmp_path, root=REAL)["slices"]
    assert m["mw-mixed"]["n"] == 250 and m["mw-mixed"]["labels"]["failure"] == 126
    assert m["mw-mixed"]["classes"] == {"IUV": 32, "WNF": 32, "PC": 31, "UV": 31}
    rows = _lines(tmp_path / "mw_mixed.jsonl")
    assert Counter(t["workflow"] for t in rows) == dict.fromkeys(multiwoz.DOMAINS, 50)
    assert m["uv-rich"]["n"] == 250 and m["uv-rich"]["classes"]["UV"] == 121
    assert m["uv-rich"]["labels"]["acceptable"] == 129
    assert m["sgd"]["n"] == 280 and m["sgd"]["workflows"] == 37
    assert m["sgd"]["labels"]["failure"] == 151
    sgd_rows = _lines(tmp_path / "sgd.jsonl")
    assert max(Counter(t["workflow"] for t in sgd_rows).values()) <= 8
    files: dict[str, set[str]] = {}
    for t in sgd_rows:
        files.setdefault(t["workflow"].split(".")[0], set()).add(t["meta"]["file"])
    assert max(len(f) for f in files.values()) <= 12
    assert m["dev"]["n"] == 40
    for v in range(1, 6):
        assert m[f"sgd-x-v{v}"]["n"] == 280


def test_abcd_uv_builds_from_a_full_format_corpus(tmp_path: Path) -> None:
    """The sample has the full corpus's conversation format; wrap it as {test: [...]}."""
    import gzip

    root = tmp_path / "data"
    (root / "abcd").mkdir(parents=True)
    for f in ("ontology.json", "kb.json"):
        (root / "abcd" / f).write_bytes((FIX / "abcd" / f).read_bytes())
    sample = json.loads((FIX / "abcd/abcd_sample.json").read_text())
    with gzip.open(root / "abcd/abcd_v1.1.json.gz", "wt") as fh:
        json.dump({"train": [], "dev": [], "test": sample}, fh)
    cfg = BuildConfig(abcd_workflows=2, abcd_turns=2, abcd_injected=1)
    m = build(tmp_path / "out", ["abcd-uv"], cfg, root)["slices"]["abcd-uv"]
    assert m["n"] == 2 and m["classes"]["UV"] == 1 and m["workflows"] == 2
    tf = load_turns(tmp_path / "out/abcd_uv.jsonl", load_spec(tmp_path / "out/specs/abcd.yaml"))
    assert all(r.meta and r.meta["actions"] for r in tf.records)  # action-grounded turns
