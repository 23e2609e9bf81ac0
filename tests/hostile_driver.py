"""Runs many ``rlvrambench`` command lines in one interpreter, for the hostile-input harness.

Usage: ``python hostile_driver.py CASES.json RESULTS.json``. Each case is ``{"argv": [...], "cwd": DIR, "stdin":
FILE or null, "fifo": [FIFO, CONTENT_FILE] or null}``. Each runs through ``rlvrambench_hf.cli.main`` exactly as the
console script does, with file descriptors 0, 1 and 2 redirected (so that whatever the package, its libraries or a
user's child process write is captured); a FIFO case gets a writer process that feeds the FIFO. One interpreter
for all the cases of a target keeps the harness fast: the imports and the release's tables are paid for once.

The driver's memory is bounded (``RLIMIT_AS``: what it holds once the package is imported, plus 3 GiB), so an input
that makes a reader grow ends in an allocation failure, not in a machine out of memory; each result counts the
processes of user code's process groups still running after the command (``left_processes``).

The driver is a subreaper (Linux): a process that escapes its parent (a double fork, ``setsid()``) is re-parented to
the driver instead of init, so ``left_processes`` also counts every process below the driver still running after a
case that was not there before it (then ends them, so that one case cannot spoil the next). A case with ``"signal":
{"name": "TERM", "processes": N}`` runs the command as a process of its own instead, waits until N processes run
below it (the command's children and what user code started), sends it the signal, and reports its exit status
(negative: the signal that ended it) and what it left running (with ``"to": "keeper"``, the signal goes to the
command's child instead: the keeper of its user code). A case with ``"unprivileged": true`` runs without
the right to read others' files (root's DAC capabilities set aside meanwhile).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback


def run(case: dict) -> dict:
    before = below(os.getpid())
    result = _killed(case) if case.get("signal") else _in_process(case)
    left = left_below(before)
    result["left_processes"] = max(result["left_processes"], len(left))
    result["left_commands"] = sorted({_comm(pid) for pid in left})
    _end(left)
    return result


def _in_process(case: dict) -> dict:
    from rlvrambench_hf.cli import main

    try:
        from rlvrambench_hf.scoring import contained
    except ImportError:  # a package without contained user code (the harness run against an older one)
        return {**_run(case, main), "left_processes": 0}
    groups: list[int] = []
    original = contained.Child.__init__

    def recording(self: contained.Child, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        groups.append(self.pid)

    contained.Child.__init__ = recording  # type: ignore[method-assign]
    try:
        result = _run(case, main)
    finally:
        contained.Child.__init__ = original  # type: ignore[method-assign]
    result["left_processes"] = _left(groups)
    return result


def _left(groups: list[int]) -> int:
    """How many processes of ``groups`` still run (zombies excluded), after a grace of up to 2 s."""
    deadline = time.monotonic() + 2
    while True:
        count = 0
        for entry in os.listdir("/proc") if groups and os.path.isdir("/proc") else []:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rpartition(")")[2].split()
            except OSError:
                continue
            count += int(fields[2]) in groups and fields[0] != "Z"
        if count == 0 or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def _stat(pid: int | str) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return int(fields[1]), fields[0]
    except (OSError, IndexError, ValueError):
        return None


def below(root: int) -> set[int]:
    """The processes below ``root`` that still run (zombies excluded), by a scan of /proc."""
    parents: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit() and (found := _stat(entry)) is not None:
            parents.setdefault(found[0], []).append(int(entry))
            states[int(entry)] = found[1]
    out: set[int] = set()
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return {pid for pid in out if states.get(pid) not in ("Z", "X", None)}


def left_below(before: set[int], seconds: float = 2.0) -> set[int]:
    """What runs below the driver that did not before, after a grace of up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = below(os.getpid()) - before
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:80]
    except OSError:
        return "?"


