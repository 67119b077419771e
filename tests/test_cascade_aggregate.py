"""Aggregation of mixed TRUE/FALSE/ABSTAIN and cascade routing with stub stages."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sage_tod.contracts.criteria import Criterion, Decision, FailureClass, Outcome
from sage_tod.contracts.spec import SpecBundle
from sage_tod.evaluation.aggregate import turn_verdict
from sage_tod.evaluation.cascade import Cascade, CriterionResult, UnknownConfig
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.verifiers.base import Item, Stage


def _crit(i: int, nlu: bool = False) -> Criterion:
    return Criterion(id=f"UV:s{i}", failure_class=FailureClass.UV,
                     args={"slot": f"s{i}", "value": "v"}, question="q", nlu=nlu)


def _res(outcome: Outcome, margin: float = 1.0) -> CriterionResult:
    return CriterionResult(_crit(0), Decision(outcome, margin, "r"),
                           None if outcome is Outcome.ABSTAIN else "S1")


@pytest.mark.parametrize(("outcomes", "label", "conf"), [
    ([], "acceptable", 1.0),
    ([(Outcome.FALSE, 1.0), (Outcome.FALSE, 0.4)], "acceptable", 0.4),
    ([(Outcome.FALSE, 1.0), (Outcome.TRUE, 0.7)], "failure", 0.7),
    ([(Outcome.TRUE, 1.0), (Outcome.ABSTAIN, 0.0)], "failure", 1.0),
    ([(Outcome.FALSE, 1.0), (Outcome.ABSTAIN, 0.1)], "undecided", 0.0),
    ([(Outcome.ABSTAIN, 0.0)], "undecided", 0.0),
])
def test_aggregation(outcomes: list[tuple[Outcome, float]], label: str, conf: float) -> None:
    assert turn_verdict([_res(o, m) for o, m in outcomes]) == (label, conf)


class Recorder:
    """A stub stage that records what it was asked and answers from a script."""

    def __init__(self, name: str, answers: dict[str, Outcome], only_nlu: bool = False,
                 fail: bool = False) -> None:
        self.name = name
        self.answers = answers
        self.only_nlu = only_nlu
        self.fail = fail
        self.calls: list[list[str]] = []

    def accepts(self, criterion: Criterion) -> bool:
        return criterion.nlu or not self.only_nlu

    def decide(self, items: Sequence[Item]) -> list[Decision]:
        self.calls.append([it.criterion.id for it in items])
        if self.fail:
            raise TimeoutError("model timed out")
        return [Decision(self.answers.get(it.criterion.id, Outcome.ABSTAIN), 0.5, self.name)
                for it in items]


def _items(n: int) -> list[Item]:
    return [Item(_crit(i, nlu=i % 2 == 1), None) for i in range(n)]  # type: ignore[arg-type]


def test_abstentions_pass_to_the_next_stage_only() -> None:
    s1 = Recorder("S1", {"UV:s0": Outcome.FALSE, "UV:s1": Outcome.ABSTAIN})
    s2 = Recorder("S2", {"UV:s1": Outcome.TRUE}, only_nlu=True)
    assert isinstance(s1, Stage)
    res = Cascade([s1, s2]).run(_items(3))
    assert s1.calls == [["UV:s0", "UV:s1", "UV:s2"]]
    assert s2.calls == [["UV:s1"]]  # s0 decided; s2 is not nlu
    assert [r.decided_by for r in res] == ["S1", "S2", None]
    assert [len(r.trace) for r in res] == [1, 2, 1]


def test_a_failing_stage_abstains_with_the_reason() -> None:
    s1 = Recorder("S1", {}, fail=True)
    (r,) = Cascade([s1]).run(_items(1))
    assert r.decision.outcome is Outcome.ABSTAIN and "timed out" in r.decision.rationale


def test_configs_and_missing_stages(spec: SpecBundle) -> None:
    with pytest.raises(UnknownConfig):
        Cascade.from_config("fast")
    s1_only = Cascade.from_config("s1")
    assert s1_only.stage_names == ["S1"] and s1_only.missing == {}
    no_s1 = Cascade.from_config("no_s1")
    assert "S1" not in no_s1.stage_names
    ev = Evaluator(spec, "no_s1")
    v = ev.evaluate_turn({"dialogue_id": "d", "turn_id": 0, "workflow": "rest",
                          "user": "north", "agent": "ok", "state_before": {},
                          "state_after": {"area": "north"}})
    # without S1 nothing decides the UV criterion unless S2 exists; never a guess
    assert v.verdict in {"undecided", "acceptable"}
    if "S2" not in v.stages:
        assert v.verdict == "undecided" and v.criteria[0].decided_by is None


def test_all_abstained_keeps_every_stage_reason() -> None:
    s1 = Recorder("S1", {})
    s2 = Recorder("S2", {})
    (r,) = Cascade([s1, s2]).run(_items(1))
    assert r.decided_by is None and r.decision.rationale == "S1: S1; S2: S2"
