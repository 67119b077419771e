"""Scores of an evaluator on the tool-agent development benchmark (docs/benchmarks.md).

Given the slices of `sage-tod slices tool-agents` and the verdicts of
`sage-tod evaluate` on each of them, this computes, per trajectory file (one
agent), per domain and overall:

- failure precision / recall / F1 on the labelled turns (gold failure vs
  clean), undecided counted as acceptable as `sage-tod score` does, and F1 on
  the decided turns alone;
- the clean-turn flag rate and the F1 of flagging every labelled turn;
- conversation AUCs for telling failed conversations (reward 0) from the rest:
  by the number of turns the evaluator flags, by conversation length alone, and
  by "any turn flagged", and by the conversation verdict (`sage-tod conversations`:
  failure, then undecided, then acceptable; failures by their failing turns);

with 95 % percentile bootstrap intervals that resample *tasks* (all runs and
turns of a task together: the turns of one task are not independent, and every
agent ran the same tasks), 10,000 resamples, seed 0 (lab/stats.py). The same
turn-level numbers are computed on the audited subset (turns a careful reader
labelled failure or clean; the reader's label is the gold there), next to the
gold-derived labels of the same turns, and the audit's label error rate.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sage_tod.contracts.conversations import conversation_outcome
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.verdicts import Verdict, iter_verdicts
from sage_tod.lab.stats import N_BOOT, SEED, resample_indices
from sage_tod.lab.tool_agents import iter_slice_turns

AUDIT_FILE = Path(__file__).parent / "data" / "tool_agents_audit.jsonl"
READER_LABELS = ("failure", "clean", "cant_tell")
CONVERSATION_AUDIT_FILE = Path(__file__).parent / "data" / "tool_agents_conversation_audit.jsonl"
CONVERSATION_LABELS = READER_LABELS


@dataclass(frozen=True)
class ScoredTurn:
    """One slice turn joined to its verdict."""

    file: str
    domain: str
    conversation: str  # file + dialogue id
    task: str  # the bootstrap cluster
    key: str  # dialogue_id:turn_id
    label: str  # failure | clean | unlabelled
    verdict: str  # failure | acceptable | undecided
    reward: float | None
    # the kinds of the criteria that fired (`criterion_kind`), and of those that abstained
    fired: tuple[str, ...] = ()
    abstained: tuple[str, ...] = ()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(path, f"malformed JSON: {exc.msg}", line=n) from None
    return out


def _verdicts_file(verdicts: Path, stem: str) -> Path | None:
    for name in (f"{stem}.jsonl", f"{stem}.verdicts.jsonl"):
        if (verdicts / name).exists():
            return verdicts / name
    return None


_CALL_INDEX = re.compile(r"^(\w+):call\d+:")


def criterion_kind(criterion_id: str, value: Any = None) -> str:
    """A criterion id without its call index, argument position and value, so one rule or
    check counts as one kind across calls: `PC:call1:rule:cancellable` ->
    `PC:rule:cancellable`, `UV:call0:flights.1.date` -> `UV:flights.*.date`,
    `IUV:cabin:business` (value `business`) -> `IUV:cabin`;
    `IUV:declined:cancel_reservation` unchanged."""
    kind = _CALL_INDEX.sub(r"\1:", criterion_id)
    if value is not None and kind.endswith(f":{value}") and kind.count(":") >= 2:
        kind = kind[: -len(f":{value}")]
    return re.sub(r"\.\d+(?=\.|$)", ".*", kind)


def _kinds(v: Verdict, decision: str) -> tuple[str, ...]:
    return tuple(sorted({criterion_kind(c.id, c.args.get("value")) for c in v.criteria
                         if c.decision.value == decision}))


def load_scored(slices: Path, verdicts: Path) -> list[ScoredTurn]:
    """Every slice turn of the files that have a verdicts file, joined by (dialogue, turn)."""
    by_file: dict[str, dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]] = {}
    out: list[ScoredTurn] = []
    for stem, t in iter_slice_turns(slices):
        if stem not in by_file:
            vf = _verdicts_file(verdicts, stem)
            if vf is None:
                by_file[stem] = {}
                continue
            by_file[stem] = {v.key: (v.verdict, _kinds(v, "true"), _kinds(v, "abstain"))
                             for v in iter_verdicts(vf)}
            if not by_file[stem]:
                raise InputError(vf, "no verdicts")
        vs = by_file[stem]
        if not vs:
            continue
        key = f"{t['dialogue_id']}:{t['turn_id']}"
        if key not in vs:
            raise InputError(verdicts / f"{stem}.jsonl", f"no verdict for slice turn {key}")
        meta = t["meta"]
        verdict, fired, abstained = vs[key]
        out.append(ScoredTurn(stem, meta["domain"], f"{stem}/{t['dialogue_id']}",
                              meta["task_key"], key, meta["tool_label"]["label"], verdict,
                              meta.get("reward"), fired, abstained))
    if not out:
        raise InputError(verdicts, "no verdicts file matches a slice (expected "
                         "<file-stem>.jsonl for a <file-stem>.turns.jsonl)")
    return out


# ---------------------------------------------------------------------------------------------
# the statistics


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _f1(tp: float, fp: float, fn: float) -> float:
    d = 2 * tp + fp + fn
    return 2 * tp / d if d else 0.0


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """Mann-Whitney AUC: P(score of a failed conversation > a successful one), ties half.

    >>> auc([3, 1], [1, 0])
    0.875
    """
    if not pos or not neg:
        return None
    p, n = np.asarray(pos, float)[:, None], np.asarray(neg, float)[None, :]
    return float(np.mean((p > n) + 0.5 * (p == n)))


def cluster_weights(n_clusters: int, n_boot: int = N_BOOT, seed: int = SEED
                    ) -> NDArray[np.float64]:
    """(n_boot, n_clusters): how often each cluster is drawn in each resample.

    Built from the shared resampling indices of lab/stats.py, so every metric of
    one group is computed on the same resampled tasks.
    """
    idx = resample_indices(n_clusters, n_boot, seed)
    flat = (idx + np.arange(n_boot, dtype=np.int64)[:, None] * n_clusters).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(
        n_boot, n_clusters).astype(np.float64)


def _interval(boots: NDArray[np.float64], point: float | None) -> dict[str, float | None]:
    ok = boots[np.isfinite(boots)]
    if point is None or ok.size == 0:
        return {"point": point, "low": None, "high": None}
    return {"point": point, "low": float(np.quantile(ok, 0.025)),
            "high": float(np.quantile(ok, 0.975))}


def _boot_auc(pos_w: NDArray[np.float64], neg_w: NDArray[np.float64],
              pos: NDArray[np.float64], neg: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weighted AUC per resample: conversation weights are their task's draw counts."""
    k = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    num = np.einsum("bi,ij,bj->b", pos_w, k, neg_w, optimize=True)
    den = pos_w.sum(axis=1) * neg_w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def turn_metrics(turns: Sequence[ScoredTurn], gold: Callable[[ScoredTurn], str | None],
                 n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """P/R/F1, decided F1, clean flag rate and flag-all F1 on the turns `gold` labels."""
    lab = [(t, g) for t in turns for g in [gold(t)] if g in ("failure", "clean")]
    tasks = sorted({t.task for t, _ in lab})
    tix = {k: i for i, k in enumerate(tasks)}
    # per-task counts: tp fp fn tn, and the same on decided turns, undecided
    c = np.zeros((len(tasks), 9))
    for t, g in lab:
        f, p, und = g == "failure", t.verdict == "failure", t.verdict == "undecided"
        col = (0 if p else 2) if f else (1 if p else 3)
        c[tix[t.task], col] += 1
        if not und:
            c[tix[t.task], 4 + col] += 1
        c[tix[t.task], 8] += und
    s = c.sum(axis=0)
    tp, fp, fn, tn = s[:4]
    dtp, dfp, dfn, _ = s[4:8]
    fail, clean = tp + fn, fp + tn
    out: dict[str, Any] = {
        "labelled": int(fail + clean), "failures": int(fail), "clean": int(clean),
        "tasks": len(tasks), "tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn),
        "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, fail),
        "undecided_rate": _ratio(s[8], fail + clean),
        # F1 of a failure class with no failures is undefined, not 0
        "f1_decided": _f1(dtp, dfp, dfn) if dtp + dfn else None,
        "decided": int(s[4:8].sum()),
    }
    if not lab:
        out.update(f1=None, clean_flag_rate=None, flag_all_f1=None)
        return out
    w = cluster_weights(len(tasks), n_boot, seed)
    b = w @ c
    den = 2 * b[:, 0] + b[:, 1] + b[:, 2]
    bf1 = np.where(den > 0, 2 * b[:, 0] / np.where(den > 0, den, 1), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        bcf = np.where(b[:, 1] + b[:, 3] > 0, b[:, 1] / (b[:, 1] + b[:, 3]), np.nan)
    out["f1"] = _interval(bf1, _f1(tp, fp, fn) if fail else None)
    out["clean_flag_rate"] = _interval(bcf, _ratio(fp, clean))
    out["flag_all_f1"] = _f1(fail, clean, 0) if fail else None
    return out


def _failed_by_reward(conversation: str, ts: Sequence[ScoredTurn]) -> bool | None:
    return None if ts[0].reward is None else ts[0].reward == 0


def conversation_metrics(turns: Sequence[ScoredTurn], n_boot: int = N_BOOT, seed: int = SEED,
                         failed: Callable[[str, Sequence[ScoredTurn]], bool | None]
                         = _failed_by_reward) -> dict[str, Any]:
    """AUCs for failed conversations: flagged-turn count, length, any flag, conversation
    verdict. A conversation fails when `failed` says so (default: reward 0); None leaves
    it out."""
    convs: dict[str, list[ScoredTurn]] = {}
    for t in turns:
        convs.setdefault(t.conversation, []).append(t)
    rows = []
    for conv, ts in convs.items():
        f = failed(conv, ts)
        if f is not None:
            fails = sum(t.verdict == "failure" for t in ts)
            # the conversation verdict's order: a failure by its failing turns (>= 1),
            # then undecided (0.5), then acceptable (0)
            verdict = fails + 0.5 * (conversation_outcome(t.verdict for t in ts)
                                     == "undecided")
            rows.append((ts[0].task, f, fails, len(ts), verdict))
    out: dict[str, Any] = {"conversations": len(rows),
                           "failed": sum(1 for r in rows if r[1])}
    tasks = sorted({r[0] for r in rows})
    tix = {k: i for i, k in enumerate(tasks)}
    w = cluster_weights(len(tasks), n_boot, seed) if tasks else np.zeros((n_boot, 0))
    scores = {"auc_flagged_turns": [float(r[2]) for r in rows],
              "auc_length": [float(r[3]) for r in rows],
              "auc_any_flag": [float(r[2] > 0) for r in rows],
              "auc_conversation_verdict": [float(r[4]) for r in rows]}
    posm = np.array([r[1] for r in rows], dtype=bool)
    cw = w[:, [tix[r[0]] for r in rows]] if rows else np.zeros((n_boot, 0))
    for name, sc in scores.items():
        arr = np.asarray(sc, dtype=np.float64)
        point = auc(arr[posm].tolist(), arr[~posm].tolist())
        boots = (_boot_auc(cw[:, posm], cw[:, ~posm], arr[posm], arr[~posm])
                 if point is not None else np.array([np.nan]))
        out[name] = _interval(boots, point)
    return out


# ---------------------------------------------------------------------------------------------
# the audit


def read_audit(path: Path) -> list[dict[str, Any]]:
    """Audit rows `{file, dialogue_id, turn_id, gold, reader, agrees, reason}`, checked."""
    rows = _read_jsonl(path)
    for n, r in enumerate(rows, 1):
        for k in ("file", "dialogue_id", "turn_id", "gold", "reader", "reason"):
            if k not in r:
                raise InputError(path, f"missing field {k!r}", line=n, field=k)
        if r["reader"] not in READER_LABELS:
            raise InputError(path, f"reader label must be one of {', '.join(READER_LABELS)}",
                             line=n, field="reader")
    return rows


def audit_summary(rows: Sequence[Mapping[str, Any]], task_of: Mapping[str, str],
                  n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """The label error rate: readable audited turns whose reader label differs from gold."""
    readable = [r for r in rows if r["reader"] != "cant_tell"]
    tasks = sorted({task_of.get(_akey(r), _akey(r)) for r in readable})
    tix = {k: i for i, k in enumerate(tasks)}
    c = np.zeros((len(tasks), 2))
    for r in readable:
        i = tix[task_of.get(_akey(r), _akey(r))]
        c[i, 0] += r["reader"] != r["gold"]
        c[i, 1] += 1
    by: dict[str, dict[str, int]] = {}
    for r in rows:
        d = by.setdefault(r["gold"], {"n": 0, "disagree": 0, "cant_tell": 0})
        d["n"] += 1
        d["cant_tell"] += r["reader"] == "cant_tell"
        d["disagree"] += r["reader"] not in ("cant_tell", r["gold"])
    err = float(c[:, 0].sum())
    n = float(c[:, 1].sum())
    out: dict[str, Any] = {"audited": len(rows), "readable": int(n),
                           "cant_tell": len(rows) - int(n), "by_gold_label": by}
    if n:
        b = cluster_weights(len(tasks), n_boot, seed) @ c
        with np.errstate(invalid="ignore", divide="ignore"):
            boots = np.where(b[:, 1] > 0, b[:, 0] / b[:, 1], np.nan)
        out["label_error_rate"] = _interval(boots, err / n)
    else:
        out["label_error_rate"] = _interval(np.array([np.nan]), None)
    return out


def read_conversation_audit(path: Path) -> list[dict[str, Any]]:
    """Conversation audit rows `{file, dialogue_id, reader, reason}` (and `batch`, the
    reading round, 1 when absent): a reader's blind label of the whole conversation (did
    the agent do anything wrong?), checked."""
    rows = _read_jsonl(path)
    for n, r in enumerate(rows, 1):
        for k in ("file", "dialogue_id", "reader", "reason"):
            if k not in r:
                raise InputError(path, f"missing field {k!r}", line=n, field=k)
        if r["reader"] not in CONVERSATION_LABELS:
            raise InputError(path, "reader label must be one of "
                             f"{', '.join(CONVERSATION_LABELS)}", line=n, field="reader")
    return rows


def conversation_audit(turns: Sequence[ScoredTurn], rows: Sequence[Mapping[str, Any]],
                       n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """The conversation AUCs on the blindly read conversations, with the reader's label as
    the truth and, on the same conversations, with reward 0; and how often reward and
    reader disagree (a reward-0 conversation the reader finds no fault in, or the reverse)."""
    reader = {f"{r['file']}/{r['dialogue_id']}": r["reader"] for r in rows}
    mine = [t for t in turns if reader.get(t.conversation) in ("failure", "clean")]
    missing = sorted(set(reader) - {t.conversation for t in turns})
    by_reader = conversation_metrics(mine, n_boot, seed,
                                     lambda c, ts: reader[c] == "failure")
    by_reward = conversation_metrics(mine, n_boot, seed)
    pairs: Counter[tuple[str, bool]] = Counter()  # (reader label, reward 0)
    seen: set[str] = set()
    for t in mine:
        if t.conversation not in seen and t.reward is not None:
            seen.add(t.conversation)
            pairs[(reader[t.conversation], t.reward == 0)] += 1
    agree = pairs[("failure", True)] + pairs[("clean", False)]
    out = {"read": len(rows), "cant_tell": sum(1 for r in rows if r["reader"] == "cant_tell"),
           "not_in_slices": missing, "reader": by_reader, "reward": by_reward,
           "reader_failure_reward_ok": pairs[("failure", False)],
           "reader_clean_reward_failed": pairs[("clean", True)],
           "reward_agreement": _ratio(agree, sum(pairs.values()))}
    batches = sorted({int(r.get("batch", 1)) for r in rows})
    if len(batches) > 1:  # each reading round on its own, beside all of them together
        out["batches"] = {
            b: conversation_audit(turns, [r for r in rows if int(r.get("batch", 1)) == b],
                                  n_boot, seed)
            for b in batches}
    return out


def criterion_table(turns: Sequence[ScoredTurn], audit: Sequence[Mapping[str, Any]] = ()
                    ) -> list[dict[str, Any]]:
    """Per criterion kind: the turns it fired on, how many of them the turn audit's reader
    calls failure / clean, how many are in reward-0 conversations, the turns it alone
    flagged, and the turns it abstained on; most fired first. What a spec author reads to
    see which rules earn their keep."""
    reader = {_akey(r): r["reader"] for r in audit}
    rows: dict[str, dict[str, Any]] = {}

    def row(kind: str) -> dict[str, Any]:
        return rows.setdefault(kind, {"kind": kind, "fired": 0, "reader_failure": 0,
                                      "reader_clean": 0, "reward_0": 0, "alone": 0,
                                      "abstained": 0})
    for t in turns:
        said = reader.get(f"{t.file}/{t.key}")
        for kind in t.fired:
            r = row(kind)
            r["fired"] += 1
            r["reader_failure"] += said == "failure"
            r["reader_clean"] += said == "clean"
            r["reward_0"] += t.reward == 0
            r["alone"] += len(t.fired) == 1
        for kind in t.abstained:
            row(kind)["abstained"] += 1
    return sorted(rows.values(), key=lambda r: (-r["fired"], -r["abstained"], r["kind"]))


def _akey(r: Mapping[str, Any]) -> str:
    return f"{r['file']}/{r['dialogue_id']}:{r['turn_id']}"


# ---------------------------------------------------------------------------------------------
# everything


def score_tool_agents(turns: Sequence[ScoredTurn], audit: Sequence[Mapping[str, Any]] = (),
                      n_boot: int = N_BOOT, seed: int = SEED,
                      conversations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Per file, per domain and overall; the audited subset and the audit's error rate;
    the conversation AUCs on the blindly read conversations."""
    groups: dict[str, list[ScoredTurn]] = {"overall": list(turns)}
    for t in turns:
        groups.setdefault(f"domain:{t.domain}", []).append(t)
    for t in turns:
        groups.setdefault(f"file:{t.file}", []).append(t)
    res: dict[str, Any] = {"groups": {}}
    for name, ts in groups.items():
        res["groups"][name] = {**turn_metrics(ts, lambda t: t.label, n_boot, seed),
                               **conversation_metrics(ts, n_boot, seed)}
    if audit:
        reader = {_akey(r): r["reader"] for r in audit}
        mine = [t for t in turns if f"{t.file}/{t.key}" in reader]
        audited_gold = {_akey(r): r["gold"] for r in audit}
        stale = [f"{t.file}/{t.key}" for t in mine if audited_gold[f"{t.file}/{t.key}"] != t.label]
        if stale:  # an audit read against other labels must not be reused silently
            raise ValueError(f"{len(stale)} audited turns have another gold label in the "
                             f"slices than in the audit (first: {stale[0]}); re-audit them")
        sub: dict[str, Any] = {}
        for name, ts in (("overall", mine), *sorted(
                (f"domain:{d}", [t for t in mine if t.domain == d])
                for d in {t.domain for t in mine})):
            sub[name] = {
                "reader": turn_metrics(ts, lambda t: reader[f"{t.file}/{t.key}"], n_boot,
                                       seed),
                "gold": turn_metrics([t for t in ts
                                      if reader[f"{t.file}/{t.key}"] != "cant_tell"],
                                     lambda t: t.label, n_boot, seed),
            }
        res["audited"] = sub
        res["audit"] = audit_summary(audit, {f"{t.file}/{t.key}": t.task for t in turns},
                                     n_boot, seed)
    if conversations:
        res["conversation_audit"] = conversation_audit(turns, conversations, n_boot, seed)
    res["criteria"] = criterion_table(turns, audit)
    return res


def _f(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, dict):
        if x["point"] is None:
            return "–"
        if x["low"] is None:
            return f"{x['point']:.2f}"
        return f"{x['point']:.2f} [{x['low']:.2f}, {x['high']:.2f}]"
    return f"{x:.2f}"


def markdown(res: Mapping[str, Any]) -> str:
    """The tables docs/results-tool-agents.md shows."""
    head = ("| group | conv. (failed) | labelled (fail/clean) | P | R | F1 [95 % CI] | "
            "F1 decided | undecided | clean flagged [CI] | flag-all F1 | "
            "AUC flagged turns [CI] | AUC length | AUC any flag | AUC conv. verdict [CI] |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = [head]
    for name, g in res["groups"].items():
        rows.append(
            f"| {name} | {g['conversations']} ({g['failed']}) | {g['labelled']} "
            f"({g['failures']}/{g['clean']}) | {_f(g['precision'])} | {_f(g['recall'])} | "
            f"{_f(g['f1'])} | {_f(g['f1_decided'])} | {_f(g['undecided_rate'])} | "
            f"{_f(g['clean_flag_rate'])} | {_f(g['flag_all_f1'])} | "
            f"{_f(g['auc_flagged_turns'])} | {_f(g['auc_length'])} | "
            f"{_f(g['auc_any_flag'])} | {_f(g['auc_conversation_verdict'])} |")
    text = "\n".join(rows) + "\n"
    if "audited" in res:
        sub = ["", "Audited subset (reader label as gold; `gold` = the gold-derived labels of "
               "the same readable turns):", "",
               "| group | labels | labelled (fail/clean) | P | R | F1 [95 % CI] | F1 decided | "
               "clean flagged [CI] | flag-all F1 |", "|---|---|---|---|---|---|---|---|---|"]
        for name, both in res["audited"].items():
            for which in ("reader", "gold"):
                g = both[which]
                sub.append(f"| {name} | {which} | {g['labelled']} ({g['failures']}/"
                           f"{g['clean']}) | {_f(g['precision'])} | {_f(g['recall'])} | "
                           f"{_f(g['f1'])} | {_f(g['f1_decided'])} | "
                           f"{_f(g['clean_flag_rate'])} | {_f(g['flag_all_f1'])} |")
        a = res["audit"]
        strata = "; ".join(f"gold {k}: {v['disagree']} of {v['n']} disagree"
                           for k, v in sorted(a["by_gold_label"].items()))
        sub += ["", f"Label audit: {a['audited']} turns read, {a['cant_tell']} can't tell; "
                f"label error rate on the {a['readable']} readable turns "
                f"{_f(a['label_error_rate'])} (task bootstrap); {strata}."]
        text += "\n".join(sub) + "\n"
    if "conversation_audit" in res:
        c = res["conversation_audit"]
        cut = ["", f"Conversations read blind ({c['read']}, {c['cant_tell']} can't tell; "
               f"reward agrees with the reader on {_f(c['reward_agreement'])}: "
               f"{c['reader_failure_reward_ok']} reward-1 conversations the reader faults, "
               f"{c['reader_clean_reward_failed']} reward-0 ones the reader finds no fault "
               "in):", "",
               "| truth | conv. (failed) | AUC flagged turns [CI] | AUC length | "
               "AUC any flag | AUC conv. verdict [CI] |", "|---|---|---|---|---|---|"]
        parts = [("", c), *((f"batch {b}: ", cb) for b, cb in c.get("batches", {}).items())]
        for label, part in parts:
            for which in ("reader", "reward"):
                g = part[which]
                cut.append(f"| {label}{which} | {g['conversations']} ({g['failed']}) | "
                           f"{_f(g['auc_flagged_turns'])} | {_f(g['auc_length'])} | "
                           f"{_f(g['auc_any_flag'])} | {_f(g['auc_conversation_verdict'])} |")
        text += "\n".join(cut) + "\n"
    if res.get("criteria"):
        crit = ["", "Criteria by kind (turns; `reader`: the turn audit's label of those "
                "turns; `alone`: turns no other criterion flagged):", "",
                "| criterion | fired | reader failure | reader clean | in reward-0 conv. | "
                "alone | abstained |", "|---|---|---|---|---|---|---|"]
        crit += [f"| `{r['kind']}` | {r['fired']} | {r['reader_failure']} | "
                 f"{r['reader_clean']} | {r['reward_0']} | {r['alone']} | {r['abstained']} |"
                 for r in res["criteria"]]
        text += "\n".join(crit) + "\n"
    return text
