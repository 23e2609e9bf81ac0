"""The world the mini release describes: which configurations, runs, queries, candidates and panels exist, and the
values the cores read from them (labels by name, blanks as None).

Four parts, each small enough to check by hand:

- **transfer**: four configurations in two cases (``cfg-a`` … ``cfg-d``) and five queries over the four tracks;
- **estimation**: a pool of 30 configurations (three model families × the same grid of two workloads, four levels
  at two GPUs and two levels at four GPUs), every family with all three labels, and four Qwen2.5-7B targets;
- **admission**: two cases of two candidates with donors, one screen and three evaluation slots each, two
  permitted replacements and one screen slot that never started; every attempt's job and elapsed time;
- **follow-up**: the four targets as a resolved-and-unresolved panel with frozen predictions, and a three-row
  expanded-host panel; each planned seed slot's process (state, peak, failure kind and stage, launched or not).

Every configuration has three eligible runs (one attempt and one stage record each: a pool configuration's measure
its rollout, actor update and reference log-probabilities, :func:`stage_record`); ``cfg-a`` also has one excluded
attempt. :mod:`unit.minipanels` turns the panels into their result records, :mod:`unit.miniseals` writes the seals,
and :mod:`minirelease` fills every other column from the column's kind and writes the files.
"""

from __future__ import annotations

from rlvrambench_hf.data.schema.pins import DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB

W, A, F, U = "within_margin", "above_margin", "memory_failure", "unresolved"

# --- transfer -------------------------------------------------------------------------------------------------------
TRANSFER = ("cfg-a", "cfg-b", "cfg-c", "cfg-d")
CASE_OF = {"cfg-a": "case-1", "cfg-b": "case-2", "cfg-c": "case-1", "cfg-d": "case-2"}
STATE_OF = {"cfg-a": W, "cfg-b": W, "cfg-c": A, "cfg-d": F}
PEAK_OF = {"cfg-a": 30000.0, "cfg-b": 37500.0, "cfg-c": 39500.0, "cfg-d": None}
QUERIES = (  # query, task, track, source, target: every source in case-1, every target in case-2
    ("query-1", "task-1", "model_transfer", "cfg-a", "cfg-b"),
    ("query-2", "task-2", "gpu_count_transfer", "cfg-c", "cfg-d"),
    ("query-3", "task-3", "workload_transfer", "cfg-a", "cfg-d"),
    ("query-4", "task-4", "horizon_transfer", "cfg-c", "cfg-b"),
    ("query-5", "task-1", "model_transfer", "cfg-c", "cfg-d"),
)
RUNS_PER_CONFIGURATION = 3

# --- estimation -----------------------------------------------------------------------------------------------------
#: model id → (fine family, coarse family, name, floating elements P, adapter elements R, layers, hidden, vocabulary,
#: largest transformer layer, non-transformer elements, largest tensor)
MODELS = {
    "ibm-granite/granite-3.3-2b-instruct": (
        "granite33_2b", "granite33", "granite-3.3-2b-instruct", 2_500_000_000, 110_000_000, 40, 2048, 49_152,
        63_000_000, 100_700_000, 100_700_000,
    ),
    "Qwen/Qwen2.5-3B-Instruct": (
        "qwen25_3b", "qwen25", "Qwen2.5-3B-Instruct", 3_100_000_000, 120_000_000, 36, 2048, 151_936,
        77_000_000, 311_000_000, 311_000_000,
    ),
    "microsoft/Phi-4-mini-instruct": (
        "phi4_mini", "phi4", "Phi-4-mini-instruct", 3_800_000_000, 92_000_000, 32, 3072, 200_064,
        113_000_000, 614_600_000, 614_600_000,
    ),
    "Qwen/Qwen2.5-7B-Instruct": (
        "qwen25_7b", "qwen25", "Qwen2.5-7B-Instruct", 7_600_000_000, 161_000_000, 28, 3584, 152_064,
        233_000_000, 1_090_000_000, 545_000_000,
    ),
}  # fmt: skip
POOL_MODELS = tuple(MODELS)[:3]
TARGET_MODEL = "Qwen/Qwen2.5-7B-Instruct"
#: workload → (prompt, response, max model length)
WORKLOADS = {"gsm8k": (512, 512, 1024), "math": (512, 1024, 2048)}
#: level → (actor micro-batch, log-prob micro-batches, vLLM memory fraction)
LEVELS = {"c0": (2, 4, 0.5), "c1": (4, 8, 0.6), "c2": (8, 8, 0.7), "c3": (16, 16, 0.8)}
#: The grid every pool family is measured on: (workload, level, GPUs); four GPUs is the study four_gpu.
GRID = tuple((w, level, 2) for w in WORKLOADS for level in LEVELS) + (("gsm8k", "c2", 4), ("gsm8k", "c3", 4))
#: Largest completed peak (MiB) of each pool configuration in GRID order; None: a memory failure.
POOL_PEAKS = {
    "ibm-granite/granite-3.3-2b-instruct": (29100, 31800, 34600, 37900, 30500, 33900, 39400, None, 32400, 35800),
    "Qwen/Qwen2.5-3B-Instruct": (31200, 33900, 36700, 39800, 32800, 36100, None, None, 34300, 38200),
    "microsoft/Phi-4-mini-instruct": (32900, 35600, 38700, None, 34400, 37900, 40300, None, 35900, 39900),
}
#: The prospective targets (Qwen2.5-7B): (workload, level, GPUs).
TARGETS = (("gsm8k", "c1", 2), ("gsm8k", "c2", 4), ("math", "c1", 2), ("math", "c3", 2))
GPU_STUDY = {2: "boundary", 4: "four_gpu"}


