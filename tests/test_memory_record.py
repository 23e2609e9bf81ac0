"""The memory model's record as the retrospective publishes it: the form chosen per fold and on all three families,
every candidate with its inner and outer scores, the leave-one-model-out check over every measured model, the
calibrated coefficients with their spread and physical limits, bounded runtime terms, and the band's parts."""

from __future__ import annotations

import numpy as np
import pytest

from rlvrambench_hf.estimation.api import load_inputs, run_retrospective
from rlvrambench_hf.estimation.hubmeta import architecture_metadata
from rlvrambench_hf.estimation.knownconfigs import KNOWN_CONFIGS
from rlvrambench_hf.estimation.physical import record_of
from rlvrambench_hf.memory.calibrate import rows_inputs
from rlvrambench_hf.memory.extrapolation import PARTS, plan_band
from rlvrambench_hf.memory.forms import CANDIDATES, SEQUENCE_CAP, TOKEN_SHARE_LIMITS, Form
from rlvrambench_hf.memory.phases import PER_SEQUENCE, RUNTIME, phases

FOLDS = ("granite33", "phi4", "qwen25")
MODELS = ("granite33_2b", "phi4_mini", "qwen25_1p5b", "qwen25_3b", "qwen25_7b")
PLAN = {
    "model_id": "Qwen/Qwen2.5-3B-Instruct", "workload_id": "gsm8k", "gpu_count": 2, "rollout_tp_size": 1,
    "actor_micro_batch": 8, "rollout_logprob_micro_batch": 4, "ref_logprob_micro_batch": 4,
    "vllm_gpu_memory_utilization": 0.6, "parameter_offload": False, "optimizer_offload": False,
    "free_cache_engine": True, "max_prompt_length": 1024, "max_response_length": 2048, "max_model_len": 3072,
    "max_num_seqs": 64, "rollout_n": 2, "train_batch_size": 32, "device_capacity_mib": 40960,
    "margin_limit_mib": 38912, "total_training_steps": 1,
}  # fmt: skip


@pytest.fixture(scope="module")
def inputs(snapshot):
    return load_inputs(snapshot)


@pytest.fixture(scope="module")
def record(inputs):
    return record_of(inputs)


@pytest.fixture(scope="module")
def section(snapshot):
    return run_retrospective(snapshot)["memory_model"]


def test_the_retrospective_says_how_the_form_was_chosen_in_every_fold(section):
    for family in FOLDS:
        chosen = section["selection"][family]
        assert chosen["training_families"] == [f for f in FOLDS if f != family]
        assert len(chosen["candidates"]) == len(CANDIDATES) == 24
        assert chosen["chosen"] == section["nested"][family]["form"]
        best = min(chosen["candidates"], key=lambda c: (c["with_band"]["approved_memory_failure"],
                                                        c["with_band"]["approved_above_margin"]))  # fmt: skip
        assert best["with_band"]["approved_memory_failure"] == 0
    assert section["selection"]["final"]["chosen"] == section["chosen_form"]["name"]
    forms = {f["name"]: f for f in section["forms"]}
    assert set(forms) == {f.name for f in CANDIDATES}
    for family in FOLDS:  # the nested score is the chosen form's outer score
        nested = section["nested"][family]
        assert forms[nested["form"]]["outer"][family]["correct"] == nested["correct"]
        assert family in forms[nested["form"]]["chosen_in"]
    best = section["best_of_forms"]["folds"]
    assert all(best[f]["correct"] >= section["nested"][f]["correct"] for f in FOLDS)
    assert "not a held-out figure" in section["best_of_forms"]["note"]


def test_no_memory_failure_is_approved_in_any_outer_fold(section):
    for family in FOLDS:
        nested = section["nested"][family]
        assert nested["approved_memory_failure"] == 0 and nested["with_band"]["approved_memory_failure"] == 0
        assert nested["with_band"]["approved_above_margin"] == 0


def test_leave_one_model_out_approves_no_failure_and_no_above_margin_run_of_the_unseen_qwen(section):
    lomo = section["leave_one_model_out"]
    assert tuple(sorted(lomo)) == MODELS
    for entry in lomo.values():
        assert entry["approved_memory_failure"] == 0 and entry["approved_with_band"]["approved_memory_failure"] == 0
    small = lomo["qwen25_1p5b"]
    assert small["configurations"] == 13 and small["completed_peaks"] == 12
    assert small["approved_above_margin"] == 0 and small["approved_with_band"]["approved_above_margin"] == 0
    assert small["calibration_models"] == sorted(
        ["Qwen/Qwen2.5-3B-Instruct", "ibm-granite/granite-3.3-2b-instruct", "microsoft/Phi-4-mini-instruct"]
    )
    assert lomo["qwen25_7b"]["queries"] == 6 and lomo["qwen25_7b"]["correct"] == 6  # six resolved failures
    assert all(e["approved_with_band"]["approved_above_margin"] == 0 for e in lomo.values())


