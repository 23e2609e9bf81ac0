"""The builder module a release carries, shipped in the wheel as ``rlvrambench_hf.loading_script``.

Its installed path is ``rlvrambench_hf.loading_script_path()``; it is also importable as
``rlvrambench_hf.loading_script.rlvrambench``.
"""
