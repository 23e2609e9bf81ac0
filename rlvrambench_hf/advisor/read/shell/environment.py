"""Values a launch file takes from the environment (``$NAME`` in a script, ``${oc.env:NAME}`` in a config): named,
never printed. The readers note each one they substitute; a refusal raised while a file is read has every such value
(of :data:`SHOWN` characters or more, in any of the forms a message quotes it) replaced by its variable's name.
Variables whose names say they hold a secret are never read at all (:data:`.state.SECRET_NAME`)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ....errors import RLVRAMBenchError, quote

#: Shortest value replaced wherever it appears in a refusal (a shorter one, a count, is replaced where quoted).
SHOWN = 4
_USED: ContextVar[dict[str, str] | None] = ContextVar("environment_used", default=None)


def note_environment(name: str, value: str) -> None:
    """Record that the value of ``name`` (``value``) went into the file being read."""
    used = _USED.get()
    if used is not None and value.strip():
        used[name] = value


@contextmanager
def named_environment() -> Iterator[None]:
    """Within: a refusal names the environment variables whose values it would show, instead of the values."""
    token = _USED.set({})
    try:
        yield
    except RLVRAMBenchError as exc:
        used = _USED.get() or {}
        text = str(exc)
        hidden = scrubbed(text, used)
        if hidden == text:
            raise
        replaced = copy.copy(exc)
        replaced.args = (hidden,)
        raise replaced from None
    finally:
        _USED.reset(token)


def scrubbed(text: str, used: dict[str, str]) -> str:
    """``text`` with each value of ``used`` replaced by ``$NAME (from the environment)``."""
    for name, value in sorted(used.items(), key=lambda item: -len(item[1])):
        named = f"${name} (from the environment)"
        for form in dict.fromkeys((repr(value), quote(value), repr(value.strip()), quote(value.strip()))):
            text = text.replace(form, named)
        if len(value.strip()) >= SHOWN:
            text = text.replace(value.strip(), named)
    return text