def test_the_coefficients_carry_their_spread_and_the_token_shares_their_limits(section):
    coefficients = section["coefficients"]
    for entry in coefficients["runtime_per_workload"].values():
        assert set(entry["folds"]) == set(FOLDS) and entry["low"] <= entry["final"] <= entry["high"]
    low, high = TOKEN_SHARE_LIMITS
    shares = coefficients["token_shares"]
    assert shares["limits"] == [low, high]
    for per_workload in shares["phases"].values():
        for entry in per_workload.values():
            assert low <= entry["share"]["low"] <= entry["share"]["high"] <= high
            assert entry["share"]["final"] == min(high, max(low, entry["measured"]["final"]))


def test_every_candidate_keeps_its_token_shares_within_their_limits(record):
    grid = record.grid
    every = grid.models()
    for form in (f for f in CANDIDATES if f.tokens == "per_workload"):
        for training in (every, *(every - {m} for m in every)):
            for shares in grid.calibration(training, form).token_scale.values():
                assert all(TOKEN_SHARE_LIMITS[0] <= v <= TOKEN_SHARE_LIMITS[1] for v in shares.values())


def test_the_runtime_term_is_bounded_where_the_old_scale_ran_away(inputs, record):
    """At 72B the runtime term stays at what the calibration models measured (plus the per-sequence share, capped
    at 512 sequences); H x (L + 1) unbounded gave 20.5 GB there, and even named it is held in range now."""
    big = "Qwen/Qwen2.5-72B-Instruct"
    metadata = {**inputs.metadata, big: architecture_metadata(big, KNOWN_CONFIGS[big])}
    rows = [{**PLAN, "model_id": big, "gpu_count": 8, "max_num_seqs": n} for n in (512, 1024, None)]
    x, arch = rows_inputs(rows, metadata)
    cal = record.calibration
    terms = {t.name: t.mib for t in phases(x, arch, cal).terms["rollout"]}
    runtime = terms[RUNTIME] + terms.get(PER_SEQUENCE, 0.0)
    assert np.all(runtime == runtime[0]) and runtime[0] < 8 * 1024
    assert runtime[0] <= max(cal.per_workload.values()) + cal.mib_per_sequence * SEQUENCE_CAP + 1e-6
    scaled = record.grid.calibration(record.grid.models(), Form("hidden_layers", "median", 2.0, "per_workload"))
    held = {t.name: t.mib for t in phases(x, arch, scaled).terms["rollout"]}[RUNTIME][0]
    assert held < 5 * 1024  # the calibration models' largest H x (L + 1), not 72B's


def test_the_band_grows_only_where_the_plan_leaves_what_was_measured(inputs, record):
    rows = [
        PLAN,  # measured ground: one step, a calibration model, A100, measured token counts
        {**PLAN, "total_training_steps": None},  # a run of unstated length
        {**PLAN, "model_id": "Qwen/Qwen2.5-7B-Instruct", "gpu_count": 4},  # another model, larger
        {**PLAN, "actor_micro_batch": 64, "train_batch_size": 128},  # more tokens than measured
        {**PLAN, "device_capacity_mib": 81559, "margin_limit_mib": 77481},  # another device
    ]
    x, arch = rows_inputs(rows, inputs.metadata)
    model = phases(x, arch, record.calibration)
    band = plan_band(model, x, arch, [r["model_id"] for r in rows], record.band)
    parts = [[p["part"] for p in band.entry(i)["parts"]] for i in range(len(rows))]
    assert parts[0] == ["in_domain"] and band.mib[0] == pytest.approx(record.band_mib)
    assert parts[1] == ["in_domain", "training_horizon"]
    assert parts[2] == ["in_domain", "model_not_calibrated", "size_outside_range"]
    assert parts[3] == ["in_domain", "tokens_outside_range"]
    assert parts[4] == ["in_domain", "device_not_measured"]
    assert (band.mib >= record.band_mib).all() and (band.mib[1:4] > band.mib[0]).all()
    assert all(p in PARTS and band.entry(2)["parts"][k]["why"] for k, p in enumerate(parts[2]))


def test_the_larger_model_targets_are_all_predicted_memory_failures(inputs, record):
    from rlvrambench_hf.memory.band import predict_rows

    labels, _ = predict_rows(list(inputs.targets.rows), record.calibration, inputs.metadata)
    assert labels == ["memory_failure"] * 12
