"""The extractor measured on MultiWOZ validation turns: what it reads, and what it claims.

The natural-failure slice is the extractor's development measure, and rules written
while reading its misses fit its phrasings. This is a second, larger measure on
other dialogues (the validation split: development data, never the test split), with
no system in the loop:

- **false sure flags**: on every gold turn, the IUV criteria S1 would decide as a
  failure (one slot, confidence >= EXACT, a value the user typed that the gold
  state does not record). Each one is either a false reading or a value the
  annotators left out; which of the two is for a reader to say (`--out` writes them);
- **reading recall**: for every value the gold update Δ_t writes that the user typed
  in u_t (its words, or one of its surface forms, are in the text), the same turn with
  that one value taken out of s_t: does the extractor read a value for the slot, and
  surely? That is an IUV failure injected one value at a time;
- **offer recall**: the same, for every value Δ_t writes that the user did not type
  and the last agent turn did (an offer taken: "I recommend the Acorn Guest House." -
  "Sounds good, book it for 2."), under the key `offered`, and for every waiver Δ_t
  writes (a slot set to dontcare: "any area is fine"), under the key `dontcare`;
- **sure reads the gold records**, by source: the extractions S1 would trust (one slot,
  confidence >= EXACT) whose value the gold s_t holds in that slot. Beside the false
  sure flags of the same source, a reading's precision against the annotation (a
  reading that reads only values s_t already holds raises nothing, so the flags alone
  cannot tell a rare reading from a precise one). Readers that step aside where s_t
  holds the value (held times and dates are only claimed, an offer s_t records is not
  taken) count none here.

    python -m sage_tod.lab.val_readings --spec SPEC.yaml [--out FLAGS.jsonl] [--json]

Nothing here is imported by the runtime.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import make_context
from sage_tod.compiler.extract import extract_user_values
from sage_tod.contracts.criteria import EXACT, IUVArgs
from sage_tod.contracts.spec import SpecBundle, load_spec
from sage_tod.contracts.turns import parse_turn
from sage_tod.lab.datasets.common import TurnDict
from sage_tod.lab.datasets.multiwoz import iter_turns
from sage_tod.text.normalize import basic

# what the extractor must not see: the corpus's own annotations of u_t
_ANNOTATIONS = ("user_acts", "user_values", "agent_acts", "meta")


@dataclass
class ValReadings:
    """The two measures, by source (flags) and by slot type (recall)."""

    turns: int = 0
    flags: Counter[str] = field(default_factory=Counter)
    typed: Counter[str] = field(default_factory=Counter)
    read: Counter[str] = field(default_factory=Counter)
    sure: Counter[str] = field(default_factory=Counter)
    recorded: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"turns": self.turns, "false_sure_flags": sum(self.flags.values()),
                "flags_by_source": dict(sorted(self.flags.items())),
                "sure_reads_recorded_by_source": dict(sorted(self.recorded.items())),
                "recall": {t: {"typed": n, "read": round(self.read[t] / n, 4),
                               "sure": round(self.sure[t] / n, 4)}
                           for t, n in sorted(self.typed.items())}}


def _plain(td: TurnDict) -> dict[str, Any]:
    return {k: v for k, v in td.items() if k not in _ANNOTATIONS}


def _typed(user: str, value: str, forms: Iterable[str]) -> bool:
    text = f" {basic(user)} "
    return any(f" {basic(f)} " in text for f in (value, *forms) if basic(f))


def measure(spec: SpecBundle, turns: Iterable[TurnDict],
            flags_out: list[dict[str, Any]] | None = None) -> ValReadings:
    """Both measures over `turns` (gold states), with `spec`."""
    out = ValReadings()
    for td in turns:
        if td.get("workflow") not in spec.workflows:
            continue
        raw = _plain(td)
        turn = parse_turn(raw, spec).turn
        out.turns += 1
        ctx = make_context(spec, turn)
        for e in extract_user_values(turn, ctx.workflow, spec, after=ctx.after,
                                     before=ctx.before):
            held = ctx.after.get(e.candidates[0]) if len(e.candidates) == 1 else None
            sp = ctx.workflow.slots.get(e.candidates[0])
            if held and sp is not None and e.exact and sp.normalize(held) == sp.normalize(
                    e.value):
                out.recorded[e.source] += 1
        for c in compile_turn(ctx):
            a = c.args
            if (isinstance(a, IUVArgs) and a.source != "dropped" and a.confidence >= EXACT
                    and len(a.candidates) == 1):
                out.flags[a.source] += 1
                if flags_out is not None:
                    flags_out.append({"dialogue_id": td["dialogue_id"],
                                      "turn_id": td["turn_id"], "criterion": c.id,
                                      "source": a.source, "user": turn.user})
        for slot, value in ctx.after.items():
            sp = ctx.workflow.slots.get(slot)
            if sp is None or ctx.before.get(slot) == value:
                continue
            forms = sp.surface_forms(value)
            kind: str
            if value == "dontcare":
                kind = "dontcare"
            elif _typed(turn.user, value, forms):
                kind = sp.type
            elif turn.history and _typed(turn.history[-1].agent, value, forms):
                kind = "offered"
            else:
                continue
            without = dict(raw, state_after={k: v for k, v in raw["state_after"].items()
                                             if k != slot})
            t2 = parse_turn(without, spec).turn
            c2 = make_context(spec, t2)
            got = [e for e in extract_user_values(t2, c2.workflow, spec, after=c2.after,
                                                  before=c2.before) if slot in e.candidates
                   and (kind != "dontcare" or e.value == "dontcare")]
            out.typed[kind] += 1
            out.read[kind] += bool(got)
            out.sure[kind] += any(e.exact for e in got)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sage_tod.lab.val_readings",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--spec", type=Path, required=True,
                    help="the MultiWOZ spec (`sage-tod slices` writes multiwoz.yaml)")
    ap.add_argument("--out", type=Path, help="write each false sure flag as a JSON line")
    ap.add_argument("--json", action="store_true", help="print the measures as JSON")
    args = ap.parse_args(argv)
    flags: list[dict[str, Any]] | None = [] if args.out else None
    got = measure(load_spec(args.spec), iter_turns("val"), flags)
    if args.out and flags is not None:
        args.out.write_text("".join(json.dumps(f) + "\n" for f in flags), encoding="utf-8")
    d = got.as_dict()
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    print(f"{d['turns']} validation turns; false sure IUV flags {d['false_sure_flags']} "
          f"{d['flags_by_source']}")
    rec: Mapping[str, Mapping[str, float]] = d["recall"]
    for t, r in rec.items():
        print(f"  {t:12} typed {int(r['typed']):5}  read {r['read']:.3f}  sure {r['sure']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
