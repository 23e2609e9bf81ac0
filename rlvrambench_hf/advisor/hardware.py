"""The device a plan runs on: capacity and margin limit per device (the benchmark's is a 40 GB A100)."""

from __future__ import annotations

from dataclasses import dataclass

from ..data.schema.pins import DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB

#: The benchmark's headroom between capacity and margin limit, MiB.
HEADROOM_MIB = DEVICE_CAPACITY_MIB - MARGIN_LIMIT_MIB
HARDWARE_SETTINGS = ("device_capacity_mib", "margin_limit_mib")


@dataclass(frozen=True)
class Hardware:
    """The device the plan runs on: capacity and margin limit per device, in MiB."""

    device_capacity_mib: int = DEVICE_CAPACITY_MIB
    margin_limit_mib: int = MARGIN_LIMIT_MIB

    @property
    def is_benchmark(self) -> bool:
        return (self.device_capacity_mib, self.margin_limit_mib) == (DEVICE_CAPACITY_MIB, MARGIN_LIMIT_MIB)

    def flag(self) -> str | None:
        if self.is_benchmark:
            return None
        return (
            f"hardware not measured: {self.device_capacity_mib} MiB devices with a {self.margin_limit_mib} MiB limit "
            f"(every measurement is on {DEVICE_CAPACITY_MIB} MiB A100s)"
        )

    @classmethod
    def of(cls, device_capacity_mib: int | None, margin_limit_mib: int | None) -> Hardware:
        """The hardware of the command-line options (the margin defaults to the capacity minus the headroom)."""
        from ..errors import InputError

        if device_capacity_mib is None:
            if margin_limit_mib is not None:
                raise InputError("--margin-limit-mib needs --device-capacity-mib")
            return BENCHMARK_HARDWARE
        if device_capacity_mib <= HEADROOM_MIB:
            raise InputError(f"--device-capacity-mib must be above {HEADROOM_MIB}, got {device_capacity_mib}")
        margin = margin_limit_mib if margin_limit_mib is not None else device_capacity_mib - HEADROOM_MIB
        if not 0 < margin <= device_capacity_mib:
            raise InputError(f"--margin-limit-mib must be between 1 and the capacity, got {margin}")
        return cls(device_capacity_mib, margin)


#: The benchmark's device: a 40 GB A100.
BENCHMARK_HARDWARE = Hardware()
