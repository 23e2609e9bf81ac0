"""What the advisor's unit tests share: plans in the dataset's vocabulary on the mini release's models, the JSON
answer of :func:`~rlvrambench_hf.advisor.advise` (the output contract), the floors of plans, and the per-phase
model of plans (:mod:`rlvrambench_hf.memory`) calibrated on the mini release.

Everything that reaches past the public entry points (``read_plans``, ``advise``, the JSON document,
``assess.floors.floors``, ``memory.phases.phases``) is here, once, so that a change of those internals is one edit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rlvrambench_hf.advisor import advise, read_plans
from rlvrambench_hf.advisor.plan.hardware import BENCHMARK_HARDWARE, Hardware
from rlvrambench_hf.advisor.plan.plans import Plans

from miniworld import MODELS

if TYPE_CHECKING:
    from rlvrambench_hf.advisor.assess.context import Context
    from rlvrambench_hf.advisor.assess.floors import Floors
    from rlvrambench_hf.memory.phases import PhaseModel

MIB = 2.0**20
GRANITE, QWEN3B, PHI4, QWEN7B = MODELS
#: A plan of the mini release's Qwen2.5-3B on GSM8K that no record measured (its response length is not the
#: workload's): 32 sequences per GPU, answered by the per-phase model.
PLAN: dict[str, Any] = {
    "model_id": QWEN3B,
    "workload_id": "gsm8k",
    "gpu_count": 2,
    "rollout_tp_size": 1,
    "actor_micro_batch": 4,
    "rollout_logprob_micro_batch": 8,
    "ref_logprob_micro_batch": 8,
    "vllm_gpu_memory_utilization": 0.55,
    "parameter_offload": False,
    "optimizer_offload": False,
    "free_cache_engine": True,
    "max_prompt_length": 512,
    "max_response_length": 768,
    "max_model_len": 1280,
    "max_num_seqs": 64,
    "rollout_n": 4,
    "train_batch_size": 16,
}
SEVERITY = {"within_margin": 0, "above_margin": 1, "memory_failure": 2}


def plan(**changes: object) -> dict[str, Any]:
    """:data:`PLAN` with ``changes``."""
    return {**PLAN, **changes}


def metadata(model_id: str, context: Context) -> Mapping[str, Any]:
    return context.metadata[model_id]


def plans_of(rows: Iterable[Mapping[str, Any]], context: Context, **options: Any) -> Plans:
    """Plans read from mappings in the dataset's vocabulary, against the mini release."""
    return read_plans([dict(r) for r in rows], source=context.inputs.source, **options)


def unchecked(rows: Iterable[Mapping[str, Any]]) -> Plans:
    """Plans built directly from mappings, past the reader's checks (as a caller of the Python API may build them)."""
    import pyarrow as pa

    table = pa.Table.from_pylist([dict(r) for r in rows])
    return Plans(table, [f"plan {i + 1}" for i in range(table.num_rows)])


def document_of(
    planned: Plans | Iterable[Mapping[str, Any]], context: Context, hardware: Hardware = BENCHMARK_HARDWARE
) -> dict[str, Any]:
    """The JSON document ``advise --output`` writes for plans (read against the mini release when mappings)."""
    from rlvrambench_hf.advisor.output.document import document

    plans = planned if isinstance(planned, Plans) else plans_of(planned, context)
    return document(advise(plans, context=context, hardware=hardware))


def answers(
    planned: Plans | Iterable[Mapping[str, Any]], context: Context, hardware: Hardware = BENCHMARK_HARDWARE
) -> list[dict[str, Any]]:
    """The JSON answer of every plan (``configurations`` of the document)."""
    return list(document_of(planned, context, hardware)["configurations"])


def answer(row: Mapping[str, Any], context: Context, hardware: Hardware = BENCHMARK_HARDWARE) -> dict[str, Any]:
    (found,) = answers([row], context, hardware)
    return found


