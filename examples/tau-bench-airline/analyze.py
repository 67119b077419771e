"""Per-conversation sage-tod flags against τ-bench's own task reward.

Usage (docs/results-tau-bench.md):

    python examples/tau-bench-airline/analyze.py TURNS.jsonl VERDICTS.jsonl [--seed 0]

TURNS is `sage-tod import tau-bench` output (its `meta` has task id and
reward), VERDICTS the `sage-tod evaluate` output for those turns. A
conversation is flagged when any of its turns is a failure. The script prints
the AUC of two scores against reward = 0 (the flag itself, and the number of
failing turns), each with a seeded bootstrap 95% CI that resamples whole tasks
(the 4 trials of a task are not independent), plus per-class counts.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """P(score of a positive > score of a negative), ties counted half (Mann-Whitney)."""
    pos, neg = score[positive], score[~positive]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    gt = (pos[:, None] > neg[None, :]).sum()
    eq = (pos[:, None] == neg[None, :]).sum()
    return float((gt + 0.5 * eq) / (len(pos) * len(neg)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("turns", type=Path)
    ap.add_argument("verdicts", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=2000)
    a = ap.parse_args()
    meta = {}
    for line in a.turns.read_text().splitlines():
        t = json.loads(line)
        meta[t["dialogue_id"]] = (t["meta"]["task_id"], t["meta"]["reward"])
    fails: Counter[str] = Counter()
    classes: dict[str, Counter[str]] = defaultdict(Counter)
    verdicts: Counter[str] = Counter()
    for line in a.verdicts.read_text().splitlines():
        v = json.loads(line)
        verdicts[v["verdict"]] += 1
        if v["verdict"] == "failure":
            fails[v["dialogue_id"]] += 1
            for c in v["classes"]:
                classes[v["dialogue_id"]][c] += 1
    ids = sorted(meta)
    task = np.array([meta[d][0] for d in ids])
    failed_task = np.array([meta[d][1] == 0 for d in ids])
    n_fail = np.array([fails[d] for d in ids], dtype=float)
    flag = (n_fail > 0).astype(float)
    print(f"conversations {len(ids)}, reward=0: {int(failed_task.sum())}, "
          f"turn verdicts {dict(verdicts)}")
    for name, pos in (("reward=0", failed_task), ("reward=1", ~failed_task)):
        print(f"  {name}: {int(pos.sum())} conversations, flagged {int(flag[pos].sum())} "
              f"({flag[pos].mean():.1%}), mean failing turns {n_fail[pos].mean():.2f}")
    rng = np.random.default_rng(a.seed)
    tasks = np.unique(task)
    by_task = {t: np.flatnonzero(task == t) for t in tasks}
    length: Counter[str] = Counter(json.loads(x)["dialogue_id"]
                                   for x in a.turns.read_text().splitlines())
    n_turns = np.array([length[d] for d in ids], dtype=float)
    for name, score in (("any failure (flag)", flag), ("number of failing turns", n_fail),
                        ("number of turns (length baseline, no sage-tod)", n_turns),
                        ("failing share of turns", n_fail / n_turns)):
        point = auc(score, failed_task)
        boots = []
        for _ in range(a.resamples):
            pick = np.concatenate([by_task[t] for t in rng.choice(tasks, len(tasks))])
            val = auc(score[pick], failed_task[pick])
            if not np.isnan(val):
                boots.append(val)
        lo, hi = np.percentile(boots, [2.5, 97.5])
        print(f"AUC {name} vs reward=0: {point:.3f} (95% CI {lo:.3f}-{hi:.3f}, "
              f"{len(boots)} task-level bootstrap resamples, seed {a.seed})")
    tp = int((flag.astype(bool) & failed_task).sum())
    print(f"flag as a detector of reward=0: precision {tp / max(flag.sum(), 1):.3f}, "
          f"recall {tp / max(failed_task.sum(), 1):.3f}")
    per_class: dict[str, list[int]] = {}
    for c in ("IUV", "WNF", "PC", "UV"):
        has = np.array([classes[d][c] > 0 for d in ids])
        per_class[c] = [int((has & failed_task).sum()), int((has & ~failed_task).sum())]
    print("conversations with a class fired [reward=0, reward=1]:", per_class)


if __name__ == "__main__":
    main()
