"""Claims: how a criterion becomes an NLI (premise, hypothesis) pair.

The premise is a window over the dialogue; the hypothesis fills a template
with the slot's description and the value. Both were chosen by measurement on
pairs built from SGD dev dialogues (docs/nli.md, `sage-tod models dev-table`),
because the shared MiniLM model is barely better than chance with the obvious
template: the choice of claim matters more than the choice of model.

Templates (`{desc}` = the slot's description, `{value}` = the value):

- `desc_is`        "The {desc} is {value}."
- `user_wants`     "The user wants {value}."
- `someone_says`   "Someone says {value}."
- `wants_desc`     "The user wants the {desc} to be {value}."
- `said_desc`      "The user says the {desc} is {value}."

PC claims (implied confirmations) state that the workflow was completed, against
`a_t` (window `a_t`) or the user's request and the agent's answer (`u_t+a_t`):
see `PC_TEMPLATES`.

UV margins: `contra` is the paper's m = p(ent) - p(contra); `rest` is
p(ent) - p(neutral) - p(contra). A value nobody mentioned is *neutral*, not a
contradiction, so under `contra` an injected value the turn never talks about
sits near m = 0 and S2 abstains; `rest` treats "not entailed" as unsupported.
Which one S2 uses is chosen by measurement (docs/nli.md) and can be shipped
with a model (`CLAIMS_FILE`), so a model trained for one claim design is run
with that design.

Windows (what the premise holds, oldest first, newest kept under the budget):

- `u_t`            the current user utterance only
- `prev_agent+u_t` the agent utterance the user answers, then u_t
- `user_last3`     the last three user utterances (h_<t and u_t)
- `user_all`       every user utterance of h_<t ∪ {u_t}
- `user_all+offers` every user utterance plus each agent utterance the user's
                    next reply accepted ("yes", "sounds good", "let's try ...")
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.errors import InputError
from sage_tod.contracts.safejson import parse_json
from sage_tod.text.booleans import is_dontcare

TEMPLATES: dict[str, str] = {
    "desc_is": "The {desc} is {value}.",
    "user_wants": "The user wants {value}.",
    "someone_says": "Someone says {value}.",
    "wants_desc": "The user wants the {desc} to be {value}.",
    "said_desc": "The user says the {desc} is {value}.",
}
WINDOWS = ("u_t", "prev_agent+u_t", "user_last3", "user_all", "user_all+offers")

# Chosen on the SGD dev pairs (docs/nli.md, "Choosing the claim").
DEFAULT_TEMPLATE = "someone_says"
DEFAULT_WINDOW = "u_t"
PC_TEMPLATES: dict[str, str] = {
    "booking_confirmed": "The booking is confirmed.",
    "request_done": "The request has been completed.",
    "something_booked": "Something has been booked.",
}
PC_WINDOWS = ("a_t", "u_t+a_t")
# chosen on SGD-dev agent turns (NOTIFY_SUCCESS vs. confirm/offer/request turns): best AUC
# and F1 at tau for the SNLI model (docs/results-nli.md)
DEFAULT_PC_TEMPLATE = "something_booked"
DEFAULT_PC_WINDOW = "a_t"
UV_MARGINS = ("contra", "rest")
DEFAULT_UV_MARGIN = "contra"
# a model directory may ship the claim design it was trained for (template, window,
# uv_margin, tau): S2 uses it unless an option or env variable says otherwise
CLAIMS_FILE = "sage_tod_claims.json"
CLAIM_KEYS = ("template", "window", "uv_margin", "tau", "pc_template", "pc_window")
PREMISE_BUDGET = 96  # tokens for the premise; the rest of max_length is the hypothesis

_ACCEPT = re.compile(
    r"^\s*(yes|yeah|yep|yup|sure|ok(ay)?|sounds (good|great|perfect|fine)|that (works|sounds|"
    r"one|'s (fine|good|great|perfect))|perfect|great|good|fine|let'?s (try|go|do|book)|"
    r"book (it|that|one)|please (do|book)|go ahead|i'?ll take|i'?d like (that|to book)|"
    r"correct|right)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Utterance:
    speaker: str  # "user" | "agent"
    text: str


# every template puts "the" before {desc}: a description written as a question ("what is
# the type of the hotel") or with its own article ("the cuisine of ...") reads as
# "the the ..." unless that lead is dropped
_DESC_LEAD = re.compile(r"^\s*(?:(?:what|which)(?: is|'s)\s+)?(?:(?:the|a|an)\s+)?",
                        re.IGNORECASE)


def slot_desc(ctx: TurnContext, slot: str) -> str:
    spec = ctx.spec.slot(slot, ctx.workflow)
    if spec is not None and spec.description.strip():
        desc = spec.description.strip().rstrip(".")
        return _DESC_LEAD.sub("", desc, count=1) or desc
    return re.sub(r"[-_]+", " ", slot).strip()


def render_value(value: str) -> str:
    v = value.strip()
    low = v.lower()
    if low in ("true", "yes"):
        return "yes"
    if low in ("false", "no"):
        return "no"
    if is_dontcare(v):
        # the annotation token is not English: no NLI model can entail "dontcare"
        return "it does not matter"
    return v


def uv_margin(p: tuple[float, float, float], kind: str = DEFAULT_UV_MARGIN) -> float:
    """The UV gate statistic from (p_ent, p_neu, p_contra); see the module docstring."""
    if kind == "contra":
        return p[0] - p[2]
    if kind == "rest":
        return p[0] - p[1] - p[2]
    raise ValueError(f"unknown UV margin {kind!r}; choose one of {', '.join(UV_MARGINS)}")


def model_claims(model: str | None) -> dict[str, Any]:
    """The claim design a model directory declares in `CLAIMS_FILE` ({} when none).

    A malformed file is an error, not a silent fallback: running an adapted
    model with another claim design than it was trained on quietly degrades it.
    """
    if not model:
        return {}
    p = Path(model) / CLAIMS_FILE
    if not p.is_file():
        return {}
    try:
        data = parse_json(p.read_bytes())
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnsafeDocument, not UTF-8
        raise InputError(p, f"cannot read the claim design: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(p, "expected a JSON object")
    out = {k: data[k] for k in CLAIM_KEYS if data.get(k) is not None}
    names = {"template": TEMPLATES, "window": WINDOWS, "uv_margin": UV_MARGINS,
             "pc_template": PC_TEMPLATES, "pc_window": PC_WINDOWS}
    for key, known in names.items():
        if key in out and (not isinstance(out[key], str) or out[key] not in known):
            raise InputError(p, f"unknown {key} {out[key]!r} (known: {', '.join(known)})",
                             field=key)
    if "tau" in out:
        tau = out["tau"]
        if isinstance(tau, bool) or not isinstance(tau, int | float) or not 0 <= tau <= 1:
            raise InputError(p, f"tau must be a number in [0, 1], got {tau!r}", field="tau")
    return out


def hypothesis(template: str, desc: str, value: str) -> str:
    return TEMPLATES[template].format(desc=desc, value=render_value(value))


def accepted(reply: str) -> bool:
    """Does this user reply accept what the agent just said?"""
    return bool(_ACCEPT.match(reply))


def dialogue(ctx: TurnContext) -> list[Utterance]:
    """h_<t then u_t, as alternating utterances (agent a_t is not evidence for a_t)."""
    out: list[Utterance] = []
    for h in ctx.turn.history or ():
        if h.user.strip():
            out.append(Utterance("user", h.user))
        if h.agent.strip():
            out.append(Utterance("agent", h.agent))
    out.append(Utterance("user", ctx.turn.user))
    return out


def window(utts: list[Utterance], name: str) -> list[str]:
    """The utterances a window keeps, oldest first."""
    if name not in WINDOWS:
        raise ValueError(f"unknown premise window {name!r}; choose one of {', '.join(WINDOWS)}")
    users = [i for i, u in enumerate(utts) if u.speaker == "user"]
    if name == "u_t":
        keep = users[-1:]
    elif name == "prev_agent+u_t":
        last = users[-1]
        keep = [last - 1, last] if last > 0 and utts[last - 1].speaker == "agent" else [last]
    elif name == "user_last3":
        keep = users[-3:]
    elif name == "user_all":
        keep = users
    else:
        keep = []
        for i, u in enumerate(utts):
            nxt = utts[i + 1] if i + 1 < len(utts) else None
            if u.speaker == "user" or (nxt is not None and nxt.speaker == "user"
                                       and accepted(nxt.text)):
                keep.append(i)
    return [utts[i].text.strip() for i in sorted(keep)]


def fit_premise(parts: list[str], count: Callable[[str], int],
                budget: int = PREMISE_BUDGET) -> str:
    """Keep the newest utterances that fit the budget (truncation would cut u_t)."""
    kept: list[str] = []
    used = 0
    for text in reversed(parts):
        n = count(text) + 1
        if kept and used + n > budget:
            break
        kept.append(text)
        used += n
    return " ".join(reversed(kept))


_WHETHER = re.compile(r"^(boolean flag indicating |flag for )?(whether|if)( or not)?\s+", re.I)
_HAS = re.compile(r"^(?P<subj>.+?)\s+(?P<verb>has|have|offers|includes|provides|allows)\s+"
                  r"(?P<obj>.+)$", re.I)
_BOOLEAN_VALUES = frozenset({"yes", "no", "true", "false"})
MEANING_KINDS = ("boolean", "dontcare", "number")
# chosen on the first half of the natural-failure slice (docs/results-natural.md, phase B):
# the boolean claim cut false UV failures 3 -> 1 and passed no wrong value; the dontcare
# claim raised them 1 -> 4, the count claim 7 -> 9 for one more caught: those keep the template
DEFAULT_MEANING_KINDS: tuple[str, ...] = ("boolean",)


def _yes(value: str) -> bool | None:
    low = value.strip().lower()
    if low not in _BOOLEAN_VALUES:
        return None
    return low in ("yes", "true")


def meaning_claim(ctx: TurnContext, slot: str, value: str,
                  kinds: tuple[str, ...] = MEANING_KINDS) -> str | None:
    """A claim from the slot's meaning for a value that is not English on its own.

    "Someone says yes." / "Someone says it does not matter." / "Someone says 3."
    cannot be entailed by "free wifi", "any area is fine" or "a table for 3":
    the claim has to say what the value means for the slot. From the slot's
    description: a boolean "whether the hotel has parking" = yes becomes "The
    user wants the hotel to have parking."; dontcare "The user does not mind
    what the area of the hotel is."; a count "The number of people for the
    hotel booking is 3.". None for other values, or kinds not in `kinds` (the
    template's claim stands).
    """
    spec = ctx.spec.slot(slot, ctx.workflow)
    desc = slot_desc(ctx, slot)
    if is_dontcare(value):
        if "dontcare" not in kinds:
            return None
        w = _WHETHER.match(desc)
        if w is not None:
            return f"The user does not mind {w[2]} {_WHETHER.sub('', desc)}."
        return f"The user does not mind what the {desc} is."
    yes = _yes(value)
    stype = spec.type if spec is not None else "free"
    # "no" keeps the template: "The user does not need the hotel to have internet." is
    # entailed by turns that never mention internet (UV-rich, measured)
    if yes and "boolean" in kinds and (
            stype in ("boolean", "categorical") or _WHETHER.match(desc)):
        clause = _WHETHER.sub("", desc)
        m = _HAS.match(clause)
        if m is not None:
            subj, obj = m["subj"], m["obj"]
            return f"The user wants {subj} to have {obj}."
        # other wordings ("whether entrance to attraction is free") keep the template:
        # "The user wants it that ..." lost an SGD turn the template kept
        return None
    if stype == "number" and value.strip() and "number" in kinds:
        return f"The {desc} is {value.strip()}."
    return None


def parse_meaning_kinds(raw: str | None) -> tuple[str, ...]:
    """An option's value: unset/"1"/"on" = the defaults, "0"/"off" = none, or a comma list
    of `MEANING_KINDS` ("boolean,dontcare,number")."""
    low = (raw or "").strip().lower()
    if low in ("", "1", "true", "yes", "on"):
        return DEFAULT_MEANING_KINDS
    if low in ("0", "false", "no", "off", "none"):
        return ()
    kinds = tuple(k.strip() for k in low.split(",") if k.strip())
    bad = [k for k in kinds if k not in MEANING_KINDS]
    if bad:
        raise ValueError(f"unknown meaning-claim kind {bad[0]!r}; choose from "
                         f"{', '.join(MEANING_KINDS)}")
    return kinds


def uv_pair(ctx: TurnContext, slot: str, value: str, *, template: str, window_name: str,
            count: Callable[[str], int], meaning: bool | tuple[str, ...] = True
            ) -> tuple[str, str]:
    """The UV claim: the template's, or the slot-meaning claim where one exists
    (`meaning_claim`) for the value kinds `meaning` names (True: the defaults)."""
    premise = fit_premise(window(dialogue(ctx), window_name), count)
    kinds = DEFAULT_MEANING_KINDS if meaning is True else meaning or ()
    claim = meaning_claim(ctx, slot, value, kinds) if kinds else None
    return premise, claim or hypothesis(template, slot_desc(ctx, slot), value)


def iuv_pairs(ctx: TurnContext, candidates: list[str], value: str, *, template: str
              ) -> list[tuple[str, str]]:
    """One claim per candidate slot, against u_t alone (IUV is about what u_t said)."""
    return [(ctx.turn.user.strip(), hypothesis(template, slot_desc(ctx, s), value))
            for s in candidates]


def pc_premise(user: str, agent: str, window_name: str = DEFAULT_PC_WINDOW) -> str:
    if window_name == "a_t":
        return agent.strip()
    if window_name == "u_t+a_t":
        return f"{user.strip()} {agent.strip()}".strip()
    raise ValueError(f"unknown PC window {window_name!r}; choose one of {', '.join(PC_WINDOWS)}")


def pc_pair(ctx: TurnContext, template: str = DEFAULT_PC_TEMPLATE,
            window_name: str = DEFAULT_PC_WINDOW) -> tuple[str, str]:
    return pc_premise(ctx.turn.user, ctx.turn.agent, window_name), PC_TEMPLATES[template]
