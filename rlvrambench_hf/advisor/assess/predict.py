"""The three reference methods applied to many plans at once (pure, vectorised over plans).

:class:`SettingArrays` holds a plan table's settings and its models' metadata as numpy columns;
:func:`feature_columns` computes the eight features of ``estimation.features`` for all rows together (equal to
:func:`~rlvrambench_hf.estimation.features.feature_matrix`, tested on every measured configuration), and
:func:`predict` applies the fitted references: donor copy (one donor per distinct workload, level, GPU count and
model), the component regression with its startup guard, and the logistic classifier. Labels are indices of
:data:`~rlvrambench_hf.data.schema.pins.OUTCOME_LABELS`; -1 is "no prediction".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.schema.pins import OUTCOME_LABELS
from ...estimation.donor import choose_donor
from ...estimation.features import FEATURE_NAMES, FEATURE_SETTINGS, GIB, METADATA_FIELDS, MIB
from ...estimation.references import FittedReferences
from ...memory.architecture import Architecture
from ...memory.inputs import PlanInputs
from ..plan.arrays import codes_of, numbers

WITHIN, ABOVE, FAILURE = range(3)
NONE = -1
#: Why a plan gets no prediction, by cause (the first that applies is reported).
NO_METADATA = "no model metadata"


@dataclass(frozen=True)
class SettingArrays:
    """Numeric settings (float64, 0 where null) with validity, the models' metadata per row, and string codes."""

    values: Mapping[str, np.ndarray]
    valid: Mapping[str, np.ndarray]
    models: tuple[str, ...]  # distinct model ids of the plans
    model: np.ndarray  # per row: index into ``models`` (-1 for a null model id)
    metadata: np.ndarray  # per row × METADATA_FIELDS (float64; NaN where the model has no metadata)
    has_metadata: np.ndarray
    table: pa.Table
    metadata_mappings: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, table: pa.Table, metadata: Mapping[str, Mapping[str, Any]]) -> SettingArrays:
        values, valid = {}, {}
        for name in FEATURE_SETTINGS:
            if name in table.column_names:
                values[name], valid[name] = numbers(table.column(name))
            else:
                values[name], valid[name] = np.zeros(table.num_rows), np.zeros(table.num_rows, dtype=bool)
        ids = table.column("model_id") if "model_id" in table.column_names else pa.nulls(table.num_rows, pa.string())
        distinct = pc.unique(ids).drop_null()
        models = tuple(distinct.to_pylist())
        model = codes_of(pc.index_in(ids, value_set=distinct))
        known = np.array(
            [[float(metadata[m][f]) for f in METADATA_FIELDS] if m in metadata else [np.nan] * 8 for m in models]
            + [[np.nan] * len(METADATA_FIELDS)],
            dtype=np.float64,
        )
        rows = known[np.where(model >= 0, model, len(models))]
        has_metadata = np.asarray(~np.isnan(rows).any(axis=1), dtype=bool)
        return cls(values, valid, models, model, rows, has_metadata, table, metadata)

    def complete(self) -> np.ndarray:
        """Rows whose feature settings are all given (the margin limit is no feature)."""
        out = np.ones(self.table.num_rows, dtype=bool)
        for name in FEATURE_SETTINGS:
            if name != "margin_limit_mib":
                out &= self.valid[name]
        return out

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]

    @cached_property
    def architecture(self) -> Architecture:
        """The sizes of each plan's model, for the per-phase model and the KV-cache floor."""
        from ...memory.architecture import architecture

        return architecture(self.models, self.model, self.metadata_mappings)


