"""Transfer tasks: leak-free task inputs, the reference rules and the scoring of label predictions.

Everything here is a pure function over typed tables (``transfer_queries``, ``outcomes``, ``configurations``) or
numpy/pyarrow arrays, except the two clearly marked loading helpers at the end. Labels are coded by their
position in :data:`~rlvrambench_hf.registry.OUTCOME_LABELS` (0 within margin, 1 above margin, 2 memory failure);
approval means predicting ``within_margin``.

Prediction files (decision documented in ``docs/transfer.md``): a UTF-8 byte-order mark is skipped, surrounding
spaces and tabs are stripped from header names and cells, and nothing else is forgiven. Letter case is significant
(``Within_Margin`` is not a label; query ids are matched exactly), extra columns and blank cells are errors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrowtools import arrow_ints, arrow_strings, compact_codes, numpy_ints, one_chunk
from .errors import InputError, SchemaError, UnknownConfigError
from .idmatch import FixedWidthIndex
from .predictions import WHITESPACE, read_prediction_file
from .registry import OUTCOME_LABELS

PROTOCOL_VERSION = "1.1"
TRACKS: tuple[str, ...] = ("model_transfer", "workload_transfer", "gpu_count_transfer", "horizon_transfer")
ALL_TRACKS = "all"
RULES: tuple[str, ...] = ("source_label", "always_approve", "always_reject")
APPROVAL_LABEL = OUTCOME_LABELS[0]
PREDICTION_COLUMNS = ("query_id", "predicted_state")
WITHIN, ABOVE, FAILURE = range(3)

COST_SCOPE = ("source configurations are counted once per scope (overall, track or task); their eligible "
              "processes and recorded attempts are summed over those distinct sources")
COST_WARNING = ("sources are shared between tasks and tracks, so the costs of different scopes overlap: "
                "never add them up across tracks or tasks")
EVALUATION_WARNING = ("open descriptive transfer tasks, not a blind leaderboard: the labels are public, queries "
                      "reuse 94 target configurations, and pooled accuracy is dominated by the workload track; "
                      "report recall, approval precision and approval errors per track")
# Columns that describe a measured outcome or an individual process: never part of a target object.
_PROCESS_COLUMNS = {"training_seed", "run_id", "attempt_id", "experiment_id", "job_id"}


@lru_cache(maxsize=None)
def _labels() -> pa.Array:
    return arrow_strings(OUTCOME_LABELS)


def _scalar(text: str) -> pa.Scalar:
    return arrow_strings([text])[0]


# --------------------------------------------------------------------------- label metrics of one scope

def _rate(numerator: int, denominator: int) -> float | None:
    """``numerator / denominator`` correctly rounded, or None when the denominator is 0."""
    return numerator / denominator if denominator else None


def metrics_from_confusion(confusion: np.ndarray) -> dict:
    """The label metrics of one scope from its 3x3 confusion matrix (predicted rows, observed columns)."""
    c = [[int(v) for v in row] for row in confusion]
    queries = sum(map(sum, c))
    correct = c[0][0] + c[1][1] + c[2][2]
    approved = sum(c[WITHIN])
    target = [c[0][j] + c[1][j] + c[2][j] for j in range(3)]
    approved_within, approved_above, approved_failure = c[WITHIN]
    rejected_within = target[WITHIN] - approved_within
    return {
        "correct_three_state": correct,
        "three_state_accuracy": _rate(correct, queries),
        "approved": approved,
        "approved_memory_failure": approved_failure,
        "approved_above_margin": approved_above,
        "rejected_within_margin": rejected_within,
        "target_within_margin": target[WITHIN],
        "target_above_margin": target[ABOVE],
        "target_memory_failure": target[FAILURE],
        "memory_failure_among_approved": _rate(approved_failure, approved),
        "above_margin_among_approved": _rate(approved_above, approved),
        "approval_rate_on_memory_failure_targets": _rate(approved_failure, target[FAILURE]),
        "approval_rate_on_above_margin_targets": _rate(approved_above, target[ABOVE]),
        "rejection_rate_on_within_margin_targets": _rate(rejected_within, target[WITHIN]),
        "confusion_matrix_predicted_rows_observed_columns": {
            p: {o: c[i][j] for j, o in enumerate(OUTCOME_LABELS)} for i, p in enumerate(OUTCOME_LABELS)
        },
        "approved_within_margin": approved_within,
        "within_margin_recall": _rate(approved_within, target[WITHIN]),
        "within_margin_approval_precision": _rate(approved_within, approved),
    }


def encode_labels(values: Sequence[str] | pa.Array, what: str, codes: pa.Array | None = None) -> np.ndarray:
    """Label codes (int8) of ``values``; a one-line :class:`InputError` names the values outside the three.
    ``codes`` is ``index_in(values, labels)`` when the caller has it already."""
    array = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else arrow_strings(values)
    if codes is None:
        codes = pc.index_in(array, value_set=_labels())
    if codes.null_count:
        bad = pc.filter(array, pc.is_null(codes))
        examples = ", ".join(repr(v) for v in bad.slice(0, 3).to_pylist())
        raise InputError(f"{what}: {len(bad)} value(s) outside {', '.join(OUTCOME_LABELS)} (e.g. {examples}); "
                         "labels are lower case")
    return numpy_ints(codes).astype(np.int8)


def confusion_matrix(predicted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """3x3 counts, predicted rows and observed columns, of two aligned label-code arrays."""
    return np.bincount(predicted.astype(np.intp) * 3 + observed, minlength=9).reshape(3, 3)


def label_metrics(predicted: Sequence[str], observed: Sequence[str]) -> dict:
    """The label-only transfer metrics of one scope: confusion matrix, approvals, approval errors, recall and
    approval precision (rates with a zero denominator are None)."""
    if len(predicted) != len(observed):
        raise InputError(f"label_metrics: {len(predicted)} predicted labels but {len(observed)} observed labels")
    return metrics_from_confusion(confusion_matrix(encode_labels(predicted, "predicted labels"),
                                                   encode_labels(observed, "observed labels")))


# --------------------------------------------------------------------------- the hidden side: a scoring key

def check_track(track: str | None) -> str:
    """``track`` normalised: None and ``"all"`` select every track; an unknown name is a one-line error."""
    if track is None or track == ALL_TRACKS:
        return ALL_TRACKS
    if track not in TRACKS:
        raise UnknownConfigError(f"unknown track {track!r}; tracks: {', '.join(TRACKS)} (or {ALL_TRACKS})")
    return track


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise UnknownConfigError(f"unknown rule {rule!r}; rules: {', '.join(RULES)}")
    return rule


def _encode(values: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (numpy, the smallest integer type that holds them) and the dictionary of a string
    column."""
    encoded = one_chunk(pc.dictionary_encode(values))
    return compact_codes(numpy_ints(encoded.indices), len(encoded.dictionary)), encoded.dictionary


