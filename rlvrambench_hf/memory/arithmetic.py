"""The arithmetic of the per-phase model's terms (:mod:`.phases`): the tokens of a micro-batch, the activations they
hold, and each term's arithmetic in words for one plan (built only for the plans an answer shows)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .architecture import Architecture
from .calibrate import Calibration
from .inputs import KNOB_DEFAULTS, PlanInputs
from .stack import Stack, parallel

MIB = 2.0**20
Explain = Callable[[int], str]
#: Bytes of activations per token, hidden unit and layer of a transformer layer in bf16 with flash attention
#: (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", 34 s b h).
LAYER_ACTIVATION_BYTES = 34.0
#: What each width of a logit element stands for.
LOGIT_WIDTHS = {
    2.0: "bf16 logits, fused log-probabilities",
    4.0: "fp32 logits",
    7.0: "fp32 + bf16 + 1 B per logit, VERL's performance guide",
}


def tokens_of(x: PlanInputs, arch: Architecture) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sequence length, sequences per data-parallel rank, tokens per GPU of an actor micro-batch, of a log-prob
    micro-batch). Under Ulysses of size S a rank spans S GPUs, each holding 1 / S of a micro-batch's tokens."""
    length, per_gpu, sp = _lengths(x, arch)
    actor = np.minimum(x["actor_micro_batch"], per_gpu) * length / sp
    score = np.minimum(np.maximum(x["rollout_logprob_micro_batch"], x["ref_logprob_micro_batch"]), per_gpu) * length
    return length, per_gpu, actor, score / sp


