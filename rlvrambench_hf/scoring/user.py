"""A user's own object — an admission policy, a memory estimator — named as ``module:attr`` or
``path/to/file.py:attr``, loaded under a time limit, and calls into it whose failures become one-line errors naming
it (:mod:`.bounded` runs the calls).

Where processes can be forked (POSIX), importing the module and creating the object happen in a child process of
its own, contained from import to exit (:mod:`.contained`: below a keeper that ends all it starts, unable to
reach the command, bounded in memory, disk and output): an ``os._exit``, a thread that never ends or a fork at
import cannot touch the command. Each
step is bounded by the same time limit as the calls; any ``BaseException`` it raises is a
:class:`~rlvrambench_hf.errors.UserCodeError`. Elsewhere they run in the caller's process, bounded in the main
thread, and the object is remembered as the package's own to isolate (:func:`isolation_for`).
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
from functools import partial
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

from ..errors import InputError, RLVRAMBenchError, UserCodeError, UserCodeInterrupted, first_line, quote
from .bounded import (
    DEFAULT_TIMEOUT,
    Isolation,
    RemoteObject,
    Reply,
    UserObject,
    can_fork,
    checked_timeout,
    run_request,
)
from .contained import Child, refuse

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
    have every method of ``methods``;
    ``what`` names it in errors (``"policy"``, ``"estimator"``). Importing and instantiating are bounded by
    ``timeout`` seconds each. Where processes can be forked, both happen in a child process of its own and the
    object stays there: a :class:`~.bounded.RemoteObject` (see :mod:`.contained`); elsewhere they happen in this
    process, bounded where signals allow it (the main thread)."""
    limit = checked_timeout(timeout)
    if not isinstance(spec, str):
        raise InputError(f"{what} {quote(spec)} must be given as 'module:attribute' text")
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"{what} {quote(spec)} must have the form module:attribute")
    label = f"{what} {quote(spec)}"
    given = dict(arguments or {})
    if can_fork():
        return _contained(module_name, attr, label, methods, limit, given)
    module = _guarded(lambda: _import(module_name, label), f"{label}: importing {module_name}", limit)
    obj = _made(module, module_name, attr, label, partial(_create, given=given, limit=limit), given)
    _check_methods(obj, label, methods)
    _LOADED[id(obj)] = obj
    return obj


def _create(cls: Any, doing: str, *, given: Mapping[str, Any], limit: float | None) -> Any:
    return _guarded(lambda: cls(**given), doing, limit)


def _made(
    module: Any,
    module_name: str,
    attr: str,
    label: str,
    create: Callable[[Any, str], Any],
    arguments: Mapping[str, Any],
) -> Any:
    """The attribute ``attr`` of ``module``; a class is instantiated by ``create(cls, doing)`` (with ``arguments``,
    which only a class takes)."""
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{label}: module {module_name} has no attribute {quote(attr)}")
        obj = getattr(obj, part)
    if not inspect.isclass(obj):
        if arguments:
            raise InputError(f"{label}: {attr} is not a class, so it takes no arguments")
        return obj
    shown = ", ".join(f"{k}={quote(v)}" for k, v in arguments.items())
    return create(obj, f"{label}: creating {attr}({shown})")


def _check_methods(obj: Any, label: str, methods: Sequence[str]) -> None:
    missing = [m for m in methods if not callable(getattr(obj, m, None))]
    if missing:
        raise InputError(f"{label} has no method {' or '.join(missing)}")


def _contained(
    module_name: str,
    attr: str,
    label: str,
    methods: Sequence[str],
    limit: float | None,
    arguments: Mapping[str, Any],
) -> Any:
    """The object, imported and created in a child process of its own (a :class:`RemoteObject` named as its
    class is)."""

    def start() -> tuple[Child, str]:
        made = partial(_make_in_child, module_name, attr, label, tuple(methods), dict(arguments))
        child = Child(made, run_request)
        return child, _ready(child, label, limit)

    first, name = start()
    cls = type(name or "object", (RemoteObject,), {})
    remote: RemoteObject = cls(lambda: start()[0], label, limit, first)
    return remote


def _make_in_child(
    module_name: str,
    attr: str,
    label: str,
    methods: tuple[str, ...],
    arguments: dict[str, Any],
    step: Callable[[str], None],
) -> Any:
    """The object, made in the child: each step announced (``step``), every failure a reply (see :func:`refuse`)."""
    doing = f"{label}: importing {module_name}"
    step(doing)
    try:
        module = _import(module_name, label)

        def create(cls: Any, creating: str) -> Any:
            nonlocal doing
            doing = creating
            step(doing)
            return cls(**arguments)

        obj = _made(module, module_name, attr, label, create, arguments)
        _check_methods(obj, label, methods)
    except (InputError, UserCodeError) as exc:
        raise refuse(("refused", exc)) from None
    except BaseException as exc:  # noqa: B036 - SystemExit of user code is an error too
        interrupted = isinstance(exc, KeyboardInterrupt)
        raise refuse(("raised", interrupted, f"{doing}\0{first_line(exc, typed=True)}", "")) from None
    return obj


def _ready(child: Child, label: str, limit: float | None) -> str:
    """Wait for ``child`` to have made the object (each step within ``limit`` seconds): the name of its class,
    or one line saying why not (the child is stopped)."""
    doing = f"{label}: importing"
    while True:
        message = child.receive(limit)
        if message is not None and message[0] == "step":
            doing = message[1]
            continue
        if message is not None and message[0] == "ready":
            return str(message[1])
        if message is not None and message[0] == "stray":
            doing = f"{label}: its module or constructor"
        child.stop()
        raise _load_failure(message, doing, child.output.total, limit or 0.0)


def _load_failure(message: Reply | None, doing: str, printed: int, limit: float) -> RLVRAMBenchError:
    """The one line for a load that ended with ``message`` (None: it ran out of time) during ``doing``."""
    said = f" (it printed {printed:,} bytes)" if printed else ""
    if message is None:
        return UserCodeError(f"{doing} did not finish within {limit:g} s (the time limit){said}")
    kind = message[0]
    if kind == "refused":
        error: RLVRAMBenchError = message[1]
        return error
    if kind == "died":
        return UserCodeError(f"{doing} ended the process it ran in ({message[1]}){said}")
    if kind == "stray":
        return UserCodeError(f"{doing} {message[1]}{said}")
    interrupted, text = message[1], str(message[2])
    doing, _, text = text.rpartition("\0") if "\0" in text else (doing, "", text)
    if interrupted:
        return UserCodeInterrupted(f"{doing} raised {text}{said}")
    return UserCodeError(f"{doing} failed: {text}{said}")


def isolation_for(obj: Any) -> Isolation:
    """``"process"`` for an object :func:`load_object` made (nobody else holds it), else ``"thread"``."""
    if isinstance(obj, RemoteObject):
        return "process"
    return "process" if _LOADED.get(id(obj)) is obj and can_fork() else "thread"


def call_user(
    method: Callable[..., Any], context: str, label: str, *args: Any, timeout: float | None = DEFAULT_TIMEOUT
) -> Any:
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
