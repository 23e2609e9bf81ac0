"""GPUs by name, each with the total memory NVML reports (``nvidia-smi --query-gpu=memory.total``, MiB) and where
that figure comes from. The margin is 95 % of the capacity, as the dataset card defines it (38,912 of 40,960 MiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..data.schema.pins import DEVICE_CAPACITY_MIB
from ..errors import InputError, quote

#: The margin as a share of the capacity (the card: 38,912 MiB of a 40,960 MiB A100).
MARGIN_SHARE = 0.95
RELEASE = "the release's own runs (device_capacity_mib of configurations.csv)"
ISSUE = "issue 24's measurements of the advisor (nvidia-smi on that card)"
SMI = "nvidia-smi memory.total as printed on that card in public bug reports and vendor forums"


@dataclass(frozen=True)
class Device:
    """A GPU: its display ``name``, the ``capacity_mib`` NVML reports, the ``source`` of that figure and the
    spellings a user may type (``aliases``, compared without case, spaces, dashes or underscores)."""

    name: str
    capacity_mib: int
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def margin_mib(self) -> int:
        return margin_of(self.capacity_mib)

    @property
    def measured(self) -> bool:
        """Whether the release measured runs on a device of this capacity."""
        return self.capacity_mib == DEVICE_CAPACITY_MIB


DEVICES: tuple[Device, ...] = (
    Device("A100 40GB", 40960, RELEASE, ("a100", "a100-40gb", "a100-sxm4-40gb", "a100-pcie-40gb")),
    Device("A100 80GB", 81920, SMI, ("a100-80gb", "a100-sxm4-80gb", "a100-pcie-80gb")),
    Device("H100 80GB", 81559, ISSUE, ("h100", "h100-80gb", "h100-sxm", "h100-pcie", "h100-80gb-hbm3")),
    Device("H100 NVL", 95830, SMI, ("h100-nvl", "h100nvl")),
    Device("H200", 143771, ISSUE, ("h200", "h200-141gb")),
    Device("L40S", 46068, SMI, ("l40s",)),
    Device("L40", 46068, SMI, ("l40",)),
    Device("A40", 46068, SMI, ("a40",)),
    Device("RTX A6000", 49140, ISSUE, ("a6000", "rtx-a6000")),
    Device("RTX 4090", 24564, SMI, ("4090", "rtx4090", "geforce-rtx-4090")),
    Device("RTX 3090", 24576, SMI, ("3090", "rtx3090", "geforce-rtx-3090")),
    Device("L4", 23034, SMI, ("l4",)),
    Device("A10G", 23028, SMI, ("a10g",)),
    Device("A10", 23028, SMI, ("a10",)),
    Device("T4", 15360, SMI, ("t4", "tesla-t4")),
    Device("V100 16GB", 16160, SMI, ("v100", "v100-16gb", "v100-sxm2-16gb", "tesla-v100-sxm2-16gb")),
    Device("V100 32GB", 32510, SMI, ("v100-32gb", "v100-sxm2-32gb", "tesla-v100-sxm2-32gb")),
)
#: How far below a device's NVML capacity the total that PyTorch or vLLM print for it may lie (a share).
LOG_TOTAL_SHARE = 0.03


def margin_of(capacity_mib: float) -> int:
    """The margin limit of a device: 95 % of its capacity, rounded down to a MiB."""
    return int(capacity_mib * MARGIN_SHARE)


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def device_named(name: str) -> Device:
    """The device called ``name`` (any listed spelling); an unknown name is one line listing the known ones."""
    key = _key(name)
    for device in DEVICES:
        if key == _key(device.name) or key in {_key(a) for a in device.aliases}:
            return device
    known = ", ".join(d.name for d in DEVICES)
    raise InputError(f"unknown GPU {quote(name)}; known: {known} (or give --device-capacity-mib)")


def devices_of_log_total(total_mib: float) -> list[Device]:
    """The listed devices a log's total device memory (PyTorch's or vLLM's, MiB) can be: those whose NVML capacity
    is at most :data:`LOG_TOTAL_SHARE` above it, smallest first."""
    found = [d for d in DEVICES if total_mib <= d.capacity_mib <= total_mib * (1 + LOG_TOTAL_SHARE)]
    return sorted(found, key=lambda d: d.capacity_mib)


def device_of_capacity(capacity_mib: int) -> Device:
    """The listed device of that capacity (the first listed), else an unnamed one."""
    for device in DEVICES:
        if device.capacity_mib == capacity_mib:
            return device
    return Device(f"{capacity_mib:,} MiB device", capacity_mib, "given by the user")
