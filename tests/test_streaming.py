"""`evaluate --format` and `evaluate --route` stream: the verdicts of the whole-list path,
in memory that does not grow with the log.

The whole-list path is what `evaluate` did before: `import_file(...).records(spec)` (every
turn of the log held), and every turn routed in one call of `routing.router.route`. On
every real log fixture the streamed import gives the same turn objects and the same
verdicts, with the large-document reader forced on (`STREAM_BYTES` 0) as well; routing
in chunks gives the routes and verdicts of one call, resumes after an interruption to the
file an uninterrupted run writes, and reads no further ahead than a chunk. The memory
test runs the CLI on a τ²-bench results file of 40 and of 1,000 simulations
(the whole-list path grew 56 MB between them, this one 2 MB).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from golden_sources import LOG_CASES, LOGS
from sage_tod import demo
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import TurnRecord, iter_turns
from sage_tod.contracts.verdicts import iter_verdicts
from sage_tod.evaluation.run import RunSettings, evaluate_records, make_evaluator
from sage_tod.importers import records as records_mod
from sage_tod.importers import tau_bench
from sage_tod.importers.base import STREAMS, WHOLE, import_file, stream_file
from sage_tod.pipeline import files as pipeline
from sage_tod.pipeline.files import EvaluateRequest, evaluate_files
from sage_tod.routing import router

S1 = RunSettings(config="s1", reproducible=True)
IDS = [name for _, name, _ in LOG_CASES]


def _dumps(turns: Sequence[dict[str, Any]]) -> list[str]:
    return [json.dumps(t, sort_keys=True, ensure_ascii=False) for t in turns]


def test_every_format_is_streamed_or_named_as_read_whole() -> None:
    assert {fmt for fmt, _, _ in LOG_CASES} - {"multiwoz"} <= set(STREAMS)
    assert set(WHOLE) == {"multiwoz", "mwzeval"} and not set(WHOLE) & set(STREAMS)


@pytest.mark.parametrize("large", [False, True], ids=["as-is", "streamed-reader"])
@pytest.mark.parametrize(("fmt", "name", "spec_path"), LOG_CASES, ids=IDS)
def test_a_streamed_log_gives_the_turns_and_counts_of_import_file(
        fmt: str, name: str, spec_path: Path, large: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if large:  # every JSON list is read item by item, as a log over 4 MiB is
        monkeypatch.setattr(records_mod, "STREAM_BYTES", 0)
        monkeypatch.setattr(tau_bench, "STREAM_BYTES", 0)
    spec = load_spec(spec_path)
    whole = import_file(fmt, LOGS / name, spec)
    whole_records = whole.records(spec).records
    res, turns = stream_file(fmt, LOGS / name, spec)
    assert res.n_turns == 0  # nothing is read before the turns are asked for
    got: list[dict[str, Any]] = []

    def kept() -> Iterator[dict[str, Any]]:
        for t in turns:
            got.append(t)
            yield t

    streamed = list(res.iter_records(spec, kept()))
    assert whole.n_turns > 0
    assert _dumps(got) == _dumps(whole.turns)
    assert [r.turn for r in streamed] == [r.turn for r in whole_records]
    assert [(r.gold, r.meta, r.line) for r in streamed] == [
        (r.gold, r.meta, r.line) for r in whole_records]
    assert res.to_dict() == whole.to_dict() and res.summary() == whole.summary()
    assert res.turns == [] and res.streamed == whole.n_turns  # handed out, not kept


@pytest.mark.parametrize(("fmt", "name", "spec_path"), LOG_CASES, ids=IDS)
def test_evaluate_format_gives_the_whole_list_verdicts(fmt: str, name: str, spec_path: Path,
                                                       tmp_path: Path) -> None:
    spec = load_spec(spec_path)
    whole = import_file(fmt, LOGS / name, spec)
    ev = make_evaluator(spec, S1)
    expected = [v.to_dict() for v in evaluate_records(ev, whole.records(spec).records, S1)]
    out = tmp_path / "v.jsonl"
    run = evaluate_files(EvaluateRequest(spec=spec_path, turns=LOGS / name, out=out,
                                         settings=S1, log_format=fmt))
    assert [v.to_dict() for v in iter_verdicts(out)] == expected
    assert run.written == len(expected) > 0
    assert run.imported is not None and run.imported.to_dict() == whole.to_dict()


def test_a_log_refused_at_its_first_turn_leaves_no_output(tmp_path: Path) -> None:
    """The first turn is read before --out is opened, as the whole-list path read all."""
    from sage_tod.contracts.errors import InputError

    out = tmp_path / "v.jsonl"
    tau2 = LOGS / "tau2-bench-airline-simulation.json"
    with pytest.raises(InputError, match="looks like a τ²-bench results file"):
        evaluate_files(EvaluateRequest(spec=LOG_CASES[0][2], turns=tau2, out=out,
                                       settings=S1, log_format="openai-chat"))
    assert not out.exists()


# ------------------------------------------------------------------------------- routing


class Words:
    """A deterministic encoder (hashed word counts) that records each call's size."""

    sizes: ClassVar[list[int]] = []

    def __init__(self, *_: object, **__: object) -> None:
        pass

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        Words.sizes.append(len(texts))
        out = []
        for t in texts:
            v = [0.0] * 64
            for w in t.lower().split():
                v[sum(map(ord, w)) % 64] += 1.0
            out.append(v)
        return out


