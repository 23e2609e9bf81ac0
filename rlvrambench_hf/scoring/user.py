"""A user's own object — an admission policy, a memory estimator — named as ``module:attr`` or
``path/to/file.py:attr``, loaded under a time limit, and calls into it whose failures become one-line errors naming
it (:mod:`.bounded` runs the calls).

Importing the module and creating the object run in the caller's process, bounded (in the main thread, where
signals can interrupt them) by the same time limit as the calls; any ``BaseException`` they raise is a
:class:`~rlvrambench_hf.errors.UserCodeError`. An object loaded here is remembered as the package's own to isolate:
its calls run in a child process (:func:`isolation_for`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

from ..errors import InputError, UserCodeError, UserCodeInterrupted, first_line, quote
from .bounded import DEFAULT_TIMEOUT, Isolation, UserObject, can_fork, checked_timeout

_LOADED: dict[int, Any] = {}  # objects loaded from a spec, by id (kept alive, so that an id is never reused)


class _Expired(BaseException):
    """Raised in the main thread when loading user code takes longer than its time limit."""


def load_object(
    spec: str,
    what: str,
    methods: Sequence[str],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    arguments: Mapping[str, Any] | None = None,
) -> Any:
    """The object named by ``spec`` (a class is instantiated, with ``arguments`` as keyword arguments), which must
    have every method of ``methods``; ``what`` names it in errors (``"policy"``, ``"estimator"``). Importing and
    instantiating are bounded by ``timeout`` seconds where signals allow it (the main thread on POSIX)."""
    limit = checked_timeout(timeout)
    if not isinstance(spec, str):
        raise InputError(f"{what} {quote(spec)} must be given as 'module:attribute' text")
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{what} {quote(spec)} must have the form module:attribute")
    label = f"{what} {quote(spec)}"
    module = _guarded(lambda: _import(module_name, label), f"{label}: importing {module_name}", limit)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{label}: module {module_name} has no attribute {quote(attr)}")
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        cls, given = obj, dict(arguments or {})
        shown = ", ".join(f"{k}={quote(v)}" for k, v in given.items())
        obj = _guarded(lambda: cls(**given), f"{label}: creating {attr}({shown})", limit)
    elif arguments:
        raise InputError(f"{label}: {attr} is not a class, so it takes no arguments")
    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    if missing:
        raise InputError(f"{label} has no method {' or '.join(missing)}")
    _LOADED[id(obj)] = obj
    return obj


def isolation_for(obj: Any) -> Isolation:
    """``"process"`` for an object :func:`load_object` made (nobody else holds it), else ``"thread"``."""
    return "process" if _LOADED.get(id(obj)) is obj and can_fork() else "thread"


def call_user(method: Callable, context: str, label: str, *args: Any, timeout: float | None = DEFAULT_TIMEOUT) -> Any:
    """``method(*args)`` in a worker thread under ``timeout`` seconds; an exception inside it (any
    ``BaseException``) or the expiry is a one-line :class:`UserCodeError` saying ``context``: ``label`` ...."""
    holder = SimpleNamespace(**{label: method})
    return UserObject(holder, context, timeout=timeout).call(label, *args, accept=_as_is)


def _as_is(value: Any) -> Any:
    return value


def _guarded(step: Callable[[], Any], doing: str, limit: float | None) -> Any:
    """``step()`` (user code: an import, a constructor) with its failures as one-line errors saying ``doing``."""
    try:
        with _deadline(limit):
            return step()
    except (InputError, UserCodeError):
        raise
    except _Expired:
        raise UserCodeError(f"{doing} did not finish within {limit:g} s (the time limit)") from None
    except KeyboardInterrupt as exc:
        raise UserCodeInterrupted(f"{doing} raised {first_line(exc, typed=True)}") from None
    except BaseException as exc:  # noqa: B036 - SystemExit of user code is an error too
        raise UserCodeError(f"{doing} failed: {first_line(exc, typed=True)}") from None


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`_Expired` after ``seconds`` in the main thread (SIGALRM); elsewhere, no bound."""
    if seconds is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _import(module_name: str, label: str) -> Any:
    path = Path(module_name)
    if module_name.endswith(".py") or _is_file(path):
        if not _exists(path):
            raise InputError(f"{label}: file {module_name} does not exist")
        if not _is_file(path):
            raise InputError(f"{label}: {module_name} is not a regular file; save the code to a .py file")
        unique = f"rlvrambench_user_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(unique, path)
        if loader_spec is None or loader_spec.loader is None:
            raise InputError(f"{label}: {module_name} cannot be imported as a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[unique] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(unique, None)
            raise
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.append(str(Path.cwd()))  # like `python -m`: a module beside the user is importable
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise InputError(f"{label}: cannot import module {module_name} ({first_line(exc)})") from None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long to be a file
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False
