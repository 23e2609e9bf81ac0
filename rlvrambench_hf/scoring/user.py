"""A user's own object — an admission policy, a memory estimator — named as ``module:attr`` or
``path/to/file.py:attr``, and calls into it whose exceptions become one-line errors naming it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, first_line


def load_object(spec: str, what: str, methods: Sequence[str]) -> Any:
    """The object named by ``spec`` (a class is instantiated), which must have every method of ``methods``;
    ``what`` names it in errors (``"policy"``, ``"estimator"``)."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{what} {spec!r} must have the form module:attribute")
    module = _import(module_name, spec, what)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{what} {spec!r}: module {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise InputError(f"{what} {spec!r}: creating {attr}() failed: {first_line(exc, typed=True)}") from None
    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    if missing:
        raise InputError(f"{what} {spec!r} has no method {' or '.join(missing)}")
    return obj


def call_user(method: Callable, context: str, label: str, *args: Any) -> Any:
    """``method(*args)``; an exception inside it is a one-line :class:`InputError` saying ``context``: ``label``
    raised what."""
    try:
        return method(*args)
    except Exception as exc:
        raise InputError(f"{context}: {label} raised {first_line(exc, typed=True)}") from exc


def _import(module_name: str, spec: str, what: str) -> Any:
    path = Path(module_name)
    try:
        if module_name.endswith(".py") or path.is_file():
            if not path.is_file():
                raise InputError(f"{what} {spec!r}: file {module_name} does not exist")
            unique = f"rlvrambench_user_{abs(hash(str(path.resolve())))}"
            loader_spec = importlib.util.spec_from_file_location(unique, path)
            if loader_spec is None or loader_spec.loader is None:
                raise InputError(f"{what} {spec!r}: {module_name} cannot be imported as a Python file")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[unique] = module
            loader_spec.loader.exec_module(module)
            return module
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.append(str(Path.cwd()))  # like `python -m`: a module beside the user is importable
        return importlib.import_module(module_name)
    except InputError:
        raise
    except ModuleNotFoundError as exc:
        raise InputError(f"{what} {spec!r}: cannot import module {module_name} ({exc})") from None
    except Exception as exc:
        raise InputError(f"{what} {spec!r}: importing {module_name} failed: {first_line(exc, typed=True)}") from None
