"""The device a plan runs on: its name, capacity and margin limit (the benchmark's is a 40 GB A100)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...data.schema.pins import DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB
from ...memory.devices import device_named, device_of_capacity, margin_of

#: The benchmark's headroom between capacity and margin limit, MiB.
HEADROOM_MIB = DEVICE_CAPACITY_MIB - MARGIN_LIMIT_MIB
HARDWARE_SETTINGS = ("device_capacity_mib", "margin_limit_mib")


@dataclass(frozen=True)
class Hardware:
    """The device the plan runs on: capacity and margin limit per device, in MiB, and its name."""

    device_capacity_mib: int = DEVICE_CAPACITY_MIB
    margin_limit_mib: int = MARGIN_LIMIT_MIB
    name: str | None = None  # None: the listed device of that capacity, else "<capacity> MiB device"

    @property
    def is_benchmark(self) -> bool:
        return (self.device_capacity_mib, self.margin_limit_mib) == (DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB)

    @property
    def measured(self) -> bool:
        """Whether the release measured runs on a device of this capacity."""
        return self.device_capacity_mib == DEVICE_CAPACITY_MIB

    @property
    def device_name(self) -> str:
        return self.name or device_of_capacity(self.device_capacity_mib).name

    def describe(self) -> dict[str, Any]:
        """The ``device`` block of every answer."""
        return {
            "name": self.device_name,
            "capacity_mib": self.device_capacity_mib,
            "margin_mib": self.margin_limit_mib,
            "measured": self.measured,
        }

    def flag(self) -> str | None:
        if self.is_benchmark:
            return None
        return (
            f"hardware not measured: {self.device_capacity_mib} MiB devices ({self.device_name}) with a "
            f"{self.margin_limit_mib} MiB limit (every measurement is on {DEVICE_CAPACITY_MIB} MiB A100s): the "
            "per-phase model extrapolates its physical terms to this capacity, with its runtime term calibrated on "
            "the A100s"
        )

    @classmethod
    def of(cls, device_capacity_mib: int | None, margin_limit_mib: int | None, gpu: str | None = None) -> Hardware:
        """The hardware of the command-line options: a GPU by name or a capacity (not both); the margin defaults
        to 95 % of the capacity, as the card defines it."""
        from ...errors import InputError

        if gpu is not None:
            if device_capacity_mib is not None:
                raise InputError("give --gpu or --device-capacity-mib, not both")
            device = device_named(gpu)
            device_capacity_mib, name = device.capacity_mib, device.name
        elif device_capacity_mib is None:
            if margin_limit_mib is not None:
                raise InputError("--margin-limit-mib needs --device-capacity-mib or --gpu")
            return BENCHMARK_HARDWARE
        else:
            name = device_of_capacity(device_capacity_mib).name
        if device_capacity_mib <= HEADROOM_MIB:
            raise InputError(f"--device-capacity-mib must be above {HEADROOM_MIB}, got {device_capacity_mib}")
        margin = margin_limit_mib if margin_limit_mib is not None else margin_of(device_capacity_mib)
        if not 0 < margin <= device_capacity_mib:
            raise InputError(f"--margin-limit-mib must be between 1 and the capacity, got {margin}")
        return cls(device_capacity_mib, margin, name)


#: The benchmark's device: a 40 GB A100.
BENCHMARK_HARDWARE = Hardware()