def _lookup(keys: pa.Array, table: pa.Table, column: str, what: str) -> pa.Array:
    """``table[column]`` at the configuration of each key; every key must be present."""
    position = pc.index_in(keys, value_set=table.column("configuration_id"))
    if position.null_count:
        missing = pc.filter(keys, pc.is_null(position)).slice(0, 3).to_pylist()
        raise SchemaError(f"{position.null_count} {what} have no row in outcomes (e.g. {', '.join(missing)})")
    return pc.take(table.column(column), position).combine_chunks()


@dataclass(frozen=True, eq=False)
class ScoringKey:
    """The hidden labels of a set of queries, as aligned arrays (one entry per query, in query-table order)."""

    query_ids: pa.Array
    track: str                    # the selected track, or "all"
    task_ids: pa.Array            # dictionary of task ids
    task_of: np.ndarray           # task code of each query
    task_track: list[str]         # track name of each task
    target_of: np.ndarray         # target configuration code of each query
    source_of: np.ndarray         # source configuration code of each query
    source_eligible: np.ndarray   # eligible processes of each source code
    source_attempts: np.ndarray   # recorded attempts of each source code
    observed: np.ndarray          # label code (int8) of each query's target

    def __len__(self) -> int:
        return len(self.query_ids)

    @cached_property
    def task_order(self) -> list[int]:
        """Task codes sorted by task id."""
        return sorted(range(len(self.task_ids)), key=self.task_ids.to_pylist().__getitem__)

    @cached_property
    def cell_base(self) -> np.ndarray:
        """``task * 9 + observed``: adding ``predicted * 3`` gives each query's cell of the per-task confusion
        matrices."""
        return compact_codes(self.task_of.astype(np.int64) * 9 + self.observed, len(self.task_ids) * 9)

    @cached_property
    def tracks(self) -> list[str]:
        """The tracks present, in :data:`TRACKS` order."""
        present = set(self.task_track)
        return [t for t in TRACKS if t in present] + sorted(present - set(TRACKS))

    @cached_property
    def track_of_task(self) -> np.ndarray:
        index = {t: i for i, t in enumerate(self.tracks)}
        return np.array([index[t] for t in self.task_track], dtype=np.int64)

    @cached_property
    def id_index(self) -> "FixedWidthIndex | None":
        """The sort-based index of the query ids for :func:`align_predictions` (None when the ids differ in
        byte length; alignment then uses arrow's ``index_in``)."""
        return FixedWidthIndex.build(self.query_ids)

    @cached_property
    def scope_counts(self) -> dict[str, dict[str, np.ndarray]]:
        """Per scope level ("task", "track", "overall"): queries, distinct targets and deduplicated source costs.

        These do not depend on the predictions, so they are computed once per key."""
        n_tasks, n_tracks = len(self.task_ids), len(self.tracks)
        # tasks nest in tracks, tracks in the whole: each level deduplicates the pairs of the level below
        parent = {"task": None, "track": self.track_of_task, "overall": np.zeros(n_tracks, dtype=np.int64)}
        sizes = {"task": n_tasks, "track": n_tracks, "overall": 1}
        queries = np.bincount(self.task_of, minlength=n_tasks)
        targets = _distinct_pairs(self.task_of, self.target_of)
        sources = _distinct_pairs(self.task_of, self.source_of)
        out = {}
        for level, n_scopes in sizes.items():
            if parent[level] is not None:
                queries = np.bincount(parent[level], weights=queries, minlength=n_scopes).astype(np.int64)
                targets = _distinct_pairs(parent[level][targets[0]], targets[1])
                sources = _distinct_pairs(parent[level][sources[0]], sources[1])
            out[level] = {
                "queries": queries,
                "distinct_target_configurations": np.bincount(targets[0], minlength=n_scopes),
                "distinct_source_configurations": np.bincount(sources[0], minlength=n_scopes),
                "eligible_source_processes": _sum_by(sources[0], self.source_eligible[sources[1]], n_scopes),
                "recorded_source_attempts": _sum_by(sources[0], self.source_attempts[sources[1]], n_scopes),
            }
        return out


