"""text.money: the amounts an agent's message states, and the part that quotes charges.

The messages are agents' own words from the τ²-bench airline trajectories in
$SAGE_TOD_DATA/tool-agents (whissle task 37, gpt-4.1-sft task 32; MIT), quoted here.
"""

from __future__ import annotations

from sage_tod.text.money import money_amounts, money_mentions, quoted_span

UPGRADE = ("Your reservation M20IZO is for a one-way economy flight from JFK to MCO on May "
           "22, 2024, with two passengers. The current price for this flight in economy "
           "class was $245 ($136 + $109).\n\nTo upgrade this reservation to business class, "
           "the new total price will be $842 ($430 for HAT268 + $412 for HAT010).\n\nSince the "
           "new price is higher than the original price ($842 vs $245), you will need to pay "
           "the difference of $597.\n\nPlease confirm if you would like to proceed.")


def test_every_amount_with_its_place_and_whether_a_charge_word_leads_to_it() -> None:
    ms = money_mentions(UPGRADE)
    assert [m.value for m in ms] == [245, 136, 109, 842, 430, 412, 842, 245, 597]
    assert all(UPGRADE[m.start:m.end].lstrip("$").replace(",", "") == f"{m.value:g}"
               for m in ms)
    # "price ... was $245" and "higher than the original price ($842 vs $245)" compare
    # prices; "the new total price will be $842 ($430 ... + $412 ...)" and "pay the
    # difference of $597" are what the user pays
    assert [m.value for m in ms if m.quoted] == [842, 430, 412, 597]
    assert money_amounts(UPGRADE, quoted=True) == [m.value for m in ms if m.quoted]


def test_the_quoted_part_runs_from_the_first_charge_sentence_within_the_limit() -> None:
    at = quoted_span(UPGRADE)
    assert at is not None
    text = UPGRADE[at[0]:at[1]]
    assert text.startswith("To upgrade this reservation") and text.endswith("$597")
    short = quoted_span(UPGRADE, limit=80)
    assert short is not None and UPGRADE[short[0]:short[1]].endswith("will be $842")
    assert quoted_span("Flight HAT041 is $146 per passenger.") is None  # a price, no charge
