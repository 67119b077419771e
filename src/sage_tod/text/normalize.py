"""Folding and tokens: the ground every value reader stands on.

Two spellings of one value must never count as a change or a mismatch:
"Centre"/"center", "Pizza-Hut,"/"pizza hut", "two"/"2". This module folds case,
Unicode, punctuation, British/American spelling and number words into tokens
(`basic`, `tokens_with_spans`); the typed readers (`text.times`, `text.dates`,
`text.numbers`, `text.booleans`) build on it, and `text.keys.normalize_typed`
gives each value its one comparison key.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from functools import lru_cache

from sage_tod.text.memo import remembered
from sage_tod.text.numbers import COUNT_NOUNS, NUMBER_WORDS

# Spelling variants folded to one token everywhere (British/American and common
# abbreviations). Kept small on purpose: slot-specific equivalences belong in a
# spec's categorical `synonyms`.
SPELLING_VARIANTS: Mapping[str, str] = {
    "center": "centre",
    "theater": "theatre",
    "theaters": "theatres",
    "colour": "color",
    "favourite": "favorite",
    "guesthouse": "guest house",
}

_TOKEN_RE = re.compile(r"[a-z0-9]+(?::[0-9]{2})?")


def fold(text: str) -> str:
    """Unicode-fold and lowercase; apostrophes become plain quotes."""
    if text.isascii():  # NFKC leaves ASCII as it is, and it holds no curly quote
        return text.lower()
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


Token = tuple[str, int, int]


def token_text(text: str) -> str:
    """The string `tokens_with_spans` reads `text`'s tokens from: `fold(text)`, or
    `text.lower()` where folding changed the length (offsets must stay the text's).

    Every token's raw spelling is a substring of it (`spellings`), so a reader can rule
    out a word a text cannot hold without tokenising the text (`text.match.Reading`)."""
    folded = fold(text)
    return folded if len(folded) == len(text) else text.lower()


@lru_cache(maxsize=8192)
def tokens_with_spans(text: str) -> tuple[Token, ...]:
    """Normalised tokens of `text` with their character offsets in `text`.

    Offsets refer to the original string (NFKC folding keeps lengths for the
    characters dialogue text uses), so evidence spans can be shown verbatim.
    Cached: the compiler, S1 and S2 read the same few utterances of a turn
    many times (once per slot and surface form), and tokenise each once
    (re-tokenising a long one each time made a 100 kB utterance take minutes).
    """
    folded = token_text(text)
    out: list[Token] = []
    append, known = out.append, _PIECES.get  # this loop is the hottest there is
    for m in _TOKEN_RE.finditer(folded):
        raw = m.group()
        pieces = known(raw)
        if pieces is None:
            pieces = remembered(_PIECES, raw, _pieces, _PIECES_MAX)
        a, b = m.span()
        if len(pieces) == 1:  # nearly every word: its one piece, without the inner loop
            append((pieces[0], a, b))
            continue
        for piece in pieces:
            append((piece, a, b))
    return tuple(out)


# raw token -> its normalised pieces ("guesthouse" -> ("guest", "house")): a dialogue
# corpus has a few thousand distinct words, and each is normalised once, not per mention
_PIECES: dict[str, tuple[str, ...]] = {}
_PIECES_MAX = 100_000  # bounded, whatever the input's vocabulary


def _pieces(raw: str) -> tuple[str, ...]:
    return tuple(normalize_token(raw).split())


@lru_cache(maxsize=4096)
def _token_ends(text: str) -> tuple[int, ...]:
    return tuple(e for _, _, e in tokens_with_spans(text))


def tokens_before(text: str, start: int, k: int, since: int = 0) -> list[str]:
    """The last `k` tokens of `text` that end at or before `start` and begin at or after
    `since` (binary search, not a scan: callers ask this once per candidate value)."""
    toks = tokens_with_spans(text)
    # token ends are non-decreasing, so the tokens ending <= start form a prefix
    n = bisect_right(_token_ends(text), start)
    return [t for t, s, _ in toks[max(0, n - k):n] if s >= since]


def normalize_token(tok: str) -> str:
    """Map one token to its canonical form (spelling variant, number word)."""
    tok = SPELLING_VARIANTS.get(tok, tok)
    if tok in NUMBER_WORDS and tok not in COUNT_NOUNS:
        return str(NUMBER_WORDS[tok])
    return tok


def _special_spellings() -> dict[str, tuple[str, ...]]:
    """token -> the raw words other than itself that the tokenizer turns into it
    ("centre" <- "center", "2" <- "two", "guest" <- "guesthouse"): the only words
    whose tokens differ from their spelling (`normalize_token`)."""
    out: dict[str, list[str]] = {}
    for raw in (*SPELLING_VARIANTS, *NUMBER_WORDS):
        for piece in _pieces(raw):
            if piece != raw:
                out.setdefault(piece, []).append(raw)
    return {tok: tuple(raws) for tok, raws in out.items()}


_SPECIAL = _special_spellings()
SPECIAL_WORDS: Mapping[str, tuple[str, ...]] = {
    raw: _pieces(raw) for raws in _SPECIAL.values() for raw in raws}


def spellings(tok: str) -> tuple[str, ...]:
    """The raw spellings one of which `token_text(t)` contains wherever `tok` is one of
    the tokens of t: `tok` itself, or a word the tokenizer rewrites into it. Any other
    raw token is its own single token, and every raw token is a substring of
    `token_text` (the token pattern matches inside it)."""
    return (tok, *_SPECIAL.get(tok, ()))


def basic_tokens(text: str) -> list[str]:
    return [t for t, _, _ in tokens_with_spans(text)]


@lru_cache(maxsize=4096)
def basic(text: str) -> str:
    """Case, whitespace, punctuation, spelling variants and number words folded
    (memoised: schema values are folded again for every turn)."""
    return " ".join(basic_tokens(text))


def synonym_table(values: Iterable[str], synonyms: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """basic(surface form) -> canonical value, for a categorical slot."""
    table: dict[str, str] = {}
    for v in values:
        table[basic(v)] = v
    for canon, forms in synonyms.items():
        table[basic(canon)] = canon
        for f in forms:
            table.setdefault(basic(f), canon)
    return table


def strip_article(text: str) -> str:
    """"the lensfield hotel" and "lensfield hotel" name the same place."""
    head, _, rest = text.partition(" ")
    return rest if head in {"the", "a", "an"} and rest else text


def is_unset(value: str | None) -> bool:
    """Unset values: missing, empty, or the MultiWOZ placeholders."""
    return value is None or basic(value) in {"", "not mentioned", "none"}