def _distinct_pairs(scope: np.ndarray, entity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (scope, entity) pairs, as two aligned arrays (sort based: numpy's hash-based unique is
    several times slower on millions of rows)."""
    n_entities = int(entity.max()) + 1 if len(entity) else 1
    pairs = np.sort(scope.astype(np.int64) * n_entities + entity)
    if len(pairs):
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    return pairs // n_entities, pairs % n_entities


def _sum_by(scope: np.ndarray, values: np.ndarray, n_scopes: int) -> np.ndarray:
    return np.bincount(scope, weights=values, minlength=n_scopes).round().astype(np.int64)


def _select(queries: pa.Table, track: str) -> pa.Table:
    """The queries of ``track`` (all of them for ``"all"``)."""
    return queries if track == ALL_TRACKS else queries.filter(pc.equal(queries.column("track"), _scalar(track)))


def _strictly_increasing(values: pa.Array) -> bool:
    """True when ``values`` is sorted without repeats (then it is unique without hashing)."""
    return len(values) < 2 or pc.all(pc.less(values.slice(0, len(values) - 1), values.slice(1))).as_py()


def scoring_key(queries: pa.Table, outcomes: pa.Table, track: str | None = None) -> ScoringKey:
    """The scoring key of the selected queries: their target's repeated label (from ``outcomes``, decoded) and
    the cost of their source. Targets must have one of the three labels."""
    track = check_track(track)
    queries = _select(queries, track)
    query_ids = one_chunk(queries.column("query_id"))
    if not _strictly_increasing(query_ids) and pc.count_distinct(query_ids).as_py() != len(query_ids):
        raise SchemaError("transfer_queries: query_id is not unique")
    task_of, task_ids = _encode(queries.column("task_id"))
    track_of, track_names = _encode(queries.column("track"))
    task_track: list[str | None] = [None] * len(task_ids)
    tasks, tracks = _distinct_pairs(task_of, track_of)
    for t, k in zip(tasks.tolist(), tracks.tolist()):
        if task_track[t] is not None:
            raise SchemaError(f"transfer_queries: task {task_ids[t].as_py()} spans more than one track")
        task_track[t] = track_names[k].as_py()
    target_of, target_ids = _encode(queries.column("target_configuration_id"))
    source_of, source_ids = _encode(queries.column("source_configuration_id"))
    target_state = _lookup(target_ids, outcomes, "observed_state", "target configurations")
    unlabelled = pc.invert(pc.is_in(target_state, value_set=_labels()))
    if pc.any(unlabelled).as_py():
        bad = pc.filter(target_ids, unlabelled).slice(0, 3).to_pylist()
        raise SchemaError(f"target configurations without a three-state label (e.g. {', '.join(bad)})")
    observed_per_target = encode_labels(target_state, "target labels")
    return ScoringKey(
        query_ids=query_ids, track=track, task_ids=task_ids, task_of=task_of, task_track=task_track,
        target_of=target_of, source_of=source_of,
        source_eligible=numpy_ints(_lookup(source_ids, outcomes, "eligible_processes", "source configurations")),
        source_attempts=numpy_ints(_lookup(source_ids, outcomes, "recorded_attempts", "source configurations")),
        observed=observed_per_target[target_of],
    )


# --------------------------------------------------------------------------- predictions

def _examples(values: pa.Array | list, limit: int = 3) -> str:
    items = values.slice(0, limit).to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else values[:limit]
    return ", ".join(map(str, items))


def _ids_at(key: ScoringKey, positions: np.ndarray) -> str:
    return _examples(pc.take(key.query_ids, arrow_ints(positions[:3])))


def align_predictions(key: ScoringKey, query_ids: pa.Array | Sequence[str], states: pa.Array | Sequence[str],
                      origin: str = "predictions") -> np.ndarray:
    """The predicted label code of each query of ``key`` (in key order).

    ``query_ids`` and ``states`` are the prediction rows (surrounding spaces/tabs are stripped). The rows must
    cover exactly the selected queries, once each, with labels among the three; otherwise a one-line
    :class:`InputError` says what is wrong, how often, with a few example ids."""
    ids, labels = _strings(query_ids), _strings(states)
    if len(ids) != len(labels):
        raise InputError(f"{origin}: {len(ids)} query ids but {len(labels)} predicted labels")
    scope = "" if key.track == ALL_TRACKS else f" of track {key.track}"
    if len(ids) == 0:
        raise InputError(f"{origin}: no predictions ({len(key)} selected queries{scope} expected)")
    codes = pc.index_in(labels, value_set=_labels())
    if codes.null_count:  # only then pay for stripping spaces and tabs
        labels = pc.utf8_trim(labels, characters=WHITESPACE)
        codes = pc.index_in(labels, value_set=_labels())
    codes = encode_labels(labels, f"{origin}: predicted_state", codes)
    if len(ids) == len(key) and pc.all(pc.equal(ids, key.query_ids)).as_py():
        return codes  # rows already in query order (e.g. sorted by id, as the queries are): no lookup needed
    if key.id_index is not None and len(ids) == len(key):
        positions = key.id_index.positions_of(ids)
        if positions is not None:  # exactly the selected queries, once each, in another order
            aligned = np.empty(len(key), dtype=np.int8)
            aligned[positions] = codes
            return aligned
    ids = pc.utf8_trim(ids, characters=WHITESPACE)
    if pc.min(pc.binary_length(ids)).as_py() == 0:
        blank = pc.sum(pc.equal(pc.binary_length(ids), 0)).as_py()
        raise InputError(f"{origin}: {blank} row(s) have an empty query_id")
    position = pc.index_in(ids, value_set=key.query_ids)
    problems = []
    if position.null_count:
        unexpected = pc.filter(ids, pc.is_null(position))
        problems.append(f"{len(unexpected)} unexpected query id(s) not among the selected queries "
                        f"(e.g. {_examples(unexpected)})")
    found = numpy_ints(pc.drop_null(position)).astype(np.intp)
    counts = np.bincount(found, minlength=len(key))
    duplicated = np.flatnonzero(counts > 1)
    if len(duplicated):
        problems.append(f"{len(duplicated)} duplicated query id(s) (e.g. {_ids_at(key, duplicated)})")
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        problems.append(f"{len(missing)} missing query id(s) (e.g. {_ids_at(key, missing)})")
    if problems:
        raise InputError(f"{origin} must cover exactly the {len(key)} selected queries{scope}: "
                         + "; ".join(problems))
    aligned = np.empty(len(key), dtype=np.int8)
    aligned[found] = codes[numpy_ints(pc.is_valid(position))]
    return aligned


def _strings(values: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array:
    """``values`` as one string array without nulls."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        if any(v is None for v in values):
            raise InputError(f"predictions: {sum(v is None for v in values)} missing (None) value(s)")
        values = arrow_strings(values)
    values = one_chunk(values)
    if values.null_count:
        raise InputError(f"predictions: {values.null_count} missing (None) value(s)")
    return values


def read_predictions(path: str | os.PathLike) -> tuple[pa.Array, pa.Array]:
    """The ``query_id`` and ``predicted_state`` columns of a predictions CSV file, as strings (the file rules
    are those of :mod:`rlvrambench_hf.predictions`)."""
    columns = read_prediction_file(path, PREDICTION_COLUMNS)
    return columns["query_id"], columns["predicted_state"]


# --------------------------------------------------------------------------- scoring

_BLOCK = 1 << 20  # rows counted at a time


def score(key: ScoringKey, predicted: np.ndarray) -> dict:
    """The score file of label codes ``predicted`` (aligned with ``key``): overall, per track and per task."""
    n_tasks = len(key.task_ids)
    n_tracks = len(key.tracks)
    by_task = np.zeros(n_tasks * 9, dtype=np.int64)
    for begin in range(0, len(predicted), _BLOCK):  # in blocks: bincount's intp copy stays small
        cells = key.cell_base[begin:begin + _BLOCK] + predicted[begin:begin + _BLOCK] * np.int8(3)
        by_task += np.bincount(cells, minlength=n_tasks * 9)
    by_task = by_task.reshape(n_tasks, 3, 3)
    by_track = np.zeros((n_tracks, 3, 3), dtype=np.int64)
    np.add.at(by_track, key.track_of_task, by_task)
    counts = key.scope_counts

    def entry(level: str, i: int, confusion: np.ndarray) -> dict:
        c = counts[level]
        out = {"queries": int(c["queries"][i]),
               "distinct_target_configurations": int(c["distinct_target_configurations"][i])}
        out.update(metrics_from_confusion(confusion))
        for name in ("distinct_source_configurations", "eligible_source_processes", "recorded_source_attempts"):
            out[name] = int(c[name][i])
        return out

    per_task = {}
    task_accuracy: dict[int, list[Fraction]] = {i: [] for i in range(n_tracks)}
    for t in key.task_order:
        e = entry("task", t, by_task[t])
        per_task[key.task_ids[t].as_py()] = {"track": key.task_track[t], **e}
        task_accuracy[int(key.track_of_task[t])].append(Fraction(e["correct_three_state"], e["queries"]))
    per_track = {}
    for k, name in enumerate(key.tracks):
        e = entry("track", k, by_track[k])
        accuracies = task_accuracy[k]
        e["tasks"] = len(accuracies)
        e["macro_task_three_state_accuracy"] = float(sum(accuracies) / len(accuracies)) if accuracies else None
        per_track[name] = e
    return {
        "protocol_version": PROTOCOL_VERSION,
        "selected_track": key.track,
        "rate_with_zero_denominator": None,
        "cost_scope": COST_SCOPE,
        "cost_warning": COST_WARNING,
        "evaluation_warning": EVALUATION_WARNING,
        "overall": entry("overall", 0, by_track.sum(axis=0)),
        "per_track": per_track,
        "per_task": per_task,
    }


def score_predictions(key: ScoringKey, query_ids: pa.Array | Sequence[str], states: pa.Array | Sequence[str],
                      origin: str = "predictions") -> dict:
    """Validate prediction rows against ``key`` and score them."""
    return score(key, align_predictions(key, query_ids, states, origin))


# --------------------------------------------------------------------------- reference rules and task inputs

def reference_predictions(queries: pa.Table, outcomes: pa.Table, rule: str, track: str | None = None) -> pa.Table:
    """``query_id, predicted_state`` of a built-in rule for the selected queries, sorted by query id.

    ``source_label`` copies the matched source's repeated label; ``always_approve`` predicts ``within_margin``;
    ``always_reject`` predicts ``memory_failure``."""
    rule, track = check_rule(rule), check_track(track)
    queries = _select(queries, track).sort_by("query_id")
    ids = one_chunk(queries.column("query_id"))
    if rule == "source_label":
        states = _lookup(queries.column("source_configuration_id").combine_chunks(), outcomes, "observed_state",
                         "source configurations")
        encode_labels(states, "source labels")
    else:
        label = APPROVAL_LABEL if rule == "always_approve" else OUTCOME_LABELS[FAILURE]
        states = arrow_strings([label] * len(ids))
    return pa.Table.from_arrays([ids, states], names=list(PREDICTION_COLUMNS))


def predictions_csv(predictions: pa.Table) -> str:
    """The CSV text of a ``query_id, predicted_state`` table."""
    lines = ["query_id,predicted_state"]
    lines += [f"{q},{s}" for q, s in zip(predictions.column("query_id").to_pylist(),
                                          predictions.column("predicted_state").to_pylist())]
    return "\n".join(lines) + "\n"


def task_inputs(queries: pa.Table, outcomes: pa.Table, configurations: pa.Table, track: str | None = None) -> dict:
    """One object per task: its allowed sources (settings and measured outcome) and its queries (query id,
    matched source id and target settings). Target objects carry settings only: no outcome, seed, run or attempt."""
    track = check_track(track)
    queries = _select(queries, track)
    settings = {r["configuration_id"]: r for r in configurations.to_pylist()}
    outcome = {r["configuration_id"]: r for r in outcomes.to_pylist()}
    leaking = (set(outcomes.column_names) - {"configuration_id"}) | _PROCESS_COLUMNS
    tasks: dict[str, dict] = {}
    for q in sorted(queries.to_pylist(), key=lambda r: (r["task_id"], r["query_id"])):
        task = tasks.setdefault(q["task_id"], {
            "task_id": q["task_id"], "track": q["track"], "source_case_ids": [], "target_case_ids": [],
            "sources": {}, "queries": [],
        })
        source_id, target_id = q["source_configuration_id"], q["target_configuration_id"]
        for config_id in (source_id, target_id):
            if config_id not in settings or config_id not in outcome:
                raise SchemaError(f"configuration {config_id} of query {q['query_id']} has no settings or outcome")
        if source_id not in task["sources"]:
            measured = {k: v for k, v in outcome[source_id].items() if k != "configuration_id"}
            task["sources"][source_id] = {**settings[source_id], "outcome": measured}
        target = {k: v for k, v in settings[target_id].items() if k not in leaking}
        task["queries"].append({"query_id": q["query_id"], "source_configuration_id": source_id,
                                "target_configuration_id": target_id, "target": target})
        for field, case in (("source_case_ids", q["source_case_id"]), ("target_case_ids", q["target_case_id"])):
            if case not in task[field]:
                task[field].append(case)
    for task in tasks.values():
        task["sources"] = sorted(task["sources"].values(), key=lambda s: s["configuration_id"])
        task["source_case_ids"].sort()
        task["target_case_ids"].sort()
        source_cases = set(task["source_case_ids"])
        source_ids = {s["configuration_id"] for s in task["sources"]}
        for q in task["queries"]:
            if q["target"]["case_id"] in source_cases or q["target_configuration_id"] in source_ids:
                raise SchemaError(f"query {q['query_id']}: its target lies inside its task's source cases")
    return {
        "protocol_version": PROTOCOL_VERSION,
        "selected_track": track,
        "labels": list(OUTCOME_LABELS),
        "approval_label": APPROVAL_LABEL,
        "prediction_columns": list(PREDICTION_COLUMNS),
        "contract": ("predict each task from its own sources and target settings only; targets carry no outcome, "
                     "seed, run or attempt data"),
        "tasks": [tasks[t] for t in sorted(tasks)],
    }


# --------------------------------------------------------------------------- loading helpers (I/O)

def load_transfer_tables(source=None, revision=None, *, settings: bool = False) -> dict[str, pa.Table]:
    """The typed tables the transfer features read: queries, decoded outcomes and, if asked, settings."""
    from .sources import open_source
    from .tables import load_table

    src = open_source(source, revision)
    tables = {"queries": load_table("transfer_queries", src), "outcomes": load_table("outcomes", src, decode=True)}
    if settings:
        tables["configurations"] = load_table("configurations", src)
    return tables


_KEYS: dict[tuple, ScoringKey] = {}


def cached_scoring_key(source=None, revision=None, track: str | None = None) -> ScoringKey:
    """The scoring key of a source, loaded once per process and reused (keyed by the source and revision as
    given or as set by ``RLVRAMBENCH_SOURCE`` / ``RLVRAMBENCH_REVISION``; a Source object is not cached)."""
    from .sources import REVISION_ENV, SOURCE_ENV, Source

    track = check_track(track)
    if isinstance(source, Source):
        return scoring_key(**_key_tables(source, revision), track=track)
    given = os.fspath(source) if source is not None else os.environ.get(SOURCE_ENV)
    token = (given, revision if revision is not None else os.environ.get(REVISION_ENV), track)
    key = _KEYS.get(token)
    if key is None:
        key = scoring_key(**_key_tables(source, revision), track=track)
        key.scope_counts, key.cell_base  # noqa: B018 - computed once, while caching
        _KEYS[token] = key
    return key


def _key_tables(source, revision) -> dict[str, pa.Table]:
    tables = load_transfer_tables(source, revision)
    return {"queries": tables["queries"], "outcomes": tables["outcomes"]}


def score_lists(query_ids: Sequence[str], predictions: Sequence[str], *, track: str | None = "all",
                source=None, revision=None) -> dict:
    """Score prediction lists against the hidden labels of the source (cached per process)."""
    return score_predictions(cached_scoring_key(source, revision, track), query_ids, predictions)


def reference_scores(rule: str, source=None, revision=None, track: str | None = None) -> dict:
    """The full score dict of a built-in rule."""
    tables = load_transfer_tables(source, revision)
    predictions = reference_predictions(tables["queries"], tables["outcomes"], rule, track)
    key = scoring_key(tables["queries"], tables["outcomes"], track)
    return score_predictions(key, predictions.column("query_id"), predictions.column("predicted_state"))
