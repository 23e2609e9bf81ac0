"""The JSON layouts of the registry, read as typed tables through the same cell conversion as CSV files.

Three layouts (:mod:`..schema.spec`): a ``{key: record}`` mapping, whose records repeat their key; a list of
records, the whole file or one member of its object; and an object that is one record, without the members that
other entries of the same file read as lists of records. A nested object whose members the registry declares as
columns (``outer.inner``) is flattened into them; any other object is one cell (``key=value`` pairs). The members of
a record are checked as a set: JSON objects have no order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa

from ...errors import SchemaError, first_line, quote
from ..schema.registry import REGISTRY
from ..schema.spec import JSON_MAPPING, JSON_OBJECT, JSON_RECORDS, NESTED, ConfigSpec
from .cells import check_header, typed_records


def read_json_table(path: str | os.PathLike[str] | bytes, spec: ConfigSpec, name: str) -> pa.Table:
    """The typed table of ``spec`` from the JSON file at ``path`` (or its bytes; ``name``: how errors refer to it)."""
    from ...userfile import parse_json

    try:
        content = path if isinstance(path, bytes) else Path(path).read_bytes()
    except OSError as exc:
        raise SchemaError(f"{name}: cannot be read: {first_line(exc)}", path=name, config=spec.name) from None
    try:
        data = parse_json(content, name, SchemaError)
    except SchemaError as exc:
        raise exc.with_fields(path=name, config=spec.name) from None
    rows = []
    for label, record in json_records(data, spec, name):
        row = flatten(record, spec)
        check_header(list(row), spec, f"{name}: {label}", ordered=False)
        rows.append(row)
    return typed_records(rows, spec.columns, name)


def json_records(data: object, spec: ConfigSpec, name: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The records of ``data`` as ``spec``'s layout places them, each with how errors name it."""
    if spec.layout == JSON_MAPPING:
        return _mapping_records(data, spec, name)
    if spec.layout == JSON_RECORDS:
        if spec.member is None:
            listed = data
        elif isinstance(data, dict):
            listed = data.get(spec.member)
        else:
            _refuse(name, spec, f"a JSON object with a member {spec.member!r} holding a list of records")
        if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
            where = f"member {spec.member!r}" if spec.member else "file"
            _refuse(name, spec, f"its {where} to be a JSON list of records")
        return [(f"{spec.member or 'record'} #{i + 1}", r) for i, r in enumerate(listed)]
    if spec.layout == JSON_OBJECT:
        if not isinstance(data, dict):
            _refuse(name, spec, "a JSON object (one record)")
        apart = record_members(spec.path)
        return [("record", {k: v for k, v in data.items() if k not in apart})]
    raise SchemaError(f"{name}: config {spec.name} is not a JSON layout", path=name, config=spec.name)


def record_members(path: str) -> set[str]:
    """Members of the JSON file at ``path`` that registry entries read as lists of records."""
    return {s.member for s in REGISTRY.values() if s.path == path and s.layout == JSON_RECORDS and s.member}


def flatten(record: Mapping[str, Any], spec: ConfigSpec, prefix: str = "") -> dict[str, Any]:
    """``record`` with every nested object whose members ``spec`` declares as ``outer.inner`` columns flattened."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and any(c.startswith(name + NESTED) for c in spec.column_names):
            out.update(flatten(value, spec, name + NESTED))
        else:
            out[name] = value
    return out


def _mapping_records(data: object, spec: ConfigSpec, name: str) -> list[tuple[str, Mapping[str, Any]]]:
    key = spec.keys[0]
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        _refuse(name, spec, f"a JSON object mapping each {key} to a record")
    for mapped, record in data.items():
        if key in record and record[key] != mapped:
            raise SchemaError(f"{name}: record {quote(mapped)} has {key} {quote(record[key])}", path=name, column=key)
    return [(f"record {quote(mapped)}", record) for mapped, record in data.items()]


def _refuse(name: str, spec: ConfigSpec, expected: str) -> NoReturn:
    raise SchemaError(f"{name}: expected {expected}", path=name, config=spec.name)
