"""The advisor: ask the measurements about a planned run (pure).

:func:`advise` applies the references fitted on all 90 measured configurations to planned configurations and
returns, for each, the three methods' labels and peaks, the startup check, the donor with its *measured* label,
peak and id, the nearest measured configurations, and scope flags that say where the answer extrapolates. These
are predictions of the reference methods, not measurements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..data.schema.pins import DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB
from ..errors import InputError
from .features import FAMILIES, FEATURE_NAMES, FEATURE_SETTINGS, coarse_family, feature_matrix
from .references import DONOR, REGRESSION, Examples, FittedReferences

STATEMENT = (
    "These are predictions of the benchmark's three reference methods fitted on its 90 measured configurations "
    "(40 GB A100s, GRPO with LoRA), not measurements; read the scope flags of every configuration."
)
#: Settings a planned configuration must give (the hardware comes from :class:`Hardware`).
PLANNED_SETTINGS: tuple[str, ...] = (
    "model_id",
    "workload_id",
    "configuration_level",
    *(s for s in FEATURE_SETTINGS if s not in ("device_capacity_mib", "margin_limit_mib")),
)
HARDWARE_SETTINGS = ("device_capacity_mib", "margin_limit_mib")
NEAREST = 3
#: The benchmark's headroom between capacity and margin limit, MiB.
HEADROOM_MIB = DEVICE_CAPACITY_MIB - MARGIN_LIMIT_MIB
_CATEGORICAL = ("workload_id", "configuration_level", "parameter_offload", "optimizer_offload")


@dataclass(frozen=True)
class Hardware:
    """The device the plan runs on: capacity and margin limit per device, in MiB."""

    device_capacity_mib: int = DEVICE_CAPACITY_MIB
    margin_limit_mib: int = MARGIN_LIMIT_MIB

    @property
    def is_benchmark(self) -> bool:
        return (self.device_capacity_mib, self.margin_limit_mib) == (DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB)

    def flag(self) -> str | None:
        if self.is_benchmark:
            return None
        return (
            f"hardware not measured: {self.device_capacity_mib} MiB devices with a {self.margin_limit_mib} MiB limit "
            f"(every measurement is on {DEVICE_CAPACITY_MIB} MiB A100s)"
        )


#: The benchmark's device: a 40 GB A100.
BENCHMARK_HARDWARE = Hardware()


def advise(
    planned: Sequence[Mapping],
    fitted: FittedReferences,
    metadata: Mapping[str, Mapping],
    *,
    hardware: Hardware = BENCHMARK_HARDWARE,
    nearest: int = NEAREST,
) -> dict:
    """Advice for each planned configuration (settings of :data:`PLANNED_SETTINGS`; ``configuration_id`` optional).

    ``fitted`` are the references fitted on the pool (their training rows are the measured configurations);
    ``metadata`` maps every planned model id to its counts.
    """
    if not planned:
        raise InputError("no planned configuration given")
    if nearest < 0:
        raise InputError(f"nearest must be 0 or more, got {nearest}")
    rows = []
    for i, plan in enumerate(planned):
        for key in HARDWARE_SETTINGS:
            if plan.get(key) is not None and plan[key] != getattr(hardware, key):
                raise InputError(
                    f"planned configuration {i + 1}: {key}={plan[key]} is not the benchmark's "
                    f"{getattr(BENCHMARK_HARDWARE, key)}; give the device explicitly (--device-capacity-mib) "
                    "to get flagged predictions for other hardware"
                )
        rows.append(
            {
                **plan,
                "configuration_id": plan.get("configuration_id") or f"planned-{i + 1}",
                **dataclasses.asdict(hardware),
            }
        )
    targets = Examples(tuple(rows), feature_matrix(rows, metadata))
    parameters = {**fitted.parameters, **{m: int(v["floating_checkpoint_elements"]) for m, v in metadata.items()}}
    references = dataclasses.replace(fitted, parameters=parameters)
    predictions = references.predict(targets, require_donor=False)
    donors = references.donors(targets)
    measured = fitted.training
    scaled = (measured.features - fitted.classifier.scaler_mean) / fitted.classifier.scaler_scale
    out = []
    for i, row in enumerate(rows):
        mine = predictions[3 * i : 3 * i + 3]
        donor = donors[i]
        distances = np.linalg.norm(
            scaled - (targets.features[i] - fitted.classifier.scaler_mean) / fitted.classifier.scaler_scale, axis=1
        )
        order = np.argsort(distances, kind="stable")[:nearest]
        out.append(
            {
                "configuration_id": row["configuration_id"],
                "model_id": row["model_id"],
                "model_family": coarse_family(row["model_id"]),
                "settings": {k: row.get(k) for k in PLANNED_SETTINGS + HARDWARE_SETTINGS},
                "features": dict(zip(FEATURE_NAMES, targets.features[i].tolist())),
                "predictions": {p["method"]: _prediction(p) for p in mine},
                "startup_check": mine[0]["startup_budget_diagnostic"],
                "donor": None
                if donor is None
                else {**_measured(donor.row), "gpu_count_matches": donor.gpu_count_matches},
                "nearest_measured": [{**_measured(measured.rows[j]), "distance": float(distances[j])} for j in order],
                "scope_flags": scope_flags(row, metadata[row["model_id"]], fitted, hardware, donor is None),
            }
        )
    return {
        "statement": STATEMENT,
        "hardware": {**dataclasses.asdict(hardware), "benchmark_hardware": hardware.is_benchmark},
        "fitted_on_configurations": len(measured.rows),
        "configurations": out,
    }


def scope_flags(
    row: Mapping, metadata: Mapping, fitted: FittedReferences, hardware: Hardware, no_donor: bool
) -> list[str]:
    """Where a planned configuration leaves the measured ground: family, model, settings, hardware, donor."""
    measured = fitted.training.rows
    models = sorted({r["model_id"] for r in measured})
    flags = []
    if coarse_family(row["model_id"]) is None:
        flags.append(
            f"model family not measured: {row['model_id']} is outside the measured families "
            f"({', '.join(sorted(set(FAMILIES.values())))})"
        )
    elif row["model_id"] not in models:
        flags.append(f"model not measured: {row['model_id']} is not in the fitting pool (its family is)")
    outside = _outside_ranges(row, measured)
    sizes = [fitted.parameters[m] for m in models]
    size = int(metadata["floating_checkpoint_elements"])
    if not min(sizes) <= size <= max(sizes):
        outside.append(f"floating_checkpoint_elements={size} (measured {min(sizes)}-{max(sizes)})")
    if outside:
        flags.append("settings outside the measured ranges: " + "; ".join(outside))
    if hardware.flag():
        flags.append(str(hardware.flag()))
    if no_donor:
        flags.append("no measured configuration with the same workload and level: donor copy gives no prediction")
    return flags


def _outside_ranges(row: Mapping, measured: Sequence[Mapping]) -> list[str]:
    """The planned settings outside what the fitting pool measured: an unseen category, or a number out of range."""
    outside = []
    for key in PLANNED_SETTINGS[1:]:
        seen = {r[key] for r in measured}
        if key in _CATEGORICAL:
            if row[key] not in seen:
                outside.append(f"{key}={row[key]} (measured: {', '.join(map(str, sorted(seen)))})")
        elif not min(seen) <= row[key] <= max(seen):
            outside.append(f"{key}={row[key]} (measured {min(seen)}-{max(seen)})")
    return outside


def _prediction(row: Mapping) -> dict:
    out = {"predicted_state": row["predicted_state"], "predicted_peak_mib": row["predicted_peak_mib"]}
    if row["method"] == REGRESSION:
        out["peak_only_predicted_state"] = row["peak_only_predicted_state"]
        out["startup_guard_changed_state"] = row["startup_guard_changed_state"]
    if row["method"] == DONOR:
        out["donor_configuration_id"] = row["donor_configuration_id"]
    return out


def _measured(row: Mapping) -> dict:
    return {
        "configuration_id": row["configuration_id"],
        "model_id": row["model_id"],
        "workload_id": row["workload_id"],
        "configuration_level": row["configuration_level"],
        "gpu_count": row["gpu_count"],
        "observed_state": row["observed_state"],
        "max_completed_run_peak_mib": row["max_completed_run_peak_mib"],
        "eligible_processes": row["eligible_processes"],
    }
