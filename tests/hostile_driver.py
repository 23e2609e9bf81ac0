"""Runs many ``rlvrambench`` command lines in one interpreter, for the hostile-input harness.

Usage: ``python hostile_driver.py CASES.json RESULTS.json``. Each case is ``{"argv": [...], "cwd": DIR, "stdin":
FILE or null, "fifo": [FIFO, CONTENT_FILE] or null}``. Each runs through ``rlvrambench_hf.cli.main`` exactly as the
console script does, with file descriptors 0, 1 and 2 redirected (so that whatever the package, its libraries or a
user's child process write is captured); a FIFO case gets a writer process that feeds the FIFO. One interpreter
for all the cases of a target keeps the harness fast: the imports and the release's tables are paid for once.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback


def run(case: dict) -> dict:
    from rlvrambench_hf.cli import main

    writer = None
    if case.get("fifo"):
        fifo, content = case["fifo"]
        copy = "import shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), open(sys.argv[2], 'wb'))"
        writer = subprocess.Popen([sys.executable, "-c", copy, content, fifo])  # blocks until the FIFO is opened
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    stdin = open(case.get("stdin") or os.devnull, "rb")
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    here = os.getcwd()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(stdin.fileno(), 0)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    started = time.monotonic()
    try:
        os.chdir(case["cwd"])
        status: object = main(case["argv"])
    except SystemExit as exc:  # argparse's own exits
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: B036 - anything that escapes main is what the harness looks for
        traceback.print_exc()
        status = "escaped"
    finally:
        seconds = time.monotonic() - started
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, copy in zip((0, 1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        sys.stdin = sys.__stdin__
        stdin.close()
        os.chdir(here)
        if writer is not None:
            writer.kill()
            writer.wait()
    return {"status": status, "stdout": _text(out), "stderr": _text(err), "seconds": seconds}


def _text(handle: object) -> str:
    handle.seek(0)  # type: ignore[attr-defined]
    return handle.read().decode("utf-8", "backslashreplace")  # type: ignore[attr-defined]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = [run(case) for case in cases]
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)
