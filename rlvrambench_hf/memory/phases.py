"""Per-phase peaks of VERL's colocated GRPO+LoRA loop on one GPU, for many plans at once (pure numpy).

Phases carry the release's stage names (``stage_measurements.csv``): ``initializing``, ``rollout``,
``reference_logprob``, ``actor_update``, ``weight_sync``. Each phase is a sum of terms in MiB; every physical
term has its coefficient fixed at its physical value, and the only calibrated terms — runtime memory outside
vLLM's budget (CUDA context, NCCL buffers, CUDA graphs, allocator slack), the weight-sync gather's extra and the
token phases' measured share — and the per-sequence share of the runtime term (``sequences`` form) come from
:mod:`.calibrate`. ``explain`` gives one plan's terms with their arithmetic.

Physical terms (bytes per GPU; P parameters, R adapter elements, G GPUs, T rollout TP, u utilization, C capacity):

* vLLM's reservation ``u × C`` (vLLM ≥ 0.7 takes a share of *total* device memory) while generating; asleep
  (``free_cache_engine``) it holds nothing between generations, awake for weight sync its bf16 weights ``2P/T``;
* the resident actor: FSDP shards ``b (P + R) / G`` (b = 4 for fp32, the release's; base weights quantised to q
  bits: ``q/8 P + 4 R``), none while parameters are offloaded, back on the device for compute;
* the actor update: LoRA gradients and Adam's two moments ``12 R / G`` (``4 R / G`` with the optimizer offloaded);
  activations of one micro-batch, ``2 × tokens × H × (L + 1)`` checkpoint boundaries plus one layer's ``34 ×
  tokens × H`` recomputed with gradient checkpointing, ``34 × tokens × H × L`` without it; logits ``tokens × V ×
  w`` (``w`` bytes per logit element, a choice of form: :mod:`.forms`);
* log-probabilities: logits of a log-prob micro-batch, ``tokens × V × w``;
* weight sync: the full parameters gathered for the LoRA merge in the actor's dtype, ``b (P + R)`` (one FSDP unit
  at a time, ``b U``, with layered summon), beside the resident actor and vLLM: its bf16 weights ``2P/T`` when
  ``free_cache_engine`` woke it for them, its whole reservation ``u × C`` when it never slept.

Tokens of a micro-batch are its sequences at full length (prompt + response capped by ``max_model_len``): the
worst case, reached when every response runs to its cap. What the release measured of the token terms, per
workload, is their own calibrated term beside them (``calibrated_update_tokens``, ``calibrated_logprob_tokens``):
below zero where responses stop before the cap, never above it (a form whose bytes per token are too few pays
for it in its held-out stage errors, not here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .architecture import Architecture
from .arithmetic import (
    Explain,
    Formats,
    Reward,
    activation_mib,
    critic_activations,
    critic_tokens,
    tokens_of,
)
from .calibrate import Calibration
from .inputs import PlanInputs
from .stack import Stack, vllm_kept, vllm_woken_weights

MIB = 2.0**20
PHASES: tuple[str, ...] = (
    "initializing",
    "rollout",
    "reference_logprob",
    "actor_update",
    "weight_sync",
    "critic_update",
    "reward",
)
#: The calibrated term of the weight sync: what it holds beyond its physical terms.
SYNC_EXTRA = "weight_sync_extra"
#: The calibrated runtime terms outside vLLM's budget (the second only in the ``sequences`` form).
RUNTIME, PER_SEQUENCE = "runtime_outside_vllm", "per_sequence_runtime"
#: The terms of each token phase that grow with the tokens of a micro-batch, at full length.
TOKEN_TERMS: dict[str, tuple[str, ...]] = {
    "actor_update": ("activations", "update_logits"),
    "reference_logprob": ("logprob_logits",),
}
#: The calibrated term of each token phase: what the release measured of those terms beyond (or short of) them.
TOKEN_CALIBRATION: dict[str, str] = {
    "actor_update": "calibrated_update_tokens",
    "reference_logprob": "calibrated_logprob_tokens",
}


@dataclass(frozen=True)
class Term:
    """One term of a phase: its name, MiB per plan, whether it is calibrated, and its arithmetic for plan i."""

    name: str
    mib: np.ndarray
    arithmetic: Explain
    calibrated: bool = False
    measured: bool = True  # False: physics the release measured none of (:mod:`.stack`)


@dataclass(frozen=True)
class PhaseModel:
    """Every phase's terms per plan, the peak per phase, the binding phase and the overall peak."""

    terms: dict[str, list[Term]]
    known: np.ndarray  # plans whose model and settings let every phase be computed

    def phase_peak(self, phase: str) -> np.ndarray:
        return cast("np.ndarray", np.sum([t.mib for t in self.terms[phase]], axis=0))

    def uncertain(self, stack_only: bool = False) -> np.ndarray:
        """Per plan × phase, MiB of the terms whose size is not fixed by physics alone: the calibrated terms, the
        token terms and the terms the release measured none of (``stack_only``: those last alone)."""
        tokens = {n for names in TOKEN_TERMS.values() for n in names}

        def counted(t: Term) -> bool:
            return not t.measured if stack_only else (t.calibrated or not t.measured or t.name in tokens)

        # the token terms count net of their calibration (the share of them the release measured)
        columns = [
            np.maximum(np.sum([t.mib for t in self.terms[p] if counted(t)] or [np.zeros(len(self.known))], axis=0), 0)
            for p in PHASES
        ]
        return np.column_stack(columns)

    @property
    def peaks(self) -> np.ndarray:
        """Per plan × phase (in :data:`PHASES` order), MiB."""
        return np.column_stack([self.phase_peak(p) for p in PHASES])

    @property
    def peak(self) -> np.ndarray:
        return np.where(self.known, self.peaks.max(axis=1), np.nan)

    @property
    def binding(self) -> np.ndarray:
        """Index into :data:`PHASES` of the phase that sets each plan's peak (start-up and generation hold the same
        terms: a tie is generation's)."""
        tie = np.zeros(len(PHASES))
        tie[0] = 1e-6
        return cast("np.ndarray", np.argmax(self.peaks - tie, axis=1))

    def explain(self, i: int) -> list[dict[str, Any]]:
        """Plan ``i``'s phases as the answer lists them: phase, peak and terms with their arithmetic."""
        out = []
        for phase in PHASES:
            if phase in ("critic_update", "reward") and not any(t.mib[i] for t in self.terms[phase]):
                continue  # no critic, no model-based reward
            terms = [  # a term of another stack than the plan's is not listed
                {"term": t.name, "mib": round(float(t.mib[i]), 1), "arithmetic": t.arithmetic(i)}
                for t in self.terms[phase]
                if t.measured or t.mib[i]
            ]
            out.append(
                {"phase": phase, "peak_mib": round(float(sum(t.mib[i] for t in self.terms[phase])), 1), "terms": terms}
            )
        return out


