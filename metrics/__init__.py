"""The ``evaluate`` modules that travel in the wheel as ``rlvrambench_hf.metrics`` (data, not imported code).

Load one by path from any folder: ``evaluate.load(rlvrambench_hf.metric_path())``.
"""
