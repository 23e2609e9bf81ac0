"""The YAML front matter of a dataset card (``README.md``): read the same way for a source and a built release."""

from __future__ import annotations

import re
from typing import Any

from ...errors import RLVRAMBenchError, SchemaError

_FRONT_MATTER = re.compile(r"^---\s*\n(.*?)\n---\s*(\n|$)", re.S)


def read_front_matter(text: str, where: str, error: type[RLVRAMBenchError] = SchemaError) -> dict[str, Any]:
    """The front matter of a card's ``text`` as a mapping; a missing, malformed or non-mapping front matter is a
    one-line ``error`` naming ``where``."""
    import yaml  # PyYAML (about 10 ms to import) only where a card is read

    match = _FRONT_MATTER.match(text)
    if not match:
        raise error(f"{where}: the dataset card has no YAML front matter")
    try:  # libyaml's loader when available: about 10 ms less on the release card
        meta = yaml.load(match.group(1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        at = f" at line {line + 2}" if line is not None else ""
        raise error(f"{where}: malformed YAML in the dataset card's front matter{at}") from None
    if not isinstance(meta, dict):
        raise error(f"{where}: the dataset card's YAML front matter is not a mapping")
    return meta
