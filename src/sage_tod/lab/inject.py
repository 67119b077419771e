"""Failure injectors (paper, Appendix A): one workflow failure per turn, state-grounded.

Each injector takes an original turn (a dict in the public turn shape), the
turn's workflow and a seeded `random.Random`, and returns a new turn with
one failure of its class, or None when the turn admits none. The agent
response and the state are edited together so the failure is real under
the taxonomy, and nothing else is touched:

- IUV: a value the user states in u_t (per the dataset's user acts, and
  findable in the text) and that Δ_t writes is dropped from s_t: the slot
  becomes unfilled, or keeps its stale s_{t-1} value.
- WNF: a_t becomes a request for a required slot whose earlier buckets are
  unfilled in both s_{t-1} and s_t (illegal next under either state).
- PC: a_t becomes a confirmation of a transactional workflow whose outcome
  predicate is false in both s_{t-1} and s_t.
- UV: Δ_t writes a value plausible for the slot (from the schema, database
  or corpus) that appears nowhere in h_<t, u_t or a_t under the project's
  normaliser; silently, overwriting an older value, or echoed by the agent.

Guards keep each injection single-class: dropping a value must not make a
request illegal or an existing confirmation premature, and must not leave
the same value held by another slot (the turn would not show the failure).
Every injected turn records what changed in `gold.injection`; surface forms
rotate over several templates. Injectors write `gold` only; the evaluator
never reads it.
"""

from __future__ import annotations

import copy
import random
import string
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sage_tod.compiler.detect import detect_confirmation, detect_requests
from sage_tod.contracts.criteria import ClassName
from sage_tod.contracts.spec import SlotSpec, Workflow
from sage_tod.contracts.turns import Turn
from sage_tod.text.booleans import is_dontcare
from sage_tod.text.match import find_value
from sage_tod.text.normalize import basic

TurnDict = dict[str, Any]
InjClass = ClassName
CLASSES: tuple[InjClass, ...] = typing.get_args(ClassName)

# Request surfaces for WNF: {q} is the slot phrase ("the day of the hotel booking" or an
# interrogative description used as is: "how many train tickets you need").
WNF_TEMPLATES: tuple[str, ...] = (
    "Could you tell me {q}?",
    "Sure. Before anything else, may I ask {q}?",
    "Please let me know {q}.",
    "Okay, and what about {q}?",
)
# Confirmation surfaces for PC; {ref} is a fresh reference code, {task} the intent.
PC_TEMPLATES_BOOKING: tuple[str, ...] = (
    "Booking confirmed. Your reference number is {ref}.",
    "All done, I have booked that for you. The reference number is {ref}.",
    "Great news: your reservation is confirmed.",
    "You're all set! Everything has been booked.",
)
PC_TEMPLATES_TASK: tuple[str, ...] = (
    "Done! Your request to {task} is confirmed.",
    "All set: that has been confirmed. Your confirmation number is {ref}.",
    "I have confirmed that for you, you're all set.",
    "Your request has been confirmed and completed.",
)
UV_ECHO_TEMPLATES: tuple[str, ...] = (
    " I have put down {v} for {q}.",
    " Noted: {q} is {v}.",
)
_UNSET = frozenset({"", "not mentioned", "none"})
_INTERROGATIVE = ("how ", "what ", "which ", "when ", "where ", "whether ", "who ")


@dataclass(frozen=True)
class InjectionEnv:
    """What the injectors need besides the turn: its workflow and where values come from."""

    workflow: Workflow
    transactional: bool
    pc_style: Literal["booking", "task"] = "booking"
    values: Mapping[str, Sequence[str]] | None = None


def as_turn(d: Mapping[str, Any]) -> Turn:
    """The evaluator's view of a turn dict (gold and meta stripped)."""
    return Turn.model_validate({k: v for k, v in d.items() if k not in ("gold", "meta")})