@pytest.fixture
def words(monkeypatch: pytest.MonkeyPatch) -> type[Words]:
    Words.sizes = []
    monkeypatch.setattr(router, "SentenceTransformerEncoder", Words)
    monkeypatch.setattr(pipeline, "ROUTE_CHUNK", 7)
    return Words


def _whole_list_routed(spec_path: Path) -> list[dict[str, Any]]:
    """What `evaluate --route mpnet` wrote before: every turn routed in one call."""
    spec = load_spec(spec_path)
    recs = list(iter_turns(demo.turns_path(), spec))
    ids = router.route(spec, [r.turn for r in recs], "mpnet", encoder=Words())
    routed = [TurnRecord(r.turn.model_copy(update={"workflow": w}), r.gold, r.meta, r.line)
              for r, w in zip(recs, ids, strict=True)]
    assert len(set(ids)) > 1  # the router does choose: the check is not vacuous
    ev = make_evaluator(spec, S1)
    return [v.to_dict() for v in evaluate_records(ev, routed, S1)]


def test_routing_in_chunks_gives_the_whole_list_verdicts(words: type[Words],
                                                         tmp_path: Path) -> None:
    spec_path = demo.spec_path()
    expected = _whole_list_routed(spec_path)
    words.sizes = []
    out = tmp_path / "v.jsonl"
    evaluate_files(EvaluateRequest(spec=spec_path, turns=demo.turns_path(), out=out,
                                   settings=S1, route="mpnet"))
    assert [v.to_dict() for v in iter_verdicts(out)] == expected
    n_wf = len(load_spec(spec_path).workflows)
    # the candidates once, then the 59 turns 7 at a time: one router for the whole run
    assert words.sizes == [n_wf, *[7] * 8, 3]


class Stop(Exception):
    pass


def test_a_routed_run_stopped_midway_resumes_to_the_uninterrupted_file(
        words: type[Words], tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl"
    req = EvaluateRequest(spec=demo.spec_path(), turns=demo.turns_path(), out=whole,
                          settings=S1, route="mpnet")
    evaluate_files(req)
    seen: list[str] = []

    def stop_after_20(v: Any) -> None:
        seen.append(v.key)
        if len(seen) == 20:
            raise Stop

    with pytest.raises(Stop):
        evaluate_files(EvaluateRequest(**{**req.__dict__, "out": cut}),
                       on_verdict=stop_after_20)
    assert len(cut.read_text().splitlines()) == 21  # the header and 20 verdicts, kept
    run = evaluate_files(EvaluateRequest(**{**req.__dict__, "out": cut, "resume": True}))
    assert run.resumed == 20 and run.written == 39
    assert cut.read_bytes() == whole.read_bytes()


def test_routing_reads_no_further_ahead_than_a_chunk(words: type[Words]) -> None:
    spec = load_spec(demo.spec_path())
    pulled: list[str] = []

    def records() -> Iterator[TurnRecord]:
        for r in iter_turns(demo.turns_path(), spec):
            pulled.append(r.turn.key)
            yield r

    route = pipeline._router(spec, "mpnet", {}, chunk=7)
    settings = RunSettings(config="s1", batch_size=5)
    verdicts = evaluate_records(make_evaluator(spec, settings), records(), settings,
                                route=route)
    next(verdicts)
    assert len(pulled) == 7  # one chunk routed, the first batch of 5 evaluated
    assert sum(1 for _ in verdicts) == 58


# -------------------------------------------------------------------------------- memory

SRC = str(Path(__file__).resolve().parents[1] / "src")
CHILD = """
import sys
from sage_tod.cli import main
def peak_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
try:
    main()
finally:
    print("MAXRSS_KB", peak_kb(), file=sys.stderr)
"""


def _tau2_results(path: Path, copies: int) -> None:
    """The τ² fixture's simulation `copies` times (other trials), as one results file."""
    doc = json.loads((LOGS / "tau2-bench-airline-simulation.json").read_text())
    (sim,) = doc["simulations"]
    with path.open("w") as fh:
        fh.write('{"info": {}, "simulations": [')
        for k in range(copies):
            fh.write(("," if k else "") + json.dumps({**sim, "trial": k, "id": f"s{k}"}))
        fh.write("]}")


def _peak_mb(tmp: Path, copies: int) -> float:
    log, out = tmp / f"tau2-{copies}.json", tmp / f"v{copies}.jsonl"
    _tau2_results(log, copies)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, "evaluate", "--spec", str(LOG_CASES[0][2]),
         "--turns", str(log), "--format", "tau-bench", "--out", str(out), "--config", "s1",
         "--quiet"],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "SAGE_TOD_NLI_CACHE": "off"},
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    kb = next(int(line.split()[1]) for line in r.stderr.splitlines()
              if line.startswith("MAXRSS_KB"))
    return kb / 1024


def test_evaluate_format_memory_does_not_grow_with_the_log(tmp_path: Path) -> None:
    small, large = _peak_mb(tmp_path, 40), _peak_mb(tmp_path, 1_000)
    assert large - small < 15, (small, large)
