"""Nothing at run time looks beside the checkout or the working directory: models come from
the documented resolution order, data only from SAGE_TOD_DATA / --data, and a data command
that lacks files lists every one of them with where to get it upstream."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.lab.datasets.paths import ENV_VAR, DataMissing, DataRootUnset, data_root
from sage_tod.lab.slices import check_requested, needed_files
from sage_tod.nli import resolve


def _model(p: Path) -> Path:
    p.mkdir(parents=True)
    (p / "config.json").write_text("{}")
    return p


def test_a_shared_model_beside_the_working_directory_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _model(tmp_path / "shared" / "models" / "nli-minilm-l6-snli")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(resolve.ENV_MODEL, raising=False)
    monkeypatch.setattr(resolve, "hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr(resolve, "packaged_model_dir", lambda: tmp_path / "not-installed")
    res = resolve.resolve_model()
    assert res.model is None
    assert not any("nli-minilm-l6-snli" in t for t in res.tried)


def test_data_root_comes_only_from_the_environment(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(DataRootUnset) as info:
        data_root()
    assert ENV_VAR in str(info.value) and "docs/datasets.md" in str(info.value)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    assert data_root() == tmp_path / "data"


def test_every_missing_file_is_listed_with_its_source(tmp_path: Path) -> None:
    with pytest.raises(DataMissing) as info:
        check_requested(["mw-mixed", "sgd-x"], tmp_path)
    msg = str(info.value)
    for rel in needed_files(["mw-mixed", "sgd-x"]):
        assert rel in msg
    assert "ConvLab-2" in msg and "dstc8-schema-guided-dialogue" in msg
    assert msg.startswith(str(tmp_path))


def test_slices_build_without_data_says_what_it_needs(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    res = CliRunner().invoke(app, ["slices", "build", "--out", str(tmp_path / "s"),
                                   "--slices", "sgd"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert ENV_VAR in text and "sgd/test/schema.json" in text
    assert "multiwoz" not in text  # only what the sgd slice reads


def test_mwzeval_import_without_data_names_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from sage_tod.contracts.errors import InputError
    from sage_tod.importers.mwzeval import SPLIT_FILES, default_data_root

    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(InputError) as info:
        default_data_root()
    msg = str(info.value)
    assert "--corpus" in msg and SPLIT_FILES["test"] in msg and "ConvLab-2" in msg
