"""Terms of the training stacks the release did not measure: physics only, each with its coefficient and arithmetic,
none calibrated (the band's ``stack_not_measured`` part says the release measured none of them).

Bytes per GPU; P parameters, b the actor's bytes per element, G GPUs, U the largest FSDP unit (a layer), s the
sharding stage (3: FSDP or ZeRO-3, 2: ZeRO-2, 1: ZeRO-1, 0: DDP), D_p / D_g / D_o the GPUs parameters, gradients
and optimizer states are sharded over (G where the stage shards them, else 1):

* full fine-tuning (LoRA rank 0): mixed-precision Adam holds :data:`ADAM_BYTES` = 16 B per parameter — parameters
  ``b P / D_p``, gradients ``b P / D_g`` in the update, and the optimizer states ``(16 - 2b) P / D_o`` (fp32
  moments, plus an fp32 master copy below fp32) from the first step on; the compute gathers
  :data:`PREFETCH_UNITS` units ``2 b U`` at a time when parameters are sharded. Parameter offload (VERL: between
  phases; DeepSpeed: for good, a unit fetched at a time) and optimizer offload (VERL: between updates, loaded for the
  step; DeepSpeed: the step runs on the CPU) move those terms off the device where they move them;
* a reference model (a KL term with full fine-tuning; with LoRA the base model is the reference, no extra weights):
  bf16 weights ``2 P / D_p`` resident, or ``2 × 2 U`` fetched per unit while it scores when offloaded;
* a GAE critic: a second trained model of the actor's size in fp32 — parameters ``4 P / D_p``, Adam ``8 P / D_o``
  resident unless offloaded — with its own update phase (``critic_update``: parameters, gradients ``4 P / D_g``,
  Adam, activations of its micro-batch, no logits: a value head);
* Ulysses sequence parallelism of size S: every token term holds ``1 / S`` of a micro-batch's tokens (the caller's
  :func:`~.phases.tokens_of`), plus the all-to-all buffers ``4 × 2 B × tokens / S × H`` (q, k, v and the output
  re-partitioned, bf16);
* generation outside vLLM (transformers ``generate``): no reservation; an unpaged KV cache of every sequence of the
  GPU at full length, ``sequences × length × 2 L × kv_width × 2 B``; with ZeRO-3 the full parameters gathered to
  generate (TRL's ``ds3_gather_for_generation``), ``b P``;
* vLLM in server mode (``trl vllm-serve`` on other GPUs): the training GPUs hold no reservation (the server's GPUs
  hold ``u × C``, its weights inside).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .architecture import Architecture
from .inputs import PlanInputs

MIB = 2.0**20
#: Bytes per parameter of mixed-precision Adam: parameters b + gradients b + (16 - 2b) of optimizer states (fp32
#: moments 8, and an fp32 master copy 4 when the parameters are below fp32): 4 + 4 + 8 or 2 + 2 + 12.
ADAM_BYTES = 16.0
#: The reference model's bytes per weight (VERL builds it in bf16; TRL loads it in the policy's dtype).
REFERENCE_BYTES = 2.0
#: The critic's bytes per parameter (VERL trains it in fp32 under FSDP), and of its Adam moments.
CRITIC_BYTES, CRITIC_ADAM_BYTES = 4.0, 8.0
#: Units gathered at once under FSDP / ZeRO-3: the one computing and the one prefetched.
PREFETCH_UNITS = 2.0
#: Tensors Ulysses' all-to-all re-partitions per layer (q, k, v, output), bf16.
ALL_TO_ALL_TENSORS, ALL_TO_ALL_BYTES = 4.0, 2.0

Explain = Callable[[int], str]
#: Estimators without a critic: they cost what GRPO costs (VERL's ``AdvantageEstimator``; ReMax's greedy baseline
#: is one more sequence per prompt, inside vLLM's reservation).
CRITIC_FREE = frozenset({
    "grpo", "rloo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "remax", "gpg", "opo", "grpo_passk",
    "grpo_vectorized", "rloo_vectorized", "gspo", "sapo", "dapo", "drgrpo", "dr_grpo", "optimal_token_baseline",
    "tir_optimal_token_baseline", "gdpo", "cispo",
})  # fmt: skip
#: The plan's string knobs and settings :func:`stack_codes` reads.
STRING_KNOBS = ("strategy", "zero_stage", "rollout_engine", "vllm_mode", "advantage_estimator", "algorithm",
                "adaptation", "use_dynamic_bsz")  # fmt: skip


def stack_codes(rows: Sequence[Mapping[str, object]]) -> dict[str, np.ndarray]:
    """The string knobs of plans (dicts) as numbers: the sharding stage (3: FSDP or ZeRO-3, 2: ZeRO-2, 1: ZeRO-1,
    0: DDP or ZeRO-0; accelerate's DeepSpeed plugin defaults to stage 2), DeepSpeed, vLLM in server mode, unpaged
    generation (transformers), a GAE critic, dynamic batch sizes, another engine than vLLM, full fine-tuning (the
    adaptation ``none``)."""

    def low(row: Mapping[str, object], name: str) -> str | None:
        value = row.get(name)
        return None if value is None else str(value).lower()

    def stage(row: Mapping[str, object]) -> float:
        strategy, zero = low(row, "strategy"), row.get("zero_stage")
        if strategy == "ddp":
            return 0.0
        if strategy == "deepspeed":
            return float(zero) if isinstance(zero, (int, float)) and not isinstance(zero, bool) else 2.0
        return 3.0

    def estimator(row: Mapping[str, object]) -> str | None:
        return low(row, "advantage_estimator") or low(row, "algorithm")

    columns = {
        "sharding_stage": [stage(r) for r in rows],
        "deepspeed": [low(r, "strategy") == "deepspeed" for r in rows],
        "vllm_server": [low(r, "vllm_mode") == "server" for r in rows],
        "unpaged_generation": [low(r, "rollout_engine") == "hf" for r in rows],
        "gae_critic": [estimator(r) == "gae" for r in rows],
        "dynamic_batch": [low(r, "use_dynamic_bsz") == "true" for r in rows],
        "other_engine": [low(r, "rollout_engine") not in (None, "vllm") for r in rows],
        "megatron": [low(r, "strategy") == "megatron" for r in rows],
        "full_fine_tuning": [low(r, "adaptation") == "none" for r in rows],
    }
    return {k: np.array(v, dtype=np.float64).reshape(len(rows)) for k, v in columns.items()}


def parallel(x: PlanInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per plan: (the GPUs a micro-batch's tokens are split over, the GPUs one data-parallel rank spans, the GPUs
    the parameters are split over by model parallelism). FSDP: Ulysses' size, the same, 1. Megatron: TP x CP
    (sequence parallelism and vocabulary-parallel logits split the tokens by TP), TP x PP x CP, TP x PP."""
    mega = x.knob("megatron") > 0
    tp, pp, cp = (np.maximum(x.knob(k), 1.0) for k in ("megatron_tp", "megatron_pp", "megatron_cp"))
    ulysses = np.maximum(x.knob("ulysses_sp_size"), 1.0)
    split = np.where(mega, tp * cp, ulysses)
    return split, np.where(mega, tp * pp * cp, ulysses), np.where(mega, tp * pp, 1.0)


@dataclass(frozen=True)
class Stack:
    """Per plan: the GPUs each kind of state is sharded over, what the plan carries (full fine-tuning, a separate
    reference, a critic, Ulysses, unpaged generation, vLLM elsewhere) and its offloads."""

    x: PlanInputs
    arch: Architecture
    g: np.ndarray
    d_params: np.ndarray
    d_grads: np.ndarray
    d_states: np.ndarray
    full: np.ndarray
    reference: np.ndarray
    critic: np.ndarray
    sp: np.ndarray
    unpaged: np.ndarray
    server: np.ndarray
    deepspeed: np.ndarray
    megatron: np.ndarray

    @classmethod
    def of(cls, x: PlanInputs, arch: Architecture) -> Stack:
        g = np.where(x["gpu_count"] > 0, x["gpu_count"], 1.0)
        stage = x.knob("sharding_stage")
        split, _, model_parallel = parallel(x)
        mega = x.knob("megatron") > 0
        full = x.valid["lora_rank"] & (x["lora_rank"] == 0) if "lora_rank" in x.valid else np.zeros(x.rows, bool)
        full = full | (x.knob("full_fine_tuning") > 0)
        return cls(
            x,
            arch,
            g,
            # Megatron: parameters and gradients split by TP x PP, the distributed optimizer over every GPU
            np.where(mega, model_parallel, np.where(stage >= 3, g, 1.0)),
            np.where(mega, model_parallel, np.where(stage >= 2, g, 1.0)),
            np.where(mega | (stage >= 1), g, 1.0),
            np.asarray(full, dtype=bool),
            np.asarray(full & (x.knob("reference_model") > 0), dtype=bool),
            x.knob("gae_critic") > 0,
            split,
            x.knob("unpaged_generation") > 0,
            x.knob("vllm_server") > 0,
            x.knob("deepspeed") > 0,
            mega,
        )

    @property
    def measured(self) -> np.ndarray:
        """Plans in the stack the release measured (LoRA, FSDP, colocated vLLM, no critic, no sequence parallelism,
        fixed micro-batches): no term of this module applies."""
        x = self.x
        return (  # type: ignore[no-any-return]
            ~self.full
            & ~self.critic
            & (self.sp == 1)
            & ~self.unpaged
            & ~self.server
            & (x.knob("sharding_stage") == 3)
            & (x.knob("dynamic_batch") == 0)
            & (x.knob("other_engine") == 0)
            & ~self.megatron
        )

    # -- the actor's full fine-tuning -------------------------------------------------------------------------
    def optimizer_states(self, during_update: bool) -> np.ndarray:
        """Adam's states of every parameter (full fine-tuning), MiB: on the device unless offloaded — VERL loads
        them back for the step, DeepSpeed steps on the CPU."""
        b = self.param_bytes
        off = self.x["optimizer_offload"] > 0
        away = (off & self.deepspeed) if during_update else off
        return np.where(self.full & ~away, (ADAM_BYTES - 2.0 * b) * self.arch.p / self.d_states / MIB, 0.0)

    @property
    def param_bytes(self) -> np.ndarray:
        """Bytes per parameter of the actor's weights: Megatron keeps bf16 weights (its fp32 copy is the
        distributed optimizer's), FSDP the actor's dtype."""
        return np.where(self.megatron, 2.0, self.x.actor_bytes)

    def gradients(self) -> np.ndarray:
        """Full fine-tuning's gradients: in the parameters' dtype (Megatron: fp32 main gradients)."""
        b = np.where(self.megatron, 4.0, self.x.actor_bytes)
        return np.where(self.full, b * self.arch.p / self.d_grads / MIB, 0.0)

    def units(self, nbytes: np.ndarray | float, on: np.ndarray) -> np.ndarray:
        """Units gathered at once where parameters are sharded (or fetched from the CPU), MiB."""
        fetched = (self.d_params > 1) | (self.deepspeed & (self.x["parameter_offload"] > 0))
        return np.where(on & fetched, PREFETCH_UNITS * nbytes * self.arch.unit / MIB, 0.0)

    # -- reference and critic ---------------------------------------------------------------------------------
    def reference_weights(self) -> np.ndarray:
        off = self.x.knob("ref_param_offload") > 0
        return np.where(self.reference & ~off, REFERENCE_BYTES * self.arch.p / self.d_params / MIB, 0.0)

    def reference_units(self) -> np.ndarray:
        off = self.x.knob("ref_param_offload") > 0
        fetched = PREFETCH_UNITS * REFERENCE_BYTES * self.arch.unit / MIB
        return np.where(self.reference & off, fetched, 0.0)

    def critic_parameters(self, computing: bool) -> np.ndarray:
        off = (self.x.knob("critic_param_offload") > 0) & (not computing)
        return np.where(self.critic & ~off, CRITIC_BYTES * self.arch.p / self.d_params / MIB, 0.0)

    def critic_adam(self, stepping: bool) -> np.ndarray:
        off = (self.x.knob("critic_optimizer_offload") > 0) & (not stepping)
        return np.where(self.critic & ~off, CRITIC_ADAM_BYTES * self.arch.p / self.d_states / MIB, 0.0)

    def critic_gradients(self) -> np.ndarray:
        return np.where(self.critic, CRITIC_BYTES * self.arch.p / self.d_grads / MIB, 0.0)

    # -- tokens and generation ----------------------------------------------------------------------------------
    def all_to_all(self, tokens: np.ndarray) -> np.ndarray:
        """Ulysses' all-to-all buffers for ``tokens`` per GPU (already divided by S), MiB."""
        mib = ALL_TO_ALL_TENSORS * ALL_TO_ALL_BYTES * tokens * self.arch.hidden / MIB
        return np.where(self.sp > 1, mib, 0.0)

    def unpaged_cache(self, sequences: np.ndarray, length: np.ndarray) -> np.ndarray:
        return np.where(self.unpaged, sequences * length * self.arch.kv_bytes_per_token() / MIB, 0.0)

    def generation_gather(self) -> np.ndarray:
        on = self.unpaged & self.deepspeed & (self.x.knob("sharding_stage") >= 3)
        return np.where(on, self.x.actor_bytes * self.arch.p / MIB, 0.0)

    @property
    def vllm_here(self) -> np.ndarray:
        """1 where vLLM (or SGLang) holds memory on the training GPUs, else 0."""
        return np.where(self.server | self.unpaged, 0.0, 1.0)

    # -- arithmetic -----------------------------------------------------------------------------------------------
    def _over(self, d: np.ndarray, i: int) -> str:
        return f"/ {d[i]:g} GPUs" if d[i] > 1 else "(not sharded)"

    def describe(self, name: str, mib: np.ndarray) -> Explain:
        """The arithmetic of term ``name`` for plan i (``mib`` its values)."""
        a, x = self.arch, self.x

        def text(i: int) -> str:
            if mib[i] == 0:
                return "0 MiB: " + _ZERO.get(name, "does not apply to this plan")
            p, b = a.p[i], x.actor_bytes[i]
            head = {
                "actor_optimizer_states": f"({ADAM_BYTES:g} - 2 x {b:g}) B x {p:,.0f} parameters "
                f"{self._over(self.d_states, i)} (Adam's fp32 moments{' and master copy' if b < 4 else ''}, "
                "full fine-tuning)",
                "actor_gradients": f"{b:g} B x {p:,.0f} parameters {self._over(self.d_grads, i)} (full fine-tuning)",
                "actor_gathered_units": f"{PREFETCH_UNITS:g} x {b:g} B x {a.unit[i]:,.0f} (the unit computing and the "
                "one prefetched)",
                "reference_weights": f"{REFERENCE_BYTES:g} B x {p:,.0f} {self._over(self.d_params, i)} (the reference "
                "model's bf16 weights: a KL term with full fine-tuning)",
                "reference_units": f"{PREFETCH_UNITS:g} x {REFERENCE_BYTES:g} B x {a.unit[i]:,.0f} (the offloaded "
                "reference fetched a unit at a time)",
                "critic_parameters": f"{CRITIC_BYTES:g} B x {p:,.0f} {self._over(self.d_params, i)} (the GAE critic, "
                "the actor's size, fp32)",
                "critic_adam": f"{CRITIC_ADAM_BYTES:g} B x {p:,.0f} {self._over(self.d_states, i)} (the critic's Adam "
                "moments)",
                "critic_gradients": f"{CRITIC_BYTES:g} B x {p:,.0f} {self._over(self.d_grads, i)} (the critic's "
                "gradients)",
                "critic_gathered_units": f"{PREFETCH_UNITS:g} x {CRITIC_BYTES:g} B x {a.unit[i]:,.0f}",
                "ulysses_all_to_all": f"{ALL_TO_ALL_TENSORS:g} x {ALL_TO_ALL_BYTES:g} B x tokens / SP "
                f"{self.sp[i]:g} x hidden {a.hidden[i]:,.0f} (q, k, v and output re-partitioned)",
                "generation_gather": f"{b:g} B x {p:,.0f} (ZeRO-3 gathers the full parameters to generate)",
            }.get(name, "")
            return f"{head} = {mib[i]:,.0f} MiB (physics only: the release measured none of it)"

        return text

    def describe_cache(self, sequences: np.ndarray, length: np.ndarray, mib: np.ndarray) -> Explain:
        def text(i: int) -> str:
            if mib[i] == 0:
                return "0 MiB: " + _ZERO["unpaged_kv_cache"]
            kv = self.arch.kv_bytes_per_token()[i]
            return (
                f"{sequences[i]:g} sequences x {length[i]:,.0f} tokens x {kv:,.0f} B per token (2 x layers x KV width "
                f"x 2 B) = {mib[i]:,.0f} MiB (transformers' generate: an unpaged cache; physics only: the release "
                "measured none of it)"
            )

        return text


#: Why a term of this module is 0 for a plan.
_ZERO = {
    "actor_optimizer_states": "LoRA (its adapter's Adam is its own term), or the optimizer offloaded",
    "actor_gradients": "LoRA: only the adapter has gradients (its own term)",
    "actor_gathered_units": "LoRA, or parameters not sharded",
    "reference_weights": "no separate reference (LoRA uses the base model; no KL term; or offloaded)",
    "reference_units": "no offloaded separate reference",
    "critic_parameters": "no GAE critic, or its parameters offloaded",
    "critic_adam": "no GAE critic, or its optimizer offloaded",
    "critic_gradients": "no GAE critic",
    "critic_gathered_units": "no GAE critic, or parameters not sharded",
    "ulysses_all_to_all": "no sequence parallelism",
    "generation_gather": "no ZeRO-3 generation with transformers",
    "unpaged_kv_cache": "vLLM's paged cache lives inside its reservation",
}
#: The terms of this module and the model-based reward's (:class:`~.arithmetic.Reward`): the band's
#: ``stack_not_measured`` part is a share of them.
STACK_TERMS = frozenset(
    {*_ZERO, "reward_weights", "reward_gathered_units", "reward_activations", "reward_engine", "reward_engine_kept"}
)


def vllm_kept(x: PlanInputs) -> np.ndarray:
    """The reservation vLLM keeps outside generation, MiB: ``u × C`` when it never sleeps, else 0."""
    return np.where(x["free_cache_engine"] > 0, 0.0, x["vllm_gpu_memory_utilization"] * x["device_capacity_mib"])


def vllm_woken_weights(x: PlanInputs, arch: Architecture) -> np.ndarray:
    """vLLM's bf16 weights woken for the sync, MiB: ``2P/T`` when it slept, else 0 (inside its kept reservation)."""
    t = np.where(x["rollout_tp_size"] > 0, x["rollout_tp_size"], 1.0)
    return np.where(x["free_cache_engine"] > 0, 2.0 * arch.p / t / MIB, 0.0)
