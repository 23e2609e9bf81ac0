"""The seals of the mini release: every JSON document that :mod:`rlvrambench_hf.data.schema.seals` declares, the small
files only a seal covers, and the digests filled in as the files are now.

The documents carry what the cores read (the estimation protocol and its amendment, the admission protocol) and,
in every member the package declares as recording digests, the files the mini release names there: its own tables
and documents, and — as the real release does — code, training data and estimation outputs it does not carry,
whose digests are those of their names (so ``verify`` lists them as listed but absent). :func:`fill` writes the
digest of every recorded file; :func:`sealing_order` puts each seal after the seals whose files it records.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping
from pathlib import Path

from rlvrambench_hf.admission.protocol import PROTOCOL_PATH as ADMISSION_PROTOCOL
from rlvrambench_hf.data.schema.seals import SEALS
from rlvrambench_hf.estimation.api import AMENDMENT, PROTOCOL
from rlvrambench_hf.estimation.features import FEATURE_NAMES
from rlvrambench_hf.estimation.logistic import CLASSIFIER_SETTINGS

import miniworld as world

ESTIMATION, HOST, DECISION = "benchmark/estimation", "benchmark/host_capacity", "benchmark/decision"
PREDICTION_FREEZE, STUDY_FREEZE = f"{ESTIMATION}/prediction_freeze.json", f"{HOST}/study_freeze.json"
HOST_PROTOCOL, DECISION_AMENDMENT = f"{HOST}/protocol.json", f"{DECISION}/amendment-01.json"
SUBMISSION, COLLECTION_SUMMARY = f"{DECISION}/submission.json", f"{DECISION}/results/collection_summary.json"
DECISION_MATRIX = f"{DECISION}/matrix.csv"
HOST_FILES = ("matrix.csv", "predictions.json", "targets.csv")
#: The feature the original estimation protocol names last, before its amendment.
ORIGINAL_LAST_FEATURE = "actor_parameter_offload"
_INPUTS = (
    "benchmark/attempts.csv",
    "benchmark/configurations.csv",
    "benchmark/outcomes.csv",
    "benchmark/estimation/model_metadata.json",
    "benchmark/estimation/targets.csv",
)
_DATA = ("data/gsm8k/train.parquet", "data/math/train.parquet")
#: Files the seals name that the mini release does not carry (code, training data, unpublished outputs).
NOT_CARRIED = (
    *_DATA,
    "memory_tuner/estimation_baselines.py",
    "memory_tuner/run_host_capacity.py",
    "decision_benchmark.py",
    f"{ESTIMATION}/fitted_model.json",
    f"{ESTIMATION}/predictions.json",
    f"{ESTIMATION}/retrospective.json",
)
#: seal → member → the names its ``{name: digest}`` mapping lists (relative to the member's folder).
LISTED: dict[str, dict[str, tuple[str, ...]]] = {
    PROTOCOL: {"data_sha256": _DATA, "input_sha256": (*_INPUTS, "memory_tuner/estimation_baselines.py")},
    AMENDMENT: {
        "implementation_sha256": ("memory_tuner/estimation_baselines.py",),
        "unchanged_inputs_verified_sha256": _INPUTS,
    },
    PREDICTION_FREEZE: {
        "files_sha256": ("fitted_model.json", "predictions.json", "retrospective.json"),
        "effective_input_sha256": (*_INPUTS, "memory_tuner/estimation_baselines.py"),
        "amendments_sha256": ("amendment-01.json",),
    },
    STUDY_FREEZE: {"files_sha256": HOST_FILES},
    HOST_PROTOCOL: {"data_sha256": _DATA, "implementation_sha256": ("memory_tuner/run_host_capacity.py",)},
    ADMISSION_PROTOCOL: {
        "source_files_sha256": ("benchmark/configuration_results.csv", "benchmark/attempts.csv"),
        "data_files_sha256": _DATA[:1],
        "implementation_sha256": ("decision_benchmark.py",),
    },
    DECISION_AMENDMENT: {"implementation_sha256": ("decision_benchmark.py",)},
}


def documents(rows: Mapping[str, list[dict]]) -> dict[str, dict]:
    """Every seal document but the collection summary (a table of the release), before its digests are filled."""
    attempt_ids: dict[str, list[str]] = {}
    for attempt in rows["recorded_attempts"]:
        attempt_ids.setdefault(attempt["configuration_id"], []).append(attempt["attempt_id"])
    return {
        ADMISSION_PROTOCOL: world.admission_protocol(attempt_ids),
        DECISION_AMENDMENT: {"status": "before_any_new_target_execution_or_outcome", "corrections": []},
        SUBMISSION: {"study": "prospective_decision", "gpus_per_allocation": 2},
        PROTOCOL: estimation_protocol(rows),
        AMENDMENT: {
            "amended_at_utc": "2026-01-01T00:00:00+00:00",
            "reason": "The offload indicator becomes the resident actor shards.",
            "updates": {"features": list(FEATURE_NAMES)},
        },
        PREDICTION_FREEZE: {"status": "sealed_before_new_standard_grpo_execution", "target_configurations": 4},
        HOST_PROTOCOL: {
            "protocol_version": "host-capacity-1.0",
            "evaluation_seeds": list(world.PANELS["expanded_host"][1]),
        },
        STUDY_FREEZE: {"status": "frozen_after_host_censoring_before_followup_execution"},
    }


def estimation_protocol(rows: Mapping[str, list[dict]]) -> dict:
    """The estimator comparison's protocol as frozen: its last feature is the one the amendment replaces."""
    pool = [r["configuration_id"] for r in rows["configurations"] if r["study"] in world.GPU_STUDY.values()]
    return {
        "protocol_version": "estimation-1.0",
        "status": "specified_before_fitting",
        "features": [*FEATURE_NAMES[:-1], ORIGINAL_LAST_FEATURE],
        "classifier": {**CLASSIFIER_SETTINGS, "penalty": "l2", "implementation": "sklearn"},
        "source_studies": sorted(world.GPU_STUDY.values()),
        "source_configuration_ids": sorted(pool),
        "target_configuration_ids": [r["configuration_id"] for r in rows["estimation_targets"]],
        "device_capacity_mib": world.DEVICE_CAPACITY_MIB,
        "memory_margin_limit_mib": world.MARGIN_LIMIT_MIB,
    }