def state_of_peak(peak: float | None) -> str:
    """The label a measured largest peak gives (None: a memory failure)."""
    if peak is None:
        return F
    return W if peak <= MARGIN_LIMIT_MIB else A


def pool_id(model_id: str, workload: str, level: str, gpus: int) -> str:
    return f"pool-{MODELS[model_id][1]}-{workload}-{level}-{gpus}gpu"


def target_id(workload: str, level: str, gpus: int) -> str:
    return f"est-7b-{workload}-{level}-{gpus}gpu"


def settings(configuration_id: str, model_id: str, workload: str, level: str, gpus: int, study: str) -> dict:
    """Every setting of a pool configuration or target (the columns of ``configurations.csv``)."""
    fine, _, name = MODELS[model_id][:3]
    prompt, response, length = WORKLOADS[workload]
    micro, logprob_micro, utilization = LEVELS[level]
    return {
        "configuration_id": configuration_id,
        "case_id": f"{fine}-{workload}-{gpus}gpu",
        "study": study,
        "model_family": fine,
        "model_name": name,
        "model_id": model_id,
        "workload_id": workload,
        "workload_name": workload.upper(),
        "legacy_dataset_id": workload,
        "algorithm": "GRPO",
        "adaptation": "LoRA",
        "configuration_level": level,
        "condition": None,
        "gpu_count": gpus,
        "rollout_tp_size": 1,
        "actor_micro_batch": micro,
        "rollout_logprob_micro_batch": logprob_micro,
        "ref_logprob_micro_batch": logprob_micro,
        "vllm_gpu_memory_utilization": utilization,
        "parameter_offload": False,
        "optimizer_offload": False,
        "free_cache_engine": True,
        "max_prompt_length": prompt,
        "max_response_length": response,
        "max_model_len": length,
        "max_num_seqs": 64,
        "rollout_n": 4,
        "train_batch_size": 16,
        "train_max_samples": -1,
        "val_max_samples": 32,
        "total_training_steps": 5,
        "gpu_monitor_interval_ms": 100,
        "allocator_trace_enabled": True,
        "allocator_trace_sync": False,
        "save_freq": -1,
        "test_freq": -1,
        "val_before_train": False,
        "resume_mode": "disable",
        "max_actor_ckpt_to_keep": 1,
        "accelerator": "NVIDIA A100-SXM4-40GB",
        "device_capacity_mib": DEVICE_CAPACITY_MIB,
        "margin_limit_mib": MARGIN_LIMIT_MIB,
        "peak_measurement": "maximum externally sampled per-device memory",
    }


def pool_settings() -> list[dict]:
    """The 30 pool configurations, sorted by id."""
    rows = [
        settings(pool_id(m, w, level, g), m, w, level, g, GPU_STUDY[g]) for m in POOL_MODELS for w, level, g in GRID
    ]
    return sorted(rows, key=lambda r: r["configuration_id"])


def pool_peaks() -> dict[str, float | None]:
    """configuration id → largest completed peak (None for a memory failure)."""
    return {
        pool_id(m, w, level, g): None if p is None else float(p)
        for m in POOL_MODELS
        for (w, level, g), p in zip(GRID, POOL_PEAKS[m])
    }