def floors_of(
    planned: Plans | Iterable[Mapping[str, Any]], context: Context, hardware: Hardware = BENCHMARK_HARDWARE
) -> Floors:
    """The physical floors of plans on ``hardware``."""
    from rlvrambench_hf.advisor.assess.floors import floors
    from rlvrambench_hf.advisor.assess.predict import SettingArrays
    from rlvrambench_hf.advisor.assess.verdict import with_hardware

    plans = planned if isinstance(planned, Plans) else plans_of(planned, context)
    table = with_hardware(plans.table, hardware)
    return floors(SettingArrays.of(table, context.metadata))


def model_of(rows: Iterable[Mapping[str, Any]], context: Context, capacity: float = 40960.0) -> PhaseModel:
    """The per-phase model of plans in the dataset's vocabulary (knobs as extra keys), on a device of ``capacity``
    MiB unless a row gives its own, with the calibration the advisor answers with."""
    from rlvrambench_hf.memory.calibrate import rows_inputs
    from rlvrambench_hf.memory.phases import phases

    full = [{"device_capacity_mib": capacity, **r} for r in rows]
    x, arch = rows_inputs(full, context.metadata)
    return phases(x, arch, context.memory.calibration)


def terms(model: PhaseModel, phase: str, i: int = 0) -> dict[str, float]:
    """Plan ``i``'s terms of ``phase`` by name, MiB."""
    return {t.name: float(t.mib[i]) for t in model.terms[phase]}


def label(peak: float, capacity: float) -> int:
    """The card's label of a peak on a device (margin 95 % of the capacity) as a severity: 0 within, 1 above, 2 a
    memory failure."""
    from rlvrambench_hf.memory.devices import margin_of

    return 2 if peak > capacity else 1 if peak > margin_of(capacity) else 0


def severity(state: str | None) -> int:
    return SEVERITY[state] if state is not None else -1


def column(model: PhaseModel, phase: str, name: str) -> np.ndarray:
    """One term of ``phase`` for every plan."""
    (found,) = [t.mib for t in model.terms[phase] if t.name == name]
    return found


#: :data:`PLAN` as a VERL config tree (what a user's YAML gives; VERL's packaged defaults give the rest).
VERL_TREE: dict[str, Any] = {
    "data": {"max_prompt_length": 512, "max_response_length": 768, "train_batch_size": 16},
    "actor_rollout_ref": {
        "model": {"path": QWEN3B, "lora_rank": 64},
        "actor": {"ppo_mini_batch_size": 16, "ppo_micro_batch_size_per_gpu": 4},
        "rollout": {
            "name": "vllm",
            "n": 4,
            "tensor_model_parallel_size": 1,
            "gpu_memory_utilization": 0.55,
            "log_prob_micro_batch_size_per_gpu": 8,
            "max_num_seqs": 64,
            "max_model_len": 1280,  # null: the model's own context length (VERL 0.7 and later)
        },
        "ref": {"log_prob_micro_batch_size_per_gpu": 8},
    },
    "algorithm": {"adv_estimator": "grpo"},
    "trainer": {"n_gpus_per_node": 2, "nnodes": 1},
}


def verl_tree(**changes: object) -> dict[str, Any]:
    """:data:`VERL_TREE` with ``changes`` at dotted keys written with ``__`` (None deletes the key)."""
    import copy

    tree = copy.deepcopy(VERL_TREE)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return tree


def verl_yaml(tree: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(tree), sort_keys=False)


#: :data:`PLAN` as the overrides of a launch script (the keys a user writes on the command line).
VERL_OVERRIDES = (
    "algorithm.adv_estimator=grpo",
    "data.train_batch_size=16",
    "data.max_prompt_length=512",
    "data.max_response_length=768",
    f"actor_rollout_ref.model.path={QWEN3B}",
    "actor_rollout_ref.model.lora_rank=64",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.55",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.rollout.max_num_seqs=64",
    "actor_rollout_ref.rollout.max_model_len=1280",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
    "trainer.n_gpus_per_node=2",
    "trainer.nnodes=1",
)