def feature_columns(s: SettingArrays) -> tuple[np.ndarray, np.ndarray]:
    """(features n × 8 in GiB, computable rows): the rows with every setting, metadata and a defined shape."""
    g, t, u = s["gpu_count"], s["rollout_tp_size"], s["vllm_gpu_memory_utilization"]
    length = np.minimum(s["max_model_len"], s["max_prompt_length"] + s["max_response_length"])
    sequences = s["train_batch_size"] * s["rollout_n"]
    ok = s.complete() & s.has_metadata & (g > 0) & (t > 0) & (u > 0) & (u < 1) & (length > 0)
    g_safe, t_safe = np.where(ok, g, 1), np.where(ok, t, 1)
    ok &= (np.fmod(g_safe, t_safe) == 0) & (np.fmod(sequences, g_safe) == 0)
    per_rank = sequences / g_safe
    tok_actor = np.minimum(s["actor_micro_batch"], per_rank) * length
    score_micro = np.maximum(s["rollout_logprob_micro_batch"], s["ref_logprob_micro_batch"])
    tok_score = np.minimum(score_micro, per_rank) * length
    m = {f: s.metadata[:, i] for i, f in enumerate(METADATA_FIELDS)}
    p, r = m["floating_checkpoint_elements"], m["all_linear_layer_adapter_elements"]
    unit = np.maximum.reduce(
        [
            m["largest_transformer_layer_elements"],
            m["non_transformer_layer_elements"],
            m["largest_weight_tensor_elements"],
        ]
    )
    actor = 4 * (p + r) / g_safe / GIB
    columns = [
        actor,
        np.where(s["optimizer_offload"] > 0, 0.0, 8 * r / g_safe / GIB),
        u * (s["device_capacity_mib"] * MIB) / GIB,
        2 * (p + r) / t_safe / GIB,
        4 * unit / GIB,
        2 * tok_actor * (m["num_hidden_layers"] + 1) * m["hidden_size"] / GIB,
        2 * np.maximum(tok_actor, tok_score) * m["vocab_size"] / GIB,
        np.where(s["parameter_offload"] > 0, 0.0, actor),
    ]
    features = np.column_stack(columns).reshape(len(g), len(FEATURE_NAMES))
    ok &= np.isfinite(features).all(axis=1) & (features >= 0).all(axis=1)
    features[~ok] = 0.0
    return features, ok


@dataclass(frozen=True)
class Predictions:
    """Per plan and method: label index (-1: none) and peak (NaN: none); the startup check; the donor's pool row."""

    state: Mapping[str, np.ndarray]
    peak: Mapping[str, np.ndarray]
    peak_only: np.ndarray
    startup_applies: np.ndarray
    startup_mib: np.ndarray
    startup_fails: np.ndarray
    donor: np.ndarray  # pool row of the donor, -1 when none
    donor_gpu_matches: np.ndarray
    available: np.ndarray
    features: np.ndarray

    def cautious(self) -> np.ndarray:
        """The most severe label any method predicts (-1 when none predicts)."""
        return cast("np.ndarray", np.maximum.reduce([self.state[m] for m in self.state]))


def predict(s: SettingArrays, fitted: FittedReferences, parameters: Mapping[str, int]) -> Predictions:
    """The three methods on every computable row (others get no prediction)."""
    features, ok = feature_columns(s)
    n = len(ok)
    capacity, margin = s["device_capacity_mib"], s["margin_limit_mib"]
    peaks = fitted.regression.predict_peaks_mib(features)
    applies = ok & ~(s["parameter_offload"] > 0)
    startup = (features[:, 0] + features[:, 2]) * 1024
    fails = applies & (startup > capacity)
    peak_only = np.where(peaks > capacity, FAILURE, np.where(peaks > margin, ABOVE, WITHIN))
    regression = np.where(fails, FAILURE, peak_only)
    logits = fitted.classifier.logits(features)
    classes = np.array([OUTCOME_LABELS.index(c) for c in fitted.classifier.classes])
    logistic = classes[np.argmax(logits, axis=1)]
    donor, matches = donors(s, fitted, parameters, ok)
    pool = fitted.training.rows
    donor_state = np.array([OUTCOME_LABELS.index(r["observed_state"]) for r in pool] + [NONE])[donor]
    donor_peak = np.array(
        [r["max_completed_run_peak_mib"] if r["completed"] else np.nan for r in pool] + [np.nan], dtype=np.float64
    )[donor]
    none = np.full(n, NONE)
    return Predictions(
        state={
            "donor_copy": np.where(ok, donor_state, none),
            "component_regression": np.where(ok, regression, none),
            "logistic": np.where(ok, logistic, none),
        },
        peak={
            "donor_copy": np.where(ok, donor_peak, np.nan),
            "component_regression": np.where(ok, peaks, np.nan),
            "logistic": np.full(n, np.nan),
        },
        peak_only=np.where(ok, peak_only, none),
        startup_applies=applies,
        startup_mib=np.where(ok, startup, np.nan),
        startup_fails=fails,
        donor=np.where(ok, donor, NONE),
        donor_gpu_matches=matches,
        available=ok,
        features=features,
    )


