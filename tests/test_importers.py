"""Importers on real log excerpts (tests/fixtures/logs/README.md): turns that
evaluate accepts, the state read from tool calls and slot events, the CLI, and
the error messages for bad logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sage_tod import Evaluator, InputError, load_spec, read_header
from sage_tod.cli.app import app
from sage_tod.contracts.spec import parse_spec
from sage_tod.importers import UnknownFormat, available_formats, import_file

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
AIRLINE = ROOT / "examples" / "tau-bench-airline" / "spec.yaml"
runner = CliRunner()

CASES = [
    ("tau-bench", "tau-bench-gpt-4o-airline.json", AIRLINE),
    ("tau-bench", "tau2-bench-airline-simulation.json", AIRLINE),
    ("openai-chat", "openai-chat-gpt-4o.jsonl", AIRLINE),
    ("rasa", "rasa-financial-demo-tracker.json", LOGS / "rasa-financial-demo-spec.yaml"),
    ("sgd", "sgd-dialogue.json", LOGS / "sgd-ridesharing-spec.yaml"),
    ("multiwoz", "multiwoz-dialogue.json", LOGS / "multiwoz-restaurant-spec.yaml"),
]


@pytest.mark.parametrize(("fmt", "name", "spec"), CASES)
def test_excerpt_round_trips_into_turns_evaluate_accepts(fmt: str, name: str, spec: Path,
                                                         tmp_path: Path) -> None:
    bundle = load_spec(spec)
    res = import_file(fmt, LOGS / name, bundle)
    assert res.conversations >= 1 and res.n_turns >= 2
    tf = res.records(bundle)  # validates exactly as load_turns does
    assert len(tf.records) == res.n_turns and not tf.skipped
    # every turn has the user text of the log and an explicit history of earlier turns
    by_dlg: dict[str, list[int]] = {}
    for rec in tf.records:
        by_dlg.setdefault(rec.turn.dialogue_id, []).append(int(rec.turn.turn_id))
    for ids in by_dlg.values():
        assert ids == list(range(len(ids)))
    out = tmp_path / "turns.jsonl"
    r = runner.invoke(app, ["import", fmt, str(LOGS / name), "--spec", str(spec),
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert f"{res.n_turns} turn(s)" in r.output
    vs = list(Evaluator(bundle, "s1").evaluate(tf.records))
    assert len(vs) == res.n_turns


def test_tau_bench_booking_state_comes_from_the_tool_arguments() -> None:
    bundle = load_spec(AIRLINE)
    res = import_file("tau-bench", LOGS / "tau-bench-gpt-4o-airline.json", bundle)
    turns = [t for t in res.turns if t["dialogue_id"] == "task0-trial0"]
    assert {t["workflow"] for t in turns} == {"book_flight"}
    assert turns[0]["meta"]["reward"] == 0.0 and turns[0]["meta"]["task_id"] == 0
    booked = [t for t in turns if t.get("agent_acts", {}).get("confirm")]
    assert len(booked) == 1  # the one successful book_reservation call
    after = booked[0]["state_after"]
    assert after["origin"] == "JFK" and after["destination"] == "SEA"
    assert after["payment"] == "certificate_7504069"  # the first payment method
    assert after["passenger-dob"] == "1990-04-05" and after["insurance"] == "no"
    # before the booking, only what get_user_details / the searches wrote
    assert set(booked[0]["state_before"]) <= {"user-id", "origin", "destination",
                                             "flight-date"}
    # the policy prompt is not a turn, and it is accounted for
    assert res.notes["system message (not part of a turn)"] == 2


def test_tau2_unmapped_tool_is_reported_once_and_ignored() -> None:
    bundle = load_spec(AIRLINE)
    res = import_file("tau-bench", LOGS / "tau2-bench-airline-simulation.json", bundle)
    assert res.ignored_tools == {"get_flight_status": 2}
    t0 = res.turns[0]
    assert t0["dialogue_id"] == "task0-trial0" and t0["meta"]["source"] == "tau2-bench"
    # the agent's greeting precedes the first user message: it is history, not dropped
    assert t0["history"][0]["user"] == "" and t0["history"][0]["agent"]
    cancel = [t for t in res.turns if t.get("agent_acts", {}).get("confirm")]
    assert cancel and cancel[0]["workflow"] == "cancel_flight"
    assert cancel[0]["state_after"]["reservation-id"] == "EHGLP3"
    r = runner.invoke(app, ["import", "tau-bench",
                            str(LOGS / "tau2-bench-airline-simulation.json"), "--spec",
                            str(AIRLINE), "--out", "/dev/null", "--overwrite"])
    assert r.output.count("ignored tool 'get_flight_status' (2 call(s))") == 1


def test_rasa_slots_come_from_slot_events() -> None:
    bundle = load_spec(LOGS / "rasa-financial-demo-spec.yaml")
    res = import_file("rasa", LOGS / "rasa-financial-demo-tracker.json", bundle)
    users = [t["user"] for t in res.turns]
    assert users == ["Hi", "I want to check my account balance", "Who can I transfer money to",
                     "Transfer $100 to Evan Oslo", "yep"]
    ask, done = res.turns[3], res.turns[4]
    assert ask["state_after"] == {"PERSON": "Evan Oslo", "amount_of_money": "100.00",
                                  "currency": "$"}
    assert ask["agent_acts"]["request"] == ["confirm"]  # requested_slot is a request act
    assert done["state_before"] == ask["state_after"]
    assert "Successfully transferred" in done["agent"]
    # the form resets its slots on submit: the state after the last turn is empty again
    assert "PERSON" not in done["state_after"]
    assert res.ignored_slots["account_balance"] == 2


def test_evaluate_format_equals_import_then_evaluate(tmp_path: Path) -> None:
    log = LOGS / "tau-bench-gpt-4o-airline.json"
    turns = tmp_path / "turns.jsonl"
    r = runner.invoke(app, ["import", "tau-bench", str(log), "--spec", str(AIRLINE),
                            "--out", str(turns)])
    assert r.exit_code == 0, r.output
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    common = ["--spec", str(AIRLINE), "--config", "s1", "--reproducible", "-q"]
    r1 = runner.invoke(app, ["evaluate", "--turns", str(turns), "--out", str(a), *common])
    r2 = runner.invoke(app, ["evaluate", "--format", "tau-bench", "--turns", str(log),
                             "--out", str(b), *common])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    # the verdicts are identical; the run headers differ in the input read, and say so
    assert a.read_text().splitlines()[1:] == b.read_text().splitlines()[1:]
    assert a.read_text().count("\n") > 5
    ha, hb = read_header(a), read_header(b)
    assert ha is not None and hb is not None
    assert (ha.inputs["format"], hb.inputs["format"]) == (None, "tau-bench")


def test_import_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    out.write_text("keep\n")
    r = runner.invoke(app, ["import", "rasa", str(LOGS / "rasa-financial-demo-tracker.json"),
                            "--spec", str(LOGS / "rasa-financial-demo-spec.yaml"),
                            "--out", str(out)])
    assert r.exit_code == 2 and "--overwrite" in r.output and out.read_text() == "keep\n"


def _bad_chat(tmp_path: Path, messages: list[dict[str, object]]) -> str:
    good = json.loads((LOGS / "openai-chat-gpt-4o.jsonl").read_text())
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps({"messages": messages}) + "\n")
    with pytest.raises(InputError) as exc:
        import_file("openai-chat", p, load_spec(AIRLINE))
    return str(exc.value)


def test_errors_name_file_record_and_message(tmp_path: Path) -> None:
    msg = _bad_chat(tmp_path, [{"role": "user", "content": "hi"},
                               {"role": "robot", "content": "beep"}])
    assert msg.endswith("bad.jsonl:2: field 'messages[1].role': unknown role 'robot' "
                        "(expected one of user, assistant, tool, system)")
    msg = _bad_chat(tmp_path, [{"role": "user", "content": "cancel EHGLP3"},
                               {"role": "assistant", "content": None, "tool_calls": [
                                   {"id": "c1", "type": "function", "function": {
                                       "name": "cancel_reservation",
                                       "arguments": "{reservation_id: EHGLP3"}}]}])
    assert "bad.jsonl:2: field 'messages[1].tool_calls[0].function.arguments': arguments " \
           "of tool 'cancel_reservation' are not JSON" in msg
    msg = _bad_chat(tmp_path, [{"content": "no role"}])
    assert "bad.jsonl:2: field 'messages[0].role': missing field 'role'" in msg
    p = tmp_path / "list.json"
    p.write_text(json.dumps([{"task_id": 1, "reward": 1.0}]))
    with pytest.raises(InputError, match=r"list.json: field '\[0\].traj': missing field"):
        import_file("tau-bench", p, load_spec(AIRLINE))


def test_unknown_format_lists_the_available_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownFormat) as exc:
        import_file("langsmith", LOGS / "sgd-dialogue.json", load_spec(AIRLINE))
    assert isinstance(exc.value, KeyError)
    assert "available: " + ", ".join(available_formats()) in str(exc.value)
    r = runner.invoke(app, ["evaluate", "--format", "langsmith", "--turns",
                            str(LOGS / "sgd-dialogue.json"), "--spec", str(AIRLINE),
                            "--out", str(tmp_path / "v.jsonl")])
    assert r.exit_code == 2 and "unknown log format 'langsmith'" in r.output


def test_mwzeval_entry_points_at_its_module() -> None:
    from sage_tod.importers.base import FORMATS

    assert FORMATS["mwzeval"] == "sage_tod.importers.mwzeval"


def test_tools_mapping_unknown_slot_is_a_spec_error() -> None:
    doc = {"id": "w", "slots": [{"name": "a"}], "required": ["a"],
           "tools": {"book": {"args": {"x.y": "nope"}}}}
    with pytest.raises(InputError) as exc:
        parse_spec(doc, "s.yaml")
    assert str(exc.value) == ("s.yaml: field 'workflows[0].tools.book.args.x.y': unknown "
                              "slot 'nope' for argument 'x.y' of tool 'book'")
    with pytest.raises(InputError, match=r"tools\.book\.confirm"):
        parse_spec({**doc, "tools": {"book": {"confirm": True}}}, "s.yaml")


def test_formats_doc_tools_example_parses_and_maps() -> None:
    import re

    import yaml

    doc = (ROOT / "docs" / "formats.md").read_text()
    (block,) = re.findall(r"```yaml tools-example\n(.*?)```", doc, re.S)
    wf = parse_spec(yaml.safe_load(block), "doc").workflows["book_flight"]
    assert wf.tools["book_reservation"].confirms and not wf.tools["think"].writes
    from sage_tod.importers.chat import Call, mapped_values

    call = Call("book_reservation", {"user_id": "u1", "origin": "JFK", "passengers": [
        {"dob": "1990-04-05"}, {"dob": "1991-01-01"}]}, None)
    assert mapped_values(wf, call) == {"user-id": "u1", "origin": "JFK",
                                       "passenger-dob": "1990-04-05, 1991-01-01"}


def test_corpus_turns_left_out_are_counted_not_dropped(tmp_path: Path) -> None:
    data = json.loads((LOGS / "multiwoz-dialogue.json").read_text())
    (did,) = data
    data[did]["log"] = data[did]["log"][:5]  # ends on a user entry with no system reply
    p = tmp_path / "mw.json"
    p.write_text(json.dumps(data))
    res = import_file("multiwoz", p, load_spec(LOGS / "multiwoz-restaurant-spec.yaml"))
    assert res.n_turns == 2
    assert [str(s) for s in res.skipped] == [
        f"dialogue {did} turn 2: user entry without a system reply"]


def test_rasa_event_without_type_names_the_event(tmp_path: Path) -> None:
    tracker = json.loads((LOGS / "rasa-financial-demo-tracker.json").read_text())
    del tracker["events"][7]["event"]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(tracker))
    with pytest.raises(InputError) as exc:
        import_file("rasa", p, load_spec(LOGS / "rasa-financial-demo-spec.yaml"))
    assert str(exc.value) == f"{p}: field 'events[7].event': missing field 'event'"


def test_mwzeval_without_its_module_is_a_clear_error(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("sage_tod.importers.mwzeval") is not None:
        pytest.skip("the mwzeval reader is installed")
    p = tmp_path / "preds.json"
    p.write_text("{}")
    with pytest.raises(InputError, match=r"needs module sage_tod\.importers\.mwzeval"):
        import_file("mwzeval", p, load_spec(LOGS / "multiwoz-restaurant-spec.yaml"))


def test_tool_calls_and_results_are_structured_in_turns_and_history() -> None:
    """Each turn holds its calls with arguments and parsed results; later turns see
    them in their history entries; --tool-results is accepted and changes nothing."""
    bundle = load_spec(AIRLINE)
    plain = import_file("tau-bench", LOGS / "tau2-bench-airline-simulation.json", bundle)
    shown = import_file("tau-bench", LOGS / "tau2-bench-airline-simulation.json", bundle,
                        tool_results=True)
    assert plain.turns == shown.turns
    first_lookup = next(i for i, t in enumerate(plain.turns) if t["tool_calls"])
    t = plain.turns[first_lookup]
    assert [c["name"] for c in t["tool_calls"]] == [
        "get_reservation_details", "get_flight_status", "get_flight_status"]
    res = t["tool_calls"][0]["result"]
    assert isinstance(res, dict) and res["user_id"] == "emma_kim_9957"
    assert t["tool_calls"][0]["error"] is False and t["tool_calls"][0]["id"]
    later = plain.turns[first_lookup + 1]
    assert later["history"][-1]["user"] == t["user"]
    assert later["history"][-1]["tool_calls"] == t["tool_calls"]
    assert later["tool_calls"][0]["name"] == "cancel_reservation"
    recs = plain.records(bundle).records
    assert recs[first_lookup].turn.tool_calls is not None
    assert recs[first_lookup + 1].turn.history is not None
    assert recs[first_lookup + 1].turn.history[-1].tool_calls[0].name == "get_reservation_details"


def test_logs_doc_python_example_runs(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    import re

    doc = (ROOT / "docs" / "logs.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {}
    exec(compile(block, "docs/logs.md", "exec"), scope)
    printed = capsys.readouterr().out.strip()
    assert printed == block.split("# ", 1)[1].split("\n", 1)[0].strip()
    assert len(scope["verdicts"]) == 14  # type: ignore[arg-type]
