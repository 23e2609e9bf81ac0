"""The base of every typed part of an answer: frozen, serialised by :meth:`Part.to_json` (the JSON contract of
``advise --output F.json``) and readable as a mapping of that JSON, as code written against the JSON reads it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class Part(Mapping[str, Any]):
    """A typed part of an answer. Code of this package reads its attributes; ``part["key"]`` (and ``dict(part)``)
    read its JSON, so that a script written against the JSON dicts keeps working. Subclasses are frozen
    dataclasses declared with ``eq=False``: two parts are equal when their JSON is."""

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


def as_json(value: Any) -> Any:
    """``value`` in JSON's types: parts by :meth:`Part.to_json`, tuples as lists, mappings item by item."""
    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: as_json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, eq=False)
class UserKeys(Part):
    """A setting's new value as the user writes it: VERL overrides (``key=value``), TRL arguments (``--key
    value``) and entries of the accelerate config; empty where the tool has no such key."""

    verl_overrides: tuple[str, ...] = ()
    trl_arguments: tuple[str, ...] = ()
    accelerate_config: tuple[str, ...] = ()

    @classmethod
    def of(cls, keys: Mapping[str, Sequence[str]]) -> UserKeys:
        return cls(tuple(keys["verl_overrides"]), tuple(keys["trl_arguments"]), tuple(keys["accelerate_config"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "verl_overrides": list(self.verl_overrides),
            "trl_arguments": list(self.trl_arguments),
            "accelerate_config": list(self.accelerate_config),
        }
