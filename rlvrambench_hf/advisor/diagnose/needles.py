"""Which lines of a log hold which words, found fast in a log of any length (pure over text): the log's distinct line
shapes (its lines in lower case, digits folded to 0: the step lines of a training log collapse to a few) are
searched, not its lines, and each needle only in the shapes that hold its word (:data:`~.families.GATES`); of a
word on a great many distinct lines, the first and last :data:`GATED_SHAPES` are searched (bounded work)."""

from __future__ import annotations

import bisect
import re
import string
from collections import defaultdict

from .families import GATES

#: Line shapes holding a word that are searched for its needles: the first ones and the last ones.
GATED_SHAPES = (2_000, 8_000)
_DIGITS = bytes.maketrans(string.digits.encode(), b"0" * 10)


class Needles:
    """Which lines hold which words, found fast in a log of any length: the log's distinct line shapes (its lines in
    lower case, digits folded to 0: the step lines of a training log collapse to a few; as UTF-8 bytes, where
    folding is one table lookup per byte) are searched, not its lines, and each needle only in the shapes that hold
    its word (:data:`~.families.GATES`)."""

    def __init__(self, low: str) -> None:
        shapes: defaultdict[bytes, list[int]] = defaultdict(list)
        folded = low.encode("utf-8", errors="replace").translate(_DIGITS)
        for number, shape in enumerate(folded.split(b"\n"), 1):
            shapes[shape].append(number)
        self.shapes = list(shapes)
        self.text = b"\n".join(self.shapes)
        self.starts = [0, *(m.end() for m in re.finditer(b"\n", self.text))]
        self.numbers = list(shapes.values())
        self._found: dict[bytes, list[int]] = {}

    def holding(self, needles: tuple[str, ...]) -> list[int]:
        """The shapes that hold one of ``needles``, in the order of their first lines."""
        found: set[int] = set()
        for word in needles:
            needle = word.encode().translate(_DIGITS)
            gate = next((g.encode() for g in GATES if g in word), needle)
            found.update(s for s in self._gated(gate) if gate == needle or needle in self.shapes[s])
        return sorted(found)

    def lines(self, needles: tuple[str, ...]) -> list[int]:
        """The numbers of the lines holding one of ``needles``, in order."""
        return sorted(n for shape in self.holding(needles) for n in self.numbers[shape])

    def _gated(self, word: bytes) -> list[int]:
        """The shapes holding ``word``: the first and the last :data:`GATED_SHAPES` of them (a word on every line of
        a log of distinct lines is not searched for on all of them)."""
        if word not in self._found:
            first: list[int] = []
            at = self.text.find(word)
            while at >= 0 and len(first) < GATED_SHAPES[0]:
                first.append(shape := self._shape(at))
                at = self.text.find(word, self._end(shape))
            last: list[int] = []
            if at >= 0:
                at = self.text.rfind(word)
                while at >= 0 and len(last) < GATED_SHAPES[1] and (shape := self._shape(at)) > first[-1]:
                    last.append(shape)
                    at = self.text.rfind(word, 0, self.starts[shape])
            self._found[word] = first + last[::-1]
        return self._found[word]

    def _shape(self, position: int) -> int:
        return bisect.bisect_right(self.starts, position) - 1

    def _end(self, shape: int) -> int:
        return self.starts[shape + 1] if shape + 1 < len(self.starts) else len(self.text)
