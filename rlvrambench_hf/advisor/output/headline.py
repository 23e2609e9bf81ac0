"""The answer to one plan in plain words, first: a headline (fits / does not fit / near the limit / not answered, on
which device), the phase that binds and by how much (MiB and the share of the margin), the change to paste in the
user's own keys (VERL overrides, TRL arguments and accelerate-config entries, or the dataset's settings) and what
the answer rests on. Everything is read from the typed answer; nothing is decided here (the verdict and its JSON
sentence are :mod:`.wording`'s and the assessment's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..answer import Answer, Change, FloorResult
from ..plan.hardware import BENCHMARK_HARDWARE

#: Whose keys a change is pasted in: a VERL launch file's, a TRL run's, or the dataset's own settings.
Keys = Literal["verl", "trl", "planned"]
FITS, DOES_NOT_FIT, NEAR, NOT_ANSWERED = "fits", "does not fit", "near the limit", "not answered"
#: What each phase of the loop is, in a few words.
PHASES = {
    "initializing": "start-up",
    "rollout": "generation",
    "reference_logprob": "log-probabilities",
    "actor_update": "the training step",
    "weight_sync": "weights copied to vLLM",
    "reward": "the reward model scoring",
}
#: The memory floors in a few words (each binds when vLLM starts).
FLOORS = {
    "generation_weights": "vLLM's copy of the weights against vLLM's budget",
    "actor_shards_at_startup": "the actor's FSDP shards beside vLLM's budget",
    "kv_cache_one_sequence": "one max_model_len sequence's KV cache in vLLM's budget less its weights",
}
#: Why a band grows beyond the in-domain band, in a few words (a part not listed is named as it is).
BAND_PARTS = {
    "model_not_calibrated": "a model outside the calibration",
    "size_outside_range": "a size outside the calibration models'",
    "tokens_outside_range": "more tokens per micro-batch than measured",
    "device_not_measured": "a device the release did not measure",
    "training_horizon": "a run longer than the one-step calibration runs",
}
#: The labels in words.
WORDS = {"within_margin": "within the margin", "above_margin": "above the margin", "memory_failure": "out of memory"}
#: How many changes are offered after the first.
ALTERNATIVES = 2


def status(answer: Answer) -> str:
    """fits / does not fit / near the limit / not answered (a predicted failure near the limit says both)."""
    v = answer.verdict
    if v.state is None or v.state not in ("within_margin", "above_margin", "memory_failure"):
        return NOT_ANSWERED
    if v.state == "within_margin":
        return NEAR if v.near_limit else FITS
    return f"{DOES_NOT_FIT} ({NEAR})" if v.near_limit else DOES_NOT_FIT


def headline(answer: Answer, keys: Keys) -> list[str]:
    """The plain-words answer to one plan: the headline, why and by how much, what to paste, what it rests on."""
    device = answer.device
    seen = "" if device.measured else ", not measured by the release"
    lines = [
        f"{answer.configuration_id}: {status(answer)} on {device.device_name} "
        f"({device.device_capacity_mib:,} MiB per GPU{seen})"
    ]
    lines += [wrapped for line in why(answer) for wrapped in _wrap(line)]
    for line in remedy(answer, keys):  # what is pasted is never wrapped; the rest is
        lines += [f"  {line}"] if line.lstrip().startswith(("paste:", "or:")) else _wrap(line)
    lines += _wrap(basis(answer))
    return lines


#: The width the lines of a headline are wrapped at (what is pasted is never wrapped).
WIDTH = 116


def _wrap(line: str) -> list[str]:
    """``line`` indented under the headline, wrapped at :data:`WIDTH`."""
    import textwrap

    return textwrap.wrap(
        line, WIDTH, initial_indent="  ", subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
    )


def why(answer: Answer) -> list[str]:
    """Why the verdict is what it is, with the phase that binds and the distance to the margin."""
    v = answer.verdict
    if v.not_modelled:
        return _not_modelled(answer)
    if v.basis == "measured":  # and the floors that cannot hold beside it, which its changes make hold
        return _measured(answer) + [_floor(f, answer) for f in answer.failed_floors]
    if v.basis == "floor":
        return [_floor(f, answer) for f in answer.failed_floors]
    if v.state is None:
        return [f"nothing known: {v.why_unknown or 'no measured record and no peak from the per-phase model'}"]
    return _predicted(answer)


def _against(peak: float, answer: Answer) -> str:
    """``N MiB (P% of the margin) below / above the margin of M MiB`` (and the capacity when the peak passes it)."""
    margin, capacity = answer.device.margin_limit_mib, answer.device.device_capacity_mib
    gap = margin - peak
    side = "below" if gap >= 0 else "above"
    text = f"{abs(gap):,.0f} MiB ({abs(gap) / margin:.1%} of the margin) {side} the margin of {margin:,} MiB"
    if peak > capacity:
        text += f", and above the {capacity:,} MiB the GPU has"
    return text


def _phase(name: str | None) -> str:
    return f"{name} ({PHASES[name]})" if name in PHASES else str(name)


def _model_peak(answer: Answer) -> str | None:
    memory = answer.memory
    if memory.peak_mib is None or not memory.known:
        return None
    peak = memory.peak_mib
    return f"{_phase(memory.binding_phase)} peaks at {peak:,.0f} MiB per GPU: {_against(peak, answer)}"


def _predicted(answer: Answer) -> list[str]:
    memory, v = answer.memory, answer.verdict
    lines = [f"predicted: {_model_peak(answer)}"]
    band = memory.band_mib
    parts = [p for p in (memory.band.parts if memory.band else ()) if p.part != "in_domain" and p.mib > 0]
    largest = max(parts, key=lambda p: p.mib, default=None)
    reason = ""
    if largest is not None:  # the part that widens it most, and how much of it that is
        share = "most of it" if largest.mib >= band / 2 else "its largest part"
        reason = f", {share} for {BAND_PARTS.get(largest.part, largest.part)}"
    peak = memory.peak_mib or 0.0
    if v.near_limit and v.state == "within_margin":
        lines.append(
            f"the model's error band here is +/- {band:,.0f} MiB{reason}: the peak may reach {peak + band:,.0f} MiB, "
            "past the margin"
        )
    elif v.near_limit:
        lines.append(
            f"the model's error band here is +/- {band:,.0f} MiB{reason}: the peak may be as low as "
            f"{max(peak - band, 0.0):,.0f} MiB, so the run may fit"
        )
    else:
        lines.append(f"the model's error band here is +/- {band:,.0f} MiB{reason}; the margin lies beyond it")
    return lines + _elsewhere(answer)


def _measured(answer: Answer) -> list[str]:
    records = answer.measured or ()
    seeds = sum(len(r.eligible_seeds) for r in records)
    ran = f"the release ran these settings ({_count(len(records), 'record')}, {_count(seeds, 'eligible seed')})"
    if _carried(answer):
        release = BENCHMARK_HARDWARE.device_capacity_mib
        ran += f" on its {release:,} MiB A100, carried to this device by vLLM's reservation (u x capacity)"
    peaks = [
        r.carried_peak_mib if r.carried_peak_mib is not None else r.max_completed_peak_mib
        for r in records
        if r.max_completed_peak_mib is not None
    ]
    state = answer.verdict.state
    lines = []
    if state == "memory_failure":
        ended = sorted({s for r in records if r.observed_state == "memory_failure" for s in r.stages})
        where = f"; their processes ended in {', '.join(ended)}" if ended else ""
        lines.append(f"measured: {ran} and it ran out of memory{where}")
        model = _model_peak(answer)
        if model is not None:
            lines.append(f"the per-phase model: {model}")
    elif state in ("within_margin", "above_margin") and peaks:
        model = f"; the per-phase model puts it in {_phase(answer.memory.binding_phase)}" if answer.memory.known else ""
        lines.append(f"measured: {ran}: peak {max(peaks):,.0f} MiB per GPU, {_against(max(peaks), answer)}{model}")
    elif state in ("within_margin", "above_margin"):
        lines.append(f"measured: {ran}: {WORDS[state]}")
    else:
        lines.append(f"measured: {ran}, without a repeated label (unresolved)")
        model = _model_peak(answer)
        if model is not None:
            lines.append(f"the per-phase model: {model}")
    if answer.measured_agree is False:
        lines.append("the matching records disagree: the most severe label is given")
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _elsewhere(answer: Answer) -> list[str]:
    """What the release measured with these very settings on its own device (a near match by the device alone)."""
    found = [n.ref for n in answer.near_matches if n.setting == "device_capacity_mib"]
    if not found:
        return []
    states = sorted({WORDS.get(r.observed_state or "", "unresolved") for r in found})
    ids = ", ".join(r.configuration_id for r in found)
    device = BENCHMARK_HARDWARE.device_name
    return [f"on the release's {device} these very settings were measured {' and '.join(states)} ({ids})"]


def _floor(floor: FloorResult, answer: Answer) -> str:
    """A floor that cannot hold, in words: MiB short (and the share of the margin), or VERL's own check."""
    if floor.unit != "MiB" or floor.required is None or floor.available is None:
        return f"VERL refuses the config before it starts ({floor.check}): {floor.arithmetic}"
    required, available = float(floor.required), float(floor.available)
    short, margin = required - available, answer.device.margin_limit_mib
    left = f"{available:,.0f} MiB available" if available > 0 else f"none left ({available:,.0f} MiB)"
    return (
        f"cannot start ({floor.check}: {FLOORS.get(floor.check, floor.check)}): {required:,.0f} MiB needed, {left}: "
        f"{short:,.0f} MiB ({short / margin:.1%} of the margin) short, when vLLM starts (phase initializing)"
    )