def slot_phrase(spec: SlotSpec) -> str:
    """How a request names the slot: its description, as a noun phrase or a question."""
    desc = (spec.description or spec.name.replace("_", " ").replace("-", " ")).strip()
    desc = desc.rstrip(".?").strip()
    low = desc[0].lower() + desc[1:] if desc else desc
    if low.startswith(_INTERROGATIVE):
        if low.startswith("what is the "):
            return "what the " + low[len("what is the "):] + " is"
        return low
    if low.startswith(("the ", "a ", "an ")):
        return low
    return "the " + low


def _ref(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(8))


def _set(state: Mapping[str, Any]) -> dict[str, str]:
    # loaders already omit unset slots; this only guards hand-made turns (cheaper than
    # Turn.after(), which matters when every pool turn is checked)
    return {k: v for k, v in state.items()
            if isinstance(v, str) and v.strip().lower() not in _UNSET}


def _states(t: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    return _set(t["state_before"]), _set(t["state_after"])


def _held_anywhere(wf: Workflow, state: Mapping[str, str], value: str) -> bool:
    return any(wf.equals(s, v, value) for s, v in state.items() if s in wf.slots)


def _requests(t: Mapping[str, Any], wf: Workflow) -> list[str]:
    """Slots a_t requests: the acts' when given, else the text detector's (unambiguous only)."""
    tt = as_turn(t)
    out: list[str] = []
    for r in detect_requests(tt, wf):
        out.extend(r.candidates)
    return out


def _confirms(t: Mapping[str, Any], wf: Workflow) -> bool:
    return detect_confirmation(as_turn(t), wf) is not None


def _illegal(wf: Workflow, slot: str, before: Mapping[str, str], after: Mapping[str, str]
             ) -> bool:
    if slot not in wf.required:
        return False
    return bool(wf.missing_prereqs(slot, before)) and bool(wf.missing_prereqs(slot, after))


def _gold(cls: InjClass, note: str, injection: dict[str, Any]) -> dict[str, Any]:
    return {"label": "failure", "class": cls, "note": note,
            "injection": {"class": cls, **injection}}


# ---------------------------------------------------------------------------------------------
# IUV


def iuv_options(t: Mapping[str, Any], env: InjectionEnv) -> list[dict[str, Any]]:
    wf = env.workflow
    if not t.get("user_values"):
        return []
    before, after = _states(t)
    requests = _requests(t, wf)
    confirms = _confirms(t, wf)
    opts: list[dict[str, Any]] = []
    for uv in t.get("user_values") or []:
        slot, value = uv["slot"], uv["value"]
        spec = wf.slots.get(slot)
        if spec is None or slot not in after or is_dontcare(value):
            continue
        if not wf.equals(slot, after[slot], value):
            continue  # the state does not hold what the user said: nothing to drop
        if slot in before and wf.equals(slot, before[slot], after[slot]):
            continue  # not written this turn: Δ_t has nothing to drop
        if find_value(t["user"], value, spec) is None:
            continue  # not stated in the text (act-only values are not user-visible)
        new_after = dict(after)
        if slot in before:
            new_after[slot] = before[slot]
            mode = "stale"
        else:
            del new_after[slot]
            mode = "unfilled"
        if _held_anywhere(wf, new_after, value):
            continue
        if any(not _illegal(wf, r, before, after) and _illegal(wf, r, before, new_after)
               for r in requests):
            continue
        if confirms and wf.outcome_holds(after) and not wf.outcome_holds(new_after):
            continue
        opts.append({"slot": slot, "value": value, "mode": mode, "old": after[slot],
                     "new": new_after.get(slot), "state_after": new_after,
                     "start": uv.get("start"), "end": uv.get("end")})
    return opts


def apply_iuv(t: Mapping[str, Any], opt: Mapping[str, Any], rng: random.Random) -> TurnDict:
    out = copy.deepcopy(dict(t))
    out["state_after"] = dict(sorted(opt["state_after"].items()))
    what = ("left unfilled" if opt["mode"] == "unfilled"
            else f"kept at its stale value {opt['new']!r}")
    out["gold"] = _gold("IUV", f"user gave {opt['value']!r} for {opt['slot']} in u_t; s_t "
                        f"{what}", {"slot": opt["slot"], "value": opt["value"],
                                    "mode": opt["mode"], "old": opt["old"], "new": opt["new"],
                                    "span": [opt["start"], opt["end"]]})
    return out


# ---------------------------------------------------------------------------------------------
# WNF


def wnf_options(t: Mapping[str, Any], env: InjectionEnv) -> list[dict[str, Any]]:
    wf = env.workflow
    if len(wf.buckets) < 2:
        return []  # one bucket: every required field is always legal next
    before, after = _states(t)
    opts = []
    for slot in wf.required:
        if slot in after or not _illegal(wf, slot, before, after):
            continue
        missing = sorted(wf.missing_prereqs(slot, after))
        opts.append({"slot": slot, "missing": missing})
    return opts


def apply_wnf(t: Mapping[str, Any], opt: Mapping[str, Any], rng: random.Random) -> TurnDict:
    wf_slot = opt["slot"]
    out = copy.deepcopy(dict(t))
    i = rng.randrange(len(WNF_TEMPLATES))
    out["agent"] = WNF_TEMPLATES[i].format(q=opt["q"])
    out["agent_acts"] = {"request": [wf_slot], "confirm": False, "inform": {}}
    out["gold"] = _gold("WNF", f"agent asks for {wf_slot} while {', '.join(opt['missing'])} "
                        "(earlier bucket) is unfilled", {
                            "slot": wf_slot, "missing_prereqs": opt["missing"], "template": i,
                            "original_agent": t["agent"],
                            "original_agent_acts": t.get("agent_acts")})
    return out


# ---------------------------------------------------------------------------------------------
# PC


def pc_options(t: Mapping[str, Any], env: InjectionEnv) -> list[dict[str, Any]]:
    wf = env.workflow
    if not env.transactional or not wf.required:
        return []
    before, after = _states(t)
    if wf.outcome_holds(after) or wf.outcome_holds(before):
        return []
    return [{"unmet": sorted(wf.outcome_unmet(after))}]


def apply_pc(t: Mapping[str, Any], opt: Mapping[str, Any], rng: random.Random) -> TurnDict:
    out = copy.deepcopy(dict(t))
    templates = PC_TEMPLATES_BOOKING if opt["style"] == "booking" else PC_TEMPLATES_TASK
    i = rng.randrange(len(templates))
    out["agent"] = templates[i].format(ref=_ref(rng), task=opt["task"])
    out["agent_acts"] = {"request": [], "confirm": True, "inform": {}}
    out["gold"] = _gold("PC", "agent confirms while the outcome predicate is false "
                        f"(unmet: {', '.join(opt['unmet'])})", {
                            "unmet": opt["unmet"], "template": i, "style": opt["style"],
                            "original_agent": t["agent"],
                            "original_agent_acts": t.get("agent_acts")})
    return out


# ---------------------------------------------------------------------------------------------
# UV


def _texts(t: Mapping[str, Any]) -> list[str]:
    out = [t["user"], t["agent"]]
    for h in t.get("history") or []:
        out += [h.get("user", ""), h.get("agent", "")]
    return [x for x in out if x]


def unsupported(t: Mapping[str, Any], spec: SlotSpec, value: str) -> bool:
    """True when `value` appears nowhere in h_<t, u_t or a_t (slot-aware and plain)."""
    return all(find_value(x, value, spec) is None and find_value(x, value, None) is None
               for x in _texts(t))


def uv_options(t: Mapping[str, Any], env: InjectionEnv) -> list[dict[str, Any]]:
    wf = env.workflow
    if not env.values:
        return []
    before, after = _states(t)
    user_slots = {uv["slot"] for uv in t.get("user_values") or []}
    opts = []
    for slot in sorted(wf.slots):
        pool = env.values.get(slot)
        if not pool or slot in user_slots:
            continue
        if slot in after:
            if slot not in before or not wf.equals(slot, before[slot], after[slot]):
                continue  # written this turn: overwriting would also ignore the user
            modes: tuple[str, ...] = ("overwrite",)
        else:
            modes = ("write", "echo")
        for mode in modes:
            opts.append({"slot": slot, "mode": mode})
    return opts


def apply_uv(t: Mapping[str, Any], opt: Mapping[str, Any], rng: random.Random,
             env: InjectionEnv) -> TurnDict | None:
    wf = env.workflow
    slot = opt["slot"]
    spec = wf.slots[slot]
    assert env.values is not None
    _, after = _states(t)
    held = [v for v in after.values()]
    pool = list(env.values[slot])
    rng.shuffle(pool)
    value = next((v for v in pool if unsupported(t, spec, v)
                  and not any(basic(v) == basic(h) for h in held)), None)
    if value is None:
        return None
    out = copy.deepcopy(dict(t))
    old = after.get(slot)
    new_after = dict(out["state_after"])
    new_after[slot] = value
    out["state_after"] = dict(sorted(new_after.items()))
    echo = None
    if opt["mode"] == "echo":
        i = rng.randrange(len(UV_ECHO_TEMPLATES))
        echo = i
        out["agent"] = t["agent"].rstrip() + UV_ECHO_TEMPLATES[i].format(
            v=value, q=slot_phrase(spec))
        if out.get("agent_acts") is not None:
            acts = dict(out["agent_acts"])
            acts["inform"] = dict(sorted({**acts.get("inform", {}), slot: value}.items()))
            out["agent_acts"] = acts
    out["gold"] = _gold("UV", f"s_t gets {slot}={value!r}, stated nowhere in h_<t or u_t", {
        "slot": slot, "value": value, "mode": opt["mode"], "old": old,
        "echo_template": echo, **({"original_agent": t["agent"]} if echo is not None else {})})
    return out


# ---------------------------------------------------------------------------------------------
# dispatch


def options(cls: InjClass, t: Mapping[str, Any], env: InjectionEnv) -> list[dict[str, Any]]:
    """Ways `cls` can be injected into `t` (empty: not applicable)."""
    fn: Callable[[Mapping[str, Any], InjectionEnv], list[dict[str, Any]]] = {
        "IUV": iuv_options, "WNF": wnf_options, "PC": pc_options, "UV": uv_options}[cls]
    return fn(t, env)


def applicable(cls: InjClass, t: Mapping[str, Any], env: InjectionEnv) -> bool:
    """Cheap check: `cls` has an option here (UV may still find no unsupported value)."""
    return bool(options(cls, t, env))


def inject(cls: InjClass, t: Mapping[str, Any], env: InjectionEnv,
           rng: random.Random) -> TurnDict | None:
    """`t` with one injected failure of class `cls`, or None when not applicable."""
    opts = options(cls, t, env)
    if not opts:
        return None
    if cls == "UV":
        order = list(range(len(opts)))
        rng.shuffle(order)
        for i in order:
            res = apply_uv(t, opts[i], rng, env)
            if res is not None:
                return res
        return None
    opt = dict(rng.choice(opts))
    if cls == "IUV":
        return apply_iuv(t, opt, rng)
    if cls == "WNF":
        opt["q"] = slot_phrase(env.workflow.slots[opt["slot"]])
        return apply_wnf(t, opt, rng)
    opt["style"] = env.pc_style
    opt["task"] = _task_phrase(env.workflow)
    return apply_pc(t, opt, rng)


def _task_phrase(wf: Workflow) -> str:
    desc = wf.description.split(" (", 1)[0].strip().rstrip(".")
    return (desc[0].lower() + desc[1:]) if desc else wf.id


def clean(t: Mapping[str, Any]) -> TurnDict:
    """The original turn, labelled acceptable."""
    out = copy.deepcopy(dict(t))
    out["gold"] = {"label": "acceptable", "class": None, "note": "original dataset turn",
                   "injection": None}
    return out
