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
    v, device, memory = answer.verdict, answer.device, answer.memory
    if v.not_modelled and v.state is None:
        return f"no verdict: {'; '.join(v.not_modelled)}"
    if v.not_modelled:
        part = f"{memory.peak_mib:,.0f} MiB" if memory.peak_mib is not None else "a floor that cannot hold"
        return (
            f"at least {v.state}: {'; '.join(v.not_modelled)}; the GRPO+LoRA part alone (modelled: {part}; or its "
            "measured twin) reaches that, and this run carries more"
        )
    if v.by_model and memory.peak_mib is not None:
        text = (
            f"predicted {v.state}: peak {memory.peak_mib:,.0f} MiB in {memory.binding_phase} (held-out band +/- "
            f"{memory.band_mib:,.0f} MiB) against the margin {device.margin_limit_mib:,} MiB and the capacity "
            f"{device.device_capacity_mib:,} MiB"
        )
        if v.near_limit:
            text += "; near the limit: within the band of the margin or the capacity"
        if not device.measured:
            text += "; extrapolating: physical terms at this capacity, runtime term calibrated on 40 GB A100s"
        return text
    if v.basis == "measured":
        return _measured(answer)
    if v.basis == "floor":
        return "cannot run: " + "; ".join(f"{f.check}: {f.arithmetic}" for f in answer.failed_floors)
    return f"nothing known: no measured record matches and the per-phase model has no peak ({v.why_unknown})"


def _measured(answer: Answer) -> str:
    measured, name = answer.measured or (), answer.verdict.state
    ids = ", ".join(f"{r.table} {r.configuration_id} ({r.observed_state})" for r in measured)
    lead = f"measured {name}" if name != UNRESOLVED else "measured, label unresolved"
    text = f"{lead}: {len(measured)} record(s) of the release match ({ids})"
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
