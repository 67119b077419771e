"""docs/logs.md, "A tool agent in two commands": the two commands, run exactly as the
page writes them, on the page's inputs (τ-bench's airline tool schemas from the data
directory, skipped when absent, and the real GPT-4o chat log fixture), and the output
the page pastes is what they print."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.contracts.spec import load_spec
from sage_tod.importers import import_file

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "logs.md"
LOG = ROOT / "tests" / "fixtures" / "logs" / "openai-chat-gpt-4o.jsonl"
TOOLS = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents" / "domains" \
    / "airline" / "tools-openai.json"


def _block(tag: str) -> list[str]:
    (block,) = re.findall(rf"```\w+ {tag}\n(.*?)```", DOC.read_text(), re.S)
    return [ln.strip() for ln in block.strip().splitlines()]


def _pasted_counts(lines: list[str]) -> dict[str, int]:
    out = {}
    for ln in lines:
        m = re.match(r"│ (failure|acceptable|undecided) +│ +(\d+) │", ln)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def test_two_commands_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not TOOLS.is_file():
        pytest.skip(f"{TOOLS} not present (set SAGE_TOD_DATA)")
    commands = [shlex.split(c) for c in _block("two-commands")]
    assert [c[:3] for c in commands] == [["sage-tod", "specs", "from-tools"],
                                         ["sage-tod", "evaluate", "--format"]]
    shutil.copy(TOOLS, tmp_path / "tools.json")
    shutil.copy(LOG, tmp_path / "log.jsonl")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, commands[0][1:])
    assert first.exit_code == 0, first.output
    assert [ln.strip() for ln in first.output.strip().splitlines()] == \
        _block("from-tools-output"), "docs/logs.md: the pasted from-tools output is stale"
    spec = load_spec(tmp_path / "spec.yaml")
    second = runner.invoke(app, commands[1][1:])
    assert second.exit_code == 0, second.output
    verdicts = [d for d in map(json.loads, (tmp_path / "v.jsonl").read_text().splitlines())
                if "dialogue_id" in d]  # the first line is the run header
    # one verdict per turn of the log, each in a workflow the first command wrote
    turns = import_file("openai-chat", tmp_path / "log.jsonl", spec).records(spec).records
    assert [(v["dialogue_id"], v["turn_id"]) for v in verdicts] == [
        (r.turn.dialogue_id, r.turn.turn_id) for r in turns]
    assert {v["workflow"] for v in verdicts} == {"cancel_reservation"}  # the call it makes
    pasted = _block("evaluate-output")
    got = [ln.strip() for ln in second.output.strip().splitlines()]
    for line in pasted[:3]:  # the import summary and the verdict count (a missing S2
        assert line in got, f"docs/logs.md: stale pasted line {line!r}"  # adds a note)
    counts = {k: sum(v["verdict"] == k for v in verdicts)
              for k in ("failure", "acceptable", "undecided")}
    assert _pasted_counts(pasted) == counts == _pasted_counts(got), \
        "docs/logs.md: the pasted verdict counts are stale; rerun the two commands"


def test_a_structured_output_agent_is_read_as_the_words_it_says() -> None:
    """toolorchestra (τ²-bench leaderboard, airline, task 41; MIT) answers in JSON: its
    words to the user in `message`, a question in `clarification_question`. The importer
    reads such a message as its words first, then each other field as `key: value`, so
    the readers see sentences and line breaks instead of JSON escapes; any other message,
    braces inside included, is left as it is."""
    from sage_tod.importers.chat import prose

    said = ('{\n  "message": "I can get the exact total. Please provide: 1) your user id, '
            'and 2) either the reservation id for your upcoming flight.",\n  '
            '"clarification_question": "Do you want the total number of free checked bags '
            'included with your reservation?"\n}')
    assert prose(said).splitlines() == [
        "I can get the exact total. Please provide: 1) your user id, and 2) either the "
        "reservation id for your upcoming flight.",
        "clarification_question: Do you want the total number of free checked bags "
        "included with your reservation?"]
    nested = '{"response": "Done.", "details": {"refund": 38, "to": ["card"]}}'
    assert prose(nested) == "Done.\ndetails.refund: 38\ndetails.to: card"
    for text in ("Your total is {see below}", '{"not": json', "[1, 2]", "{}"):
        assert prose(text) == text
