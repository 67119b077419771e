"""Scoring (premise, hypothesis) pairs with an NLI cross-encoder.

Two backends share one tokenizer path and one batching routine, so they see
identical token ids: ONNX Runtime (the default when it can be used: faster on
CPU and bit-for-bit independent of batch size and padding) and PyTorch (the
fallback, and what exports the ONNX graph). The label order is read from the
model's `config.id2label`; a model whose labels cannot be mapped onto
entailment/neutral/contradiction is refused rather than guessed at.

Backends are cached per process: a model is loaded once, however many
evaluators or stages ask for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sage_tod.nli.hf import quiet_transformers

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Pair = tuple[str, str]
Probs = tuple[float, float, float]  # p(entailment), p(neutral), p(contradiction)

DEFAULT_MAX_LENGTH = 128
DEFAULT_BATCH = 32
DEFAULT_THREADS = 2  # the torch fallback when nothing says otherwise
BACKENDS = ("auto", "onnx", "onnx-int8", "torch")


class BackendError(RuntimeError):
    """The model cannot be used for NLI here; the message says why."""


@dataclass(frozen=True)
class LabelMap:
    """Column index of each NLI label in the model's logits."""

    entailment: int
    neutral: int
    contradiction: int

    @staticmethod
    def from_config(id2label: dict[Any, Any]) -> LabelMap:
        found: dict[str, int] = {}
        for k, v in id2label.items():
            name = str(v).lower()
            for key in ("entail", "neutral", "contra"):
                if name.startswith(key):
                    found[key] = int(k)
        if len(found) != 3 or len(id2label) != 3:
            raise BackendError(
                f"config.id2label {dict(id2label)} does not name exactly entailment, neutral "
                "and contradiction; S2 needs a 3-way NLI model")
        return LabelMap(found["entail"], found["neutral"], found["contra"])


def cores_given() -> int:
    """CPUs this process may run on (taskset, cgroup cpusets, Ray's per-actor share)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def threads_from_env(threads: int | None) -> int:
    """Model threads: the argument, $SAGE_TOD_NLI_THREADS, $SAGE_TOD_THREADS, else the
    cores given to the process (at most 8: a MiniLM on one short batch stops scaling
    before that). ONNX Runtime ignores OMP_NUM_THREADS, so this is the one knob."""
    if threads is not None:
        return max(1, int(threads))
    for name in ("SAGE_TOD_NLI_THREADS", "SAGE_TOD_THREADS"):
        env = os.environ.get(name, "").strip()
        if env:
            return max(1, int(env))
    return min(cores_given(), 8)


def ort_session_options(threads: int) -> Any:
    """ONNX Runtime options: `threads` intra-op threads, sequential, and no spin-waiting
    (spinning threads burn the cores that other workers or processes need; measured
    slower under load, docs/results-speed.md; `SAGE_TOD_ORT_SPIN=1` turns it back on)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    spin = "1" if os.environ.get("SAGE_TOD_ORT_SPIN", "0").strip() == "1" else "0"
    so.add_session_config_entry("session.intra_op.allow_spinning", spin)
    return so


# what one model call costs besides its tokens, in padded-token equivalents: measured on
# the MiniLM cross-encoder, ONNX Runtime, 2 threads, ~3.5 ms per call against ~0.12 ms
# per padded token (docs/results-speed.md); a tiny batch is dearer per token than it looks
CALL_COST_TOKENS = 30


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, shortest first.

    Sorted by length, the pairs are cut into consecutive batches of at most
    `batch_size` so that the padded tokens (longest x count, per batch) plus a
    fixed cost per call (`CALL_COST_TOKENS`) are least: an exact dynamic
    programme over the cut points, O(n x batch_size). Padding a few short pairs
    is cheaper than one more call; padding many is not. The scores do not
    depend on how pairs are grouped (ONNX Runtime and torch give each row the
    same numbers whatever its batch and padding; tests/test_speed.py).
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    n = len(order)
    if n == 0:
        return []
    size = max(1, batch_size)
    sl = [lengths[i] for i in order]
    # best[j]: least cost of the first j pairs; cut[j]: where its last batch starts
    best = [0] * (n + 1)
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = sl[j - 1]  # sorted: the batch's last pair is its longest
        i0 = max(0, j - size)
        best[j], cut[j] = best[i0] + CALL_COST_TOKENS + (j - i0) * longest, i0
        for i in range(i0 + 1, j):
            cost = best[i] + CALL_COST_TOKENS + (j - i) * longest
            if cost < best[j]:  # ties keep the earliest cut (the longer last batch)
                best[j], cut[j] = cost, i
    out: list[list[int]] = []
    j = n
    while j > 0:
        out.append(order[cut[j]:j])
        j = cut[j]
    out.reverse()
    return out


