"""Value paraphrase support with all-MiniLM-L6-v2 (the paper's redundancy encoder).

NLI over whole utterances misses short paraphrases ("somewhere inexpensive"
for `cheap`, "middle of town" for `centre`). This compares the value's schema
surface forms with every short word n-gram of the premise window.

For a categorical slot a value counts as paraphrased only when some n-gram is
closer to it than to every other value of the slot, by a gap: sentence
encoders rate siblings alike ("inexpensive" is close to "expensive" too), so
closeness alone is not support. Free-text values need a much higher
similarity, since there is no closed set to compare against.

The encoder is state-gated: S2 calls it only for values the state diff
actually introduces, and it is loaded on first use, so turns without such
values never pay for it. Similarities are rounded to 0.01 before any
threshold, so tiny batch-dependent float noise cannot flip a decision.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.contracts.spec import SlotSpec
from sage_tod.nli.embcache import EmbeddingCache
from sage_tod.text.normalize import tokens_with_spans

NGRAM_MAX = 3
CATEGORICAL_MIN = 0.55
CATEGORICAL_GAP = 0.10
FREE_MIN = 0.85
_STOP = {"a", "an", "the", "to", "of", "in", "on", "at", "for", "and", "or", "i", "i'm", "im",
         "me", "my", "is", "it", "be", "please", "would", "like", "want", "need", "some", "any",
         "somewhere", "something", "with", "that", "this", "there", "are", "you", "can",
         "could", "we", "us", "just", "looking", "find", "eat", "go", "get", "m", "s", "ll",
         "d", "re", "ve", "hi", "hello", "hey", "thanks", "thank", "yes", "no", "ok", "okay"}


@dataclass(frozen=True)
class Gram:
    text: str
    utterance: int  # index into the texts given
    start: int
    end: int


@dataclass(frozen=True)
class Support:
    """Where the value is paraphrased, and how sure the encoder is."""

    gram: Gram
    similarity: float
    runner_up: float | None


def ngrams(texts: Sequence[str], n_max: int = NGRAM_MAX) -> list[Gram]:
    """Word n-grams with character offsets, skipping those that start or end with a stop
    word (they only dilute the match and multiply encoder calls)."""
    out: list[Gram] = []
    for u, text in enumerate(texts):
        toks = tokens_with_spans(text)
        for i in range(len(toks)):
            for n in range(1, n_max + 1):
                if i + n > len(toks):
                    break
                words = [t for t, _, _ in toks[i:i + n]]
                if words[0] in _STOP or words[-1] in _STOP:  # "in the centre" ~ "centre"
                    continue
                s, e = toks[i][1], toks[i + n - 1][2]
                out.append(Gram(text[s:e], u, s, e))
    return out


def packaged_encoder_dir() -> Path:
    """all-MiniLM-L6-v2 as the package installs it (`sage_tod/nli/encoder/`): fp16
    weights, tokenizer and its weightless ONNX graph (MODEL_CARD.md there)."""
    return Path(__file__).resolve().parent / "encoder"


def default_model_path() -> str:
    return str(packaged_encoder_dir())


class _SentenceTransformerEncoder:
    """The reference path: SentenceTransformer (Transformer -> mean pooling -> normalise)."""

    name = "sentence-transformers"

    def __init__(self, path: str, threads: int) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        from sage_tod.nli.hf import quiet_transformers

        torch.set_num_threads(threads)
        quiet_transformers()
        # fp32 compute from the packaged fp16 weights, as the ONNX graph does
        self.model = SentenceTransformer(path, device="cpu",
                                         model_kwargs={"dtype": torch.float32})

    def encode(self, texts: list[str]) -> Any:
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


def onnx_kind(int8: bool) -> str:
    """The encoder's backend name, also the key its cached vectors are stored under."""
    return "onnx-int8" if int8 else "onnx"


