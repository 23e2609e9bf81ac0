"""The one wording of a verdict: the sentence of an answer (its JSON ``verdict.sentence``), the short line stdout
leads with for every plan, and the line that names a verdict in the text of a plan or of a failure log's
diagnosis. Nothing is decided here: every figure comes from the typed answer."""

from __future__ import annotations

from collections.abc import Sequence

from ...estimation.references import METHODS
from ..answer import Answer, MeasuredMatch
from ..plan.hardware import Hardware

UNRESOLVED = "unresolved"
LABELS = ("within_margin", "above_margin", "memory_failure")


def head(device: Hardware) -> str:
    """Where the verdict holds: ``on A100 40GB (40,960 MiB, measured by the release): ``."""
    seen = "measured" if device.measured else "not measured"
    return f"on {device.device_name} ({device.device_capacity_mib:,} MiB, {seen} by the release): "


def sentence(answer: Answer) -> str:
    """Why the verdict is what it is, with its figures (the JSON's ``verdict.sentence``)."""
    return head(answer.device) + _body(answer)


def _body(answer: Answer) -> str:
    v, memory = answer.verdict, answer.memory
    if v.not_modelled and v.state is None:
        return f"no verdict: {'; '.join(v.not_modelled)}"
    if v.not_modelled:
        return _at_least(answer)
    if v.by_model and memory.peak_mib is not None:
        return _predicted(answer)
    if v.basis == "measured":
        return _measured(answer)
    if v.basis == "floor":
        return "cannot run: " + "; ".join(f"{f.check}: {f.arithmetic}" for f in answer.failed_floors)
    return f"nothing known: no measured record matches and the per-phase model has no peak ({v.why_unknown})"


def _at_least(answer: Answer) -> str:
    """A run that carries more than the modelled one: the label its modelled part reaches, with that part's lower
    bound and the terms it leaves out."""
    v, left = answer.verdict, answer.memory.not_modelled
    if left is not None and left.lower_bound_mib is not None:
        part = f"{left.lower_bound_mib:,.0f} MiB, a lower bound without {'; '.join(left.missing_terms or ())}"
    else:
        part = "a floor that cannot hold"
    return (
        f"at least {v.state}: {'; '.join(v.not_modelled)}; the GRPO+LoRA part alone (modelled: {part}; or its "
        "measured twin) reaches that, and this run carries more"
    )


def _predicted(answer: Answer) -> str:
    """The model's label: the peak with its band (the parts beyond the in-domain band named) against the margin and
    capacity; near the limit, the span both figures fall in and the change that buys the band back."""
    v, device, memory = answer.verdict, answer.device, answer.memory
    peak, band = memory.peak_mib or 0.0, memory.band_mib
    grown = [f"{p.part} {p.mib:,.0f}" for p in (memory.band.parts if memory.band else ()) if p.part != "in_domain"]
    parts = f"; {', '.join(grown)} MiB beyond the in-domain band" if grown else ""
    margin, capacity = device.margin_limit_mib, device.device_capacity_mib
    text = (
        f"predicted {v.state}: peak {peak:,.0f} MiB in {memory.binding_phase} (band +/- {band:,.0f} MiB{parts}) "
        f"against the margin {margin:,} MiB and the capacity {capacity:,} MiB"
    )
    if v.near_limit:
        low, high = peak - band, peak + band
        spanned = [f"the {n} {x:,} MiB" for n, x in (("margin", margin), ("capacity", capacity)) if low <= x <= high]
        buy = memory.band.buy_back if memory.band else None
        back = (
            f"to buy the band back: {' '.join(buy)}"
            if buy
            else "no single change of vllm_gpu_memory_utilization or a micro-batch buys the band back (more GPUs, "
            "offload or a shorter response may)"
        )
        span = f"{peak:,.0f} +/- {band:,.0f} = {low:,.0f}-{high:,.0f} MiB"
        text += f"; near the limit: {span} spans {' and '.join(spanned)}; {back}"
    if not device.measured:
        text += "; extrapolating: physical terms at this capacity, runtime term calibrated on 40 GB A100s"
    return text


def _measured(answer: Answer) -> str:
    measured, name = answer.measured or (), answer.verdict.state
    ids = ", ".join(f"{r.table} {r.configuration_id} ({r.observed_state})" for r in measured)
    lead = f"measured {name}" if name != UNRESOLVED else "measured, label unresolved"
    text = f"{lead}: {len(measured)} record(s) of the release match ({ids})"
    if any(r.carried for r in measured):
        text += f"; {measured[0].match}"
    if answer.measured_agree is False:
        text += "; their repeated labels disagree, the most severe is given"
    for r in measured:
        if r.observed_state == UNRESOLVED:
            text += f"; {r.configuration_id}: {_evidence(r)}"
    if answer.predictions is not None and name in LABELS:
        by_method = {p.method: p for p in answer.predictions}
        differ = [m for m in METHODS if by_method[m].state is not None and by_method[m].state != name]
        if differ:
            text += "; the references disagree with it: " + ", ".join(
                f"{m} predicts {by_method[m].state}" for m in differ
            )
    return text


def _evidence(record: MeasuredMatch) -> str:
    e, seeds = record.evidence, list(record.eligible_seeds)
    parts = [f"{len(seeds)} eligible seed(s) {seeds}" if seeds else "no eligible seed"]
    if e.get("known_memory_failure"):
        parts.append("a known memory failure")
    if e.get("known_margin_exceedance"):
        parts.append("a known margin exceedance")
    if record.stages:
        parts.append("stages " + ", ".join(record.stages))
    return ", ".join(parts)


def verdict_text(answer: Answer) -> str:
    """``STATE (basis BASIS): sentence``, as the text of a plan and of a diagnosis name a verdict."""
    v = answer.verdict
    return f"{v.state or 'unknown'} (basis {v.basis}): {v.sentence}"


def short(state: str | None, basis: str, records: int, failing: Sequence[str], device: Hardware) -> str:
    """What follows a plan's id on its verdict line: ``: STATE (basis BASIS; cause) on DEVICE (...)``, the cause
    in a few words (the records, the failing floors, the model)."""
    if basis == "measured":
        cause = f"{records} measured record(s)"
    elif basis == "floor":
        cause = "floor " + ";".join(failing) + " cannot hold"
    else:
        cause = "the per-phase memory model" if state is not None else "not modelled, or no model metadata"
    seen = "measured" if device.measured else "not measured"
    return f": {state or 'unknown'} (basis {basis}; {cause}) on {device.device_name} ({seen} by the release)"