def model_fingerprint(model: str) -> str:
    """A content hash of a local model directory (weights, config, tokenizer).

    Scores are cached under this key, so retraining a model in place, or
    swapping its files, can never return stale scores.
    """
    p = Path(model)
    if not p.is_dir():
        return "hub:" + model
    # the ONNX graph a directory ships is what runs, so it is part of the hash; the claim
    # design (sage_tod_claims.json) changes the claims' text, which the score cache keys
    # on already, so editing it neither re-exports the graph nor reuses a wrong score
    names = sorted(f.name for f in p.iterdir() if f.is_file() and f.suffix in
                   {".json", ".safetensors", ".bin", ".txt", ".model", ".onnx"}
                   and f.name not in {"RESULT.txt", "sage_tod_claims.json"})
    # hashed once per process while the files are unchanged (the NLI backend, the
    # paraphrase encoder's ONNX export and its embedding cache all ask)
    stamp = (str(p.resolve()), tuple((n, (p / n).stat().st_size, (p / n).stat().st_mtime_ns)
                                     for n in names))
    if stamp not in _FINGERPRINTS:
        _FINGERPRINTS[stamp] = _hash_files(p, names)
    return _FINGERPRINTS[stamp]


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def _hash_files(p: Path, names: Sequence[str]) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0")
        with (p / name).open("rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 22), b""):  # type: ignore[misc]
                h.update(block)
    return h.hexdigest()[:20]


class PairTokenizer:
    """Fast `tokenizers` path when tokenizer.json exists; `AutoTokenizer` otherwise."""

    def __init__(self, model: str, max_length: int = DEFAULT_MAX_LENGTH) -> None:
        self.max_length = max_length
        tj = Path(model) / "tokenizer.json"
        self._fast: Any = None
        self._hf: Any = None
        if tj.is_file():
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(tj))
            tok.enable_truncation(max_length=max_length, strategy="longest_first")
            tok.no_padding()
            self._fast = tok
            pad = tok.padding
            self.pad_id = 0 if pad is None else int(pad.get("pad_id", 0))
        else:
            from transformers import AutoTokenizer

            self._hf = AutoTokenizer.from_pretrained(model)
            self.pad_id = int(self._hf.pad_token_id or 0)

    def encode(self, pairs: Sequence[Pair]) -> list[tuple[list[int], list[int]]]:
        """(input ids, token type ids) per pair, truncated, unpadded."""
        if self._fast is not None:
            encs = self._fast.encode_batch([(p, h) for p, h in pairs])
            return [(list(e.ids), list(e.type_ids)) for e in encs]
        out = self._hf([p for p, _ in pairs], [h for _, h in pairs], truncation=True,
                       max_length=self.max_length, return_token_type_ids=True)
        types = out.get("token_type_ids") or [[0] * len(ids) for ids in out["input_ids"]]
        return [(list(i), list(t)) for i, t in zip(out["input_ids"], types, strict=True)]

    def count(self, text: str) -> int:
        """Tokens of `text` alone, without special tokens (for premise budgets)."""
        if self._fast is not None:
            return len(self._fast.encode(text, add_special_tokens=False).ids)
        return len(self._hf(text, add_special_tokens=False)["input_ids"])


