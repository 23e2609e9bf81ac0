"""The one error formatter, the error paths that must go through it, and users' code under a time limit.

The formatter is tested as a pure function; a static check over the package's source makes sure that no handler
prints an error around it and that no raise site repr's a value itself. Policies and estimators that sleep, spin,
exit or interrupt are run through the command line (a child process, stopped at ``--timeout``) and through the
Python API (an object of the caller's, in a worker thread).
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlvrambench_hf.errors import (
    MESSAGE_LIMIT,
    InputError,
    IntegrityError,
    RLVRAMBenchError,
    UserCodeError,
    UserCodeInterrupted,
    error_line,
    first_line,
    one_line,
    quote,
    redact,
    summary,
)

from conftest import SNAPSHOT, cli_env, run_cli
from hubserver import REPO_ROOT

PACKAGE = REPO_ROOT / "rlvrambench_hf"
SOURCES = [
    *PACKAGE.rglob("*.py"),
    REPO_ROOT / "loading_script/rlvrambench.py",
    REPO_ROOT / "metrics/rlvrambench/rlvrambench.py",
]


# ---- the formatter ---------------------------------------------------------------------------------------------


def test_quote_shows_invisible_characters_and_cuts_with_the_length() -> None:
    assert quote("query-1\u200b") == "'query-1\\u200b'" and quote("a\x00\n\x1b") == "'a\\x00\\n\\x1b'"
    assert quote("x" * 100) == "'" + "x" * 60 + "'… (100 characters)"
    assert quote(b"\x00" * 100).endswith("… (100 bytes)") and len(quote(b"\x00" * 100)) < 80
    assert quote(10**5000) == "an integer of about 5,001 digits" and quote(2**63) == "9223372036854775808"
    assert (
        quote(float("nan")) == "nan" and quote(["a", 1]) == "['a', 1]" and quote(list(range(9))) == "a list of 9 items"
    )
    assert quote(("0" * 31,) * 2) == "a tuple of 2 items"  # items cut one by one would take 102 characters


def test_quote_never_runs_the_code_of_a_users_class() -> None:
    class Evil(str):
        def __repr__(self) -> str:
            raise AssertionError("repr ran")

        __str__ = __repr__

    class Other:
        def __repr__(self) -> str:
            raise AssertionError("repr ran")

    assert quote(Evil("shown")) == "'shown'" and quote(Other()) == "an object of type Other"


def test_summary_names_a_few_and_counts_the_rest() -> None:
    assert summary(["a", "b"]) == "'a', 'b'"
    assert summary(f"k{i}" for i in range(2_000_000)) == "'k0', 'k1', 'k2' and 1,999,997 more"
    assert summary(iter(range(10**9)), total=10**9) == "0, 1, 2 and 999,999,997 more"  # no need to count
    assert summary(["col\u200b"], quoted=False) == "col\\u200b"


def test_one_line_is_bounded_escapes_and_keeps_head_and_tail() -> None:
    line = one_line("head of the message " + "x" * 100_000 + "\n and the remedy: do this")
    assert len(line) <= MESSAGE_LIMIT and line.startswith("head of the message") and line.endswith("do this")
    assert " … " in line and "\n" not in line
    assert one_line("a\u202eb\x1b[2Jc\nd") == "a\\u202eb\\x1b[2Jc\\nd"
    assert len(one_line("z" * 90_000_000)) <= MESSAGE_LIMIT  # fast too: megabytes are never escaped


def test_a_long_path_gives_way_before_the_names_after_it() -> None:
    """A message over the limit first shortens its long file paths to their last folder and file name; the names and
    the remedy after a path stay whole, a short message keeps its path whole, and a URL is never shortened."""
    deep = "/home/someone/" + "projects/" * 20 + "verl/run_grpo.sh"
    body = " line 3: both " + "actor_rollout_ref.actor.ppo_micro_batch_size" * 4 + " are set; remove the first"
    line = one_line(deep + body)
    assert line == "…/verl/run_grpo.sh" + body
    assert one_line(f"'{deep}' is not a file") == f"'{deep}' is not a file"
    url = "https://huggingface.co/datasets/kobzaond/RLVRAMBench/resolve/main/data/configurations.csv"
    assert url in one_line("y" * 250 + " " + url)


def test_redact_removes_credentials_and_tokens() -> None:
    text = (
        "cannot fetch from http://user:secret@127.0.0.1:8080/x?token=abc123&b=1 with Authorization: Bearer "
        "hf_abcdefghijklmnop and https://me@hub.example"
    )
    assert redact(text) == (
        "cannot fetch from http://***@127.0.0.1:8080/x?token=***&b=1 with Authorization: *** and https://***@hub.example"
    )


def test_every_error_is_one_bounded_line_and_keeps_its_fields() -> None:
    error = IntegrityError("x" * 10_000 + "\nsecond line", path="p.csv", revision="main")
    assert len(str(error)) <= MESSAGE_LIMIT and "\n" not in str(error)
    assert (error.path, error.revision, error.fields) == ("p.csv", "main", {"path": "p.csv", "revision": "main"})
    import pickle

    again = pickle.loads(pickle.dumps(error))
    assert type(again) is IntegrityError and again.fields == error.fields and str(again) == str(error)


def test_first_line_and_error_line() -> None:
    assert first_line(ValueError("")) == "ValueError" and first_line(OSError("a\nb"), typed=True) == "OSError: a"

    class Unshowable(Exception):
        def __str__(self) -> str:
            raise RuntimeError

    assert first_line(Unshowable()) == "Unshowable"
    assert error_line(InputError("bad")) == "rlvrambench: error: bad"
    assert error_line(KeyError("k")).startswith("rlvrambench: internal error: KeyError: 'k' (a bug of rlvrambench-hf")
    assert UserCodeInterrupted("x").exit_status == 130 and UserCodeError("x").exit_status == 2


# ---- every error path goes through it --------------------------------------------------------------------------


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == name
    ]


def _to_stderr(call: ast.Call) -> bool:
    return any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in call.keywords)


FORMATTERS = {"error_line", "one_line", "debug_text", "first_line"}


def test_no_handler_prints_an_error_around_the_formatter() -> None:
    """Every line printed on stderr is a constant, or made by the formatter; no f-string of its own shows an
    exception or a message."""
    offenders = []
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for call in _calls(tree, "print"):
            if not _to_stderr(call) or not call.args:
                continue
            printed = call.args[0]
            made = isinstance(printed, ast.Call) and getattr(printed.func, "id", None) in FORMATTERS
            constant = isinstance(printed, ast.Constant) or (
                isinstance(printed, ast.JoinedStr)
                and all(
                    ast.unparse(v.value).endswith(".prog") for v in printed.values if isinstance(v, ast.FormattedValue)
                )
            )
            if not (made or constant):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{call.lineno}: {ast.unparse(call)[:100]}")
    assert offenders == []


def test_no_raise_site_shows_a_value_with_repr() -> None:
    """Values are shown with quote() (bounded, escaped, no user code run); ``!r`` is left to constants."""
    offenders = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            for value in ast.walk(node.exc):
                if isinstance(value, ast.FormattedValue) and value.conversion == ord("r"):
                    shown = ast.unparse(value.value)
                    if not (shown.isupper() or shown.split(".")[-1] in ("split",)):
                        offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {shown}")
    assert offenders == []


def test_the_command_line_prints_a_bug_in_one_line(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom rlvrambench_hf import cli\nfrom rlvrambench_hf.cli import data\n"
        "def broken(args):\n    raise KeyError('a bug')\n"
        "data.source_of = broken\nsys.exit(cli.main(sys.argv[1:]))\n"
    )
    for debug in ([], ["--debug"]):
        done = subprocess.run([sys.executable, "-c", script, *debug, "configs"], capture_output=True, text=True)
        assert done.returncode == 1
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("rlvrambench: internal error: KeyError: 'a bug' (a bug of rlvrambench-hf")
        assert ("Traceback" in done.stderr) == bool(debug) and (len(done.stderr.strip().splitlines()) == 1) != bool(
            debug
        )


# ---- user code under a bound -----------------------------------------------------------------------------------

POLICIES = """
import os, time
from pathlib import Path