def _lengths(x: PlanInputs, arch: Architecture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    context = np.where(x.valid["max_model_len"], x["max_model_len"], arch.context)
    length = np.minimum(context, x["max_prompt_length"] + x["max_response_length"])
    gpus = np.where(x["gpu_count"] > 0, x["gpu_count"], 1.0)
    split, group, _ = parallel(x)
    return length, x["train_batch_size"] * x["rollout_n"] * group / gpus, split


def critic_tokens(x: PlanInputs, arch: Architecture) -> np.ndarray:
    """Tokens per GPU of the critic's micro-batch (the actor's micro-batch where the plan gives none)."""
    length, per_gpu, sp = _lengths(x, arch)
    micro = np.where(x.knob_given("critic_micro_batch"), x.values.get("critic_micro_batch", 0), x["actor_micro_batch"])
    return np.minimum(micro, per_gpu) * length / sp  # type: ignore[no-any-return]


def activation_mib(x: PlanInputs, arch: Architecture, tokens: np.ndarray) -> np.ndarray:
    """Activations of a micro-batch of ``tokens`` per GPU, MiB (checkpoint boundaries plus one layer recomputed with
    gradient checkpointing, every layer without)."""
    ckpt = x.knob("gradient_checkpointing") > 0
    h, layers = arch.hidden, arch.layers
    boundaries = 2.0 * tokens * h * (layers + 1) / MIB
    one_layer = LAYER_ACTIVATION_BYTES * tokens * h / MIB
    return np.where(ckpt, boundaries + one_layer, one_layer * layers)  # type: ignore[no-any-return]


def critic_activations(tokens: np.ndarray, mib: np.ndarray) -> Explain:
    return lambda i: (
        f"the actor's activation arithmetic at the critic's micro-batch of {tokens[i]:,.0f} tokens per GPU = "
        f"{mib[i]:,.0f} MiB (a value head: no logits; physics only)"
        if mib[i]
        else "0 MiB: no GAE critic"
    )


class Formats:
    """The arithmetic of each term for one plan (built only for the plans an answer shows)."""

    def __init__(self, x: PlanInputs, arch: Architecture, cal: Calibration, st: Stack) -> None:
        self.x, self.a, self.cal, self.st = x, arch, cal, st
        self.rank = np.where(st.full, 0.0, x.knob("lora_rank"))

    def _g(self, i: int) -> int:
        return int(self.x["gpu_count"][i])

    def _d(self, i: int) -> int:
        """The GPUs the parameters are sharded over (1: DDP, ZeRO-1/2)."""
        return int(self.st.d_params[i])

    def reservation(self, i: int) -> str:
        u, c = self.x["vllm_gpu_memory_utilization"][i], self.x["device_capacity_mib"][i]
        if self.x.knob("unpaged_generation")[i] > 0:
            return "0 MiB: no vLLM; transformers' generate holds its own cache (its term)"
        if self.x.knob("vllm_server")[i] > 0:
            return f"0 MiB here: vLLM serves from other GPUs (they hold {u:g} x {c:,.0f} MiB = {u * c:,.0f} MiB)"
        engine = "SGLang (mem_fraction_static)" if self.x.knob("other_engine")[i] > 0 else "vLLM"
        return f"{u:g} x {c:,.0f} MiB = {u * c:,.0f} MiB ({engine} takes this share of the device's total memory)"

    def _shards(self, i: int) -> str:
        x, a = self.x, self.a
        b = self.st.param_bytes[i]
        r = a.adapter(self.rank)[i]
        given = "" if x.actor_bytes_given[i] or self.st.megatron[i] else ", fp32 as the release ran"
        q = x.valid.get("base_quant_bits")
        if q is not None and q[i] and x["base_quant_bits"][i] > 0:
            bits = x["base_quant_bits"][i]
            base = f"{bits:g}/8 B x {a.p[i]:,.0f} base + {b:g} B x {r:,.0f} adapter"
        else:
            base = f"{b:g} B{given} x ({a.p[i]:,.0f} + {r:,.0f} adapter)"
        mib = (bits / 8 if q is not None and q[i] and x["base_quant_bits"][i] > 0 else b) * a.p[i] + b * r
        over = f"/ {self._d(i)} GPUs" if self._d(i) > 1 or self._g(i) == 1 else "(replicated: not sharded)"
        return f"{base} {over} = {mib / self._d(i) / MIB:,.0f} MiB"

    def resident(self, i: int) -> str:
        if self.x["parameter_offload"][i] > 0:
            return "0 MiB: parameters offloaded to the CPU while vLLM generates"
        return self._shards(i) + (" (FSDP shards kept on the device)" if self._d(i) > 1 else " (kept on the device)")

    def shards(self, i: int) -> str:
        if self.st.deepspeed[i] and self.x["parameter_offload"][i] > 0:
            return "0 MiB: DeepSpeed keeps the offloaded parameters on the CPU (fetched a unit at a time)"
        where = " (brought back from the CPU for compute)" if self.x["parameter_offload"][i] > 0 else ""
        return self._shards(i) + where

    def runtime(self, i: int) -> str:
        return self.cal.describe(self.a, self.x, i)

    def per_sequence(self, i: int) -> str:
        return self.cal.describe_per_sequence(self.x, i)

    def between(self, i: int) -> str:
        if self.st.vllm_here[i] == 0:
            return "0 MiB: no vLLM on these GPUs"
        if self.x["free_cache_engine"][i] > 0:
            return "0 MiB: free_cache_engine puts vLLM to sleep between generations (weights to the CPU, KV freed)"
        return self.reservation(i) + ", kept: free_cache_engine is off"

    def _tokens(self, i: int, micro: float) -> str:
        length, per_gpu, _, _ = tokens_of(self.x, self.a)
        sp = self.st.sp[i]
        what = "TP x CP" if self.st.megatron[i] else "Ulysses"
        split = f" / {what} {sp:g}" if sp > 1 else ""
        return f"min({micro:g}, {per_gpu[i]:g} sequences per GPU) x {length[i]:,.0f} tokens{split}"

    def logits_score(self, i: int) -> str:
        micro = max(self.x["rollout_logprob_micro_batch"][i], self.x["ref_logprob_micro_batch"][i])
        return self._logits(i, micro)

    def logits_update(self, i: int) -> str:
        return self._logits(i, self.x["actor_micro_batch"][i])

    def _logits(self, i: int, micro: float) -> str:
        length, per_gpu, _, _ = tokens_of(self.x, self.a)
        tok = min(micro, per_gpu[i]) * length[i] / self.st.sp[i]
        width = self.cal.logit_bytes
        mib = tok * self.a.vocab[i] * width / MIB
        return (
            f"{self._tokens(i, micro)} x vocabulary {self.a.vocab[i]:,.0f} x {width:g} B "
            f"({LOGIT_WIDTHS.get(width, 'bytes per logit element')}) = {mib:,.0f} MiB"
        )

    def optimizer(self, i: int) -> str:
        r = self.a.adapter(self.rank)[i]
        b = 4 if self.x["optimizer_offload"][i] > 0 else 12
        what = "fp32 gradients (Adam offloaded)" if b == 4 else "fp32 gradients + Adam's two moments"
        if r == 0:
            return "0 MiB: no adapter (full fine-tuning: the gradients and Adam states of every parameter are terms)"
        return f"{b} B x {r:,.0f} adapter elements / {self._g(i)} GPUs = {b * r / self._g(i) / MIB:,.0f} MiB ({what})"

    def activations(self, i: int) -> str:
        _, _, tok, _ = tokens_of(self.x, self.a)
        h, layers = self.a.hidden[i], self.a.layers[i]
        ckpt = self.x.knob("gradient_checkpointing")[i] > 0
        source = (
            "" if self.x.knob_given("gradient_checkpointing")[i] else f" ({KNOB_DEFAULTS['gradient_checkpointing'][1]})"
        )
        if ckpt:
            mib = (2 * tok[i] * h * (layers + 1) + LAYER_ACTIVATION_BYTES * tok[i] * h) / MIB
            return (
                f"gradient checkpointing on{source}: 2 B x {tok[i]:,.0f} tokens x {h:,.0f} x ({layers:.0f} + 1) "
                f"boundaries + {LAYER_ACTIVATION_BYTES:g} B x {tok[i]:,.0f} x {h:,.0f} (one layer) = {mib:,.0f} MiB"
            )
        mib = LAYER_ACTIVATION_BYTES * tok[i] * h * layers / MIB
        return (
            f"gradient checkpointing off: {LAYER_ACTIVATION_BYTES:g} B x {tok[i]:,.0f} tokens x {h:,.0f} x "
            f"{layers:.0f} layers = {mib:,.0f} MiB"
        )

    def gathered(self, i: int) -> str:
        a, x = self.a, self.x
        r = a.adapter(self.rank)[i]
        b = self.st.param_bytes[i]
        dtype = "" if x.actor_bytes_given[i] or self.st.megatron[i] else ", fp32 as the release ran"
        if self.st.unpaged[i]:
            return "0 MiB: no vLLM to copy the weights to (transformers generates with the trained model)"
        if self._d(i) == 1 and x["parameter_offload"][i] <= 0:
            return "0 MiB: the full parameters are resident (not sharded; counted there), nothing is gathered"
        if self.st.full[i]:
            return (
                f"full fine-tuning syncs tensor by tensor: {b:g} B{dtype} x {a.unit[i]:,.0f} (largest unit, the "
                f"actor's dtype) = {b * a.unit[i] / MIB:,.0f} MiB (physics only)"
            )
        if x.knob("layered_summon")[i] > 0:
            return (
                f"layered summon: {b:g} B{dtype} x {a.unit[i]:,.0f} (largest FSDP unit, the actor's dtype) = "
                f"{b * a.unit[i] / MIB:,.0f} MiB"
            )
        source = "" if x.knob_given("layered_summon")[i] else f" ({KNOB_DEFAULTS['layered_summon'][1]})"
        seen = (
            ""
            if x["parameter_offload"][i] > 0
            else "; the release saw this phase bind only with parameters offloaded: an extrapolation here"
        )
        q = x.valid.get("base_quant_bits")
        base = x["base_quant_bits"][i] / 8 if q is not None and q[i] and x["base_quant_bits"][i] > 0 else b
        return (
            f"no layered summon{source}: ({base:g} B x {a.p[i]:,.0f} + {b:g} B x {r:,.0f}){dtype} gathered for the "
            f"LoRA merge in the actor's dtype = {(base * a.p[i] + b * r) / MIB:,.0f} MiB{seen}"
        )

    def vllm_woken_weights(self, i: int) -> str:
        if self.st.vllm_here[i] == 0:
            return "0 MiB: no vLLM on these GPUs"
        if self.x["free_cache_engine"][i] > 0:
            t = self.x["rollout_tp_size"][i]
            weights = 2 * self.a.p[i] / t / MIB
            return f"2 B x {self.a.p[i]:,.0f} / TP {t:g} = {weights:,.0f} MiB (vLLM woken for its bf16 weights)"
        return "0 MiB: vLLM never slept, its weights are inside the reservation it keeps"

    def tokens(self, phase: str, physical: np.ndarray) -> Explain:
        return lambda i: self.cal.describe_tokens(phase, self.x, i, float(physical[i]))

    def sync_extra(self, i: int) -> str:
        return self.cal.describe_sync()


#: The FSDP reward model's bytes per weight (VERL builds it in bf16), and its forward's bytes per token and hidden
#: unit: the hidden states between layers (2, bf16) and one layer's working set (34: under no_grad each layer's
#: activations are freed once the next has them); its score head is of width 1 (no vocabulary logits).
REWARD_BYTES, REWARD_FORWARD_BYTES = 2.0, 2.0 + LAYER_ACTIVATION_BYTES
#: Why a reward term is 0 for a plan.
_NO_REWARD = {
    "reward_weights": "no FSDP reward model on these GPUs, or its parameters offloaded",
    "reward_gathered_units": "no FSDP reward model, or its parameters neither sharded nor offloaded",
    "reward_activations": "no FSDP reward model",
    "reward_engine": "no reward engine on these GPUs (no model-based reward, a FSDP one, or its own resource pool)",
    "reward_engine_kept": "no reward engine here, or it sleeps between rewards (free_cache_engine)",
}


class Reward:
    """A model-based reward per plan (physics only; the release measured none): a FSDP reward model — bf16 weights
    ``2 P_r / G`` resident unless offloaded, one unit gathered ``2 × 2 U_r`` and the forward of its micro-batch
    ``tokens × H_r × 36`` B — or VERL's reward loop — an inference engine woken for the reward, ``u_r × C`` (its
    weights ``2 P_r / T_r`` inside), kept between rewards only without ``free_cache_engine``."""

    def __init__(self, x: PlanInputs, arch: Architecture) -> None:
        self.x = x
        on = x.knob("reward_model") > 0
        loop = on & (x.knob("reward_loop") > 0)
        self.on, self.fsdp, self.engine = on, on & ~loop, loop & (x.knob("reward_pool") == 0)
        self.p, self.unit, self.hidden = x.knob("reward_params"), x.knob("reward_unit"), x.knob("reward_hidden")
        self.g = np.where(x["gpu_count"] > 0, x["gpu_count"], 1.0)
        self.t = np.maximum(x.knob("reward_tp_size"), 1.0)
        self.offload = x.knob("reward_param_offload") > 0
        length, per_gpu, _ = _lengths(x, arch)
        micro = np.minimum(x.knob("reward_micro_batch"), per_gpu) * length
        budget = x.knob("reward_max_token_len")
        self.tokens = np.where(x.knob("reward_dynamic_bsz") > 0, np.fmin(budget, per_gpu * length), micro)
        sized = np.isfinite(self.p) & np.isfinite(self.unit) & np.isfinite(self.hidden)
        self.known = ~on | (sized & (self.engine | ~self.fsdp | (np.isfinite(self.tokens) & (self.tokens > 0))))

    def _on(self, mask: np.ndarray, mib: np.ndarray) -> np.ndarray:
        return np.where(mask & self.known, np.nan_to_num(mib), 0.0)

    def weights(self) -> np.ndarray:
        return self._on(self.fsdp & ~self.offload, REWARD_BYTES * self.p / self.g / MIB)

    def units(self) -> np.ndarray:
        fetched = self.fsdp & ((self.g > 1) | self.offload)
        return self._on(fetched, 2.0 * REWARD_BYTES * self.unit / MIB)

    def activations(self) -> np.ndarray:
        return self._on(self.fsdp, self.tokens * self.hidden * REWARD_FORWARD_BYTES / MIB)

    def _budget(self) -> tuple[np.ndarray, np.ndarray]:
        budget = self.x.knob("reward_vllm_utilization") * self.x["device_capacity_mib"]
        return budget, REWARD_BYTES * self.p / self.t / MIB

    def engine_awake(self) -> np.ndarray:
        """The reward engine while it scores: its reservation, or beyond it the weights it cannot hold inside."""
        budget, weights = self._budget()
        return self._on(self.engine, np.where(weights < budget, budget, budget + weights))

    def engine_kept(self) -> np.ndarray:
        kept = self.engine & (self.x.knob("reward_free_cache_engine") == 0)
        return self._on(kept, self._budget()[0])

    def describe(self, name: str, mib: np.ndarray) -> Explain:
        def text(i: int) -> str:
            if mib[i] == 0:
                return "0 MiB: " + _NO_REWARD[name]
            p, g, budget, weights = self.p[i], self.g[i], *(v[i] for v in self._budget())
            u, c = self.x.knob("reward_vllm_utilization")[i], self.x["device_capacity_mib"][i]
            head = {
                "reward_weights": f"{REWARD_BYTES:g} B x {p:,.0f} parameters / {g:g} GPUs (the reward model's bf16 "
                "FSDP shards, resident)",
                "reward_gathered_units": f"2 x {REWARD_BYTES:g} B x {self.unit[i]:,.0f} (the unit computing and the "
                "one prefetched" + (", fetched from the CPU)" if self.offload[i] else ")"),
                "reward_activations": f"{self.tokens[i]:,.0f} tokens x hidden {self.hidden[i]:,.0f} x "
                f"{REWARD_FORWARD_BYTES:g} B (hidden states and one layer's forward; a score head of width 1, no "
                "vocabulary logits)",
                "reward_engine": f"{u:g} x {c:,.0f} MiB (the reward engine woken for the reward; its weights "
                f"{REWARD_BYTES:g} B x {p:,.0f} / TP {self.t[i]:g} = {weights:,.0f} MiB "
                + ("inside)" if weights < budget else "do not fit inside: it cannot start)"),
                "reward_engine_kept": f"{u:g} x {c:,.0f} MiB (the reward engine never sleeps: free_cache_engine off)",
            }[name]
            return f"{head} = {mib[i]:,.0f} MiB (physics only: the release measured none of it)"

        return text