def _not_modelled(answer: Answer) -> list[str]:
    v, left = answer.verdict, answer.memory.not_modelled
    reasons = "; ".join(r.removeprefix("not modelled: ") for r in v.not_modelled)
    lines = [f"the per-phase model does not cover this run: {reasons}"]
    state = WORDS.get(v.state or "", v.state)
    if v.state is not None and left is not None and left.lower_bound_mib is not None:
        lines.append(
            f"its GRPO+LoRA part alone peaks at {left.lower_bound_mib:,.0f} MiB per GPU ("
            f"{_against(left.lower_bound_mib, answer)}), and this run carries more: at least {state}"
        )
    elif v.state is not None:
        lines.append(f"its GRPO+LoRA twin, measured by the release, is {state}, and this run carries more")
    return lines


def remedy(answer: Answer, keys: Keys) -> list[str]:
    """What to paste: near the limit, what buys the band back; when the run does not fit, the changes (the first,
    then up to :data:`ALTERNATIVES` more)."""
    v = answer.verdict
    if v.state == "within_margin" and v.near_limit:
        buy = answer.memory.band.buy_back if answer.memory.band else None
        if buy:
            pasted = " ".join(_buy_back(answer, buy, keys))
            return [f"paste: {pasted}  (the peak and its band then stay within the margin)"]
        return [
            "no single change of the vLLM utilization or a micro-batch keeps the band within the margin (more "
            "GPUs, offload or a shorter response may)"
        ]
    if v.state not in ("above_margin", "memory_failure"):
        return []
    if not answer.changes:
        return ["no single-setting change the advisor tries makes it fit"]
    first, *others = answer.changes
    lines = [f"paste: {_pasted(first, keys)}  ({_change_why(first)})"]
    lines += [f"   or: {_pasted(c, keys)}  ({_change_why(c)})" for c in others[:ALTERNATIVES]]
    if len(others) > ALTERNATIVES:
        lines.append(f"   ({len(others) - ALTERNATIVES} more with --details)")
    return lines


