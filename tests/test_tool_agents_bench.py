"""The tool-agent development benchmark: labels from gold actions, and its scores.

Real files: the two small τ²-bench retail trajectories of
$SAGE_TOD_DATA/tool-agents (sierra-research/tau2-bench, MIT; SOURCES.md there
names commits and md5s): `tau2-retail-trace-baseline.json` (gpt-4.1-mini,
one exchange of two items) and `tau2-retail-example.json` (the single-example
document the importer cannot read directly). The labelling tests edit copies
of them in a temp directory; the scoring tests use a six-turn table whose
numbers are worked out by hand in the comments.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from sage_tod.cli.app import app
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.spec import load_spec
from sage_tod.contracts.turns import load_turns
from sage_tod.importers.chat import Call
from sage_tod.importers.tau_bench import read as read_tau_bench
from sage_tod.lab.tool_agents import (
    GoldAction,
    build_tool_agents,
    judge_call,
    leaf_diff,
    matches,
    write_tools,
)
from sage_tod.lab.tool_agents_score import (
    ScoredTurn,
    auc,
    audit_summary,
    cluster_weights,
    conversation_audit,
    conversation_metrics,
    criterion_kind,
    criterion_table,
    read_audit,
    read_conversation_audit,
    turn_metrics,
)

DATA = Path(os.environ.get("SAGE_TOD_DATA", "/nonexistent")) / "tool-agents"
TRACE = DATA / "tau2-retail-trace-baseline.json"
EXAMPLE = DATA / "tau2-retail-example.json"
needs_data = pytest.mark.skipif(not (TRACE.exists() and EXAMPLE.exists()),
                                reason="tool-agents data absent ($SAGE_TOD_DATA)")

RETAIL_SPEC = """
version: 1
slots:
  - {name: user-id, description: user id of the customer}
  - {name: order-id, description: order id of the order}
workflows:
  - id: retail
    description: Help a retail customer with an order.
    slots: [user-id, order-id]
    required: [user-id]
    tools:
      get_order_details: {args: {order_id: order-id}}
      exchange_delivered_order_items: {confirms: true, args: {order_id: order-id}}
      cancel_pending_order: {confirms: true, args: {order_id: order-id}}