def donors(
    s: SettingArrays, fitted: FittedReferences, parameters: Mapping[str, int], ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(pool row of each plan's donor or -1, GPU count matches): chosen once per distinct workload, level, GPU
    count and model with the rule of ``estimation.donor``."""
    n = len(ok)
    table = s.table
    strings = {}
    for name in ("workload_id", "configuration_level"):
        column = table.column(name) if name in table.column_names else pa.nulls(n, pa.string())
        distinct = pc.unique(column).drop_null()
        strings[name] = (distinct.to_pylist(), codes_of(pc.index_in(column, value_set=distinct)))
    gpus = np.where(s.valid["gpu_count"], s["gpu_count"], -1).astype(np.int64)
    parts = [strings["workload_id"][1], strings["configuration_level"][1], gpus, s.model]
    usable = ok & np.logical_and.reduce([p >= 0 for p in parts])
    radix = [max(int(p.max(initial=0)) + 1, 1) for p in parts]
    combined = np.zeros(n, dtype=np.int64)
    for p, r in zip(parts, radix):
        combined = combined * r + np.maximum(p, 0)
    unique_keys, inverse = np.unique(combined[usable], return_inverse=True)
    unique = np.empty((len(unique_keys), 4), dtype=np.int64)
    rest = unique_keys.copy()
    for k in range(3, -1, -1):
        unique[:, k] = rest % radix[k]
        rest //= radix[k]
    position = {r["configuration_id"]: i for i, r in enumerate(fitted.training.rows)}
    chosen, matches = np.full(len(unique) + 1, NONE), np.zeros(len(unique) + 1, dtype=bool)
    for k, (w, lv, g, m) in enumerate(unique):
        target = {
            "workload_id": strings["workload_id"][0][w],
            "configuration_level": strings["configuration_level"][0][lv],
            "gpu_count": int(g),
            "model_id": s.models[m],
        }
        donor = choose_donor(target, fitted.training.rows, parameters)
        if donor is not None:
            chosen[k], matches[k] = position[donor.configuration_id], donor.gpu_count_matches
    index = np.full(n, len(unique))
    index[usable] = inverse.reshape(-1)
    return chosen[index], matches[index]


def memory_inputs(table: pa.Table, s: SettingArrays) -> tuple[PlanInputs, Architecture]:
    """The per-phase model's inputs of a plan table: its settings, the knob columns it carries
    (:mod:`..plan.knobs`; absent or null: the model's default) and its models' sizes."""
    from ...memory.inputs import SETTINGS, plan_inputs
    from ..plan.knobs import KNOBS

    values, valid = {}, {}
    for name in SETTINGS:
        values[name], valid[name] = numbers(table.column(name)) if name in table.column_names else _absent(table)
    for knob in KNOBS:
        if knob.type != pa.string() and knob.name in table.column_names:
            values[knob.name], valid[knob.name] = numbers(table.column(knob.name))
    stack = stack_columns(table)
    values.update(stack)
    valid.update({name: np.ones(table.num_rows, dtype=bool) for name in stack})
    dtype = table.column("actor_param_dtype").to_pylist() if "actor_param_dtype" in table.column_names else None
    column = (
        table.column("workload_id") if "workload_id" in table.column_names else pa.nulls(table.num_rows, pa.string())
    )
    distinct = pc.unique(column).drop_null()
    workload = codes_of(pc.index_in(column, value_set=distinct))
    x = plan_inputs(values, valid, dtype, workload, tuple(distinct.to_pylist()))
    return x, s.architecture


def stack_columns(table: pa.Table) -> dict[str, np.ndarray]:
    """The string knobs as the numbers the per-phase model computes with (:func:`~rlvrambench_hf.memory.stack.
    stack_codes`)."""
    from ...memory.stack import STRING_KNOBS, stack_codes

    columns = {n: table.column(n).to_pylist() for n in STRING_KNOBS if n in table.column_names}
    rows = [{n: columns[n][i] for n in columns} for i in range(table.num_rows)]
    return stack_codes(rows)


def _absent(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(table.num_rows), np.zeros(table.num_rows, dtype=bool)
