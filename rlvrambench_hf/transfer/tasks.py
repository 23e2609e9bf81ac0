"""What a transfer method is given and the reference rules: leak-free task inputs and the built-in predictions."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..arrow import arrow_strings, one_chunk
from ..data.schema.pins import OUTCOME_LABELS
from ..errors import SchemaError, UnknownConfigError, quote
from ..scoring.labels import APPROVAL_LABEL, MEMORY_FAILURE, encode_labels
from .key import PREDICTION_COLUMNS, PROTOCOL_VERSION, check_track, lookup, select_track

#: The reference rules, in the documented order.
RULES: tuple[str, ...] = ("source_label", "always_approve", "always_reject")
# Columns that describe a measured outcome or an individual process: never part of a target object.
_PROCESS_COLUMNS = {"training_seed", "run_id", "attempt_id", "experiment_id", "job_id"}


def check_rule(rule: str) -> str:
    """``rule`` if it is a reference rule; an unknown name is a one-line error."""
    if rule not in RULES:
        raise UnknownConfigError(f"unknown rule {quote(rule)}; rules: {', '.join(RULES)}")
    return rule


def reference_predictions(queries: pa.Table, outcomes: pa.Table, rule: str, track: str | None = None) -> pa.Table:
    """``query_id, predicted_state`` of a built-in rule for the selected queries, sorted by query id.

    ``source_label`` copies the matched source's repeated label; ``always_approve`` predicts ``within_margin``;
    ``always_reject`` predicts ``memory_failure``."""
    rule, track = check_rule(rule), check_track(track)
    queries = select_track(queries, track).sort_by("query_id")
    ids = one_chunk(queries.column("query_id"))
    if rule == "source_label":
        states = lookup(
            queries.column("source_configuration_id").combine_chunks(),
            outcomes,
            "observed_state",
            "source configurations",
        )
        encode_labels(states, "source labels")
    else:
        label = APPROVAL_LABEL if rule == "always_approve" else MEMORY_FAILURE
        states = arrow_strings([label] * len(ids))
    return pa.Table.from_arrays([ids, states], names=list(PREDICTION_COLUMNS))


def predictions_csv(predictions: pa.Table) -> str:
    """The CSV text of a ``query_id, predicted_state`` table."""
    lines = ["query_id,predicted_state"]
    lines += [
        f"{q},{s}"
        for q, s in zip(predictions.column("query_id").to_pylist(), predictions.column("predicted_state").to_pylist())
    ]
    return "\n".join(lines) + "\n"


def task_inputs(
    queries: pa.Table, outcomes: pa.Table, configurations: pa.Table, track: str | None = None
) -> dict[str, Any]:
    """One object per task: its allowed sources (settings and measured outcome) and its queries (query id,
    matched source id and target settings). Target objects carry settings only: no outcome, seed, run or attempt."""
    track = check_track(track)
    queries = select_track(queries, track)
    settings = {r["configuration_id"]: r for r in configurations.to_pylist()}
    outcome = {r["configuration_id"]: r for r in outcomes.to_pylist()}
    leaking = (set(outcomes.column_names) - {"configuration_id"}) | _PROCESS_COLUMNS
    tasks: dict[str, dict[str, Any]] = {}
    for q in sorted(queries.to_pylist(), key=lambda r: (r["task_id"], r["query_id"])):
        task = tasks.setdefault(
            q["task_id"],
            {
                "task_id": q["task_id"],
                "track": q["track"],
                "source_case_ids": [],
                "target_case_ids": [],
                "sources": {},
                "queries": [],
            },
        )
        source_id, target_id = q["source_configuration_id"], q["target_configuration_id"]
        for config_id in (source_id, target_id):
            if config_id not in settings or config_id not in outcome:
                raise SchemaError(f"configuration {config_id} of query {q['query_id']} has no settings or outcome")
        if source_id not in task["sources"]:
            measured = {k: v for k, v in outcome[source_id].items() if k != "configuration_id"}
            task["sources"][source_id] = {**settings[source_id], "outcome": measured}
        target = {k: v for k, v in settings[target_id].items() if k not in leaking}
        task["queries"].append(
            {
                "query_id": q["query_id"],
                "source_configuration_id": source_id,
                "target_configuration_id": target_id,
                "target": target,
            }
        )
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
        "contract": (
            "predict each task from its own sources and target settings only; targets carry no outcome, "
            "seed, run or attempt data"
        ),
        "tasks": [tasks[t] for t in sorted(tasks)],
    }
