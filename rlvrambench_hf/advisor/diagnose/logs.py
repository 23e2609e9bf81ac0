"""A failure log read and recognised (pure over text, but for :func:`read_log`): the failure messages of
:mod:`.families` found in it, case-insensitively and across the line breaks a terminal's wrap puts inside a word,
each with its figures (:mod:`.figures`).

The log is read as text, never executed, and in bounded memory whatever its size: a log larger than
:data:`HEAD_BYTES` + :data:`TAIL_BYTES` (a file, a pipe or standard input) keeps its first :data:`HEAD_BYTES` (the
start-up figures) and its last :data:`TAIL_BYTES` (where a failure is), and says how much between them was skipped.
An empty log, binary data (a NUL byte) and text that is mostly not UTF-8 are one line of
:class:`~rlvrambench_hf.errors.InputError`. Terminal colour codes and Ray's ``(WorkerDict pid=…)`` prefixes do not
matter; nor does the log's name: the answer is the same for the same text under any name or on standard input.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from ...errors import InputError, one_line, redact
from ...userfile import binary_head, file_mode, read_ends, reason, stdin_handle
from .families import (
    FAMILIES,
    FAMILY,
    MEMORY_FAMILIES,
    SHADOWED,
    STACKS,
    WRAP_NEEDLES,
    Family,
)
from .figures import Number, numbers_of
from .needles import Needles

#: Bytes read from the start and from the end of a larger log.
HEAD_BYTES, TAIL_BYTES = 1 << 20, 32 << 20
#: Characters of a log line an answer quotes.
EXCERPT_LIMIT = 240
#: Messages of one family read in full: the first ones and the last (the root cause is the first, the final
#: exception the last).
SIGNALS_PER_FAMILY = 20
#: Share of undecodable characters above which a log is binary, not text.
BINARY_SHARE = 0.05
#: Lines holding a word of a wrapped memory message read joined to their neighbours (the first and the last ones),
#: and how many neighbours on each side.
WRAP_ANCHORS, WRAP_REACH = (100, 400), 4
#: The shortest line a terminal's wrap is taken to have cut (narrower terminals are not in use).
WRAP_WIDTH = 60
#: Characters at each end of a log where the stack it runs is looked for (start-up lines, the final traceback).
STACK_CHARS = 1 << 20
_STAMP = re.compile(r" ?\d{2,4}[-/:.]\d{2}")
#: A traceback's frame line (complete by itself), and an exception's line (a record of its own).
_WHOLE = re.compile(r'\s*File "[^"]*", line \d+, in \S+$')
_RAISED = re.compile(r"[a-z_][\w.]*\.[A-Z]\w*(?:Error|Exception|Interrupt)\b")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n]*\x07")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
#: A line of source code that a traceback quotes (``assert …``, ``raise …``, a string literal).
_CODE = re.compile(r"^(?:\([^)]*\)\s*)?(?:\[rank\d+\]:)?\s+(?:assert |raise |if |elif |except |f?\"|f?')")


@dataclass(frozen=True)
class LogText:
    """The text of a log as read: ``text``, the ``label`` naming it in errors, its ``size`` in bytes, whether the
    middle of a larger log was left unread (``cut``) and how many bytes were (``skipped``)."""

    text: str
    label: str
    size: int
    cut: bool = False
    skipped: int = 0

    @property
    def note(self) -> str:
        """What of the log was read (never its name: the answer does not depend on it)."""
        if not self.cut:
            return f"{self.size:,} bytes read"
        return (
            f"{self.size / 2**20:,.1f} MiB; its first {HEAD_BYTES >> 20} MiB and last {TAIL_BYTES >> 20} MiB read, "
            f"{self.skipped / 2**20:,.1f} MiB between them skipped"
        )


@dataclass(frozen=True)
class Signal:
    """One failure message: its ``family`` (:mod:`.families`), ``source`` (the project that prints it), the
    ``position`` in the text, the 1-based ``line`` number, a redacted ``excerpt`` and the ``numbers`` it states."""

    family: str
    source: str
    position: int
    line: int
    excerpt: str
    numbers: tuple[Number, ...] = field(default=())

    def number(self, name: str) -> float | None:
        return next((n.value for n in self.numbers if n.name == name), None)


# ---- reading --------------------------------------------------------------------------------------------------


def read_log(path: str | os.PathLike[str]) -> LogText:
    """The text of the log at ``path`` (``-``: standard input), bounded as the module says; one line of
    :class:`~rlvrambench_hf.errors.InputError` when it is missing, a folder, empty or binary."""
    name = os.fspath(path)
    label = "log (standard input)" if name == "-" else f"log {redact(name)}"
    try:
        if name == "-":
            return _streamed(stdin_handle(label), label)
        mode = file_mode(name, label)
        if stat.S_ISDIR(mode):
            raise InputError(f"{label} is a directory, not a file")
        if stat.S_ISSOCK(mode):
            raise InputError(f"{label} is a socket, which cannot be read as a file; save the log to a file")
        with open(name, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return _streamed(handle, label)
            size = os.fstat(handle.fileno()).st_size
            if size <= HEAD_BYTES + TAIL_BYTES:
                return log_text(handle.read(HEAD_BYTES + TAIL_BYTES), label)
            head = handle.read(HEAD_BYTES)
            handle.seek(size - TAIL_BYTES)
            return _assembled(head, handle.read(TAIL_BYTES), size, label)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {reason(exc)}") from None


def _streamed(handle: IO[bytes], label: str) -> LogText:
    head, tail, size = read_ends(handle, head=HEAD_BYTES, tail=TAIL_BYTES, refused=binary_head)
    return _assembled(head, tail, size, label)


def log_text(content: bytes, label: str, *, size: int | None = None) -> LogText:
    """``content`` (the bytes of a log) as :class:`LogText`; of more than :data:`HEAD_BYTES` + :data:`TAIL_BYTES`,
    its first and last bytes."""
    if len(content) > HEAD_BYTES + TAIL_BYTES:
        return _assembled(content[:HEAD_BYTES], content[-TAIL_BYTES:], len(content), label)
    return _assembled(content, b"", len(content) if size is None else size, label)


def _assembled(head: bytes, tail: bytes, size: int, label: str) -> LogText:
    """The text of a log's ``head`` and ``tail`` bytes (``size`` in all): checked, decoded and cleaned."""
    if binary_head(head) or binary_head(tail):
        raise InputError(f"{label} is binary data (NUL bytes), not a text log")
    skipped = max(size - len(head) - len(tail), 0)
    if skipped and b"\n" in tail:  # the tail starts with the rest of a line cut in two
        tail = tail[tail.index(b"\n") + 1 :]
    text = head.decode("utf-8", errors="replace")
    if tail:
        text += "\n" + tail.decode("utf-8", errors="replace")
    if not text.strip():
        raise InputError(f"{label} is empty: there is no log text to read" if not size else f"{label} holds no text")
    if text.count("\ufffd") > BINARY_SHARE * len(text):
        raise InputError(f"{label} is binary data (not UTF-8 text), not a text log")
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return LogText(text, label, size, bool(skipped), skipped)