def _end(pids: set[int]) -> None:
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for _ in range(100):  # reap what was re-parented to the driver
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def _killed(case: dict) -> dict:
    """Run the command as a process of its own and end it with a signal once user code runs (see the module)."""
    import signal

    wanted = case["signal"]
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    stdin = open(case.get("stdin") or os.devnull, "rb")
    started = time.monotonic()
    command = subprocess.Popen(
        [sys.executable, "-m", "rlvrambench_hf", *case["argv"]], cwd=case["cwd"], stdin=stdin, stdout=out, stderr=err
    )
    seen = 0
    while time.monotonic() - started < 120 and command.poll() is None:
        seen = len(below(command.pid))
        if seen >= wanted["processes"]:
            break
        time.sleep(0.05)
    if command.poll() is None and wanted.get("to") == "keeper":  # the command's child: the keeper of its user code
        for pid in below(command.pid):
            if _stat(pid) is not None and _stat(pid)[0] == command.pid:  # type: ignore[index]
                os.kill(pid, getattr(signal, "SIG" + wanted["name"]))
    elif command.poll() is None:
        command.send_signal(getattr(signal, "SIG" + wanted["name"]))
    try:
        status: object = command.wait(30)
    except subprocess.TimeoutExpired:
        command.kill()
        command.wait()
        status = "hung"
    stdin.close()
    result = {"status": status, "stdout": _text(out), "stderr": _text(err), "seconds": time.monotonic() - started}
    return {**result, "left_processes": 0, "processes_seen": seen}


def _run(case: dict, main: object) -> dict:
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
    reads_all = _reads_others_files(not case.get("unprivileged"))
    watchdog = _watchdog()
    try:
        os.chdir(case["cwd"])
        status: object = main(case["argv"])  # type: ignore[operator]
    except SystemExit as exc:  # argparse's own exits
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except CaseHung:
        status = "hung"
    except BaseException:  # noqa: B036 - anything that escapes main is what the harness looks for
        traceback.print_exc()
        status = "escaped"
    finally:
        watchdog.cancel()
        seconds = time.monotonic() - started
        _reads_others_files(reads_all)
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


#: The most a case may take: a command that waits for ever (a FIFO opened for reading) is ended as "hung" then, so
#: that one case costs minutes, not the harness's whole time limit.
CASE_SECONDS = 120


class CaseHung(BaseException):
    """Raised in the main thread when a case ran past :data:`CASE_SECONDS`."""


def _hung(signum: int, frame: object) -> None:
    raise CaseHung


def _watchdog() -> threading.Timer:
    """A timer that interrupts the main thread with SIGUSR1 (which raises :class:`CaseHung`) after
    :data:`CASE_SECONDS`: the package's own time limits use SIGALRM, so the case's bound must not."""
    signal.signal(signal.SIGUSR1, _hung)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(CASE_SECONDS, signal.pthread_kill, (main, signal.SIGUSR1))
    timer.daemon = True
    timer.start()
    return timer


def _reads_others_files(allowed: bool) -> bool:
    """Give this process the right to read any file (root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH in its effective
    set, where it has them) or take it away, so that a file of mode 000 cannot be read, as for a user who is not its
    owner; whether it had the right before."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        header, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
        if libc.capget(header, data) != 0:
            return True
        mask = (1 << 1) | (1 << 2)
        before = data[0] & mask == mask & data[1]
        data[0] = (data[0] | (data[1] & mask)) if allowed else (data[0] & ~mask)
        libc.capset(header, data)
        return before
    except (OSError, AttributeError):
        return True


def _text(handle: object) -> str:
    handle.seek(0)  # type: ignore[attr-defined]
    return handle.read().decode("utf-8", "backslashreplace")  # type: ignore[attr-defined]


def bound_memory(extra: int = 3 << 30) -> None:
    """Limit this process's address space to what it maps now (the package imported) plus ``extra`` bytes."""
    import resource

    import rlvrambench_hf.cli  # noqa: F401 - imported before the bound is measured

    try:
        with open("/proc/self/status") as status:
            used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    except (OSError, StopIteration):
        return
    resource.setrlimit(resource.RLIMIT_AS, (used + extra, resource.getrlimit(resource.RLIMIT_AS)[1]))


def become_subreaper() -> None:
    """Make this process the one that orphans below it are re-parented to (Linux; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    become_subreaper()
    bound_memory()
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = [run(case) for case in cases]
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)