def phases(x: PlanInputs, arch: Architecture, cal: Calibration) -> PhaseModel:
    """The five phases of every plan."""
    g = np.where(x["gpu_count"] > 0, x["gpu_count"], 1.0)
    st = Stack.of(x, arch)
    u, c = x["vllm_gpu_memory_utilization"], x["device_capacity_mib"]
    p_off, o_off = x["parameter_offload"] > 0, x["optimizer_offload"] > 0
    rank = np.where(st.full, 0.0, x.knob("lora_rank"))
    r = arch.adapter(rank)
    quant = x.valid["base_quant_bits"] & (x["base_quant_bits"] > 0) if "base_quant_bits" in x.valid else None
    b = st.param_bytes
    base_bytes = np.where(quant, x["base_quant_bits"] / 8.0, b) if quant is not None else b
    shards = (base_bytes * arch.p + b * r) / st.d_params / MIB
    resident = np.where(p_off, 0.0, shards)
    budget = u * c * st.vllm_here
    length, per_gpu, tok_actor, tok_score = tokens_of(x, arch)
    runtime = cal.runtime(arch, x)
    per_sequence = cal.per_sequence(x)
    sync_extra = np.full(x.rows, cal.sync_extra)
    layered = x.knob("layered_summon") > 0
    v = arch.vocab
    activations = activation_mib(x, arch, tok_actor)
    logits_update = tok_actor * v * cal.logit_bytes / MIB
    logits_score = tok_score * v * cal.logit_bytes / MIB
    optimizer = np.where(o_off, 4.0, 12.0) * r / g / MIB
    # one GPU (or DDP, ZeRO-1/2) without offload: nothing sharded, the resident parameters are the full ones
    unsharded = (st.d_params == 1) & ~p_off
    full = base_bytes * arch.p + b * r
    # full fine-tuning syncs tensor by tensor (one unit at a time); a LoRA merge gathers everything unless layered
    one_unit = layered | st.full
    gathered = np.where(unsharded | st.unpaged, 0.0, np.where(one_unit, b * arch.unit, full) / MIB)
    vllm_between = vllm_kept(x) * st.vllm_here
    # DeepSpeed's parameter offload keeps the parameters on the CPU for good (fetched a unit at a time)
    computing = np.where(st.deepspeed & p_off, 0.0, shards)

    f = Formats(x, arch, cal, st)
    reservation = Term("vllm_reservation", budget, f.reservation)
    actor_term = Term("resident_actor", resident, f.resident)
    runtime_terms = [Term(RUNTIME, runtime, f.runtime, calibrated=True)]
    if cal.form.runtime == "sequences":
        runtime_terms.append(Term(PER_SEQUENCE, per_sequence, f.per_sequence, calibrated=True))
    compute_actor = Term("actor_shards", computing, f.shards)
    between = Term("vllm_between_generations", vllm_between, f.between)
    s_ = _stack_terms(st, x, arch, length, per_gpu, tok_actor, tok_score)
    rw = Reward(x, arch)
    # a model-based reward: a FSDP reward model's resident shards, or a reward engine that never sleeps, everywhere
    held = [_reward_term(rw, "reward_weights", rw.weights()), _reward_term(rw, "reward_engine_kept", rw.engine_kept())]
    terms = {
        "initializing": [
            reservation,
            actor_term,
            s_["reference_weights"],
            s_["critic_parameters"],
            *held,
            *runtime_terms,
        ],
        "rollout": [
            reservation,
            actor_term,
            s_["actor_optimizer_states"],
            s_["reference_weights"],
            s_["critic_parameters"],
            s_["critic_adam"],
            s_["generation_gather"],
            s_["unpaged_kv_cache"],
            *held,
            *runtime_terms,
        ],
        "reference_logprob": [
            compute_actor,
            between,
            s_["actor_optimizer_states"],
            s_["reference_weights"],
            s_["reference_units"],
            s_["critic_parameters"],
            s_["critic_adam"],
            Term("logprob_logits", logits_score, f.logits_score),
            s_["ulysses_all_to_all_logprob"],
            *held,
            *runtime_terms,
        ],
        "actor_update": [
            compute_actor,
            between,
            Term("adapter_gradients_and_adam", optimizer, f.optimizer),
            s_["actor_gradients"],
            s_["actor_optimizer_in_update"],
            s_["actor_gathered_units"],
            s_["reference_weights"],
            s_["critic_parameters"],
            s_["critic_adam"],
            Term("activations", activations, f.activations),
            Term("update_logits", logits_update, f.logits_update),
            s_["ulysses_all_to_all"],
            *held,
            *runtime_terms,
        ],
        "weight_sync": [
            Term("gathered_parameters", gathered, f.gathered),
            between,
            Term("vllm_woken_weights", vllm_woken_weights(x, arch) * st.vllm_here, f.vllm_woken_weights),
            actor_term,
            s_["actor_optimizer_states"],
            s_["reference_weights"],
            s_["critic_parameters"],
            s_["critic_adam"],
            *held,
            *runtime_terms,
            Term(SYNC_EXTRA, sync_extra, f.sync_extra, calibrated=True),
        ],
        "critic_update": _critic_phase(st, x, arch, [between, actor_term, s_, [*held, *runtime_terms]]),
        "reward": _reward_phase(rw, [between, actor_term, s_, runtime_terms]),
    }
    for phase, names in TOKEN_TERMS.items():
        physical = np.sum([t.mib for t in terms[phase] if t.name in names], axis=0)
        correction = (cal.tokens(phase, x) - 1.0) * physical
        terms[phase].append(Term(TOKEN_CALIBRATION[phase], correction, f.tokens(phase, physical), calibrated=True))
    known = arch.known & np.isfinite(tok_actor) & (tok_actor > 0) & np.isfinite(runtime) & np.isfinite(per_sequence)
    known &= rw.known
    return PhaseModel(terms, known)


