"""The rows of the mapping tables (:mod:`.mapping`, :mod:`.trl_mapping`): :class:`Mapped` (keys to one setting, both
ways) and :class:`Scope` (a key compared with what the measurements used)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .conversions import Values, _as_is, _same


@dataclass(frozen=True)
class Mapped:
    """``keys`` of the config → ``setting``; ``read(values, settings so far)`` and ``write(value, settings)``."""

    keys: tuple[str, ...]
    setting: str
    conversion: str
    read: Callable[[Values, Mapping[str, object]], object]
    write: Callable[[object, Mapping[str, object]], Values]
    required: bool = True
    kinds: tuple[str, ...] = ()  # per key, its kind when it is not the setting's
    optional: tuple[str, ...] = ()  # keys that may be null (the conversion then uses other values)
    derived_from: str | None = None  # a setting the conversion may take instead: missing, only it is named

    @property
    def written(self) -> str:
        """How errors name the setting: its keys, multiplied where the conversion is their product."""
        return (" × " if self.conversion.startswith("product") else ", ").join(self.keys)


@dataclass(frozen=True)
class Scope:
    """``key`` compared with the ``measured`` value(s); ``flag`` (formatted with ``value``) when it differs."""

    key: str
    measured: tuple[object, ...]
    flag: str
    absent_is_measured: bool = False  # the tool's default, when the key is left out, is what was measured


def _knob(key: str, setting: str, conversion: str = "same") -> Mapped:
    """A knob (:mod:`.knobs`) read from one key as it is; never required."""
    return Mapped((key,), setting, conversion, _same, _as_is, False)


def mapped_keys(mapping: Sequence[Mapped], scope: Sequence[Scope]) -> set[str]:
    return {k for m in mapping for k in m.keys} | {s.key for s in scope}