#: The stage each seed's one stage record of a pool configuration measures (seed 1 the rollout; seeds 2 and 3 the
#: token phases, so that every configuration has one measurement of each and the per-phase model has its evidence).
SEED_STAGES = {1: "rollout", 2: "actor_update", 3: "reference_logprob"}
#: Share of the full-length token terms (logits, activations) a token phase really held: GSM8K answers stop well
#: before their cap, MATH answers run to it (plausible figures of the mini world, not the release's).
TOKEN_SHARE = {"gsm8k": 0.6, "math": 1.1}
MIB = 2.0**20


def stage_record(configuration: dict, seed: int) -> dict:
    """The stage, peak and coverage of a pool configuration's stage record of ``seed``: the rollout's peak is the
    configuration's; a token phase holds the actor's fp32 shards, Adam's states (the actor update), the
    configuration's own runtime residual (peak - u x C - shards) and its share of the full-length logits and
    activations (gradient checkpointing on). A failed configuration's records are partial, with no peak."""
    c, stage = configuration, SEED_STAGES[seed]
    peak = pool_peaks()[c["configuration_id"]]
    if peak is None:
        return {"stage": stage, "observed_peak_mib": None, "coverage": "terminal_stage_partial"}
    _, _, _, p, r, layers, hidden, vocab = MODELS[c["model_id"]][:8]
    g, u, share = c["gpu_count"], c["vllm_gpu_memory_utilization"], TOKEN_SHARE[c["workload_id"]]
    shards = 4.0 * (p + r) / g / MIB
    runtime = peak - u * DEVICE_CAPACITY_MIB - shards
    length = min(c["max_model_len"], c["max_prompt_length"] + c["max_response_length"])
    per_gpu = c["train_batch_size"] * c["rollout_n"] / g
    if stage == "rollout":
        value = float(peak)
    elif stage == "actor_update":
        tokens = min(c["actor_micro_batch"], per_gpu) * length
        activations = (2.0 * tokens * hidden * (layers + 1) + 34.0 * tokens * hidden) / MIB
        value = shards + 12.0 * r / g / MIB + runtime + share * (activations + 2.0 * tokens * vocab / MIB)
    else:
        tokens = min(max(c["rollout_logprob_micro_batch"], c["ref_logprob_micro_batch"]), per_gpu) * length
        value = shards + runtime + share * 2.0 * tokens * vocab / MIB
    return {"stage": stage, "observed_peak_mib": round(value), "coverage": "completed_run"}


def target_settings() -> list[dict]:
    study = "prospective_estimation"
    return [settings(target_id(w, level, g), TARGET_MODEL, w, level, g, study) for w, level, g in TARGETS]


def model_metadata() -> list[dict]:
    rows = []
    for i, (model_id, (_, _, _, p, r, layers, hidden, vocab, layer, outside, tensor)) in enumerate(MODELS.items()):
        rows.append(
            {
                "all_linear_layer_adapter_elements": r,
                "config_sha256": f"{i:064x}",
                "floating_checkpoint_bytes": 2 * p,
                "floating_checkpoint_elements": p,
                "head_dim": 128,
                "hidden_size": hidden,
                "intermediate_size": 4 * hidden,
                "largest_transformer_layer_elements": layer,
                "largest_weight_tensor_elements": tensor,
                "lora_rank": 64,
                "model_id": model_id,
                "non_transformer_layer_elements": outside,
                "num_attention_heads": hidden // 128,
                "num_hidden_layers": layers,
                "num_key_value_heads": 2,
                "revision": f"mini-{i}",
                "scope": "Invented counts of the mini release (no weights)",
                "shard_header_sha256": [f"model-0000{k}.safetensors={k + i:064x}" for k in (1, 2)],
                "tensor_count": 10 * layers + 3,
                "tie_word_embeddings": i % 2 == 0,
                "vocab_size": vocab,
            }
        )
    return rows


