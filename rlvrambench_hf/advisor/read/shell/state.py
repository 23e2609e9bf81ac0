"""The state a launch script's reading keeps (:class:`Shell`: its variables, the environment's, its arguments) and the
two kinds of text expansion leaves behind: *markers*, one word each for a value known only when the script runs
(what it is and why it is not known: :func:`marker`, :func:`unresolved`), and *taints*, the names of the
environment variables whose values went into a word (:func:`clean`), so that those values can be named, never
printed, where they are refused."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}([0-9a-f]*){_CLOSE}")
_TAINT_OPEN, _TAINT_CLOSE = "\ue002", "\ue003"
_TAINT = re.compile(f"{_TAINT_OPEN}([0-9a-f]*){_TAINT_CLOSE}")
#: Environment variables whose names say they hold a secret: their values are never read.
SECRET_NAME = re.compile(r"(?i)(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|PRIVATE)(_|$)")

NOT_SET = "not set in the script or environment"
COMPUTED = "computed when the script runs"
ARITHMETIC = "arithmetic over a value the script does not give"
NO_ARGUMENT = "an argument of the script that was not given (give the script's arguments after --)"
SECRET = "an environment variable named as a secret, whose value is never read"


class Shell(dict[str, str]):
    """The script's variables (arrays as :mod:`.arrays` keeps them) and the rest of the state expansion reads: which
    values are the environment's, the script's arguments (``given``: whether any were given) and its name."""

    def __init__(self, environ: Mapping[str, str], arguments: Sequence[str] | None, script: str) -> None:
        super().__init__(environ)
        self.environment = set(environ)
        self.positional = list(arguments or ())
        self.given = arguments is not None
        self.script = script
        self.argument_line: int | None = None  # the first line that reads the script's arguments
        self.line = 0

    def __setitem__(self, key: str, value: str) -> None:
        self.environment.discard(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.environment.discard(key)
        super().__delitem__(key)

    def copy(self) -> Shell:
        other = Shell({}, None, self.script)
        dict.update(other, self)
        other.environment, other.positional, other.given = set(self.environment), list(self.positional), self.given
        other.argument_line, other.line = self.argument_line, self.line
        return other


def marker(what: str, why: str) -> str:
    """``what`` (and ``why`` it is not known) hidden in one word that no shell splitting or quoting changes."""
    return f"{_OPEN}{(what + chr(0) + why).encode().hex()}{_CLOSE}"


def unresolved(text: str) -> tuple[str, str] | None:
    """The first run-time value ``text`` depends on and why it is not known (``("$MODEL", NOT_SET)``), or None."""
    found = _MARKER.search(text)
    if found is None:
        return None
    what, _, why = bytes.fromhex(found.group(1)).decode().partition(chr(0))
    return what, why


def known_text(text: str) -> str:
    """``text`` as far as it is known before the script runs: each marker a space, taints dropped."""
    return _TAINT.sub("", _MARKER.sub(" ", text))


def clean(text: str) -> tuple[str, list[str]]:
    """``text`` without taints, and the environment variables whose values are in it."""
    names = [bytes.fromhex(h).decode() for h in _TAINT.findall(text)]
    return (_TAINT.sub("", text) if names else text), names
