"""Timing of ``rlvrambench release build`` (and ``verify``) on the whole release snapshot.

Prints medians (seconds) and ratios; it asserts nothing. The source is the release snapshot
($RLVRAMBENCH_SOURCE, else ../shared/rlvrambench/hub).

    .venv/bin/python bench/bench_release.py [--repeat 5]

Figures: the build as a whole process (what a maintainer runs), the build in process (imports warm), the
typed reading of every config alone (the floor a build cannot go below), and ``release verify`` with and
without the mlcroissant validator.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from timing import SNAPSHOT, median_process_seconds, median_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat

    from rlvrambench_hf.data.schema.registry import card_configs
    from rlvrambench_hf.data.sources.local import LocalSource
    from rlvrambench_hf.data.tables.reader import load_table
    from rlvrambench_hf.release.build import build_release
    from rlvrambench_hf.release.verify import verify_release

    work = Path(tempfile.mkdtemp(prefix="bench-release-"))
    try:
        out = work / "rel"
        command = [
            sys.executable,
            "-m",
            "rlvrambench_hf",
            "--source",
            str(SNAPSHOT),
            "release",
            "build",
            "--version",
            "1.1.0",
            "--output",
            str(out),
            "--overwrite",
        ]
        cli = median_process_seconds(command, repeat)
        bare = median_process_seconds([sys.executable, "-c", "pass"], repeat)
        build_release(work / "warm", "1.1.0", SNAPSHOT)  # warm imports (datasets, pyarrow.parquet)
        in_process = median_seconds(lambda: build_release(out, "1.1.0", SNAPSHOT, overwrite=True), repeat)

        def read_all() -> None:
            source = LocalSource(SNAPSHOT)
            for spec in card_configs():
                if source.has(spec.path):
                    load_table(spec.name, source)

        tables = median_seconds(read_all, repeat)
        verify_full = median_seconds(lambda: verify_release(out), repeat)
        verify_fast = median_seconds(lambda: verify_release(out, croissant=False), repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"release build, whole process (median of {repeat}): {cli:.3f} s  (bare interpreter {bare:.3f} s)")
    print(f"release build, in process:                 {in_process:.3f} s")
    print(f"typed reading of every config alone:       {tables:.3f} s")
    print(f"ratio build / typed reading:                {in_process / tables:.1f}x")
    print(
        f"release verify, in process:                 {verify_full:.3f} s  "
        f"(without mlcroissant {verify_fast:.3f} s, ratio {verify_full / verify_fast:.1f}x)"
    )


if __name__ == "__main__":
    main()