def pad_batch(encs: Sequence[tuple[list[int], list[int]]], pad_id: int
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Dynamic padding to the longest sequence of this batch only."""
    import numpy as np

    n, width = len(encs), max(len(ids) for ids, _ in encs)
    ids = np.full((n, width), pad_id, dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    for i, (a, t) in enumerate(encs):
        ids[i, :len(a)] = a
        types[i, :len(t)] = t
        mask[i, :len(a)] = 1
    return ids, types, mask


def softmax_rows(logits: npt.NDArray[Any], labels: LabelMap) -> list[Probs]:
    import numpy as np

    x = logits.astype(np.float64)
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    p = e / e.sum(axis=1, keepdims=True)
    return [(float(r[labels.entailment]), float(r[labels.neutral]),
             float(r[labels.contradiction])) for r in p]


class NLIBackend(Protocol):
    """Anything that turns pairs into (p_ent, p_neu, p_con), in input order."""

    name: str
    model: str
    model_key: str
    load_seconds: float
    tokenizer: PairTokenizer

    def score(self, pairs: Sequence[Pair], batch_size: int = DEFAULT_BATCH) -> list[Probs]: ...


class _Base:
    """Length-sorted batching with dynamic padding, shared by both backends."""

    name = "base"

    def __init__(self, model: str, max_length: int, threads: int) -> None:
        self.model = model
        self.threads = threads
        self.tokenizer = PairTokenizer(model, max_length)
        self.labels = LabelMap.from_config(_id2label(model))
        self.model_key = model_fingerprint(model)
        self.load_seconds = 0.0
        self._lock = threading.Lock()

    def _logits(self, ids: npt.NDArray[np.int64], types: npt.NDArray[np.int64],
                mask: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        raise NotImplementedError

    def score(self, pairs: Sequence[Pair], batch_size: int = DEFAULT_BATCH) -> list[Probs]:
        if not pairs:
            return []
        encs = self.tokenizer.encode(pairs)
        out: list[Probs | None] = [None] * len(encs)
        batches = length_batches([len(ids) for ids, _ in encs], max(1, batch_size))
        with self._lock:  # one model call at a time: fixed threads, fixed numerics
            for idx in batches:
                ids, types, mask = pad_batch([encs[i] for i in idx], self.tokenizer.pad_id)
                probs = softmax_rows(self._logits(ids, types, mask), self.labels)
                for i, p in zip(idx, probs, strict=True):
                    out[i] = p
        return [p for p in out if p is not None]


def _config(model: str) -> dict[str, Any]:
    p = Path(model) / "config.json"
    if p.is_file():
        data: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
        return data
    from transformers import AutoConfig

    cfg: dict[str, Any] = AutoConfig.from_pretrained(model).to_dict()
    return cfg


def _id2label(model: str) -> dict[Any, Any]:
    cfg = _config(model)
    id2label = cfg.get("id2label")
    if not isinstance(id2label, dict):
        raise BackendError(f"{model}: config.json has no id2label")
    return id2label


class TorchBackend(_Base):
    """PyTorch, fp32, eval mode, fixed thread count."""

    name = "torch"

    def __init__(self, model: str, max_length: int = DEFAULT_MAX_LENGTH,
                 threads: int = DEFAULT_THREADS) -> None:
        t0 = time.perf_counter()
        try:
            import torch
            from transformers import AutoModelForSequenceClassification
        except ImportError as exc:
            raise BackendError(f"the torch backend needs torch and transformers ({exc}): "
                               "pip install 'sage-tod[export]'") from None

        torch.set_num_threads(threads)
        quiet_transformers()
        super().__init__(model, max_length, threads)
        self._torch = torch
        # always fp32: a model shipped with fp16 weights (to halve its size) would
        # otherwise load as fp16, which is slow on CPU and scores differently
        self.net = AutoModelForSequenceClassification.from_pretrained(
            model, dtype=torch.float32).eval()
        self._use_types = int(_config(model).get("type_vocab_size", 0) or 0) > 1
        self.load_seconds = time.perf_counter() - t0

    def _logits(self, ids: npt.NDArray[np.int64], types: npt.NDArray[np.int64],
                mask: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        torch = self._torch
        kw: dict[str, Any] = {"input_ids": torch.from_numpy(ids),
                              "attention_mask": torch.from_numpy(mask)}
        if self._use_types:
            kw["token_type_ids"] = torch.from_numpy(types)
        with torch.inference_mode():
            logits: npt.NDArray[Any] = self.net(**kw).logits.float().numpy()
        return logits


class OnnxBackend(_Base):
    """ONNX Runtime on CPU: the directory's shipped graph (weightless `model.graph.onnx`
    with its safetensors, or a full `model.onnx`), else one exported per model hash."""

    def __init__(self, model: str, max_length: int = DEFAULT_MAX_LENGTH,
                 threads: int = DEFAULT_THREADS, int8: bool = False) -> None:
        t0 = time.perf_counter()
        import onnxruntime as ort

        from sage_tod.nli.graph import GRAPH_FILE, GraphError, has_graph, load_session
        from sage_tod.nli.onnx import ExportError, onnx_path_for

        super().__init__(model, max_length, threads)
        self.name = "onnx-int8" if int8 else "onnx"
        so = ort_session_options(threads)
        shipped_error: GraphError | None = None
        if not int8 and has_graph(model) and not (Path(model) / "model.onnx").is_file():
            # the packaged model: no torch, no export
            try:
                self.session = load_session(model, so)
                self._inputs = {i.name for i in self.session.get_inputs()}
                self.onnx_path = Path(model) / GRAPH_FILE
                self.load_seconds = time.perf_counter() - t0
                return
            except GraphError as exc:  # e.g. weights changed since the graph was built
                shipped_error = exc
                so = ort_session_options(threads)  # the failed load used these options
        try:
            path = onnx_path_for(model, self.model_key, int8=int8)
        except ExportError as exc:
            if shipped_error is None:
                raise
            raise ExportError(f"{shipped_error}; and {exc}") from None
        try:
            self.session = ort.InferenceSession(str(path), so,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupt or truncated graph
            from sage_tod.nli.onnx import onnx_dir

            if onnx_dir(self.model_key) not in path.parents:
                raise BackendError(f"{path}: the ONNX graph cannot be loaded ({exc})") from None
            # our own cached export: delete it and export again, once (self-healing)
            path.unlink(missing_ok=True)
            path = onnx_path_for(model, self.model_key, int8=int8)
            try:
                self.session = ort.InferenceSession(str(path), so,
                                                    providers=["CPUExecutionProvider"])
            except Exception as exc2:
                raise BackendError(f"{path}: the ONNX graph cannot be loaded even after a "
                                   f"fresh export ({exc2})") from None
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.onnx_path = path
        self.load_seconds = time.perf_counter() - t0

    def _logits(self, ids: npt.NDArray[np.int64], types: npt.NDArray[np.int64],
                mask: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        logits: npt.NDArray[Any] = self.session.run(
            None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return logits


_LOADED: dict[tuple[str, str, int, int], NLIBackend] = {}
_LOAD_LOCK = threading.Lock()


def load_backend(model: str, backend: str = "auto", *, threads: int | None = None,
                 max_length: int = DEFAULT_MAX_LENGTH) -> NLIBackend:
    """The backend for `model`, loaded once per process.

    `auto` prefers ONNX Runtime (measured faster at identical verdicts,
    docs/nli.md) and falls back to PyTorch when onnxruntime is missing or the
    graph cannot be exported here.
    """
    if backend not in BACKENDS:
        raise BackendError(f"unknown NLI backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    n = threads_from_env(threads)
    key = (model, backend, n, max_length)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        be: NLIBackend
        if backend == "torch":
            be = TorchBackend(model, max_length, n)
        elif backend in ("onnx", "onnx-int8"):
            be = OnnxBackend(model, max_length, n, int8=backend == "onnx-int8")
        else:
            try:
                be = OnnxBackend(model, max_length, n)
            except (ImportError, BackendError, OSError, RuntimeError) as exc:
                if isinstance(exc, BackendError) and "id2label" in str(exc):
                    raise
                try:
                    be = TorchBackend(model, max_length, n)
                except BackendError as torch_exc:
                    # a torch-free install (the `nli` extra) and a model without a graph
                    raise BackendError(f"ONNX Runtime cannot run it ({exc}); and {torch_exc}"
                                       ) from None
        _LOADED[key] = be
        return be