def _stack_terms(
    st: Stack,
    x: PlanInputs,
    arch: Architecture,
    length: np.ndarray,
    per_gpu: np.ndarray,
    tok_actor: np.ndarray,
    tok_score: np.ndarray,
) -> dict[str, Term]:
    """The terms of :mod:`.stack` as terms of the phases (physics only, not measured)."""

    def term(name: str, mib: np.ndarray, shown: str | None = None) -> Term:
        return Term(name, mib, st.describe(shown or name, mib), measured=False)

    sequences = per_gpu / st.sp
    cache = st.unpaged_cache(sequences, length)
    return {
        "actor_optimizer_states": term("actor_optimizer_states", st.optimizer_states(during_update=False)),
        "actor_optimizer_in_update": term(
            "actor_optimizer_states", st.optimizer_states(during_update=True), "actor_optimizer_states"
        ),
        "actor_gradients": term("actor_gradients", st.gradients()),
        "actor_gathered_units": term("actor_gathered_units", st.units(st.param_bytes, st.full)),
        "reference_weights": term("reference_weights", st.reference_weights()),
        "reference_units": term("reference_units", st.reference_units()),
        "critic_parameters": term("critic_parameters", st.critic_parameters(computing=False)),
        "critic_adam": term("critic_adam", st.critic_adam(stepping=False)),
        "generation_gather": term("generation_gather", st.generation_gather()),
        "unpaged_kv_cache": Term(
            "unpaged_kv_cache", cache, st.describe_cache(sequences, length, cache), measured=False
        ),
        "ulysses_all_to_all": term("ulysses_all_to_all", st.all_to_all(tok_actor)),
        "ulysses_all_to_all_logprob": term("ulysses_all_to_all", st.all_to_all(tok_score)),
    }