"""


def _gold(name: str, args: dict[str, Any], compare: tuple[str, ...] | None = None
          ) -> GoldAction:
    return GoldAction("g0", name, args, compare)


# ---------------------------------------------------------------------------------------------
# the matching rule


def test_matching_rule_is_tau2s() -> None:
    g = _gold("cancel_reservation", {"reservation_id": "ABC123"})
    assert matches("cancel_reservation", {"reservation_id": "ABC123"}, g)
    assert not matches("cancel_reservation", {"reservation_id": "XYZ999"}, g)
    assert not matches("update_reservation_baggages", {"reservation_id": "ABC123"}, g)
    # compare_args null: the *call's* keys are compared, so an extra argument fails ...
    assert not matches("cancel_reservation", {"reservation_id": "ABC123", "reason": "x"}, g)
    # ... and a gold argument the call leaves out is not compared
    g2 = _gold("send_certificate", {"user_id": "u1", "amount": 100})
    assert matches("send_certificate", {"user_id": "u1"}, g2)
    # compare_args names the keys; [] matches any call of the tool
    g3 = _gold("send_certificate", {"user_id": "u1", "amount": 100}, ("user_id",))
    assert matches("send_certificate", {"user_id": "u1", "amount": 5}, g3)
    assert matches("send_certificate", {"user_id": "u9"}, _gold("send_certificate", {}, ()))


def test_retail_item_lists_compare_sorted_other_lists_do_not() -> None:
    g = _gold("exchange_delivered_order_items",
              {"order_id": "#W1", "item_ids": ["2", "1"], "new_item_ids": ["b", "a"],
               "payment_method_id": "p"})
    assert matches("exchange_delivered_order_items",
                   {"order_id": "#W1", "item_ids": ["1", "2"], "new_item_ids": ["a", "b"],
                    "payment_method_id": "p"}, g)
    # a list in order everywhere else: two flight segments swapped do not match
    f = _gold("update_reservation_flights", {"reservation_id": "R", "flights": ["x", "y"]})
    assert not matches("update_reservation_flights",
                       {"reservation_id": "R", "flights": ["y", "x"]}, f)


def test_leaf_diff_walks_records_and_lists_element_by_element() -> None:
    call = {"passengers": [{"first_name": "Ann", "dob": "1990-01-01"},
                           {"first_name": "Bo", "dob": "1991-02-02"},
                           {"first_name": "Cy", "dob": "1992-03-03"}],
            "cabin": "economy"}
    gold = {"passengers": [{"first_name": "Ann", "dob": "1990-01-01"},
                           {"first_name": "Bo", "dob": "1991-02-03"}],
            "cabin": "economy"}
    assert leaf_diff(call, gold) == [
        {"path": "passengers[1].dob", "call": "1991-02-02", "gold": "1991-02-03"},
        {"path": "passengers[2]", "call": {"first_name": "Cy", "dob": "1992-03-03"}},
    ]


def test_subclasses() -> None:
    writes = {"cancel_pending_order": _wt("cancel_pending_order", "order_id"),
              "modify_pending_order_address": _wt("modify_pending_order_address", "order_id")}
    golds = [_gold("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})]
    wrong_target = judge_call(Call("cancel_pending_order",
                                   {"order_id": "#W2", "reason": "no longer needed"}, "c1"),
                              golds, writes)
    assert (wrong_target.subclass, wrong_target.diff) == (
        "wrong_target", ({"path": "order_id", "call": "#W2", "gold": "#W1"},))
    wrong_arg = judge_call(Call("cancel_pending_order",
                                {"order_id": "#W1", "reason": "ordered by mistake"}, "c2"),
                           golds, writes)
    assert wrong_arg.subclass == "wrong_argument"
    assert [d["path"] for d in wrong_arg.diff] == ["reason"]
    unexpected = judge_call(Call("modify_pending_order_address", {"order_id": "#W1"}, "c3"),
                            golds, writes)
    assert (unexpected.match, unexpected.subclass, unexpected.gold) == (
        False, "unexpected_write", None)
    ok = judge_call(Call("cancel_pending_order",
                         {"order_id": "#W1", "reason": "no longer needed"}, "c4"), golds, writes)
    assert (ok.match, ok.subclass, ok.gold) == (True, None, "g0")


def _wt(name: str, target: str | None) -> Any:
    from sage_tod.lab.tool_agents import WriteTool
    return WriteTool(name, target)


@needs_data
def test_write_tools_are_read_from_tools_py() -> None:
    w = write_tools(DATA / "domains" / "retail" / "tools.py")
    assert set(w) == {"cancel_pending_order", "exchange_delivered_order_items",
                      "modify_pending_order_address", "modify_pending_order_items",
                      "modify_pending_order_payment", "modify_user_address",
                      "return_delivered_order_items"}
    assert w["cancel_pending_order"].target == "order_id"
    assert w["modify_user_address"].target == "user_id"
    air = write_tools(DATA / "domains" / "airline" / "tools.py")
    assert "book_reservation" in air and "get_reservation_details" not in air


# ---------------------------------------------------------------------------------------------
# real files: the slices


def _data_dir(tmp: Path, trace: dict[str, Any] | None = None) -> Path:
    d = tmp / "data"
    (d / "domains" / "retail").mkdir(parents=True)
    shutil.copy(DATA / "domains" / "retail" / "tools.py", d / "domains" / "retail")
    shutil.copy(EXAMPLE, d)
    if trace is None:
        shutil.copy(TRACE, d)
    else:
        (d / TRACE.name).write_text(json.dumps(trace), encoding="utf-8")
    return d


def _build(tmp: Path, trace: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    tmp.mkdir(parents=True, exist_ok=True)
    spec_p = tmp / "retail.yaml"
    spec_p.write_text(RETAIL_SPEC, encoding="utf-8")
    out = tmp / "out"
    m = build_tool_agents(_data_dir(tmp, trace), out, {"retail": (spec_p, load_spec(spec_p))})
    return out, m


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _exchange_call(doc: dict[str, Any]) -> dict[str, Any]:
    for m in doc["simulations"][0]["messages"]:
        for c in m.get("tool_calls") or []:
            if c["name"] == "exchange_delivered_order_items":
                return dict(c)
    raise AssertionError("the trace has an exchange call")


@needs_data
def test_slices_are_the_importers_turns_with_labels(tmp_path: Path) -> None:
    out, m = _build(tmp_path)
    spec = load_spec(tmp_path / "retail.yaml")
    lines = _lines(out / "tau2-retail-trace-baseline.turns.jsonl")
    imported = read_tau_bench(TRACE, spec).turns
    assert [(t["dialogue_id"], t["turn_id"]) for t in lines] == [
        (t["dialogue_id"], t["turn_id"]) for t in imported]
    assert [t["user"] for t in lines] == [t["user"] for t in imported]
    # one exchange of two items, as gold has it: the one labelled turn is clean
    labels = [t["meta"]["tool_label"]["label"] for t in lines]
    assert labels.count("clean") == 1 and labels.count("unlabelled") == len(lines) - 1
    clean = next(t for t in lines if t["meta"]["tool_label"]["label"] == "clean")
    assert clean["gold"] == {"label": "acceptable", "class": None}
    assert all("gold" not in t for t in lines if t is not clean)
    # a valid turns file for the spec
    assert len(load_turns(out / "tau2-retail-trace-baseline.turns.jsonl", spec).records) == len(
        lines)
    # the single-example document is imported through a τ²-shaped copy
    ex = _lines(out / "tau2-retail-example.turns.jsonl")
    assert [t["meta"]["tool_label"]["label"] for t in ex].count("clean") == 1
    assert m["files"]["tau2-retail-example.json"]["gold"] == "file (single example)"
    assert m["files"][TRACE.name]["agent_model"] == "gpt-4.1-mini"
    assert m["files"][TRACE.name]["labels"] == {"failure": 0, "clean": 1,
                                                "unlabelled": len(lines) - 1}


@needs_data
def test_rebuilds_are_byte_identical(tmp_path: Path) -> None:
    a, _ = _build(tmp_path / "a")
    b, _ = _build(tmp_path / "b")
    for name in sorted(p.name for p in a.iterdir()):
        if name == "manifest.json":  # names the spec path, which differs here
            ma, mb = (json.loads((x / name).read_text()) for x in (a, b))
            ma.pop("specs")
            mb.pop("specs")
            assert ma == mb
        else:
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


@needs_data
def test_edited_trace_sorted_items_wrong_argument_wrong_target_failed_call(
        tmp_path: Path) -> None:
    doc = json.loads(TRACE.read_text(encoding="utf-8"))

    def with_call(edit: Any, error: bool = False) -> list[dict[str, Any]]:
        d = copy.deepcopy(doc)
        for msg in d["simulations"][0]["messages"]:
            for c in msg.get("tool_calls") or []:
                if c["name"] == "exchange_delivered_order_items":
                    edit(c["arguments"])
                    cid = c["id"]
        if error:
            for msg in d["simulations"][0]["messages"]:
                if msg.get("role") == "tool" and msg.get("id") == cid:
                    msg["error"] = True
        tmp = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
        out, _ = _build(tmp, d)
        return [t["meta"]["tool_label"]
                for t in _lines(out / "tau2-retail-trace-baseline.turns.jsonl")
                if t["meta"]["tool_label"]["label"] != "unlabelled"]

    args = _exchange_call(doc)["arguments"]
    assert len(args["item_ids"]) == 2
    # both item lists reversed: the backend stores them sorted, still a match
    rev = with_call(lambda a: (a["item_ids"].reverse(), a["new_item_ids"].reverse()))
    assert [t["label"] for t in rev] == ["clean"]
    # one new item changed: wrong argument, the leaf and both values named
    old = args["new_item_ids"][0]
    wa = with_call(lambda a: a["new_item_ids"].__setitem__(0, "0000000000"))
    assert [(t["label"], t["subclass"]) for t in wa] == [("failure", "wrong_argument")]
    assert wa[0]["diff"] == [{"path": "new_item_ids[0]", "call": "0000000000", "gold": old}]
    # another order: wrong target
    wt = with_call(lambda a: a.__setitem__("order_id", "#W0000000"))
    assert [(t["label"], t["subclass"]) for t in wt] == [("failure", "wrong_target")]
    # the same wrong call with an error result changed nothing: the turn is unlabelled
    assert with_call(lambda a: a.__setitem__("order_id", "#W0000000"), error=True) == []


@needs_data
def test_cli_builds_and_rejects_a_bad_spec_option(tmp_path: Path) -> None:
    spec_p = tmp_path / "retail.yaml"
    spec_p.write_text(RETAIL_SPEC, encoding="utf-8")
    data = _data_dir(tmp_path)
    r = CliRunner().invoke(app, ["slices", "tool-agents", "--data", str(data), "--out",
                                 str(tmp_path / "o"), "--spec", f"retail={spec_p}"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "o" / "manifest.json").exists()
    bad = CliRunner().invoke(app, ["slices", "tool-agents", "--data", str(data), "--out",
                                   str(tmp_path / "p"), "--spec", f"shop={spec_p}"])
    assert bad.exit_code == 2 and "DOMAIN=PATH" in bad.output


# ---------------------------------------------------------------------------------------------
# scoring, on a table worked out by hand


def _t(conv: str, turn: int, task: str, label: str, verdict: str, reward: float
       ) -> ScoredTurn:
    return ScoredTurn("f", "retail", conv, task, f"{conv}:{turn}", label, verdict, reward)


# conversation A (task t1, reward 0): failure/flagged, failure/undecided, unlabelled/flagged
# conversation B (task t2, reward 1): clean/flagged, clean/acceptable
# conversation C (task t3, reward 0): failure/acceptable
TABLE = [_t("A", 0, "t1", "failure", "failure", 0), _t("A", 1, "t1", "failure", "undecided", 0),
         _t("A", 2, "t1", "unlabelled", "failure", 0), _t("B", 0, "t2", "clean", "failure", 1),
         _t("B", 1, "t2", "clean", "acceptable", 1), _t("C", 0, "t3", "failure", "acceptable", 0)]


def test_turn_metrics_by_hand() -> None:
    m = turn_metrics(TABLE, lambda t: t.label, n_boot=200)
    # undecided counted acceptable: tp 1 (A1), fn 2 (A2, C1), fp 1 (B1), tn 1 (B2)
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (1, 2, 1, 1)
    assert m["precision"] == pytest.approx(0.5)
    assert m["recall"] == pytest.approx(1 / 3)
    assert m["f1"]["point"] == pytest.approx(2 / 5)  # 2*1 / (2*1 + 1 + 2)
    assert m["f1_decided"] == pytest.approx(0.5)  # A2 dropped: 2 / (2 + 1 + 1)
    assert m["undecided_rate"] == pytest.approx(1 / 5)
    assert m["clean_flag_rate"]["point"] == pytest.approx(0.5)
    assert m["flag_all_f1"] == pytest.approx(6 / 8)  # 3 failures, 2 clean: 2*3/(2*3+2)
    lo, hi = m["f1"]["low"], m["f1"]["high"]
    assert lo is not None and hi is not None and 0 <= lo <= 0.4 <= hi <= 1


def test_f1_is_undefined_without_failures() -> None:
    clean_only = [t for t in TABLE if t.label == "clean"]
    m = turn_metrics(clean_only, lambda t: t.label, n_boot=50)
    assert m["f1"]["point"] is None and m["flag_all_f1"] is None
    assert m["clean_flag_rate"]["point"] == pytest.approx(0.5)  # B1 flagged of B1, B2


def test_conversation_aucs_by_hand() -> None:
    m = conversation_metrics(TABLE, n_boot=200)
    assert (m["conversations"], m["failed"]) == (3, 2)
    # failed A (2 flagged, 3 turns), C (0, 1) vs successful B (1 flagged, 2 turns)
    assert m["auc_flagged_turns"]["point"] == pytest.approx(0.5)  # 2>1: 1, 0<1: 0
    assert m["auc_length"]["point"] == pytest.approx(0.5)  # 3>2: 1, 1<2: 0
    assert m["auc_any_flag"]["point"] == pytest.approx(0.25)  # tie: .5, 0<1: 0
    assert auc([1.0], []) is None


def test_conversation_audit_by_hand(tmp_path: Path) -> None:
    # the reader faults B (reward 1) and finds nothing wrong in C (reward 0); A can't tell
    rows = [{"file": "f", "dialogue_id": "A", "reader": "cant_tell", "reason": "short"},
            {"file": "f", "dialogue_id": "B", "reader": "failure", "reason": "extra bag"},
            {"file": "f", "dialogue_id": "C", "reader": "clean", "reason": "user left"}]
    table = [replace(t, conversation=f"f/{t.conversation}") for t in TABLE]
    m = conversation_audit(table, rows, n_boot=100)
    assert (m["read"], m["cant_tell"], m["not_in_slices"]) == (3, 1, [])
    # reader truth: failed B (1 flagged) vs clean C (0 flagged) -> AUC 1
    assert (m["reader"]["conversations"], m["reader"]["failed"]) == (2, 1)
    assert m["reader"]["auc_flagged_turns"]["point"] == pytest.approx(1.0)
    # reward truth on the same two: failed C (0) vs successful B (1) -> AUC 0
    assert m["reward"]["auc_flagged_turns"]["point"] == pytest.approx(0.0)
    assert m["reward_agreement"] == pytest.approx(0.0)
    assert (m["reader_failure_reward_ok"], m["reader_clean_reward_failed"]) == (1, 1)
    assert "batches" not in m  # one reading round: nothing to split
    # a second reading round is scored on its own beside the whole
    two = [rows[0], rows[1], {**rows[2], "batch": 2}]
    mb = conversation_audit(table, two, n_boot=100)
    assert sorted(mb["batches"]) == [1, 2]
    assert mb["batches"][1]["read"] == 2 and mb["batches"][2]["read"] == 1
    assert mb["batches"][2]["reader"]["failed"] == 0  # C alone, clean
    assert mb["reader"] == m["reader"]
    bad = tmp_path / "a.jsonl"
    bad.write_text(json.dumps({**rows[0], "reader": "maybe"}) + "\n")
    with pytest.raises(InputError, match=r"a\.jsonl:1: field 'reader'"):
        read_conversation_audit(bad)


def test_cluster_weights_resample_whole_tasks() -> None:
    w = cluster_weights(5, n_boot=300, seed=0)
    assert w.shape == (300, 5)
    assert np.all(w.sum(axis=1) == 5)
    assert np.array_equal(w, cluster_weights(5, n_boot=300, seed=0))


def test_audit_error_rate_and_reader_labels(tmp_path: Path) -> None:
    rows = [{"file": "f", "dialogue_id": "d1", "turn_id": 0, "gold": "failure",
             "reader": "clean", "agrees": False, "reason": "policy allows it"},
            {"file": "f", "dialogue_id": "d2", "turn_id": 1, "gold": "clean",
             "reader": "clean", "agrees": True, "reason": "as asked"},
            {"file": "f", "dialogue_id": "d3", "turn_id": 2, "gold": "failure",
             "reader": "cant_tell", "agrees": None, "reason": "result not shown"}]
    s = audit_summary(rows, {}, n_boot=200)
    assert (s["audited"], s["readable"], s["cant_tell"]) == (3, 2, 1)
    assert s["label_error_rate"]["point"] == pytest.approx(0.5)
    assert s["by_gold_label"]["failure"] == {"n": 2, "disagree": 1, "cant_tell": 1}
    p = tmp_path / "audit.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert len(read_audit(p)) == 3
    p.write_text(json.dumps({**rows[0], "reader": "maybe"}) + "\n", encoding="utf-8")
    from sage_tod.contracts.errors import InputError
    with pytest.raises(InputError, match="reader label"):
        read_audit(p)


def test_shipped_audit_is_consistent() -> None:
    from sage_tod.lab.tool_agents_score import AUDIT_FILE

    rows = read_audit(AUDIT_FILE)
    assert len(rows) >= 60
    assert {r["gold"] for r in rows} == {"failure", "clean"}
    assert all(r["agrees"] == (r["reader"] == r["gold"]) for r in rows
               if r["reader"] != "cant_tell")
    assert len({(r["file"], r["dialogue_id"], r["turn_id"]) for r in rows}) == len(rows)
    assert len({r["file"] for r in rows}) >= 6  # across agents
    assert {"retail", "airline"} <= {d for r in rows for d in DOMAIN_WORDS if d in r["file"]}


DOMAIN_WORDS = ("airline", "retail")
SFT = DATA / "tau2-retail-gpt-4.1-sft.json"


@pytest.mark.skipif(not SFT.exists(), reason="tool-agents data absent ($SAGE_TOD_DATA)")
def test_shipped_audit_gold_labels_are_the_builders(tmp_path: Path) -> None:
    from sage_tod.lab.tool_agents_score import AUDIT_FILE

    d = _data_dir(tmp_path)
    shutil.copy(SFT, d)
    spec_p = tmp_path / "retail.yaml"
    spec_p.write_text(RETAIL_SPEC, encoding="utf-8")
    out = tmp_path / "out"
    build_tool_agents(d, out, {"retail": (spec_p, load_spec(spec_p))})
    built = {(t["dialogue_id"], t["turn_id"]): t["meta"]["tool_label"]["label"]
             for t in _lines(out / "tau2-retail-gpt-4.1-sft.turns.jsonl")}
    mine = [r for r in read_audit(AUDIT_FILE) if r["file"] == SFT.stem]
    assert len(mine) >= 10
    assert all(built[(r["dialogue_id"], r["turn_id"])] == r["gold"] for r in mine)


def test_an_audit_made_for_other_labels_is_refused() -> None:
    from sage_tod.lab.tool_agents_score import score_tool_agents

    t = TABLE[0]  # gold failure
    f, did, tid = t.file, *t.key.split(":")
    row = {"file": f, "dialogue_id": did, "turn_id": tid, "gold": "clean", "reader": "clean",
           "agrees": True, "reason": "x"}
    with pytest.raises(ValueError, match="another gold label"):
        score_tool_agents(TABLE, [row], n_boot=20)
    ok = score_tool_agents(TABLE, [{**row, "gold": "failure", "agrees": False}], n_boot=20)
    assert ok["audit"]["label_error_rate"]["point"] == pytest.approx(1.0)


def test_criterion_kinds_and_table() -> None:
    assert criterion_kind("PC:call1:rule:cancellable") == "PC:rule:cancellable"
    assert criterion_kind("UV:call0:flights.1.date") == "UV:flights.*.date"
    assert criterion_kind("IUV:cabin:business", "business") == "IUV:cabin"
    assert criterion_kind("IUV:declined:cancel_reservation",
                          "XEHM4B") == "IUV:declined:cancel_reservation"
    base = dict(file="f", domain="airline", task="t", label="failure", verdict="failure")
    turns = [
        ScoredTurn(conversation="f/A", key="A:1", reward=0.0,
                   fired=("PC:rule:cancellable", "UV:payment_id"), **base),
        ScoredTurn(conversation="f/B", key="B:2", reward=1.0, fired=("PC:rule:cancellable",),
                   **base),
        ScoredTurn(conversation="f/C", key="C:0", reward=0.0,
                   abstained=("PC:rule:cancellable",), **{**base, "verdict": "undecided"}),
    ]
    audit = [{"file": "f", "dialogue_id": "A", "turn_id": 1, "reader": "failure"},
             {"file": "f", "dialogue_id": "B", "turn_id": 2, "reader": "clean"}]
    (first, second) = criterion_table(turns, audit)
    assert first == {"kind": "PC:rule:cancellable", "fired": 2, "reader_failure": 1,
                     "reader_clean": 1, "reward_0": 1, "alone": 1, "abstained": 1}
    assert second["kind"] == "UV:payment_id" and second["alone"] == 0
