"""ONNX export (and optional int8 quantisation) of an NLI model, once per model hash.

The packaged models ship their graphs (`sage_tod.nli.graph`), so users never
export. Any other model directory is exported here on first use: that needs
torch, transformers and the `onnx` package (`pip install 'sage-tod[export]'`);
running the exported graph needs only onnxruntime. Exports live under the
sage-tod cache keyed by the model's content hash, so shared read-only model
directories stay untouched and a changed model is re-exported, never silently
reused.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sage_tod.locations import data_home
from sage_tod.nli.graph import GraphError, has_graph, materialize

EXPORT_HINT = "pip install 'sage-tod[export]' (torch, transformers, onnx)"


class ExportError(RuntimeError):
    """The graph cannot be exported here (missing torch/onnx, unsupported model)."""


def onnx_dir(model_key: str) -> Path:
    return data_home() / "onnx" / model_key


def onnx_path_for(model: str, model_key: str, *, int8: bool = False) -> Path:
    """A ready-to-load full graph: a shipped `model.onnx`, a cached export, or a new export.

    (A weightless shipped graph, `model.graph.onnx`, is loaded by the backend itself;
    here it is only the start of an int8 graph, written out in full once.)
    """
    shipped = Path(model) / ("model-int8.onnx" if int8 else "model.onnx")
    if shipped.is_file():
        return shipped
    fp32 = onnx_dir(model_key) / "model.onnx"
    if not fp32.is_file():
        try:
            if not has_graph(model):
                raise GraphError("no shipped graph")
            materialize(model, fp32)
        except GraphError:  # none, or one its weights no longer fit: export anew
            fp32.unlink(missing_ok=True)
            export_onnx(model, fp32)
    if not int8:
        return fp32
    q = onnx_dir(model_key) / "model-int8.onnx"
    if not q.is_file():
        quantize_int8(fp32, q)
    return q


def export_onnx(model: str, out: Path, opset: int = 17) -> Path:
    """Trace the classifier with dynamic batch and sequence axes; write atomically."""
    try:
        import onnx  # noqa: F401  (the exporter needs it; fail with a clear message)
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError as exc:
        raise ExportError(f"{model} has no ONNX graph (model.onnx or model.graph.onnx) and "
                          f"exporting one needs torch, transformers and onnx ({exc}): "
                          f"{EXPORT_HINT}") from exc
    from sage_tod.nli.hf import quiet_transformers

    quiet_transformers()
    # fp32 graph even from fp16-stored weights (the repo's compact model copy)
    net = AutoModelForSequenceClassification.from_pretrained(model, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model)
    enc = tok(["A man is eating."], ["Someone eats."], return_tensors="pt",
              return_token_type_ids=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    use_types = int(getattr(net.config, "type_vocab_size", 0) or 0) > 1
    if not use_types:
        names = names[:2]
    args = tuple(enc[n] for n in names)
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes["logits"] = {0: "batch"}
    return _write_atomically(out, lambda tmp: _torch_export(net, args, tmp, names, "logits",
                                                           axes, opset),
                             f"ONNX export of {model}")


def quantize_int8(fp32: Path, out: Path) -> Path:
    """Dynamic int8 weights (onnxruntime.quantization); activations stay float."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ExportError(f"int8 quantisation needs onnxruntime and onnx ({exc})") from exc
    return _write_atomically(
        out, lambda tmp: quantize_dynamic(str(fp32), tmp, weight_type=QuantType.QInt8),
        "int8 quantisation")


def export_encoder_onnx(model: str, out: Path, opset: int = 17) -> Path:
    """The sentence encoder's transformer (token states); pooling is done in numpy."""
    try:
        import onnx  # noqa: F401
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ExportError(f"{model} has no ONNX graph (model.graph.onnx) and exporting the "
                          f"encoder needs torch, transformers and onnx ({exc}): {EXPORT_HINT}"
                          ) from exc
    from sage_tod.nli.hf import quiet_transformers

    quiet_transformers()
    # fp32 graph even from fp16-stored weights (the packaged encoder's compact copy)
    net = AutoModel.from_pretrained(model, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(model)
    enc = tok(["a cheap place in the centre"], return_tensors="pt", return_token_type_ids=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "seq"}

    class _States(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    args = tuple(enc[n] for n in names)
    return _write_atomically(out, lambda tmp: _torch_export(_States(net), args, tmp, names,
                                                           "last_hidden_state", axes, opset),
                             f"ONNX export of encoder {model}")


def _torch_export(net: Any, args: tuple[Any, ...], path: str, names: list[str], output: str,
                  axes: dict[str, dict[int, str]], opset: int) -> None:
    import torch

    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, args, path, input_names=names, output_names=[output],
                          dynamic_axes=axes, opset_version=opset, dynamo=False)


def _write_atomically(out: Path, write: Callable[[str], Any], what: str) -> Path:
    """Write through a temporary file beside `out`: a crash never leaves half a graph."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=out.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, out)
    except Exception as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ExportError(f"{what} failed: {exc}") from exc
    return out
