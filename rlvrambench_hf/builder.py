"""The ``datasets`` builder under its documented path; it lives in :mod:`rlvrambench_hf.data.builder`."""

from .data.builder import RLVRAMBench, RLVRAMBenchConfig, builder_for

__all__ = ["RLVRAMBench", "RLVRAMBenchConfig", "builder_for"]