class _OnnxEncoder:
    """The same weights on ONNX Runtime: same pipeline, no torch at run time.

    The packaged encoder ships its graph (`sage_tod.nli.graph`); another encoder
    directory is exported once (torch). Measured equal to the SentenceTransformer
    path to ~1e-6 (tests/test_nli_graphs.py) and several times faster on 2 cores;
    similarities are rounded to 0.01 anyway.
    """

    def __init__(self, path: str, threads: int, int8: bool = False) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from sage_tod.nli.backend import model_fingerprint, ort_session_options
        from sage_tod.nli.graph import has_graph, load_session, materialize
        from sage_tod.nli.onnx import export_encoder_onnx, onnx_dir, quantize_int8

        so = ort_session_options(threads)
        self.name = onnx_kind(int8)
        tok = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        tok.enable_truncation(max_length=256)
        tok.no_padding()
        self.tok = tok
        if has_graph(path) and not int8:
            self.session = load_session(path, so)
            return
        onnx_file = onnx_dir(model_fingerprint(path) + "-encoder") / "model.onnx"
        if not onnx_file.is_file():
            if has_graph(path):
                materialize(path, onnx_file)
            else:
                export_encoder_onnx(path, onnx_file)
        if int8:  # dynamic int8 weights, made once from the fp32 graph
            q = onnx_file.with_name("model-int8.onnx")
            if not q.is_file():
                quantize_int8(onnx_file, q)
            onnx_file = q
        self.session = ort.InferenceSession(str(onnx_file), so,
                                            providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        from sage_tod.nli.backend import pad_batch

        encs = [(list(e.ids), list(e.type_ids)) for e in self.tok.encode_batch(texts)]
        order = sorted(range(len(encs)), key=lambda i: (len(encs[i][0]), i))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), 64):
            idx = order[start:start + 64]
            ids, types, mask = pad_batch([encs[i] for i in idx], 0)
            states = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                             "token_type_ids": types})[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (states * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out


class ParaphraseEncoder:
    """all-MiniLM-L6-v2 as the package ships it (`sage_tod/nli/encoder/`), loaded lazily.

    `backend="auto"` runs its ONNX graph when onnxruntime can (the packaged encoder
    ships one; another directory is exported once), else SentenceTransformer.
    """

    def __init__(self, model_path: str | None = None, threads: int = 2,
                 backend: str = "auto", cache_path: str | Path | None = None,
                 int8: bool = False) -> None:
        self.model_path = model_path
        self.threads = threads
        self.backend = backend
        # int8 weights for the ONNX graph (2-3x faster on short n-grams, no decision
        # changed on the benchmark slices, but vectors depend on the batch: opt-in,
        # docs/results-speed.md); no effect on the SentenceTransformer fallback
        self.int8 = int8
        self.cache_path = cache_path
        self._model: _OnnxEncoder | _SentenceTransformerEncoder | None = None
        self._emb: dict[str, Any] = {}
        self._store: EmbeddingCache | None = None
        self._lock = threading.Lock()
        self.encoded = 0  # texts the model encoded (not found in memory or on disk)

    def _disk(self) -> EmbeddingCache | None:
        """The on-disk vectors (none without `cache_path`), opened without loading the
        model: a warm run never pays for the encoder."""
        if self.cache_path is None:
            return None
        if self._store is None:
            import importlib.util

            from sage_tod.nli.backend import model_fingerprint

            path = self.model_path or default_model_path()
            kind = self._model.name if self._model is not None else (
                onnx_kind(self.int8) if self.backend in ("auto", "onnx")
                and importlib.util.find_spec("onnxruntime") else "sentence-transformers")
            self._store = EmbeddingCache(f"{model_fingerprint(path)}:{kind}", self.cache_path)
        return self._store

    def _load(self) -> _OnnxEncoder | _SentenceTransformerEncoder:
        if self._model is None:
            path = self.model_path or default_model_path()
            if self.backend in ("auto", "onnx"):
                try:
                    self._model = _OnnxEncoder(path, self.threads, self.int8)
                except Exception:
                    if self.backend == "onnx":
                        raise
            if self._model is None:
                self._model = _SentenceTransformerEncoder(path, self.threads)
        return self._model

    @property
    def backend_name(self) -> str:
        return self._load().name

    def embed(self, texts: Sequence[str]) -> dict[str, Any]:
        """Unit vectors per distinct text; each text is encoded once per process."""
        with self._lock:
            todo = sorted({t for t in texts if t not in self._emb})
            store = self._disk() if todo else None
            if store is not None:
                self._emb.update(store.get_many(todo))
                todo = [t for t in todo if t not in self._emb]
            if todo:
                vecs = self._load().encode(todo)
                fresh = {t: v for t, v in zip(todo, vecs, strict=True)}
                self._emb.update(fresh)
                self.encoded += len(fresh)
                if store is not None:
                    store.put_many(fresh)
            return {t: self._emb[t] for t in texts}


def _forms(value: str, spec: SlotSpec | None) -> tuple[dict[str, list[str]], str, bool]:
    """Surface forms per competing value, the key of `value`, and whether it is closed-set
    (a categorical slot's values; a free slot's listed values are known, not closed)."""
    if spec is not None and spec.type == "categorical" and spec.values:
        target = spec.normalize(value)
        for v in spec.values:
            if spec.normalize(v) == target:
                return {w: spec.surface_forms(w) for w in spec.values}, v, True
    return {value: spec.surface_forms(value) if spec else [value]}, value, False


def value_forms(value: str, spec: SlotSpec | None) -> list[str]:
    """Every text `find_paraphrase` will embed for this value (for batch prefetching)."""
    forms, _, _ = _forms(value, spec)
    return [f for fs in forms.values() for f in fs]


def _sim(a: Any, b: Any) -> float:
    return round(float(a @ b), 2)


def find_paraphrase(enc: ParaphraseEncoder, texts: Sequence[str], value: str,
                    spec: SlotSpec | None) -> Support | None:
    """The n-gram of `texts` that paraphrases `value`, or None."""
    grams = ngrams(texts)
    if not grams:
        return None
    forms, value_key, categorical = _forms(value, spec)
    all_forms = [f for fs in forms.values() for f in fs]
    emb = enc.embed([g.text for g in grams] + all_forms)
    best: Support | None = None
    for g in grams:
        ge = emb[g.text]
        per_value = {v: max(_sim(ge, emb[f]) for f in fs) for v, fs in forms.items()}
        s = per_value[value_key]
        if categorical:
            others = [x for v, x in per_value.items() if v != value_key]
            second = max(others, default=0.0)
            ok = s >= CATEGORICAL_MIN and s - second >= CATEGORICAL_GAP
            cand = Support(g, s, second)
        else:
            ok = s >= FREE_MIN
            cand = Support(g, s, None)
        if ok and (best is None or s > best.similarity):
            best = cand
    return best