# --- admission ------------------------------------------------------------------------------------------------------
SCREEN_SEED, EVALUATION_SEEDS = 141, (142, 143, 144)
#: candidate → (case, level, micro-batch, reservation, donor configuration, donor peak as the protocol writes it)
CANDIDATES = {
    "case-a-c1": ("case-a", "c1", 8, 0.6, "cfg-a", "30000.0"),
    "case-a-c2": ("case-a", "c2", 16, 0.7, "cfg-b", "37500.0"),
    "case-b-c1": ("case-b", "c1", 8, 0.6, "cfg-a", "30000.0"),
    "case-b-c2": ("case-b", "c2", 16, 0.7, "cfg-d", ""),
}
ADMISSION_CASES = {"case-a": ("qwen25_3b", "gsm8k"), "case-b": ("phi4_mini", "math")}
QUERY_ORDER = {"case-a": ("case-a-c2", "case-a-c1"), "case-b": ("case-b-c1", "case-b-c2")}
#: (candidate, seed) → the attempts of that slot: (state, peak, known memory failure, repair reason, elapsed seconds;
#: None: the invocation never ran, so its time is not recorded)
SLOT_ATTEMPTS: dict[tuple[str, int], tuple[tuple[str, float | None, bool, str | None, float | None], ...]] = {
    ("case-a-c1", 141): ((W, 31000.0, False, None, 500.0),),
    ("case-a-c1", 142): ((W, 32000.0, False, None, 500.0),),
    ("case-a-c1", 143): ((W, 32500.0, False, None, 500.0),),
    ("case-a-c1", 144): ((W, 31800.0, False, None, 500.0),),
    ("case-a-c2", 141): ((U, None, False, "port_binding_collision", None), (A, 39500.0, False, None, 520.0)),
    ("case-a-c2", 142): ((W, 38000.0, False, None, 500.0),),
    ("case-a-c2", 143): ((A, 39200.0, False, None, 520.0),),
    ("case-a-c2", 144): ((W, 38700.0, False, None, 500.0),),
    ("case-b-c1", 141): ((W, 34000.0, False, None, 500.0),),
    ("case-b-c1", 142): ((W, 34500.0, False, None, 500.0),),
    ("case-b-c1", 143): ((W, 35000.0, False, None, 500.0),),
    ("case-b-c1", 144): ((U, None, False, "missing_dependency_or_data", 40.0), (W, 34800.0, False, None, 500.0)),
    # case-b-c2's screen slot never started: no attempt
    ("case-b-c2", 142): ((F, None, True, None, 125.0),),
    ("case-b-c2", 143): ((F, None, True, None, 125.0),),
    ("case-b-c2", 144): ((F, None, True, None, 125.0),),
}
#: The scheduler job of the first attempt (the others follow in SLOT_ATTEMPTS order) and the source they ran.
FIRST_ADMISSION_JOB, ADMISSION_SOURCE_HEAD = 5100, "0123456789abcdef0123456789abcdef01234567"
#: The evaluation truth the slots give.
TRUTH = {"case-a-c1": W, "case-a-c2": A, "case-b-c1": W, "case-b-c2": F}


def slot_id(candidate: str, seed: int) -> str:
    return f"slot-{candidate}-s{seed}"


def admission_protocol(attempt_ids_of: dict[str, list[str]]) -> dict:
    """The frozen protocol (``protocol.json``); ``attempt_ids_of`` gives each configuration's recorded attempts."""
    cases = []
    for case, (family, dataset) in ADMISSION_CASES.items():
        mine = [c for c, spec in CANDIDATES.items() if spec[0] == case]
        cases.append(
            {
                "case_id": case,
                "model_family": family,
                "dataset": dataset,
                "candidates": [
                    {
                        "candidate_id": c,
                        "configuration_level": CANDIDATES[c][1],
                        "actor_micro_batch": CANDIDATES[c][2],
                        "reservation": CANDIDATES[c][3],
                        "slot_ids": {
                            "screen": [slot_id(c, SCREEN_SEED)],
                            "evaluation": [slot_id(c, s) for s in EVALUATION_SEEDS],
                        },
                    }
                    for c in mine
                ],
                "donors": {
                    c: {
                        "configuration_id": CANDIDATES[c][4],
                        "observed_state": STATE_OF[CANDIDATES[c][4]],
                        "max_completed_run_peak_mib": CANDIDATES[c][5],
                        "recorded_attempt_ids": attempt_ids_of[CANDIDATES[c][4]],
                    }
                    for c in mine
                },
                "query_order": list(QUERY_ORDER[case]),
            }
        )
    return {
        "protocol_version": "decision-1.0",
        "status": "frozen_before_any_new_target_outcome",
        "objective": "Within-margin coverage and approval errors of the mini panel.",
        "cases": cases,
        "screen_seed": SCREEN_SEED,
        "evaluation_seeds": list(EVALUATION_SEEDS),
        "memory_limit_mib": MARGIN_LIMIT_MIB,
        "additional_donor_guard_mib": 2048,
        "budgets_per_case": [0, 1, 2, 3],
        "rules": ["source_copy", "headroom_guard", "direct_screen"],
        "decision_rule": "A revealed screen replaces the decision.",
        "target_truth": "The three evaluation slots give the truth.",
        "resource_cap": {"max_repair_allocations": 8},
    }


