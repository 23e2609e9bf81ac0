"""A per-phase physical memory model of VERL's colocated GRPO+LoRA loop, with the device as a parameter.

:mod:`.devices` names GPUs and the capacity NVML reports; :mod:`.architecture` reads model sizes from the metadata
the advisor already has; :mod:`.phases` computes every phase's terms (MiB, with their arithmetic) for many plans at
once; :mod:`.calibrate` fits the terms physics cannot give (runtime memory outside vLLM's budget) on the release's
configuration peaks and stage measurements; :mod:`.band` is the held-out error band of the model.
"""

from .devices import DEVICES, Device, device_named

__all__ = ["DEVICES", "Device", "device_named"]
