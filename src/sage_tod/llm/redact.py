"""Masking an API key in anything that may be written: errors, answers, traces, caches.

Masking only the exact key is not enough: an error body may quote part of it
("invalid key sk-abc...xyz"), a proxy may log it reversed, a hostile server
may echo it back inside an answer. Every run of 8 or more characters that is
a piece of the key or of its reverse is replaced by `***`. Keys shorter than 8
characters are masked whole (and reversed).
"""

from __future__ import annotations

MIN_FRAGMENT = 8
MASK = "***"


class Redactor:
    """`Redactor(key).redact(text)`; a `None` or empty key masks nothing."""

    def __init__(self, key: str | None) -> None:
        self.key = key or ""
        self._grams: set[str] = set()
        self._whole: tuple[str, ...] = ()
        if not self.key:
            return
        if len(self.key) < MIN_FRAGMENT:
            self._whole = tuple({self.key, self.key[::-1]})
            return
        for form in (self.key, self.key[::-1]):
            for i in range(len(form) - MIN_FRAGMENT + 1):
                self._grams.add(form[i:i + MIN_FRAGMENT])

    def redact(self, text: str) -> str:
        if not self.key or not text:
            return text
        for form in self._whole:
            text = text.replace(form, MASK)
        if not self._grams or len(text) < MIN_FRAGMENT:
            return text
        # mark every character covered by an 8-gram of the key (or its reverse); a longer
        # fragment is a chain of overlapping 8-grams, so it is covered whole
        covered = bytearray(len(text))
        grams = self._grams
        for i in range(len(text) - MIN_FRAGMENT + 1):
            if text[i:i + MIN_FRAGMENT] in grams:
                covered[i:i + MIN_FRAGMENT] = b"\x01" * MIN_FRAGMENT
        if not any(covered):
            return text
        out: list[str] = []
        i = 0
        while i < len(text):
            if covered[i]:
                while i < len(text) and covered[i]:
                    i += 1
                out.append(MASK)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)