def _critic_phase(st: Stack, x: PlanInputs, arch: Architecture, shared: list[Any]) -> list[Term]:
    """The GAE critic's update: its parameters, gradients, Adam and activations beside what stays resident (all 0
    without a critic)."""
    between, actor_term, s_, runtime_terms = shared
    tokens = critic_tokens(x, arch)
    activations = np.where(st.critic, activation_mib(x, arch, tokens), 0.0)
    critic = st.critic
    mask = [between, actor_term, s_["actor_optimizer_states"], s_["reference_weights"], *runtime_terms]
    own = [
        Term("critic_parameters", p := st.critic_parameters(computing=True), st.describe("critic_parameters", p),
             measured=False),
        Term("critic_gradients", q := st.critic_gradients(), st.describe("critic_gradients", q), measured=False),
        Term("critic_adam", r := st.critic_adam(stepping=True), st.describe("critic_adam", r), measured=False),
        Term("critic_gathered_units", w := st.units(4.0, critic), st.describe("critic_gathered_units", w),
             measured=False),
        Term("critic_activations", activations, critic_activations(tokens, activations), measured=False),
    ]  # fmt: skip
    masked = [Term(t.name, np.where(critic, t.mib, 0.0), t.arithmetic, t.calibrated, t.measured) for t in mask]
    return [*own, *masked]


def _reward_term(rw: Reward, name: str, mib: np.ndarray) -> Term:
    return Term(name, mib, rw.describe(name, mib), measured=False)


def _reward_phase(rw: Reward, shared: list[Any]) -> list[Term]:
    """The reward's forward (VERL's ``reward`` step, after generation: the actor's vLLM asleep): the reward model's
    own terms beside what stays resident (all 0 without a model-based reward)."""
    between, actor_term, s_, runtime_terms = shared
    own = [
        _reward_term(rw, "reward_engine", rw.engine_awake()),
        _reward_term(rw, "reward_weights", rw.weights()),
        _reward_term(rw, "reward_gathered_units", rw.units()),
        _reward_term(rw, "reward_activations", rw.activations()),
    ]
    resident = [between, actor_term, s_["actor_optimizer_states"], s_["reference_weights"], s_["critic_parameters"],
                s_["critic_adam"], *runtime_terms]  # fmt: skip
    masked = [Term(t.name, np.where(rw.on, t.mib, 0.0), t.arithmetic, t.calibrated, t.measured) for t in resident]
    return [*own, *masked]
