"""Each injector yields a failure the compiler/S1 can see, and touches nothing else."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.contracts.spec import SpecBundle, parse_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.evaluation.evaluator import Evaluator
from sage_tod.lab.datasets import multiwoz
from sage_tod.lab.inject import (
    PC_TEMPLATES_BOOKING,
    WNF_TEMPLATES,
    InjClass,
    InjectionEnv,
    clean,
    inject,
    slot_phrase,
    unsupported,
)
from sage_tod.lab.slices import act_violations, consistent, strip_acts
from sage_tod.verifiers.symbolic import find_support

FIX = Path(__file__).parent / "fixtures" / "datasets"
CHANGES: dict[str, set[str]] = {"IUV": {"state_after"}, "WNF": {"agent", "agent_acts"},
                                "PC": {"agent", "agent_acts"},
                                "UV": {"state_after", "agent", "agent_acts"}}


@pytest.fixture(scope="module")
def mw() -> tuple[SpecBundle, list[dict[str, Any]], dict[str, list[str]]]:
    bundle = parse_spec(multiwoz.compile_spec(FIX))
    turns = [t for t in multiwoz.iter_turns("val", FIX, version="2.1")
             if consistent(t, bundle.workflows[t["workflow"]])
             and not act_violations(t, bundle.workflows[t["workflow"]])]
    return bundle, turns, multiwoz.value_pool(FIX)


def _env(bundle: SpecBundle, t: dict[str, Any], values: dict[str, list[str]]) -> InjectionEnv:
    transactional = t["workflow"] != "attraction"
    return InjectionEnv(bundle.workflows[t["workflow"]], transactional, "booking", values)


def _injected(mw: Any, cls: InjClass, n: int = 6) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    bundle, turns, values = mw
    rng = random.Random(7)
    out = []
    for t in turns:
        res = inject(cls, t, _env(bundle, t, values), rng)
        if res is not None:
            out.append((t, res))
        if len(out) == n:
            break
    assert out, f"no fixture turn admits {cls}"
    return out


@pytest.mark.parametrize("cls", ["IUV", "WNF", "PC", "UV"])
def test_only_the_class_fields_change(mw: Any, cls: InjClass) -> None:
    for orig, res in _injected(mw, cls):
        changed = {k for k in set(orig) | set(res) if orig.get(k) != res.get(k)} - {"gold"}
        assert changed and changed <= CHANGES[cls], changed
        assert res["gold"]["label"] == "failure" and res["gold"]["class"] == cls
        assert res["gold"]["injection"]["class"] == cls
        assert "gold" not in orig  # the original is not mutated


@pytest.mark.parametrize("cls", ["IUV", "WNF", "PC"])
def test_s1_sees_the_symbolic_classes_with_and_without_acts(mw: Any, cls: str) -> None:
    bundle = mw[0]
    ev = Evaluator(bundle, "s1")
    for orig, res in _injected(mw, cls):  # type: ignore[arg-type]
        before = ev.evaluate_turn(orig)
        after = ev.evaluate_turn(res)
        assert cls not in [c.value for c in before.classes]
        assert after.verdict == "failure" and cls in [c.value for c in after.classes]
        if cls != "IUV":  # WNF/PC surfaces are recognisable as text too
            text_only = ev.evaluate_turn(strip_acts(res))
            assert cls in [c.value for c in text_only.classes], res["agent"]


def test_uv_value_is_written_and_unsupported(mw: Any) -> None:
    bundle = mw[0]
    for orig, res in _injected(mw, "UV"):
        inj = res["gold"]["injection"]
        assert res["state_after"][inj["slot"]] == inj["value"]
        ctx = make_context(bundle, parse_turn(res, bundle).turn)
        uv = [c for c in compile_turn(ctx) if c.id == f"UV:{inj['slot']}"]
        assert uv and uv[0].args.value == inj["value"]
        assert find_support(ctx, inj["slot"], inj["value"]) is None
        # nowhere in h_<t, u_t or the original a_t (an "echo" realisation then says it)
        assert unsupported(orig, ctx.workflow.slots[inj["slot"]], inj["value"])


def test_iuv_value_is_stated_in_u_t_and_not_held(mw: Any) -> None:
    for orig, res in _injected(mw, "IUV"):
        inj = res["gold"]["injection"]
        assert inj["value"].lower() in orig["user"].lower() or inj["span"][0] is not None
        held = res["state_after"].get(inj["slot"])
        assert held == inj["new"] and held != orig["state_after"][inj["slot"]]


def test_deterministic_under_a_seed(mw: Any) -> None:
    bundle, turns, values = mw
    for cls in ("IUV", "WNF", "PC", "UV"):
        a = [inject(cls, t, _env(bundle, t, values), random.Random(3)) for t in turns[:40]]
        b = [inject(cls, t, _env(bundle, t, values), random.Random(3)) for t in turns[:40]]
        assert a == b


def test_several_surface_realisations(mw: Any) -> None:
    wnf = {r["gold"]["injection"]["template"] for _, r in _injected(mw, "WNF", 12)}
    pc = {r["gold"]["injection"]["template"] for _, r in _injected(mw, "PC", 12)}
    assert len(wnf) > 1 and len(pc) > 1
    assert len(WNF_TEMPLATES) >= 3 and len(PC_TEMPLATES_BOOKING) >= 3


def test_not_applicable_returns_none(mw: Any) -> None:
    bundle, turns, values = mw
    t = next(t for t in turns if t["workflow"] == "attraction")
    env = InjectionEnv(bundle.workflows["attraction"], False, "booking", values)
    assert inject("PC", t, env, random.Random(0)) is None  # search-only workflow
    assert inject("WNF", t, env, random.Random(0)) is None  # a single bucket


def test_clean_label_and_slot_phrase(mw: Any) -> None:
    bundle, turns, _ = mw
    c = clean(turns[0])
    assert c["gold"] == {"label": "acceptable", "class": None, "note": "original dataset turn",
                         "injection": None}
    assert slot_phrase(bundle.workflows["train"].slots["train-bookpeople"]) == (
        "how many train tickets you need")
    assert slot_phrase(bundle.workflows["hotel"].slots["hotel-bookstay"]) == (
        "the length of stay at the hotel")
