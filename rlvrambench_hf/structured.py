"""JSON and YAML as users write them (configs, plans, score files, a model's config.json), parsed within bounds:
the line and column of an error, libyaml's C loader where it is installed, YAML refused above
:data:`MAX_YAML_BYTES`, at most :data:`MAX_NODES` values once YAML aliases are expanded (an alias bomb stops here),
nesting at most :data:`MAX_DEPTH` deep and integers of at most :data:`MAX_INT_DIGITS` digits (refused before Python
converts them). Every failure is one line of the caller's error class. :mod:`.userfile` reads the files.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from .errors import InputError, RLVRAMBenchError, first_line

#: Most YAML / JSON nodes a config may hold once aliases are expanded (a YAML alias bomb stops here).
MAX_NODES = 200_000
#: Largest YAML text parsed (VERL's generated trainer config is 40 KiB; 4 MiB of YAML is a data file, not a config).
MAX_YAML_BYTES = 4 * 2**20
#: The deepest nesting, and the most digits of an integer, a JSON or YAML file may have (configs nest a few levels).
MAX_DEPTH, MAX_INT_DIGITS = 100, 30


def parse_json(content: bytes | str, label: str, error: type[RLVRAMBenchError] = InputError) -> object:
    """``content`` (the bytes or text of ``label``) as a JSON value, or one line of ``error`` saying why not: not
    UTF-8 (where), not JSON (what, where), nested more than :data:`MAX_DEPTH` deep, or an integer of more than
    :data:`MAX_INT_DIGITS` digits."""
    try:
        text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
    except UnicodeDecodeError as exc:
        raise error(f"{label} is not UTF-8 (byte {exc.start:,} cannot be decoded); save it as UTF-8") from None
    try:
        value = _LongInteger.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{label} is not valid JSON ({exc.msg} at line {exc.lineno:,}, column {exc.colno:,})") from None
    except RecursionError:
        raise error(f"{label}: nested more than {MAX_DEPTH} deep") from None
    except _LongInteger as exc:
        raise error(f"{label} holds {exc}") from None
    count_nodes(value, label, None, error)
    return value


class _LongInteger(ValueError):
    """An integer of more than :data:`MAX_INT_DIGITS` digits, refused before Python converts it."""

    @staticmethod
    def check(text: str) -> str:
        if (digits := len(text.lstrip("+-").replace("_", ""))) > MAX_INT_DIGITS:
            raise _LongInteger(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS} are read)")
        return text

    @staticmethod
    def loads(text: str) -> object:
        return json.loads(text, parse_int=lambda digits: int(_LongInteger.check(digits)))


@functools.cache
def _yaml_loader() -> type:
    """A safe YAML loader (libyaml's, 10-20x faster, where installed) whose integers are bounded in digits."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_yaml_int(self, node: Any) -> int:
            _LongInteger.check(str(node.value))
            return int(super().construct_yaml_int(node))

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def parse_structured(text: str, name: str, suffix: str) -> object:
    """YAML (any suffix but ``.json``; at most :data:`MAX_YAML_BYTES`) or JSON text as plain values; bounded in
    size once expanded."""
    import yaml

    if suffix != ".json" and len(text) > MAX_YAML_BYTES:  # characters: at least as many bytes
        raise InputError(
            f"{name}: {len(text):,} characters of YAML is more than the {MAX_YAML_BYTES >> 20} MiB a config may have"
        )
    try:
        data = _LongInteger.loads(text) if suffix == ".json" else yaml.load(text, Loader=_yaml_loader())
    except _LongInteger as exc:
        raise InputError(f"{name}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"{name}: not valid YAML{where}: {exc.problem or exc.context}") from None
    except (ValueError, yaml.YAMLError) as exc:
        kind = "JSON" if suffix == ".json" else "YAML"
        raise InputError(f"{name}: not valid {kind}: {first_line(exc)}") from None
    except RecursionError:
        raise InputError(f"{name}: nested more than {MAX_DEPTH} deep") from None
    count_nodes(data, name)
    return data


def count_nodes(
    data: object, name: str, limit: int | None = MAX_NODES, error: type[RLVRAMBenchError] = InputError
) -> None:
    """Refuse a structure of more than ``limit`` nodes (shared YAML aliases count each time) or nested more than
    :data:`MAX_DEPTH` deep."""
    stack, seen = [(data, 1)], 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if limit is not None and seen > limit:
            raise error(f"{name}: more than {limit} values (a YAML alias bomb?); refused")
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise error(f"{name}: nested more than {MAX_DEPTH} deep")
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