# ---- lines and case -------------------------------------------------------------------------------------------


class Lines:
    """Line numbers and line texts of a text, by character position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    @property
    def count(self) -> int:
        return len(self.starts)

    def number(self, position: int) -> int:
        return bisect.bisect_right(self.starts, position)

    def start(self, number: int) -> int:
        return self.starts[number - 1]

    def end(self, number: int) -> int:
        """The position just past line ``number`` (its line break excluded)."""
        return self.starts[number] - 1 if number < len(self.starts) else len(self.text)

    def line(self, number: int, text: str | None = None) -> str:
        return (self.text if text is None else text)[self.start(number) : self.end(number)]

    def span(self, first: int, last: int) -> str:
        first, last = max(first, 1), min(last, len(self.starts))
        return self.text[self.starts[first - 1] : self.end(last)] if first <= last else ""


def lowered(text: str) -> str:
    """``text`` in lower case, character for character (positions kept)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def stack_of(low: str) -> frozenset[str]:
    """The stacks the (lower-cased) log names in its first and last MiB: vLLM, VERL, TRL, DeepSpeed, Ray, ..."""
    ends = low if len(low) <= 2 * STACK_CHARS else f"{low[:STACK_CHARS]}\n{low[-STACK_CHARS:]}"
    return frozenset(name for name, words in STACKS.items() if any(w in ends for w in words))


# ---- recognising ----------------------------------------------------------------------------------------------


def recognise(text: str, lines: Lines | None = None, low: str | None = None) -> list[Signal]:
    """Every failure message of ``text``, in the order they appear (one per family and line; the first
    :data:`SIGNALS_PER_FAMILY` of a family and its last)."""
    lines = lines or Lines(text)
    low = lowered(text) if low is None else low
    needles = Needles(low)
    found: dict[tuple[int, str], Signal] = {}
    for family in FAMILIES:
        for number, match in _matches(family, text, low, lines, needles):
            found.setdefault((number, family.name), _signal(family, lines, number, match))
    for signal in _wrapped(low, lines, needles.lines(WRAP_NEEDLES), found):
        found.setdefault((signal.line, signal.family), signal)
    kept = [s for s in found.values() if not any((s.line, f) in found for f in SHADOWED.get(s.family, ()))]
    return sorted(kept, key=lambda s: (s.position, s.family))


def _matches(family: Family, text: str, low: str, lines: Lines, needles: Needles) -> list[tuple[int, re.Match[str]]]:
    """The family's first :data:`SIGNALS_PER_FAMILY` matches and its last, each with its line number: its pattern
    is tried on one line of each shape that holds a needle (the shape's other lines differ only in their digits)."""
    matched = [
        n
        for shape in needles.holding(family.needles)
        if _match(family, text, low, lines, needles.numbers[shape][0]) is not None
        for n in needles.numbers[shape]
    ]
    matched.sort()
    kept = matched if len(matched) <= SIGNALS_PER_FAMILY else [*matched[:SIGNALS_PER_FAMILY], matched[-1]]
    found = ((n, _match(family, text, low, lines, n)) for n in kept)
    return [(n, m) for n, m in found if m is not None]


