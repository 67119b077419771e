"""`sage-tod explain` on a tool agent's turns: the calls of the history and of the turn,
and evidence that points into a call's arguments or result (τ² airline fixture)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from sage_tod import demo
from sage_tod.cli.app import app
from sage_tod.contracts.criteria import Span
from sage_tod.contracts.turns import load_turns_unchecked
from sage_tod.contracts.verdicts import read_verdicts
from sage_tod.outputs.render import explain

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
TAU2_LOG = ROOT / "tests" / "fixtures" / "logs" / "tau2-bench-airline-simulation.json"
AIRLINE_SPEC = ROOT / "examples" / "tau2-airline" / "spec.yaml"


class _ToolSpan(Span):
    """A span as the per-call criteria write it (`call`, `path`; docs/formats.md §3)."""

    source: str  # type: ignore[assignment]
    call: int | None = None
    path: str | None = None


def _evaluated(tmp_path: Path) -> tuple[Path, Path]:
    turns, verdicts = tmp_path / "turns.jsonl", tmp_path / "v.jsonl"
    r = runner.invoke(app, ["import", "tau-bench", str(TAU2_LOG), "--spec", str(AIRLINE_SPEC),
                            "--out", str(turns)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["evaluate", "--spec", str(AIRLINE_SPEC), "--turns", str(turns),
                            "--out", str(verdicts), "--config", "s1", "--quiet"])
    assert r.exit_code == 0, r.output
    return turns, verdicts


def _text(group: object) -> str:
    con = Console(record=True, width=400)
    con.print(group)
    return con.export_text()


def test_explain_shows_calls_and_evidence_in_results(tmp_path: Path) -> None:
    turns, verdicts = _evaluated(tmp_path)
    recs = load_turns_unchecked(turns)
    vs = read_verdicts(verdicts)
    k = next(n for n, rec in enumerate(recs)
             if [c.name for c in rec.turn.tool_calls or ()] == ["cancel_reservation"])
    turn = recs[k].turn
    h = next(n for n, e in enumerate(turn.history or ()) if e.tool_calls)
    lookup = (turn.history or ())[h].tool_calls[0]
    name = lookup.result["passengers"][1]["first_name"]
    ev = _ToolSpan(source="tool_result", index=h, call=0, path="passengers[1].first_name",
                   start=0, end=len(name), text=name)
    bad = _ToolSpan(source="tool_call", index=None, call=5, path="x", start=0, end=1, text="x")
    crit = vs[k].criteria[0].model_copy(update={"evidence": ev, "support": bad})
    text = _text(explain(vs[k].model_copy(update={"criteria": [crit]}), turn))
    lines = text.splitlines()
    args = json.dumps(lookup.arguments)
    assert any(ln.startswith(f"  h[{h}] call {lookup.name} {args} -> {{") for ln in lines)
    own = turn.tool_calls[0] if turn.tool_calls else None
    assert own is not None
    assert any(ln.startswith(f"  call cancel_reservation {json.dumps(own.arguments)} -> ")
               for ln in lines)
    # no empty user line for the greeting entry
    assert not any(ln.rstrip() == "  h[0] user:" for ln in lines)
    assert (f"evidence: tool_result (history[{h}], call 0, passengers.1.first_name) "
            f"[0,{len(name)}]: {lookup.name} result.passengers.1.first_name = {name}") in text
    # a span whose call is not in the turn: said, with its text, not a crash
    assert "support: tool_call (this turn, call 5, x) [0,1]: 'x'" in text
    # the facts a rule read from a record (no path): shown as the verifier picked them,
    # not as the record's first characters
    facts = json.dumps({"reservation_id": lookup.result["reservation_id"],
                        "cabin": lookup.result["cabin"]})
    read = _ToolSpan(source="tool_result", index=h, call=0, start=0, end=len(facts),
                     text=facts)
    crit = vs[k].criteria[0].model_copy(update={"evidence": None, "support": read})
    text = _text(explain(vs[k].model_copy(update={"criteria": [crit]}), turn))
    assert f"{lookup.name} result = {facts}" in text


def test_explain_marks_a_refused_call(tmp_path: Path) -> None:
    turns, verdicts = _evaluated(tmp_path)
    rows = [json.loads(x) for x in turns.read_text().splitlines()]
    rows[-1]["tool_calls"] = [{"name": "cancel_reservation", "arguments": {"reservation_id":
                                                                          "EHGLP3"},
                               "error": True, "result": "Error: reservation already cancelled"}]
    turn = load_turns_unchecked(_write(tmp_path / "t2.jsonl", rows))[-1].turn
    v = read_verdicts(verdicts)[-1]
    text = _text(explain(v, turn))
    assert ('call cancel_reservation {"reservation_id": "EHGLP3"}  ERROR '
            "Error: reservation already cancelled") in text


def _write(p: Path, rows: list[dict[str, object]]) -> Path:
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_explain_cli_on_a_tool_log_and_unchanged_for_plain_turns(tmp_path: Path) -> None:
    turns, verdicts = _evaluated(tmp_path)
    r = runner.invoke(app, ["explain", str(verdicts), "--turns", str(turns), "--spec",
                            str(AIRLINE_SPEC)])
    assert r.exit_code == 0, r.output
    assert "call get_reservation_details" in r.output and "h[2] user:" in r.output
    out = tmp_path / "demo.jsonl"
    r = runner.invoke(app, ["evaluate", "--spec", str(demo.spec_path()), "--turns",
                            str(demo.turns_path()), "--out", str(out), "--config", "s1",
                            "--quiet"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["explain", str(out), "--turns", str(demo.turns_path()), "--spec",
                            str(demo.spec_path())])
    assert r.exit_code == 0 and "FAILURE" in r.output
    assert "h[0]" not in r.output and "call " not in r.output  # no tool calls, no history
