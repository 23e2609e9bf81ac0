"""The forms of the per-phase model: every choice the release's data cannot fix by physics alone, as candidates.

A :class:`Form` names four choices:

* ``runtime`` — how the calibrated runtime term outside vLLM's budget (CUDA context, NCCL buffers, CUDA graphs,
  allocator slack) carries from the calibration models to a plan: ``constant`` (one MiB figure per workload) or
  ``sequences`` (one MiB figure per workload plus a share that grows with the sequences vLLM may run at once,
  ``min(max_num_seqs, 512)``: CUDA graphs captured up to that batch and per-sequence buffers, calibrated on the
  start-up stage). Both are bounded by what they physically depend on. The scale ``H × (L + 1)`` the model once
  used (``hidden_layers``) is no candidate: it is no quantity that memory depends on, and unbounded it gave 20.5
  GB at 72B against the 2.1-4.0 GB measured; :class:`~.calibrate.Calibration` still prices it, within the
  calibration models' range, for a form named explicitly;
* ``statistic`` — how the calibration rows are summarised: ``median`` or ``upper_quartile``;
* ``logit_bytes`` — bytes per logit element of a micro-batch: 2 (bf16 logits), 4 (fp32) or 7 (VERL's performance
  guide: fp32 + bf16 + one byte);
* ``tokens`` — the token phases at ``full_length`` (every response to its cap) or ``per_workload``: scaled by the
  share of the full-length token terms the release measured on that workload, at most 1.

:data:`CANDIDATES` is the grid; :mod:`.select` chooses among them by an inner leave-one-family-out on the training
families only. :data:`DESIGN_NOTE_FORM` is the form the design note started from, fixed before any fold was seen.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..errors import InputError, quote

RUNTIMES: tuple[str, ...] = ("sequences", "constant")
#: Runtime forms a form may name (the candidates' and the former ``hidden_layers``).
NAMED_RUNTIMES: tuple[str, ...] = (*RUNTIMES, "hidden_layers")
STATISTICS: tuple[str, ...] = ("median", "upper_quartile")
LOGIT_BYTES: tuple[float, ...] = (7.0, 4.0, 2.0)
TOKENS: tuple[str, ...] = ("full_length", "per_workload")
#: The share of the token terms a measured workload may be scaled to: never more than every response at its cap.
TOKEN_SHARE_LIMITS = (0.0, 1.0)
#: The bound of the per-sequence runtime share: vLLM's default CUDA-graph capture sizes stop at 512 sequences.
SEQUENCE_CAP = 512


@dataclass(frozen=True, order=True)
class Form:
    """One candidate form of the per-phase model."""

    runtime: str = "constant"
    statistic: str = "median"
    logit_bytes: float = 7.0
    tokens: str = "full_length"

    def __post_init__(self) -> None:
        checks = (
            ("runtime", self.runtime, NAMED_RUNTIMES),
            ("statistic", self.statistic, STATISTICS),
            ("logit_bytes", self.logit_bytes, LOGIT_BYTES),
            ("tokens", self.tokens, TOKENS),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise InputError(f"form {name} {quote(str(value))} is not one of {', '.join(map(str, allowed))}")

    @property
    def name(self) -> str:
        return f"{self.runtime}/{self.statistic}/{self.logit_bytes:g}B/{self.tokens}"

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "runtime": self.runtime,
            "statistic": self.statistic,
            "logit_bytes": self.logit_bytes,
            "tokens": self.tokens,
        }


def form_named(name: str) -> Form:
    """The form of a :attr:`Form.name` (``runtime/statistic/NB/tokens``); a bad name is one line."""
    parts = name.split("/")
    if len(parts) != 4 or not parts[2].endswith("B"):
        raise InputError(f"form {quote(name)} is not runtime/statistic/<bytes>B/tokens")
    try:
        width = float(parts[2][:-1])
    except ValueError:
        raise InputError(f"form {quote(name)}: {quote(parts[2])} is not a number of bytes") from None
    return Form(parts[0], parts[1], width, parts[3])


#: The form fixed in advance by the design note (MEMORY_MODEL.md §1): one runtime constant per workload, the
#: median, logits at VERL's 4 + 2 + 1 bytes and every response at its cap.
DESIGN_NOTE_FORM = Form()
#: Every candidate, in the order ties are broken (the design note's form first, then the grid).
CANDIDATES: tuple[Form, ...] = tuple(Form(*c) for c in itertools.product(RUNTIMES, STATISTICS, LOGIT_BYTES, TOKENS))
