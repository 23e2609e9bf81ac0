"""A config value as VERL's config library reads it: OmegaConf's typed nodes convert what a key of a known type is
given (``omegaconf/nodes.py``, omegaconf 2.3: a boolean from an integer, ``!= 0``, or from ``yes`` / ``on`` / ``true``
/ ``no`` / ``off`` / ``false`` and integer strings; an integer or a float from its text; a string from any scalar), so
``use_remove_padding=16`` is true, as VERL runs it. Anything OmegaConf refuses is left as it is, for the type check
to refuse. Integers of more digits than any setting holds are refused before Python converts them.
"""

from __future__ import annotations

import re

from ....errors import InputError

#: Longest run of digits a value may hold: far above any count (int64 has 19), far below Python's conversion limit.
MAX_DIGITS = 100
_TRUE, _FALSE = ("yes", "y", "on", "true"), ("no", "n", "off", "false")
_INTEGER = re.compile(r"\s*[+-]?[0-9]{1,19}\s*")
_NUMBER = re.compile(r"\s*[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,3})?\s*")


def check_digits(text: str, where: str) -> None:
    """A one-line error when ``text`` holds an integer of more than :data:`MAX_DIGITS` digits."""
    run = max((len(m) for m in re.findall(r"[0-9]+", text)), default=0) if len(text) > MAX_DIGITS else 0
    if run > MAX_DIGITS:
        raise InputError(f"{where}: a number of {run:,} digits (no setting holds more than 19)")


def as_omegaconf(value: object, kind: str) -> tuple[object, str | None]:
    """``value`` as OmegaConf's node of ``kind`` (``bool``, ``int64``, ``float64``, ``string``) converts it, and a
    note saying how when it changed."""
    if value is None:
        return value, None
    converted = _converted(value, kind)
    if converted is value or converted is None:
        return value, None
    return converted, f"{value!r} read as {converted!r}, as OmegaConf converts it for a {_NAMES[kind]} setting"


_NAMES = {"bool": "boolean", "int64": "integer", "float64": "number", "string": "text"}


def _converted(value: object, kind: str) -> object:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return value != 0
        if isinstance(value, str):
            text = value.strip().lower()
            if _INTEGER.fullmatch(text):
                return int(text) != 0
            return True if text in _TRUE else False if text in _FALSE else None
        return None
    if kind == "int64" and isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    if kind == "float64" and isinstance(value, str) and _NUMBER.fullmatch(value):
        return float(value)
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value
