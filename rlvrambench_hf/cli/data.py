"""Commands over the typed tables: ``configs``, ``show``, ``export`` and ``verify``."""

from __future__ import annotations

import argparse

from ..data.schema.registry import REGISTRY, card_configs, get_spec
from ..data.schema.spec import ConfigSpec
from ..data.tables.export import FORMATS
from ..data.tables.reader import config_file, decode_labels, read_typed_file
from ..errors import (
    IntegrityError,
    MissingFileError,
    RLVRAMBenchError,
    SchemaError,
    UnknownConfigError,
    first_line,
    quote,
)
from .shared.common import checked_source, choices_text, format_table, source_of


def add_configs(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List the configs of the dataset card: split, rows, columns, whether the source has the "
        "config's file, and what it holds. A config whose file is absent shows 'no' and does not fail the others."
    )
    p.add_argument("--all", action="store_true", help="include the supporting tables the card does not name")
    p.set_defaults(handler=cmd_configs)


def add_show(p: argparse.ArgumentParser) -> None:
    configs = ", ".join(REGISTRY)
    p.description = "Print the first rows of a config, one column per line with its type; null is shown as null."
    p.add_argument("config", metavar="CONFIG", help=f"the config to show: {configs}")
    p.add_argument("--split", help="the config's split (each config has one; checked when given)")
    p.add_argument("--limit", type=_positive, default=5, help="rows to show (default 5)")
    p.set_defaults(handler=cmd_show)


def add_export(p: argparse.ArgumentParser) -> None:
    configs = ", ".join(REGISTRY)
    p.description = (
        "Write a typed config to a file, atomically: CSV with the release's conventions (blank null, "
        "';' lists), Parquet with the datasets features embedded, or JSON Lines with label names."
    )
    p.add_argument("config", metavar="CONFIG", help=f"the config to export: {configs}")
    p.add_argument("--split", help="the config's split (each config has one; checked when given)")
    p.add_argument("--format", choices=FORMATS, required=True, help=f"file format: {choices_text(FORMATS)}")
    p.add_argument("--output", required=True, metavar="FILE", help="file to write (replaced atomically)")
    p.set_defaults(handler=cmd_export)


def add_verify(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Verify the source and print one row per check (kind, subject, status, detail), then the counts: every "
        "file against the SHA-256 of the release manifests and of the studies' seals (corrupted and "
        "listed-but-absent told apart), row counts, key uniqueness, every relation the registry declares "
        "(foreign keys, and columns one table copies from another), and the figures the dataset card states, "
        "counted from the typed tables (eligible processes, recorded attempts, historical source screens, the "
        "not_repeated settings, the 100-step extension, the estimation pool). Exit status 2 with one line when a "
        "check fails; absent files are counted, not failed."
    )
    p.set_defaults(handler=cmd_verify)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {quote(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cmd_configs(args: argparse.Namespace) -> int:
    from ..data.tables.kept import CARDS

    source = source_of(args)
    source.check_card(CARDS)
    specs = REGISTRY.values() if args.all else card_configs()
    rows, failed = [], []
    for spec in specs:
        try:
            table = read_typed_file(config_file(source, spec), spec)
            count, available = table.num_rows, "yes"
        except MissingFileError:
            count, available = None, "no"
        except RLVRAMBenchError as exc:
            count, available = None, "error"
            failed.append(f"{spec.name}: {first_line(exc)}")
        rows.append([spec.name, spec.split, count, len(spec.columns), available, spec.description])
    print(f"source: {source.label}")
    print(format_table(["config", "split", "rows", "columns", "available", "description"], rows))
    if failed:
        raise SchemaError(f"{len(failed)} config(s) could not be read; first: {failed[0]}")
    return 0


def _spec_of(args: argparse.Namespace) -> ConfigSpec:
    spec = get_spec(args.config)
    if args.split is not None and args.split != spec.split:
        raise UnknownConfigError(f"config {spec.name} has no split {quote(args.split)}; its split is {spec.split!r}")
    return spec


def cmd_show(args: argparse.Namespace) -> int:
    spec = _spec_of(args)
    source = source_of(args)
    table = decode_labels(read_typed_file(config_file(source, spec), spec), spec)
    preview = table.slice(0, args.limit).to_pylist()
    print(f"{spec.name} ({spec.split}, {table.num_rows} rows) from {source.label}: {spec.description}")
    headers = ["column", "type"] + [f"row {i + 1}" for i in range(len(preview))]
    body = [[c.name, c.type.display] + [_shown(row[c.name]) for row in preview] for c in spec.columns]
    print(format_table(headers, body))
    labels = [f"{c.name}: {', '.join(c.labels)}" for c in spec.label_columns]
    if labels:
        print("labels: " + "; ".join(labels))
    return 0


def _shown(value: object) -> object:
    if value is None:
        return "null"
    if isinstance(value, str) and len(value) > 48:
        return value[:45] + "..."
    return value


def cmd_export(args: argparse.Namespace) -> int:
    from ..data.tables.export import export_table

    spec = _spec_of(args)
    source = checked_source(args, [args.output])
    rows = export_table(spec, read_typed_file(config_file(source, spec), spec), args.format, args.output)
    print(f"wrote {rows} rows of {spec.name} to {args.output} ({args.format})")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ..data.verify import FAILED, PASSED, verify_source

    source = source_of(args)
    checks = verify_source(source)
    print(f"source: {source.label}")
    print(
        format_table(
            ["check", "subject", "status", "detail"], [[c.kind, c.subject, c.status, c.detail] for c in checks]
        )
    )
    failed = [c for c in checks if c.status == FAILED]
    passed = sum(c.status == PASSED for c in checks)
    absent = len(checks) - passed - len(failed)
    print(f"{passed} passed, {len(failed)} failed, {absent} absent")
    if failed:
        first = failed[0]  # a relation's detail names its tables; its long description would crowd the line out
        where = "" if len(first.subject) > 48 and first.detail else f"{first.subject}: "
        more = f" (and {len(failed) - 1} more failed check(s))" if len(failed) > 1 else ""
        raise IntegrityError(f"verification failed: {where}{first.detail}{more}")
    return 0
