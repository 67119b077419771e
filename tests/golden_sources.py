"""Where the golden turns come from, one function per snapshot file.

- `demo.jsonl`: every turn of the packaged demo (src/sage_tod/demo/).
- `fixtures.jsonl`: every turn of the committed fixtures, read as their tests read them:
  the logs of tests/fixtures/logs through the importers (tool-agent logs included), the
  mwzeval excerpts through `read_mwzeval`, the slices the seeded builder makes from
  tests/fixtures/datasets (test_slices.py's small sizes) and the ABCD sample.
- `data-slices.jsonl`, `data-natural.jsonl`: development turns re-created from
  `$SAGE_TOD_DATA` (the seeded slice builder with and without dataset acts; the natural
  slice of two published systems on the mwzeval development dialogues). The files hold
  ids and snapshots, never the corpus text; without the data these parts skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from golden_snapshots import Source, TurnDict, every_nth
from sage_tod import demo
from sage_tod.contracts.spec import load_spec, parse_spec
from sage_tod.importers import import_file
from sage_tod.importers.mwzeval import read_mwzeval
from sage_tod.lab import natural
from sage_tod.lab.datasets import abcd, multiwoz
from sage_tod.lab.slices import BuildConfig, build, strip_acts

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
LOGS = FIXTURES / "logs"
AIRLINE = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"

# (importer, log, spec): the cases of test_importers.py
LOG_CASES: tuple[tuple[str, str, Path], ...] = (
    ("tau-bench", "tau-bench-gpt-4o-airline.json", AIRLINE),
    ("tau-bench", "tau2-bench-airline-simulation.json", AIRLINE),
    ("openai-chat", "openai-chat-gpt-4o.jsonl", AIRLINE),
    ("rasa", "rasa-financial-demo-tracker.json", LOGS / "rasa-financial-demo-spec.yaml"),
    ("sgd", "sgd-dialogue.json", LOGS / "sgd-ridesharing-spec.yaml"),
    ("multiwoz", "multiwoz-dialogue.json", LOGS / "multiwoz-restaurant-spec.yaml"),
)
# test_slices.py's sizes: every slice the fixture corpora can give
FIXTURE_SLICES = BuildConfig(mw_per_domain=2, mw_injected=4, uv_per_domain=1, uv_injected=3,
                             dev_per_domain=1, dev_injected=4, sgd_workflows=3, sgd_turns=6,
                             sgd_max_per_intent=2, sgd_injected=3)
# from the data directory: the whole dev split, a stable third of MW-mixed and a quarter
# of SGD, each with the dataset's acts and text only (`slices build --no-acts`)
DATA_SLICES: dict[str, Callable[[TurnDict], bool] | None] = {
    "dev": None, "mw-mixed": every_nth(3), "sgd": every_nth(4)}
NATURAL_SYSTEMS: tuple[str, ...] = ("damd", "mintl")
MWZEVAL_EXCERPTS: tuple[str, ...] = ("damd", "mintl")
# fixture files that hold no turns (specs, schemas, databases, value lists, notes)
NOT_TURNS: tuple[str, ...] = ("*.md", "*.yaml", "*/db/*", "schema.json", "ontology.json",
                              "kb.json", "*-functions.json")  # tool schemas, not turns


def fixture_turn_files() -> set[str]:
    """The fixture files `fixture_sources` reads turns or dialogues from (relative to
    tests/fixtures), so a test can tell when a new fixture is left out of the snapshot."""
    files = {f"logs/{name}" for _, name, _ in LOG_CASES}
    files |= {f"mwzeval/{s}_excerpt.json" for s in MWZEVAL_EXCERPTS}
    files.add("mwzeval/corpus_test_excerpt.json")
    files |= {"datasets/multiwoz/mwz21_convlab2/val.json.gz", "datasets/abcd/abcd_sample.json"}
    files |= {str(p.relative_to(FIXTURES))
              for p in (FIXTURES / "datasets" / "sgd" / "test").glob("dialogues_*.json*")}
    return files


def _jsonl(path: Path) -> list[TurnDict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def demo_sources() -> list[Source]:
    return [Source("demo", load_spec(demo.spec_path()), _jsonl(demo.turns_path()))]


def _built_slices(out: Path, cfg: BuildConfig, root: Path, names: list[str],
                  prefix: str, picks: dict[str, Callable[[TurnDict], bool] | None] | None = None
                  ) -> list[Source]:
    manifest: dict[str, Any] = build(out, names, cfg, root)
    return [Source(f"{prefix}{name}", load_spec(out / s["spec"]), _jsonl(out / s["file"]),
                   (picks or {}).get(name))
            for name, s in manifest["slices"].items()]


def fixture_sources(tmp: Path) -> list[Source]:
    out: list[Source] = []
    for fmt, name, spec_path in LOG_CASES:
        bundle = load_spec(spec_path)
        out.append(Source(f"logs/{name}", bundle, import_file(fmt, LOGS / name, bundle).turns))
    datasets = FIXTURES / "datasets"
    mw_spec = parse_spec(multiwoz.compile_spec(datasets))
    for system in MWZEVAL_EXCERPTS:
        turns, _ = read_mwzeval(FIXTURES / "mwzeval" / f"{system}_excerpt.json",
                                FIXTURES / "mwzeval" / "corpus_test_excerpt.json", mw_spec)
        out.append(Source(f"mwzeval/{system}", mw_spec, turns))
    out += _built_slices(tmp / "fixture-slices", FIXTURE_SLICES, datasets,
                         ["mw-mixed", "uv-rich", "sgd", "sgd-x", "dev"], "datasets/")
    abcd_turns = list(abcd.iter_turns(abcd.load_conversations(abcd.sample_path(datasets)),
                                      datasets))
    out.append(Source("datasets/abcd-sample", parse_spec(abcd.compile_spec(datasets)),
                      abcd_turns))
    return out


def data_slice_sources(tmp: Path, root: Path) -> list[Source]:
    """Raises `DataMissing` (an InputError naming the files) when the data lacks them.

    Built once, with acts; the text-only form of each turn is `strip_acts` of it, which is
    what `slices build --no-acts` writes (one build instead of two: the corpora's JSON
    decoding is most of the test's time)."""
    out: list[Source] = []
    for s in _built_slices(tmp / "data-slices", BuildConfig(), root, list(DATA_SLICES), "",
                           picks=DATA_SLICES):
        out.append(s)
        out.append(Source(f"{s.name}/no-acts", s.spec, [strip_acts(t) for t in s.turns],
                          s.pick))
    return out


def _natural_pick(t: TurnDict) -> bool:
    """Raw failures more often than acceptable turns (1 in 3 against 1 in 25)."""
    return every_nth(3 if t["gold"]["label"] == "failure" else 25)(t)


def natural_sources(root: Path) -> list[Source]:
    spec = parse_spec(multiwoz.compile_spec(root))
    return [Source(f"natural/{system}", spec,
                   natural.label_system(system, natural.system_turns(system, spec, root)),
                   _natural_pick)
            for system in NATURAL_SYSTEMS]
