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

from sage_tod.compiler import TurnContext

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
PC_HYPOTHESIS = "The booking is confirmed."
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


def slot_desc(ctx: TurnContext, slot: str) -> str:
    spec = ctx.spec.slot(slot, ctx.workflow)
    if spec is not None and spec.description.strip():
        return spec.description.strip().rstrip(".")
    return re.sub(r"[-_]+", " ", slot).strip()


def render_value(value: str) -> str:
    v = value.strip()
    low = v.lower()
    if low in ("true", "yes"):
        return "yes"
    if low in ("false", "no"):
        return "no"
    return v


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


def uv_pair(ctx: TurnContext, slot: str, value: str, *, template: str, window_name: str,
            count: Callable[[str], int]) -> tuple[str, str]:
    premise = fit_premise(window(dialogue(ctx), window_name), count)
    return premise, hypothesis(template, slot_desc(ctx, slot), value)


def iuv_pairs(ctx: TurnContext, candidates: list[str], value: str, *, template: str
              ) -> list[tuple[str, str]]:
    """One claim per candidate slot, against u_t alone (IUV is about what u_t said)."""
    return [(ctx.turn.user.strip(), hypothesis(template, slot_desc(ctx, s), value))
            for s in candidates]


def pc_pair(ctx: TurnContext) -> tuple[str, str]:
    return ctx.turn.agent.strip(), PC_HYPOTHESIS