def _match(family: Family, text: str, low: str, lines: Lines, number: int) -> re.Match[str] | None:
    match = family.pattern.search(lines.line(number, text if family.cased else low))
    if match is None or _CODE.match(lines.line(number)):
        return None  # a source line a traceback quotes is not the message
    return match


def _signal(family: Family, lines: Lines, number: int, match: re.Match[str]) -> Signal:
    line = lines.line(number)
    following = lines.span(number + 1, number + family.follow) if family.follow else ""
    read = logical(lines, number) if family.name in MEMORY_FAMILIES else line
    numbers = tuple(numbers_of(family.name, read, following))
    return Signal(
        family.name, family.source, lines.start(number) + match.start(), number, excerpt(line, match.start()), numbers
    )


def _wrapped(low: str, lines: Lines, anchors: list[int], found: dict[tuple[int, str], Signal]) -> Iterator[Signal]:
    """The memory messages a terminal's wrap cut over lines (mid-word, or at a space it dropped): read in the lines
    around each line holding a word of one (:data:`~.families.WRAP_NEEDLES`; the first and the last ones), joined."""
    done: set[int] = set()
    for anchor in sorted({*anchors[: WRAP_ANCHORS[0]], *anchors[-WRAP_ANCHORS[1] :]}):
        if anchor in done:
            continue
        first, last = max(anchor - WRAP_REACH, 1), min(anchor + WRAP_REACH, lines.count)
        done.update(range(first, last + 1))
        for glue in ("", " "):
            parts = [lines.line(n, low) for n in range(first, last + 1)]
            starts = [0]
            for part in parts[:-1]:
                starts.append(starts[-1] + len(part) + len(glue))
            joined = glue.join(parts)
            for name in MEMORY_FAMILIES:
                for match in FAMILY[name].pattern.finditer(joined):
                    index = bisect.bisect_right(starts, match.start()) - 1
                    if index + 1 >= len(starts) or match.end() <= starts[index + 1]:
                        continue  # within one line: read already
                    number = first + index
                    if (number, name) in found:
                        continue
                    written = glue.join(lines.line(n) for n in range(number, last + 1))
                    at = match.start() - starts[index]
                    numbers = tuple(numbers_of(name, written, ""))
                    family = FAMILY[name]
                    yield Signal(name, family.source, lines.start(number) + at, number, excerpt(written, at), numbers)


def logical(lines: Lines, number: int) -> str:
    """Line ``number`` with the lines a terminal's wrap continued it on (at most :data:`WRAP_REACH`): a long line
    cut inside a word, or at a space, is followed by lower-case text that is neither indented code nor a new
    record."""
    text = lines.line(number)
    width = len(text)
    for after in range(number + 1, min(number + WRAP_REACH, lines.count) + 1):
        last, following = lines.line(after - 1), lines.line(after)
        if width < WRAP_WIDTH or abs(len(last) - width) > 1 or not _continues(last, following):
            break
        text += following
    return text


def unwrapped(span: str) -> str:
    """``span`` (lines of a log) with the lines a terminal's wrap cut joined again (see :func:`logical`)."""
    out: list[str] = []
    width, last = 0, ""
    for line in span.split("\n"):
        if out and width >= WRAP_WIDTH and abs(len(last) - width) <= 1 and _continues(last, line):
            out[-1] += line
        else:
            out.append(line)
            width = len(line)
        last = line
    return "\n".join(out)


def _continues(last: str, following: str) -> bool:
    """Whether ``following`` continues ``last`` where a terminal cut it: lower-case text or digits (inside a word,
    after punctuation, or after one space) that are neither indented code nor a time stamp starting a record."""
    if not last or not following or following.startswith("  ") or _STAMP.match(following) or _WHOLE.match(last):
        return False
    if _RAISED.match(following):
        return False
    head = following[1:2] if following[0] == " " else following[0]
    return head.islower() or head.isdigit()


def excerpt(line: str, at: int = 0) -> str:
    """A log line as an answer quotes it: one line, credentials redacted, bounded; of a line a progress bar redraws
    (``\\r``), the piece that holds position ``at``."""
    if "\r" in line:
        line = line[line.rfind("\r", 0, at) + 1 :]
        line = line.split("\r", 1)[0]
    return one_line(line.strip(), EXCERPT_LIMIT)


__all__ = [
    "HEAD_BYTES",
    "TAIL_BYTES",
    "Lines",
    "LogText",
    "Signal",
    "excerpt",
    "log_text",
    "lowered",
    "read_log",
    "recognise",
    "stack_of",
]
