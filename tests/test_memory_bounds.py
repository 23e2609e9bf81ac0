"""Memory bounded by design: predictions files that would take gigabytes — a 2 GiB file, its gzip, a zstd bomb, a
Parquet file whose footer declares a trillion rows — are refused with one line and exit 2, in a child whose memory
is bounded (``RLIMIT_AS``: what it holds once the package is imported, plus 1 GiB) and whose peak resident memory
stays under 1 GiB. The inputs are generated here (the 2 GiB file is sparse)."""

from __future__ import annotations

import gzip
import io
import json
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SNAPSHOT, cli_env
from hubserver import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimits and /proc are Linux's")

HEADER = b"query_id,predicted_state\n"
ROWS = b"q1,within_margin\n" * 65536  # 1 MiB of rows


def two_gib_file(folder: Path) -> Path:
    path = folder / "huge.csv"
    with path.open("wb") as handle:
        handle.write(HEADER + ROWS)
        handle.truncate(2 << 30)  # sparse: the rest reads as NUL bytes, but its size is what is checked first
    return path


def gzip_of_two_gib(folder: Path) -> Path:
    """2 GiB of rows as 2,048 gzip members of 1 MiB each (a valid gzip stream, a few MB)."""
    path = folder / "huge.csv.gz"
    member = gzip.compress(ROWS, 9, mtime=0)
    path.write_bytes(gzip.compress(HEADER, mtime=0) + member * 2048)
    return path


def zstd_bomb(folder: Path) -> Path:
    """About 800 KB of zstd frames that decompress to tens of GiB."""
    codec = pa.Codec("zstd", 19)
    frame = codec.compress(ROWS * 64, asbytes=True)
    count = 800_000 // len(frame)
    path = folder / "bomb.csv.zst"
    path.write_bytes(codec.compress(HEADER, asbytes=True) + frame * count)
    return path


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def crafted_parquet(folder: Path) -> Path:
    """A small Parquet file whose footer declares 2**40 rows (each row count rewritten; the footer length fixed)."""
    rows = 1237  # a count whose encoding occurs only where rows are counted
    table = pa.table({"query_id": [f"q{i}" for i in range(rows)], "predicted_state": ["within_margin"] * rows})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, write_statistics=False)
    data = buffer.getvalue()
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length : -8]
    old, new = _varint(rows << 1), _varint(2**40 << 1)  # zigzag-encoded i64 row counts
    assert footer.count(old) >= 2, "the row counts were not found in the footer"
    footer = footer.replace(old, new)
    path = folder / "crafted.parquet"
    path.write_bytes(data[: -8 - length] + footer + struct.pack("<I", len(footer)) + b"PAR1")
    return path


CHILD = """
import json, resource, sys
import hostile_driver
from rlvrambench_hf.transfer import load_transfer_tables
load_transfer_tables(sys.argv[3])  # what a command holds before it reads the predictions
used = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), resource.RLIM_INFINITY))
results = [hostile_driver.run(case) for case in json.load(open(sys.argv[1]))]
results.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
json.dump(results, open(sys.argv[2], "w"))
"""


def test_inputs_that_would_take_gigabytes_end_in_one_line_under_1_gib(tmp_path: Path) -> None:
    makers = {
        "2 GiB file": (two_gib_file, "2147483648 bytes is more than the 67108864 bytes read"),
        "its gzip": (gzip_of_two_gib, "gzip-compressed data that decompresses"),
        "zstd bomb": (zstd_bomb, "zstd-compressed data that decompresses"),
        "crafted Parquet": (crafted_parquet, "declares 1,099,511,627,776 rows"),
    }
    inputs = {name: make(tmp_path) for name, (make, _) in makers.items()}
    assert inputs["zstd bomb"].stat().st_size < 1_000_000
    cases = []
    for path in inputs.values():
        out = tmp_path / f"out-{len(cases)}.json"
        argv = ["--source", str(SNAPSHOT), "evaluate", "--predictions", str(path), "--output", str(out)]
        cases.append({"argv": argv, "cwd": str(tmp_path), "stdin": None, "fifo": None})
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    command = [sys.executable, "-c", CHILD, str(tmp_path / "cases.json"), str(tmp_path / "results.json"), str(SNAPSHOT)]
    env = cli_env(PYTHONPATH=f"{REPO_ROOT}:{REPO_ROOT / 'tests'}")
    done = subprocess.run(command, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    *results, peak = json.loads((tmp_path / "results.json").read_text())
    for (name, (_, said)), result in zip(makers.items(), results):
        lines = result["stderr"].splitlines()
        assert result["status"] == 2, (name, result)
        assert len(lines) == 1 and said in lines[0], (name, lines)
    assert not list(tmp_path.glob("out-*")), "a refused command wrote its output"
    assert peak < 1 << 30, f"peak resident memory {peak / 2**20:.0f} MiB"


def test_an_allocation_failure_anywhere_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvrambench_hf.cli import data, main

    def fails(args: object) -> int:
        raise pa.ArrowMemoryError("malloc of size 2199023255552 failed")

    monkeypatch.setattr(data, "cmd_configs", fails)
    assert main(["--source", str(SNAPSHOT), "configs"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "an allocation failed (ArrowMemoryError" in lines[0] and "internal" not in lines[0]