def support_files(rows: Mapping[str, list[dict]]) -> dict[str, str]:
    """The files only seals cover: the admission panel's frozen matrix and the expanded-host study's matrix, targets
    and frozen predictions, by repository path."""
    slots = [{"slot_id": world.slot_id(c, seed), "candidate_id": c, "training_seed": seed} for c, seed in world.slots()]
    host = rows["expanded_host_configurations"]
    planned = [
        {k: p[k] for k in ("experiment_id", "configuration_id", "task_gpu_count")}
        for p in rows["expanded_host_processes"]
    ]
    predictions = [
        {
            "configuration_id": r["configuration_id"],
            "method": method,
            "predicted_state": r[f"{method}_predicted_state"],
            "predicted_peak_mib": r[f"{method}_predicted_peak_mib"],
        }
        for r in host
        for method in world.FROZEN_METHODS
    ]
    return {
        DECISION_MATRIX: _csv(slots),
        f"{HOST}/matrix.csv": _csv(planned),
        f"{HOST}/predictions.json": json.dumps(predictions, indent=2) + "\n",
    }


def recorded(seal: str) -> list[str]:
    """The repository paths of the files ``seal`` records."""
    out = []
    for member in SEALS[seal].digests:
        if member.file is not None:
            out.append(member.file)
        else:
            out += [_join(member.folder, name) for name in LISTED.get(seal, {}).get(member.member, ())]
    return out


def sealing_order() -> list[str]:
    """Every declared seal, each after the seals whose files it records."""
    order: list[str] = []

    def visit(seal: str) -> None:
        if seal not in order:
            for path in recorded(seal):
                if path in SEALS and path != seal:
                    visit(path)
            order.append(seal)

    for seal in SEALS:
        visit(seal)
    return order


def fill(seal: str, document: dict, root: Path) -> None:
    """Set every digest member of ``seal`` in ``document``: the SHA-256 of each file it records, as it is now."""
    for member in SEALS[seal].digests:
        if member.file is not None:
            document[member.member] = digest(root, member.file)
        else:
            names = LISTED.get(seal, {}).get(member.member, ())
            document[member.member] = {name: digest(root, _join(member.folder, name)) for name in names}


def digest(root: Path, relpath: str) -> str:
    """The SHA-256 of a file of the release; of its name for a file the release does not carry."""
    path = root / relpath
    data = path.read_bytes() if path.is_file() else relpath.encode()
    return hashlib.sha256(data).hexdigest()


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
