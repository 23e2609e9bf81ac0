"""The RLVRAMBench builder as a file, for tools that take a builder module by path, and a command that prepares
one config.

It holds no code of its own: the builder class is ``rlvrambench_hf.builder.RLVRAMBench``, the one import path the
documentation gives. Releases built by the package do not carry this module. Their Parquet files and card need no
code, because ``datasets`` 4 and later run no loading scripts, and a script named after the repository would make
plain ``datasets.load_dataset`` refuse the whole repository. To import the file by path::

    import importlib.util, rlvrambench_hf
    spec = importlib.util.spec_from_file_location("rlvrambench_builder", rlvrambench_hf.loading_script_path())
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    builder = module.RLVRAMBench(config_name="eligible_runs", source="kobzaond/RLVRAMBench", revision="main")

As a command, it prepares one config and prints its features: ``python loading_script/rlvrambench.py CONFIG
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
    from rlvrambench_hf.errors import RLVRAMBenchError, error_line

    try:
        builder = builder_for(*argv)
        builder.download_and_prepare()
    except RLVRAMBenchError as exc:
        print(error_line(exc, "rlvrambench.py"), file=sys.stderr)
        return exc.exit_status
    for split, dataset in builder.as_dataset().items():
        print(f"{builder.config.name} / {split}: {dataset.num_rows} rows")
        print(dataset.features)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
