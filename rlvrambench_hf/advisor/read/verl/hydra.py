"""Override values as Hydra reads them: through Hydra's own override grammar (hydra-core, the parser VERL's command
line goes through) when it is installed, else by the same rules by hand."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ....errors import InputError
from ..checks import quoted

_ABSENT = object()
#: Hydra's lexer (``hydra/grammar/OverrideLexer.g4``, hydra-core 1.3): INT, FLOAT, and the characters of an
#: unquoted string with no grammar beyond ``key=value`` (no quotes, lists, mappings, sweeps, interpolations).
_UNSIGNED = r"(0|[1-9](_?[0-9])*)"
_INT = re.compile(rf"^[+-]?{_UNSIGNED}$")
_POINT = rf"({_UNSIGNED}\.|{_UNSIGNED}?\.[0-9](_?[0-9])*)"
_FLOAT = re.compile(rf"(?i)^[+-]?({_POINT}|({_UNSIGNED}|{_POINT})e[+-]?[0-9](_?[0-9])*|inf|nan)$")
_PLAIN = re.compile(r"^[A-Za-z0-9_/.@+-]+$")
#: A list of plain elements, each bare or in quotes (``["console","wandb"]``): the same by hand.
_ELEMENT = r"""\s*([A-Za-z0-9_/.@+-]+|"[A-Za-z0-9_/.@+ -]*"|'[A-Za-z0-9_/.@+ -]*')\s*"""
_PLAIN_LIST = re.compile(rf"^\[({_ELEMENT}(,{_ELEMENT})*)?\]$")


class HydraSweep(InputError):
    """An override whose value Hydra reads as a sweep (``a,b``), which a single run refuses."""


def hydra_value(text: str | None) -> object:
    """An override's value as Hydra reads it, through Hydra's own override grammar (hydra-core, the library VERL
    parses its command line with) when it is installed: null, booleans, integers, floats (``1e-3``, ``inf``),
    quoted strings, ``[a, b]`` lists, ``{a: 1}`` mappings; anything else is a string. A value the script computes
    (a marker of :mod:`.launch`) stays text. Without hydra-core, the same rules by hand."""
    if text is None:
        return None
    if _PLAIN.match(text) or _PLAIN_LIST.match(text):  # Hydra's lexer rules by hand (its parser costs 0.1 s)
        return _by_hand(text)
    parsed = _hydra_parsed(text)
    if parsed is not _ABSENT:
        return parsed
    return _by_hand(text)


_PARSER: list[Any] = []


def _hydra_parsed(text: str) -> object:
    """Hydra's reading of ``text`` (:data:`_ABSENT`: hydra-core is not installed, or the text is not Hydra's)."""
    if "\ue000" in text:
        return _ABSENT
    try:
        from hydra.core.override_parser.overrides_parser import OverridesParser
    except ImportError:
        return _ABSENT
    if not _PARSER:
        _PARSER.append(OverridesParser.create())
    try:
        value = _PARSER[0].parse_override(f"k={text}").value()
    except Exception:  # Hydra's grammar refuses it: read it as the text it is
        return _ABSENT
    if not isinstance(value, (str, int, float, bool, list, dict, type(None))):
        raise HydraSweep(
            f"{quoted(text)} is a Hydra sweep (several runs, --multirun); a single run refuses it: quote it "
            "('a,b') or give a list ([a,b])"
        )
    return plain(value)


def _by_hand(text: str) -> object:
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    lower = value.lower()
    if lower == "null":
        return None
    if lower in ("true", "false"):
        return lower == "true"
    if _INT.match(value) and len(value) <= 40:
        return int(value.replace("_", ""))
    if _FLOAT.match(value) and len(value) <= 80:
        return float(value.replace("_", ""))
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        return [_by_hand(v) for v in inner.split(",")] if inner else []
    return value


def plain(value: object) -> object:
    """Mappings and sequences (an OmegaConf DictConfig / ListConfig too) as dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):  # a list, an OmegaConf ListConfig
        return [plain(v) for v in value]
    return value
