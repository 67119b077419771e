"""Dual-control logs: the user's own tool calls are the user's side of a turn.

Real log (sierra-research/tau2-bench, MIT; $SAGE_TOD_DATA/tool-agents/SOURCES.md):
tau2-telecom-gpt-4.1.json, task `[service_issue]break_apn_settings|lock_sim_card_pin
[PERSONA:None]`. The user checks their phone (`check_status_bar`, then `check_sim_status`,
messages with `requestor: user` and empty content, each answered by a tool message) and
then says what they saw. Those calls used to open turns with nothing in them; now each
is carried, with its result, by the turn of the words it led to (`user_tool_calls`), and
the agent's side (`tool_calls`, the verifiers' reads) never holds them. The edge cases
are this record cut or edited at test time, not made-up messages.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sage_tod import Evaluator
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import TurnRecord, as_turn, with_history
from sage_tod.importers.tau_bench import read as read_tau
from sage_tod.outputs.render import explain
from sage_tod.outputs.report_html import render_report

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "tau2-telecom" / "spec.yaml"
GPT41 = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents" \
    / "tau2-telecom-gpt-4.1.json"
TASK = "[service_issue]break_apn_settings|lock_sim_card_pin[PERSONA:None]"
pytestmark = pytest.mark.skipif(not GPT41.exists(),
                                reason="tool-agents data absent ($SAGE_TOD_DATA)")


def _simulation() -> dict[str, Any]:
    doc = json.loads(GPT41.read_text())
    return copy.deepcopy(next(s for s in doc["simulations"] if s["task_id"] == TASK))


def _turns(sim: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"simulations": [sim], "tasks": [], "info": {}}))
    return read_tau(p, load_spec(SPEC)).turns


def _user_call_at(sim: dict[str, Any], name: str) -> int:
    return next(i for i, m in enumerate(sim["messages"]) if m["role"] == "user"
                and any(c["name"] == name for c in m.get("tool_calls") or []))


def test_user_calls_ride_with_the_words_they_led_to(tmp_path: Path) -> None:
    sim = _simulation()
    spoken = [m for m in sim["messages"] if m["role"] == "user"
              and (m.get("content") or "").strip()]
    turns = _turns(sim, tmp_path)
    # one turn per user message with words: no turn made of a device check alone
    assert len(turns) == len(spoken)
    assert all(t["user"].strip() for t in turns)
    seen = next(t for t in turns if t["user"].startswith("I checked my status bar"))
    (call,) = seen["user_tool_calls"]
    assert call["name"] == "check_status_bar"
    assert call["result"].startswith("Status Bar:") and "No Signal" in call["result"]
    # the agent's calls and the state are the agent's alone
    assert all(c["name"] != "check_status_bar" for t in turns for c in t["tool_calls"])
    assert seen["state_after"] == seen["state_before"]
    # a later turn's history holds the user's calls in the entry of that turn
    later = turns[seen["turn_id"] + 1]
    entry = later["history"][-1]
    assert entry["user"] == seen["user"]
    assert [c["name"] for c in entry["user_tool_calls"]] == ["check_status_bar"]


def test_filled_history_carries_the_users_calls(tmp_path: Path) -> None:
    """A turns file without `history` gets it from the earlier turns, user calls included."""
    spec = load_spec(SPEC)
    turns = _turns(_simulation(), tmp_path)
    bare = [TurnRecord(turn=as_turn({k: v for k, v in t.items()
                                     if k not in ("history", "meta")}, spec), line=n)
            for n, t in enumerate(turns, 1)]
    filled = with_history(bare)
    for t, rec in zip(turns, filled, strict=True):
        # the importer's history opens with the agent's greeting, which is no turn
        given = [[c["name"] for c in h.get("user_tool_calls", [])] for h in t["history"][1:]]
        assert [[c.name for c in h.user_tool_calls] for h in rec.turn.history or ()] == given
    assert any(h.user_tool_calls for h in filled[-1].turn.history or ())


def test_user_who_acts_last_or_without_words(tmp_path: Path) -> None:
    sim = _simulation()
    at = _user_call_at(sim, "check_sim_status")
    # the log stops right after the user's check and its result: the last turn holds it,
    # after the check that led to its own words (no turn without the agent's reply)
    cut = {**sim, "messages": sim["messages"][:at + 2]}
    last = _turns(cut, tmp_path)[-1]
    assert last["user"].startswith("I checked my status bar")
    assert [c["name"] for c in last["user_tool_calls"]] == ["check_status_bar",
                                                             "check_sim_status"]
    assert last["last"] is True
    # the user checks, then the agent speaks without a word from the user: a turn with an
    # empty u_t that carries the check
    silent = copy.deepcopy(sim)
    del silent["messages"][at + 2]  # "It looks like my SIM card is locked ..."
    turns = _turns(silent, tmp_path)
    quiet = next(t for t in turns if not t["user"])
    assert [c["name"] for c in quiet["user_tool_calls"]] == ["check_sim_status"]
    assert quiet["agent"].startswith("Since your SIM card is locked")


def test_explain_and_report_show_the_users_calls(tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    turns = _turns(_simulation(), tmp_path)
    records = [TurnRecord(turn=as_turn({k: v for k, v in t.items() if k != "meta"}, spec),
                          line=n) for n, t in enumerate(turns, 1)]
    verdicts = list(Evaluator(spec, config="s1").evaluate(records))
    seen = next(i for i, t in enumerate(turns) if t.get("user_tool_calls"))
    console = Console(width=200, record=True)
    console.print(explain(verdicts[seen], records[seen].turn))
    text = console.export_text()
    assert "user call check_status_bar" in text and "No Signal" in text
    page = render_report(verdicts, {r.turn.key: r.turn for r in records})
    assert "the user&#x27;s 1 tool call(s)" in page or "the user's 1 tool call(s)" in page
