"""The builder module as a file (``rlvrambench.py``), shipped in the wheel as ``rlvrambench_hf.loading_script``.

Its installed path is ``rlvrambench_hf.loading_script_path()``. The class it re-exports is
``rlvrambench_hf.builder.RLVRAMBench``.
"""