class Quiet:
    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}
    def next_action(self, task, revealed):
        return "stop"

class Sleeps(Quiet):
    def next_action(self, task, revealed):
        if os.environ.get("STARTED"):  # says so on an abstract socket: user code may write no file of the test's
            import socket
            with socket.socket(socket.AF_UNIX) as said:
                said.connect("\\0" + os.environ["STARTED"])
        time.sleep(600)

class Exits(Quiet):
    def initial_decisions(self, task):
        raise SystemExit(0)

class Interrupts(Quiet):
    def next_action(self, task, revealed):
        raise KeyboardInterrupt
"""


@pytest.fixture
def policies(tmp_path: Path) -> Path:
    path = tmp_path / "policies.py"
    path.write_text(POLICIES)
    return path


def replay(
    policy: str, tmp_path: Path, *extra: str, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    args = ["--source", str(SNAPSHOT), "replay", "--policy", policy, "--output", str(tmp_path / "out.json"), *extra]
    done = run_cli(*args, env=env, cwd=tmp_path, timeout=120)
    return done, time.monotonic() - started


def test_a_policy_that_sleeps_is_stopped_by_timeout(policies: Path, tmp_path: Path) -> None:
    done, seconds = replay(f"{policies}:Sleeps", tmp_path, "--timeout", "1.5")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("rlvrambench: error: policy Sleeps, case ")
    assert "next_action did not return within 1.5 s" in lines[0] and "it was stopped" in lines[0]
    assert seconds < 60 and not (tmp_path / "out.json").exists()
    assert not list(tmp_path.glob(".out.json.*"))


def test_a_policy_raising_systemexit_0_fails_with_one_line(policies: Path, tmp_path: Path) -> None:
    done, _ = replay(f"{policies}:Exits", tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"rlvrambench: error: policy Exits, case {first_case()}, budget 0: initial_decisions raised SystemExit: 0"
    ]
    assert not (tmp_path / "out.json").exists()


def test_a_policy_raising_keyboardinterrupt_exits_130_naming_it(policies: Path, tmp_path: Path) -> None:
    done, _ = replay(f"{policies}:Interrupts", tmp_path)
    assert done.returncode == 130 and "next_action raised KeyboardInterrupt" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_ctrl_c_during_a_policy_call_is_an_interrupt_and_stops_the_policy(policies: Path, tmp_path: Path) -> None:
    import socket

    name = f"rlvrambench-test-{os.getpid()}-{time.monotonic_ns()}"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("\0" + name)
    listener.listen(1)
    listener.settimeout(60)
    args = ["--source", str(SNAPSHOT), "replay", "--policy", f"{policies}:Sleeps", "--output", str(tmp_path / "o.json")]
    process = subprocess.Popen(
        [sys.executable, "-m", "rlvrambench_hf", *args],
        env=cli_env(STARTED=name),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    with listener:
        listener.accept()[0].close()  # the policy's call has started
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the whole process group
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err.strip().splitlines() == ["rlvrambench: interrupted"]
    assert not (tmp_path / "o.json").exists()
    with pytest.raises(ProcessLookupError):  # the policy's child process is gone with its group
        for _ in range(50):
            os.killpg(process.pid, 0)
            time.sleep(0.1)


def first_case() -> str:
    from rlvrambench_hf.admission import load_protocol

    return load_protocol(SNAPSHOT).cases[0].case_id


class SleepingPolicy:
    name = "sleepy"

    def initial_decisions(self, task):
        time.sleep(30)

    def next_action(self, task, revealed):
        return "stop"


class ExitingEstimator:
    def fit(self, training):
        raise SystemExit(0)

    def predict(self, targets):
        return ["within_margin"] * len(targets)


class SleepingEstimator(ExitingEstimator):
    def fit(self, training):
        time.sleep(30)


def test_the_python_api_takes_the_same_time_limit(policies: Path) -> None:
    from rlvrambench_hf.admission import replay_report
    from rlvrambench_hf.estimation import run_retrospective

    started = time.monotonic()
    with pytest.raises(UserCodeError, match=r"policy sleepy, case .*: initial_decisions did not return within 0\.5 s"):
        replay_report(SNAPSHOT, rules=(), policy=SleepingPolicy(), timeout=0.5)  # an object: a worker thread
    with pytest.raises(UserCodeError, match=r"policy Sleeps, case .*: next_action did not return within 0\.5 s"):
        replay_report(SNAPSHOT, rules=(), policy=f"{policies}:Sleeps", timeout=0.5)  # a spec: a child process
    with pytest.raises(UserCodeError, match=r"estimator slow, fold granite33: fit did not return within 0\.5 s"):
        run_retrospective(SNAPSHOT, estimators={"slow": SleepingEstimator()}, timeout=0.5)
    with pytest.raises(UserCodeError, match=r"estimator quits, fold granite33: fit raised SystemExit: 0"):
        run_retrospective(SNAPSHOT, estimators={"quits": ExitingEstimator()})
    assert time.monotonic() - started < 60
    with pytest.raises(InputError, match="timeout 0 must be a positive, finite number of seconds"):
        replay_report(SNAPSHOT, rules=(), policy=SleepingPolicy(), timeout=0)


def test_timeout_option_is_checked(policies: Path, tmp_path: Path) -> None:
    done, _ = replay(f"{policies}:Quiet", tmp_path, "--timeout", "nan")
    assert done.returncode == 2 and "--timeout: must be a positive number of seconds, not 'nan'" in done.stderr
    done, _ = replay(f"{policies}:Quiet", tmp_path, "--timeout", "30")
    assert done.returncode == 0, done.stderr


def test_an_import_that_hangs_is_bounded_too(tmp_path: Path) -> None:
    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(600)\n")
    done, seconds = replay(f"{tmp_path / 'hangs.py'}:P", tmp_path, "--timeout", "1")
    assert done.returncode == 2 and seconds < 60
    assert "importing " in done.stderr and "did not finish within 1 s" in done.stderr


def test_user_code_errors_are_the_packages_own(tmp_path: Path) -> None:
    assert issubclass(UserCodeError, InputError) and issubclass(UserCodeInterrupted, RLVRAMBenchError)


def test_call_user_bounds_a_plain_call() -> None:
    from rlvrambench_hf.scoring.user import call_user

    assert call_user(lambda x: x + 1, "hook h", "compute", 1) == 2
    with pytest.raises(UserCodeError, match=r"^hook h: compute raised SystemExit: 3"):
        call_user(lambda: sys.exit(3), "hook h", "compute")
    with pytest.raises(UserCodeError, match=r"^hook h: compute did not return within 0\.2 s"):
        call_user(time.sleep, "hook h", "compute", 5, timeout=0.2)


# ---- our diagnosis first ---------------------------------------------------------------------------------------

HEADER = "query_id,predicted_state\n"
DIAGNOSES = {
    "a line beyond the reader": (HEADER + "q" * (40 << 20) + ",x\n", "line 2 is 40.0 MiB long, more than the 16 MiB"),
    "not UTF-8 on line 4": (
        HEADER + "a,b\n" * 2 + "\udcff,b\n",
        "is text that is not UTF-8 at line 4, byte 1 (e.g. Latin-1; save it as UTF-8)",
    ),
    "a row of three cells": (
        HEADER + "a,b\n" * 3 + "a,b,c\n",
        "data row 4 (line 5) has 3 cells where the header has 2",
    ),
    "a value that changes type": (
        '{"query_id": "a", "predicted_state": "x"}\n{"query_id": 7, "predicted_state": "x"}\n',
        "line 2: 'query_id' is a number where earlier lines have a string",
    ),
}


@pytest.mark.parametrize("case", DIAGNOSES)
def test_the_package_names_the_cause_pyarrow_only_hints_at(tmp_path: Path, case: str) -> None:
    from rlvrambench_hf.transfer import read_predictions

    text, expected = DIAGNOSES[case]
    path = tmp_path / ("p.jsonl" if text.startswith("{") else "p.csv")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(InputError) as error:
        read_predictions(path)
    assert str(error.value) == f"predictions file {path}: {expected}" or expected in str(error.value)
    assert "straddl" not in str(error.value) and "block" not in str(error.value)


def test_a_pipe_is_read_once_wherever_a_predictions_file_is_accepted(tmp_path: Path) -> None:
    rows = "".join(
        f"{q},within_margin\n"
        for q in __import__("rlvrambench_hf").load_table("transfer_queries", SNAPSHOT).column("query_id").to_pylist()
    )
    (tmp_path / "p.csv").write_text(HEADER + rows)
    script = f'cat "{tmp_path / "p.csv"}" | "{sys.executable}" -m rlvrambench_hf --source "{SNAPSHOT}" evaluate '
    for given in ("/dev/stdin", "-"):
        command = f"{script} --predictions {given}"
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=cli_env(), timeout=120)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    substituted = (
        f'"{sys.executable}" -m rlvrambench_hf --source "{SNAPSHOT}" evaluate --predictions <(cat "{tmp_path}/p.csv")'
    )
    done = subprocess.run(["bash", "-c", substituted], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
