"""Shipped ONNX graphs without their weights: loaded with the model's own safetensors.

A model directory that carries `model.graph.onnx` and `model.graph.json` runs on
ONNX Runtime with no torch, no export and no second copy of the weights. The
graph is the exporter's fp32 graph with every weight initializer's data
removed (marked as external data that is never on disk); the manifest says,
for each such initializer, which safetensors tensor it is and whether the
exporter stored it transposed. At load the tensors are read with numpy, cast
to fp32 (exact for fp16-stored weights) and handed to ONNX Runtime with
`SessionOptions.add_external_initializers`, which replaces them *before* any
graph optimisation, so the session is the one the full exported graph gives:
bit-identical logits (tests/test_nli_graphs.py; the build step is
`sage-tod models build-graphs`, in `sage_tod.lab.nli.graphs`).

Only numpy and onnxruntime are needed here; building a graph needs the
`export` extra (torch, transformers, onnx).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

GRAPH_FILE = "model.graph.onnx"
MANIFEST_FILE = "model.graph.json"
# where the stripped initializers say their data is: a name that is never a file, so a
# loader that is not given the weights fails loudly instead of reading something else
WEIGHTS_PLACEHOLDER = "sage-tod-weights-from-safetensors"
MANIFEST_FORMAT = 1
_DTYPES = {"F16": "float16", "F32": "float32", "F64": "float64", "I64": "int64",
           "I32": "int32", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


class GraphError(RuntimeError):
    """A shipped graph and its weights do not fit together (or cannot be read)."""


@dataclass(frozen=True)
class Source:
    """Which tensor of the weights file an initializer is, and in which layout."""

    tensor: str
    transpose: bool


@dataclass(frozen=True)
class GraphManifest:
    """`model.graph.json`: the weights file the graph was built for, and the mapping."""

    weights: str
    weights_sha256: str
    initializers: dict[str, Source]
    built_with: dict[str, str]

    @staticmethod
    def read(path: Path) -> GraphManifest:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("format") != MANIFEST_FORMAT:
                raise GraphError(f"{path}: manifest format {raw.get('format')!r}, "
                                 f"this sage-tod reads {MANIFEST_FORMAT}")
            inits = {str(k): Source(str(v["tensor"]), bool(v["transpose"]))
                     for k, v in raw["initializers"].items()}
            return GraphManifest(str(raw["weights"]), str(raw["weights_sha256"]), inits,
                                 {str(k): str(v) for k, v in raw.get("built_with", {}).items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise GraphError(f"{path}: not a graph manifest ({type(exc).__name__}: {exc})"
                             ) from None

    def write(self, path: Path) -> None:
        data = {"format": MANIFEST_FORMAT, "weights": self.weights,
                "weights_sha256": self.weights_sha256, "built_with": self.built_with,
                "initializers": {k: {"tensor": s.tensor, "transpose": s.transpose}
                                 for k, s in sorted(self.initializers.items())}}
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def has_graph(model_dir: str | Path) -> bool:
    d = Path(model_dir)
    return (d / GRAPH_FILE).is_file() and (d / MANIFEST_FILE).is_file()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of a .safetensors file as a read-only numpy view of one mapping.

    The format is an 8-byte little-endian header length, a JSON header of
    {name: {dtype, shape, data_offsets}} and the raw little-endian data; reading it
    needs nothing but numpy (the `safetensors` package comes with the export extra).
    """
    import numpy as np

    try:
        with path.open("rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(n))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
        out: dict[str, npt.NDArray[Any]] = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = _DTYPES.get(info["dtype"])
            if dtype is None:
                raise GraphError(f"{path}: tensor {name} has dtype {info['dtype']}, "
                                 "which this reader does not handle")
            begin, end = info["data_offsets"]
            out[name] = np.frombuffer(data[begin:end], dtype=np.dtype(dtype).newbyteorder("<")
                                      ).reshape(info["shape"])
        return out
    except GraphError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GraphError(f"{path}: not a readable safetensors file "
                         f"({type(exc).__name__}: {exc})") from None


def initializer_values(model_dir: str | Path, *, check_hash: bool = True
                       ) -> dict[str, npt.NDArray[np.float32]]:
    """The graph's stripped initializers, rebuilt from the weights file (fp32, C order)."""
    import numpy as np

    d = Path(model_dir)
    man = GraphManifest.read(d / MANIFEST_FILE)
    wpath = d / man.weights
    if not wpath.is_file():
        raise GraphError(f"{wpath}: missing; {d / GRAPH_FILE} needs it")
    if check_hash and sha256_file(wpath) != man.weights_sha256:
        raise GraphError(f"{wpath} is not the weights file {GRAPH_FILE} was built for "
                         "(sha256 differs); rebuild it with `sage-tod models build-graphs "
                         f"--model {d}` (needs the export extra)")
    tensors = read_safetensors(wpath)
    out: dict[str, npt.NDArray[np.float32]] = {}
    for name, src in man.initializers.items():
        if src.tensor not in tensors:
            raise GraphError(f"{wpath}: no tensor {src.tensor!r} (graph initializer {name})")
        a = tensors[src.tensor].astype(np.float32)
        out[name] = np.ascontiguousarray(a.T if src.transpose else a)
    return out


def load_session(model_dir: str | Path, options: Any) -> Any:
    """An ONNX Runtime CPU session of the directory's graph with its weights supplied."""
    import onnxruntime as ort

    d = Path(model_dir)
    values = initializer_values(d)
    names = list(values)
    ort_values = [ort.OrtValue.ortvalue_from_numpy(values[n]) for n in names]
    options.add_external_initializers(names, ort_values)
    try:
        session = ort.InferenceSession(str(d / GRAPH_FILE), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise GraphError(f"{d / GRAPH_FILE}: the graph cannot be loaded with its weights "
                         f"({str(exc).strip().splitlines()[0][:300]})") from None
    # the values are copied into the session's graph, but keep them alive with it anyway
    session._sage_tod_weights = ort_values
    return session


def materialize(model_dir: str | Path, out: Path) -> Path:
    """Write the full fp32 graph (weights inline): what int8 quantisation starts from.

    Needs the `onnx` package (the export extra, as quantisation does).
    """
    try:
        import onnx
        from onnx import TensorProto, numpy_helper
    except ImportError as exc:
        raise GraphError(f"writing the full graph needs the onnx package ({exc}); "
                         "pip install 'sage-tod[export]'") from exc
    d = Path(model_dir)
    values = initializer_values(d)
    model = onnx.load(str(d / GRAPH_FILE), load_external_data=False)
    for init in model.graph.initializer:
        if init.name in values:
            full = numpy_helper.from_array(values[init.name], init.name)
            init.Clear()
            init.CopyFrom(full)
            init.data_location = TensorProto.DEFAULT
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    onnx.save(model, str(tmp))
    tmp.replace(out)  # never half a graph under the final name
    return out
