"""Names of a package imported when first asked for (PEP 562), for the packages whose ``__init__`` re-exports more
than a command needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``where`` (name -> module, relative to the
    package) imported from its module when first asked for and kept in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(importlib.import_module(where[name], package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
