"""One fix a failure log's diagnosis lists (:class:`Remedy`): the key to set, the change, why, and where it comes
from (``basis``): the log's own figures (``log``), the frameworks' documentation (``docs``), a change the release
measured within the margin (``release``), the advisor's answer to the launch file (``launch``) or the per-phase
model's match (``model``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .part import Part

#: The keys of a fix's JSON, by basis, in their order (a basis not listed: every key).
JSON_KEYS: dict[str, tuple[str, ...]] = {
    "docs": ("key", "trl", "change", "why", "basis"),
    "log": ("key", "trl", "change", "basis", "setting", "why"),
    "release": ("key", "trl", "change", "to", "from", "release_to", "why", "basis", "setting"),
    "launch": ("key", "trl", "change", "why", "basis", "setting", "supported"),
    "model": ("key", "trl", "change", "why", "basis", "setting"),
}
ALL_KEYS = ("key", "trl", "change", "to", "from", "release_to", "why", "basis", "setting", "supported")


@dataclass(frozen=True, eq=False)
class Remedy(Part):
    """A fix: the ``key`` to set (VERL's, or the user's own spelling) and TRL's argument (``trl``, None: no
    counterpart), the ``change`` in words or as a value, ``why``, its ``basis`` and the dataset ``setting`` it
    changes (None when it names none). ``to`` is the value to paste when known; a fix the release measured starts
    from ``before`` and went to ``release_to``; ``supported`` says whether a measurement supports a launch-file
    change. A fix read from its JSON (:meth:`of`) keeps the keys it has beyond these (``extra``) and their order
    (``order``); a fix made here has the keys of its basis (:data:`JSON_KEYS`)."""

    key: str
    trl: str | None
    change: str
    why: str
    basis: str = "docs"
    setting: str | None = None
    to: object = None
    before: object = None
    release_to: object = None
    supported: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = ()

    @classmethod
    def of(cls, fix: Mapping[str, Any]) -> Remedy:
        """A fix given as its JSON (what the diagnosis of a log builds)."""
        return cls(
            str(fix["key"]),
            fix.get("trl"),
            str(fix["change"]),
            str(fix["why"]),
            str(fix.get("basis", "docs")),
            fix.get("setting"),
            fix.get("to"),
            fix.get("from"),
            fix.get("release_to"),
            fix.get("supported"),
            {k: v for k, v in fix.items() if k not in ALL_KEYS},
            tuple(fix),
        )

    def with_key(self, key: str) -> Remedy:
        return replace(self, key=key)

    def pasted(self) -> str:
        """The fix as the user pastes it: ``key=value`` when the value is known, else ``key: what to do``."""
        if self.to is not None:
            return f"{self.key}={self.to}"
        if self.basis in ("launch", "model", "log") or self.change in ("True", "False"):
            return f"{self.key}={self.change}"
        return f"{self.key}: {self.change}"

    def to_json(self) -> dict[str, Any]:
        values = {
            "key": self.key,
            "trl": self.trl,
            "change": self.change,
            "to": self.to,
            "from": self.before,
            "release_to": self.release_to,
            "why": self.why,
            "basis": self.basis,
            "setting": self.setting,
            "supported": self.supported,
            **self.extra,
        }
        return {k: values[k] for k in self.order or JSON_KEYS.get(self.basis, ALL_KEYS)}
