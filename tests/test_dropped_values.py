"""IUV on values s_t drops that u_t leaves standing (issue 13; a system forgetting a value).

Utterances are quoted from MultiWOZ 2.1 (MIT licence) dialogues among the 199 set
aside for development (`$SAGE_TOD_DATA/mwzeval/dev_dialogues.json`); the state
drops are those the published systems' outputs made there (SOLOIST, LABES; the
mwzeval predictions, see tests/fixtures/mwzeval/README.md). The first test fails
without the rule; the others guard its limits (retraction, a mention of the value).
"""

from __future__ import annotations

from collections.abc import Callable

from sage_tod.compiler.compile import compile_turn
from sage_tod.compiler.context import TurnContext
from sage_tod.contracts.criteria import IUVArgs, Outcome
from sage_tod.contracts.turns import Turn
from sage_tod.evaluation.aggregate import repair_signal
from sage_tod.verifiers.base import Item
from sage_tod.verifiers.symbolic import SymbolicVerifier


def _dropped(ctx: TurnContext) -> list[tuple[IUVArgs, Outcome, str]]:
    crits = [c for c in compile_turn(ctx)
             if isinstance(c.args, IUVArgs) and c.args.source == "dropped"]
    decisions = SymbolicVerifier().decide([Item(c, ctx) for c in crits])
    out = []
    for c, d in zip(crits, decisions, strict=True):
        assert isinstance(c.args, IUVArgs)
        out.append((c.args, d.outcome, repair_signal(c, ctx)))
    return out


def test_a_value_forgotten_at_goodbye_fires(make_turn: Callable[..., Turn],
                                            ctx_of: Callable[[Turn], TurnContext]) -> None:
    # PMUL2380 turn 4 (SOLOIST's state drops the restaurant it had)
    t = make_turn("No I think that 's everything ! Goodbye !",
                  "You are welcome. Goodbye.", before={"name": "nusha", "area": "centre"},
                  after={"area": "centre"})
    [(args, outcome, repair)] = _dropped(ctx_of(t))
    assert args.slot == "name" and args.value == "nusha" and outcome is Outcome.TRUE
    assert repair == "keep value 'nusha' in slot name: u_t does not take it back"


def test_a_value_the_user_takes_back_is_not_ignored(make_turn: Callable[..., Turn],
                                                    ctx_of: Callable[[Turn], TurnContext]
                                                    ) -> None:
    # SNG01957 turn 4: "I do n't need a booking after all" (the party size goes)
    t = make_turn("I do n't need a booking after all , sorry . Are there any cheap ones in "
                  "the north ?", "Sure.", before={"people": "2", "area": "centre"},
                  after={"area": "north", "pricerange": "cheap"})
    assert _dropped(ctx_of(t)) == []


def test_a_value_the_user_talks_about_is_not_ignored(make_turn: Callable[..., Turn],
                                                     ctx_of: Callable[[Turn], TurnContext]
                                                     ) -> None:
    # the user names the old value again (here to drop it): no criterion
    t = make_turn("Not nusha , something in the south please .", "Sure.",
                  before={"name": "nusha"}, after={"area": "south"})
    assert _dropped(ctx_of(t)) == []


def test_a_new_search_in_the_workflow_resets_its_entity(make_turn: Callable[..., Turn],
                                                        ctx_of: Callable[[Turn], TurnContext]
                                                        ) -> None:
    # MUL1318 turn 4 (MultiWOZ val, the corpus state): "Can you look for a 2 star hotel in
    # that area if not available then could you try one that is in the east ?" — the
    # name the search had found goes, the area changes
    t = make_turn("Can you look for a cheap one in that area if not available then could "
                  "you try one that is in the east ?", "Sure.",
                  before={"name": "lensfield hotel", "area": "south"},
                  after={"area": "north", "pricerange": "cheap"})
    assert _dropped(ctx_of(t)) == []
