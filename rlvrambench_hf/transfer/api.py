"""Where the transfer tasks meet a source: the typed tables, a per-process cache of scoring keys, and the
entry points that load and score in one call."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..data.sources.base import Source
from ..data.sources.resolve import Request, SourceLike, open_source, request
from ..data.tables.reader import load_table
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
) -> dict:
    """Score prediction lists against the hidden labels of the source (cached per process)."""
    return score_predictions(cached_scoring_key(source, revision, track), query_ids, predictions)


def reference_scores(
    rule: str, source: SourceLike = None, revision: str | None = None, track: str | None = None
) -> dict:
    """The full score dict of a built-in rule."""
    tables = load_transfer_tables(source, revision)
    predictions = reference_predictions(tables["queries"], tables["outcomes"], rule, track)
    key = scoring_key(tables["queries"], tables["outcomes"], track)
    return score_predictions(key, predictions.column("query_id"), predictions.column("predicted_state"))
