"""RLVRAMBench builder module, as a release carries it.

``datasets`` 4 and later no longer execute loading scripts given by path or found in a Hub repository, so this
module is used as ordinary Python: import it (or ``rlvrambench_hf.builder``, which it re-exports) and drive the
builder the standard way::

    import importlib.util
    spec = importlib.util.spec_from_file_location("rlvrambench_builder", "loading_script/rlvrambench.py")
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)

    builder = module.RLVRAMBench(config_name="eligible_runs", source="kobzaond/RLVRAMBench", revision="main")
    builder.download_and_prepare()                      # typed Arrow files in the HF datasets cache
    runs = builder.as_dataset(split="measured")         # datasets.Dataset
    stream = builder.as_streaming_dataset(split="measured")  # datasets.IterableDataset

Typed releases built with ``rlvrambench release build`` need no code at all: their Parquet files carry the
features, and plain ``datasets.load_dataset(repo, config)`` returns the same types.

Run as a script, it prepares one config and prints its features: ``python loading_script/rlvrambench.py CONFIG
[SOURCE [REVISION]]``.
"""

from __future__ import annotations

import sys

from rlvrambench_hf.builder import RLVRAMBench, RLVRAMBenchConfig, builder_for

__all__ = ["RLVRAMBench", "RLVRAMBenchConfig", "builder_for"]


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 3:
        print("usage: rlvrambench.py CONFIG [SOURCE [REVISION]]", file=sys.stderr)
        return 2
    from rlvrambench_hf.errors import RLVRAMBenchError

    try:
        builder = builder_for(*argv)
        builder.download_and_prepare()
    except RLVRAMBenchError as exc:
        print(f"rlvrambench.py: error: {exc}", file=sys.stderr)
        return 2
    for split, dataset in builder.as_dataset().items():
        print(f"{builder.config.name} / {split}: {dataset.num_rows} rows")
        print(dataset.features)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