def _pasted(change: Change, keys: Keys) -> str:
    """The change in the user's keys; in the dataset's settings where the tool has no key for it."""
    plain = f"{change.setting}={_value(change.to)}"
    if keys == "verl":
        written = list(change.paste.verl_overrides)
    elif keys == "trl":
        written = [*change.paste.trl_arguments, *(f"(accelerate config) {e}" for e in change.paste.accelerate_config)]
    else:
        written = [plain]
    return " ".join(written) if written else f"{plain} (no {keys.upper()} key sets it)"


def _value(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _change_why(change: Change) -> str:
    if change.basis == "floor":
        after = WORDS.get(change.resulting_state or "", "not answered")
        return f"makes the floor {change.floor} hold; the run is then {after}"
    peak = change.predicted_peak_change_mib
    shift = f", peak {peak:+,.0f} MiB" if peak is not None else ""
    if change.supporting is not None:
        return f"measured within the margin: {change.supporting.configuration_id}{shift}"
    return f"predicted within the margin{shift}"


def _buy_back(answer: Answer, overrides: Sequence[str], keys: Keys) -> list[str]:
    """The band's buy-back (written as VERL overrides where VERL has the key) in the user's keys."""
    if keys == "verl":
        return list(overrides)
    from ..assess.changes import in_user_keys
    from ..plan.mapping import VERL_MAPPING

    out: list[str] = []
    for override in overrides:
        key, _, text = override.partition("=")
        setting = next((m.setting for m in VERL_MAPPING if m.keys and m.keys[0] == key), key)
        value: object = float(text) if "." in text else int(text) if text.isdigit() else text
        if keys == "planned":
            out.append(f"{setting}={text}")
            continue
        written = in_user_keys(setting, value, dict(answer.settings))
        out += (
            written["trl_arguments"]
            or [f"(accelerate config) {e}" for e in written["accelerate_config"]]
            or [f"{setting}={text}"]
        )
    return list(dict.fromkeys(out))


def basis(answer: Answer) -> str:
    """What the answer rests on, in one line, with the scope flags' titles."""
    v = answer.verdict
    decided = v.basis if v.state is not None else None
    rests = {
        "measured": "basis: measured (the release ran these settings"
        + (" on its A100, carried to this device by vLLM's reservation)" if _carried(answer) else ")"),
        "floor": "basis: floor (arithmetic that cannot hold, whatever the model predicts)",
        "predicted": "basis: predicted by the per-phase memory model, not a measurement",
    }.get(decided or "", "basis: none (no verdict)")
    flags = [_title(f) for f in answer.scope_flags]
    if not flags:
        return f"{rests}; scope: within the measured families, settings and hardware"
    return f"{rests}; scope: {'; '.join(dict.fromkeys(flags))}"


def _carried(answer: Answer) -> bool:
    """Whether the measurement was made on the release's device and carried to the plan's."""
    return any(r.carried for r in answer.measured or ())


def _title(flag: str) -> str:
    """A scope flag's title: its text before the first colon, parenthetical remarks left out."""
    import re

    parts = flag.split(":")
    head = parts[0] if len(parts[0].split()) > 2 or len(parts) < 3 else ":".join(parts[:2])
    return re.sub(r"\s*\([^()]*\)", "", head).strip() or flag
