"""The examples in docs/formats.md parse, and the verdict example is what we output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sage_tod.contracts.spec import parse_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.contracts.verdicts import Verdict
from sage_tod.evaluation.evaluator import Evaluator

DOC = Path(__file__).resolve().parents[1] / "docs" / "formats.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```\w+ {kind}\n(.*?)```", DOC.read_text(), re.S)


def test_examples_parse_and_reproduce(tmp_path: Path) -> None:
    import yaml

    specs = [parse_spec(yaml.safe_load(b), "doc") for b in _blocks("spec-example")]
    assert len(specs) == 3 and "taxi_booking" in specs[2].workflows
    hotel = specs[1].workflows["hotel_booking"]
    assert hotel.any_buckets == {0} and not hotel.missing_prereqs("hotel-bookday",
                                                                  {"hotel-name": "acorn"})
    turns_file = tmp_path / "t.jsonl"
    turns_file.write_text("".join(_blocks("turn-example")))
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(_blocks("spec-example")[0])
    from sage_tod.contracts.spec import load_spec

    bundle = load_spec(spec_file)
    recs = load_turns(turns_file, bundle).records
    assert len(recs) == 2 and recs[1].gold is not None
    (doc_verdict,) = [Verdict.model_validate(json.loads(b)) for b in _blocks("verdict-example")]
    got = Evaluator(bundle, "s1").evaluate_turn(recs[1])
    fired = [c for c in got.to_dict()["criteria"] if c["decision"] == "true"]
    doc_fired = doc_verdict.to_dict()["criteria"]
    assert got.verdict == doc_verdict.verdict
    assert doc_fired[0] in fired  # the documented criterion, byte for byte
