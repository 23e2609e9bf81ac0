"""Benchmark: how long a command takes to give up on a Hub it cannot use (issues 26, 27 and 29).

Each case runs ``rlvrambench --revision main configs`` (and ``estimate retrospective`` without a source) in a fresh
interpreter with ``HF_ENDPOINT`` on a loopback server started here, and an empty cache: a closed port (refused), a
server answering 500 to everything, and one that trickles a byte every half second (with
``RLVRAMBENCH_HUB_DEADLINE=5``). Prints the median wall time of each, beside ``--version`` (interpreter start).

    python bench/bench_hub.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import ROOT, median_process_seconds, median_seconds

sys.path.insert(0, str(ROOT / "tests"))
from faultproxy import HostileServer


def closed_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def seconds(args: list[str], endpoint: str, runs: int, **env: str) -> float:
    home = Path(tempfile.mkdtemp(prefix="rlvrambench-bench-hub-"))
    os.environ.update(HF_HOME=str(home), HF_ENDPOINT=endpoint, **env)
    argv = [sys.executable, "-m", "rlvrambench_hf", *args]
    try:
        return median_seconds(lambda: subprocess.run(argv, capture_output=True, cwd=ROOT), runs)  # exit 2 each
    finally:
        for name in ("HF_ENDPOINT", *env):
            os.environ.pop(name, None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    for name in ("RLVRAMBENCH_SOURCE", "HF_HUB_OFFLINE"):
        os.environ.pop(name, None)
    print(f"--version: {median_process_seconds([sys.executable, '-m', 'rlvrambench_hf', '--version'], runs):.2f} s")
    configs = ["--revision", "main", "configs"]
    print(f"configs, closed port: {seconds(configs, closed_endpoint(), runs):.2f} s")
    retrospective = seconds(["estimate", "retrospective"], closed_endpoint(), runs)
    print(f"estimate retrospective, no source, closed port: {retrospective:.2f} s")
    failing = HostileServer("status", status=500)
    print(f"configs, server answering 500: {seconds(configs, failing.endpoint, runs):.2f} s")
    failing.close()
    trickle = HostileServer("trickle", interval=0.5)
    deadline = {"RLVRAMBENCH_HUB_DEADLINE": "5"}
    print(f"configs, trickling server, deadline 5 s: {seconds(configs, trickle.endpoint, runs, **deadline):.2f} s")
    trickle.close()


if __name__ == "__main__":
    main()
