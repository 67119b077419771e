"""The workflow's lexicon: every value form the extractor looks for, built once per workflow.

The extractor used to screen every categorical form of the workflow against each user
turn (one `anchor_tokens` test and, for the forms that passed, one `find_value` call
that prepared the value again), and several readers rebuilt the same sets of value
words per turn ("others": what is a value of some slot and so never a name alone).
All of that depends on the workflow only, so it is built here once (`lexicon(wf)`,
kept with the workflow through `contracts.spec.Derived`):

- `forms`: every categorical / boolean / listed-free surface form in the order
  `values.categorical` reads them (longest first), each with its `ValueQuery`
  prepared once;
- `by_anchor`: first content token -> the forms that token can start, so a turn's
  candidate forms are found from its own tokens, O(tokens) instead of O(forms);
  `by_compact`: a form's letters without spaces -> the forms read from a bigram
  ("swimming pool" for "swimmingpool");
- the sets of value words the name, offer and place readers exclude.

`candidates` returns exactly the forms the old loop would have found anything for
(a form none of whose anchors the text holds, and whose compact spelling is no
bigram of it, found nothing there): `tests/test_lexicon.py` checks this against the
loop over every form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sage_tod.compiler.cues import domain_words
from sage_tod.contracts.spec import Derived, SlotSpec, Workflow
from sage_tod.text.booleans import normalize_boolean
from sage_tod.text.match import GRADES, ValueQuery, anchor_tokens, gradable
from sage_tod.text.normalize import basic


@dataclass(frozen=True)
class ValueForm:
    """One surface form of a value of `spec`: how `values.categorical` looks for it."""

    length: int  # length of its folded spelling: the reading order, longest first
    form: str
    canon: str
    spec: SlotSpec
    anchors: frozenset[str] | None  # `match.anchor_tokens(form)`; None: never screened out
    compact: str  # the folded form without spaces
    # `ValueQuery(form, None)`, prepared once; a graded form's is its slot's
    # (`ValueQuery(form, spec)`, which reads "moderately" and "cheapest" as the value)
    query: ValueQuery
    graded: bool = False


# a compact spelling shorter than this is never read from a bigram ("a b" is no value)
_MIN_COMPACT = 8


def _compact(value: str) -> str:
    return basic(value).replace(" ", "")


def _categorical_forms(wf: Workflow) -> tuple[ValueForm, ...]:
    """Every surface form `values.categorical` looks for, longest first (a stable sort:
    forms of one length keep the slots' and values' order)."""
    forms: list[tuple[int, str, str, SlotSpec]] = []
    for spec in wf.slots.values():
        if spec.type in {"categorical", "boolean"} or (spec.values and spec.type == "free"):
            for canon in spec.values:
                for f in spec.surface_forms(canon):
                    forms.append((len(basic(f)), f, canon, spec))
                    if (spec.type == "categorical" and normalize_boolean(f) is None
                            and f.isalpha() and len(f) >= 4 and not f.endswith("s")):
                        # "museums", "cinemas": a type asked for in the plural
                        forms.append((len(basic(f)) + 1, f + "s", canon, spec))
                    words = basic(f).split()
                    if spec.type == "categorical" and any(
                            w.endswith("s") and len(w) > 4 for w in words):
                        # "King 's Lynn" for "kings lynn": the possessive as tokenised
                        alt = " ".join(w[:-1] + " s" if w.endswith("s") and len(w) > 4 else w
                                       for w in words)
                        forms.append((len(basic(f)), alt, canon, spec))
    out = []
    for n, f, canon, spec in sorted(forms, key=lambda x: -x[0]):
        graded = _graded(f, spec)
        out.append(ValueForm(n, f, canon, spec, _anchors(f, graded), _compact(f),
                             ValueQuery(f, spec if graded else None), graded))
    return tuple(out)


def _graded(form: str, spec: SlotSpec) -> bool:
    """A one-word categorical value that is no yes/no word: its adverb and superlative
    state it too ("moderately priced", "the cheapest"), as the slot's own query reads
    them (`ValueQuery` grades a categorical slot's one-word values)."""
    word = basic(form)
    return (spec.type == "categorical" and " " not in word and gradable(word)
            and normalize_boolean(form) is None)


def _anchors(form: str, graded: bool) -> frozenset[str] | None:
    """`match.anchor_tokens(form)`, and for a graded form its adverb and superlative,
    which hold none of its tokens."""
    anchors = anchor_tokens(form)
    word = basic(form)
    if anchors is None or not graded:
        return anchors
    # not the comparative: "which one is cheaper", "cheaper than AIRBNB" compare, they
    # ask for no price range (MultiWOZ MUL2259 turn 3, MUL2677 turn 4)
    return anchors | {word + suffix for suffix in GRADES if suffix != "er"}


@dataclass(frozen=True)
class Lexicon:
    """The value forms and value words of one workflow (see the module docstring)."""

    forms: tuple[ValueForm, ...]
    by_anchor: Mapping[str, tuple[int, ...]]
    by_compact: Mapping[str, tuple[int, ...]]
    unscreened: tuple[int, ...]  # forms without anchors (waivers): read in every text
    # basic(surface form) of every listed value of every slot ("cheap", "guest house")
    value_words: frozenset[str]
    # value words of every slot but the name slot, the workflow's own words and its id:
    # never a name alone
    others: frozenset[str]
    name_slot: str | None  # the one free slot that names the entity, if there is one

    def candidates(self, said: Iterable[str], bigrams: Iterable[str]) -> list[int]:
        """Indices into `forms`, in reading order, of the forms a text may hold: one of
        its content tokens (`said`) is an anchor of the form, the form has no anchors,
        or its compact spelling is one of the text's `bigrams` (two tokens joined)."""
        got: set[int] = set(self.unscreened)
        by_anchor = self.by_anchor
        for tok in said:
            hit = by_anchor.get(tok)
            if hit is not None:
                got.update(hit)
        by_compact = self.by_compact
        for pair in bigrams:
            hit = by_compact.get(pair)
            if hit is not None:
                got.update(hit)
        return sorted(got)


def _name_slot(wf: Workflow) -> str | None:
    names = [s.name for s in wf.slots.values() if s.type == "free"
             and "name" in re.findall(r"[a-z]+", s.name.lower())]
    return names[0] if len(names) == 1 else None


def _build(wf: Workflow) -> Lexicon:
    forms = _categorical_forms(wf)
    by_anchor: dict[str, list[int]] = {}
    by_compact: dict[str, list[int]] = {}
    unscreened: list[int] = []
    for i, vf in enumerate(forms):
        if vf.anchors is None:
            unscreened.append(i)
        else:
            for tok in vf.anchors:
                by_anchor.setdefault(tok, []).append(i)
        if len(vf.compact) >= _MIN_COMPACT:
            by_compact.setdefault(vf.compact, []).append(i)
    value_words = frozenset(basic(f) for sp in wf.slots.values() for v in sp.values
                            for f in sp.surface_forms(v))
    name_slot = _name_slot(wf)
    # the name slot's own catalogue (the database's entity names) are names, not values
    # of another slot: the name and offer readers must not turn them down
    not_names = frozenset(basic(f) for sp in wf.slots.values() if sp.name != name_slot
                          for v in sp.values for f in sp.surface_forms(v))
    return Lexicon(forms, {k: tuple(v) for k, v in by_anchor.items()},
                   {k: tuple(v) for k, v in by_compact.items()}, tuple(unscreened),
                   value_words, not_names | domain_words(wf) | {basic(wf.id)}, name_slot)


_LEXICON: Derived[Workflow, Lexicon] = Derived("lexicon", _build)


def lexicon(wf: Workflow) -> Lexicon:
    """The workflow's lexicon, built the first time it is asked for."""
    return _LEXICON.of(wf)


def _no_keys(wf: Workflow) -> dict[str, frozenset[str]]:
    return {}


# slot -> the comparison keys of its listed values, filled per slot as they are asked for
# (a catalogue of 221 names is normalised once per workflow, not once per question)
_VALUE_KEYS: Derived[Workflow, dict[str, frozenset[str]]] = Derived("lexicon.value_keys",
                                                                    _no_keys)


def value_keys(wf: Workflow, slot: str) -> frozenset[str]:
    """`SlotSpec.normalize` of every listed value of `slot`: "is this a value of the
    slot?" asked in one set lookup."""
    keys = _VALUE_KEYS.of(wf)
    got = keys.get(slot)
    if got is None:
        sp = wf.slots[slot]
        got = keys[slot] = frozenset(sp.normalize(v) for v in sp.values)
    return got