def slots() -> list[tuple[str, int]]:
    """Every planned (candidate, seed) slot of the panel, candidates in order, the screen first."""
    return [(c, seed) for c in CANDIDATES for seed in (SCREEN_SEED, *EVALUATION_SEEDS)]


# --- follow-up ------------------------------------------------------------------------------------------------------
#: A planned seed slot's process: (state, completed peak, failure kind, failure stage, launched).
Slot = tuple[str, float | None, str | None, str | None, bool]
ROLLOUT_OOM: Slot = (F, None, "rollout_init_memory", "training", True)
ACTOR_OOM: Slot = (F, None, "actor_update_memory", "training", True)
EXECUTOR_FAILURE: Slot = (U, None, "vllm_executor_failure", "training", True)
CONFIGURATION_FAILURE: Slot = (U, None, "configuration", "training", True)
PREFLIGHT_FAILURE: Slot = (U, None, None, "device_preflight", True)
NOT_LAUNCHED: Slot = (U, None, None, "not_started", False)


def completed(*peaks: float) -> tuple[Slot, ...]:
    """Slots whose processes completed with these peaks (within or above the margin)."""
    return tuple((state_of_peak(p), p, None, None, True) for p in peaks)


#: target → (its three slots, then the (state, peak) of donor copy, regression, logistic); a configuration is
#: resolved when all three slots are eligible, a memory failure if one failed, above the margin if one exceeded it.
#: The regression's label of the third target comes from its startup guard (its peak implies above).
LARGER_MODEL = {
    target_id("gsm8k", "c1", 2): (completed(35000.0, 34600.0, 34800.0), (W, 33900.0), (W, 34500.0), (W, None)),
    target_id("gsm8k", "c2", 4): (completed(39600.0, 38600.0, 38800.0), (W, 32400.0), (A, 39000.0), (W, None)),
    target_id("math", "c1", 2): ((ROLLOUT_OOM, ROLLOUT_OOM, ACTOR_OOM), (W, 36100.0), (F, 39000.0), (F, None)),
    target_id("math", "c3", 2): (
        (*completed(39700.0), EXECUTOR_FAILURE, NOT_LAUNCHED),
        (F, None),
        (W, 37000.0),
        (W, None),
    ),
}
EXPANDED_HOST = {
    "host-1": (completed(36000.0, 35800.0, 35900.0), (W, 35000.0), (W, 36500.0), (W, None)),
    "host-2": (completed(39800.0, 38700.0, 39500.0), (A, 39600.0), (W, 38000.0), (A, None)),
    "host-3": ((ROLLOUT_OOM, CONFIGURATION_FAILURE, PREFLIGHT_FAILURE), (W, 34000.0), (F, 41500.0), (F, None)),
}
#: The expanded-host settings (workload, level, GPUs): host-1 and host-2 are the two GPU counts of the same pairs (one
#: per seed); no other configuration of either panel has its other GPU count planned, so its pairs hold one process.
HOST_SETTINGS = {"host-1": ("gsm8k", "c2", 2), "host-2": ("gsm8k", "c2", 4), "host-3": ("math", "c3", 2)}
#: Per study: its configurations, seeds and the prefix of its pair ids.
PANELS = {
    "larger_model": (LARGER_MODEL, (151, 152, 153), "est"),
    "expanded_host": (EXPANDED_HOST, (161, 162, 163), "host"),
}
FROZEN_METHODS = ("donor_copy", "component_regression", "logistic")
#: One allocation per pair (both GPU counts share a four-GPU allocation) holding a launched process, lasting this
#: many seconds; the scheduler kept no outer record of UNACCOUNTED_PAIR's allocation, so its time is unknown.
ALLOCATION_GPUS, ALLOCATION_SECONDS = 4, {"larger_model": 900.0, "expanded_host": 1200.0}
UNACCOUNTED_PAIR = "est-math-c3-s152"
FIRST_FOLLOWUP_JOB = {"larger_model": 5200, "expanded_host": 5300}
#: Invocation seconds of a slot: completed, memory failure, other failure; a slot never launched took none.
INVOCATION_SECONDS = {W: 600.0, A: 600.0, F: 150.0, U: 60.0}
