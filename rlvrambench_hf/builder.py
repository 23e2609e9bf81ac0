"""The ``datasets`` builder, under the one import path the documentation gives: ``rlvrambench_hf.builder``.

It lives in :mod:`rlvrambench_hf.data.builder`; ``loading_script/rlvrambench.py`` re-exports it for tools that
import a builder module by path.
"""

from .data.builder import RLVRAMBench, RLVRAMBenchConfig, builder_for

__all__ = ["RLVRAMBench", "RLVRAMBenchConfig", "builder_for"]
