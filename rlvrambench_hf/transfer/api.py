"""Where the transfer tasks meet a source: the typed tables, a per-process cache of scoring keys, and the
entry points that load and score in one call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from ..data.sources.base import Source
from ..data.sources.resolve import Request, SourceLike, open_source, request
from ..data.tables.reader import load_table
from ..scoring.intervals import IntervalsLike
from .key import ScoringKey, check_track, scoring_key
from .score import score_predictions
from .tasks import reference_predictions

#: The configs the transfer tasks read: the queries, the labels they are scored against and the settings.
QUERIES_CONFIG, LABELS_CONFIG, SETTINGS_CONFIG = "transfer_queries", "outcomes", "configurations"


def load_transfer_tables(
    source: SourceLike = None, revision: str | None = None, *, settings: bool = False
) -> dict[str, pa.Table]:
    """The typed tables the transfer features read: queries, decoded outcomes and, if asked, settings."""
    src = open_source(source, revision)
    tables = {"queries": load_table(QUERIES_CONFIG, src), "outcomes": load_table(LABELS_CONFIG, src, decode=True)}
    if settings:
        tables["configurations"] = load_table(SETTINGS_CONFIG, src)
    return tables


_KEYS: dict[tuple[Request, str | None], ScoringKey] = {}


def cached_scoring_key(source: SourceLike = None, revision: str | None = None, track: str | None = None) -> ScoringKey:
    """The scoring key of a source, loaded once per process and reused (keyed by what ``source`` and ``revision``
    mean, environment applied: :func:`~rlvrambench_hf.data.sources.resolve.request`; a Source object is not
    cached)."""
    track = check_track(track)
    if isinstance(source, Source):
        return scoring_key(**_key_tables(source, revision), track=track)
    token = (request(source, revision), track)
    key = _KEYS.get(token)
    if key is None:
        key = scoring_key(**_key_tables(source, revision), track=track)
        key.scope_counts, key.cell_base  # noqa: B018 - computed once, while caching
        _KEYS[token] = key
    return key


def subset_scoring_key(
    query_ids: Sequence[str], source: SourceLike = None, revision: str | None = None, track: str | None = None
) -> ScoringKey:
    """The scoring key of a subset of the selected queries (``query_ids``, each once, all among the track's
    queries): a loop that evaluates on part of a track is scored on that part alone."""
    import pyarrow.compute as pc

    from ..errors import InputError, summary

    ids = pa.array([str(q) for q in query_ids], pa.string())
    if len(ids) == 0:
        raise InputError("a partial score needs at least one query id")
    if pc.count_distinct(ids).as_py() != len(ids):
        raise InputError(f"query_ids: {len(ids) - pc.count_distinct(ids).as_py()} duplicated query id(s)")
    full = cached_scoring_key(source, revision, track)
    known = pc.is_in(ids, value_set=full.query_ids)
    if not pc.all(known).as_py():
        unknown = pc.filter(ids, pc.invert(known)).to_pylist()
        scope = "the selected queries" if full.track == "all" else f"the queries of track {full.track}"
        raise InputError(f"query_ids: {len(unknown)} id(s) not among {scope} (e.g. {summary(unknown[:3])})")
    tables = _key_tables(source, revision)
    queries = tables["queries"].filter(pc.is_in(tables["queries"].column("query_id"), value_set=ids))
    return scoring_key(queries, tables["outcomes"], track=full.track)


def text_rows(source: SourceLike, config: str, revision: str | None = None) -> list[dict[str, str]]:
    """The rows of a config's CSV file exactly as text, in header order (a blank cell is ``""``), as upstream's
    ``csv.DictReader`` gives them; the file is verified against the release's manifest first."""
    import pyarrow.csv as pacsv

    from ..data.schema.registry import get_spec

    spec = get_spec(config)
    path = open_source(source, revision).path(spec.path)
    convert = pacsv.ConvertOptions(
        column_types={c.name: pa.string() for c in spec.columns},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
    )
    table = pacsv.read_csv(path, convert_options=convert)
    if any(field.type != pa.string() for field in table.schema):
        from ..errors import SchemaError

        extra = [f.name for f in table.schema if f.name not in {c.name for c in spec.columns}]
        raise SchemaError(f"{spec.path}: columns the registry does not know: {', '.join(extra)}", path=spec.path)
    return cast("list[dict[str, str]]", table.to_pylist())


def upstream_inputs(
    source: SourceLike = None, revision: str | None = None, track: str | None = None
) -> list[dict[str, Any]]:
    """``benchmark.py inputs``' task list (:mod:`.upstream`) of a release."""
    from .upstream import upstream_task_inputs

    src = open_source(source, revision)
    rows = {name: text_rows(src, name) for name in (QUERIES_CONFIG, SETTINGS_CONFIG, LABELS_CONFIG)}
    return upstream_task_inputs(rows[QUERIES_CONFIG], rows[SETTINGS_CONFIG], rows[LABELS_CONFIG], track)


def _key_tables(source: SourceLike, revision: str | None) -> dict[str, pa.Table]:
    tables = load_transfer_tables(source, revision)
    return {"queries": tables["queries"], "outcomes": tables["outcomes"]}


def score_lists(
    query_ids: Sequence[str],
    predictions: Sequence[str],
    *,
    track: str | None = "all",
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """Score prediction lists against the hidden labels of the source (cached per process); ``intervals`` as
    :func:`~rlvrambench_hf.transfer.score.score_predictions`."""
    key = cached_scoring_key(source, revision, track)
    return score_predictions(key, query_ids, predictions, intervals=intervals)


def compare_lists(
    query_ids: Sequence[str],
    predictions: Mapping[str, Sequence[str]],
    *,
    track: str | None = "all",
    source: SourceLike = None,
    revision: str | None = None,
    intervals: IntervalsLike = True,
) -> dict[str, Any]:
    """The paired comparison (:func:`~rlvrambench_hf.transfer.compare.compare_predictions`) of two named prediction
    lists on the same ``query_ids`` (``{"mine": [...], "source_label": [...]}``, A first): per scope and metric,
    A − B with its interval and a one-line reading."""
    from ..errors import InputError
    from ..scoring.intervals import IntervalOptions, interval_options
    from .compare import compare_predictions
    from .score import align_predictions

    if not isinstance(predictions, Mapping) or len(predictions) != 2:
        raise InputError("compare_lists takes a mapping of exactly two names to prediction lists")
    key = cached_scoring_key(source, revision, track)
    options = interval_options(intervals) or IntervalOptions()
    name_a, name_b = predictions
    aligned = tuple(align_predictions(key, query_ids, p, f"predictions {n}") for n, p in predictions.items())
    return compare_predictions(key, (aligned[0], aligned[1]), (name_a, name_b), options)


def reference_scores(
    rule: str,
    source: SourceLike = None,
    revision: str | None = None,
    track: str | None = None,
    *,
    intervals: IntervalsLike = None,
) -> dict[str, Any]:
    """The full score dict of a built-in rule (``intervals`` as in :func:`score_lists`)."""
    tables = load_transfer_tables(source, revision)
    predictions = reference_predictions(tables["queries"], tables["outcomes"], rule, track)
    key = scoring_key(tables["queries"], tables["outcomes"], track)
    ids, states = predictions.column("query_id"), predictions.column("predicted_state")
    return score_predictions(key, ids, states, intervals=intervals)
