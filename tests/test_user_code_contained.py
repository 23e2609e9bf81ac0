"""User code (``--policy``, ``--estimator``) contained from import to exit: imported, created and called in a child
below a keeper that the command ends, whatever the code does and however the command ends. Each escape gives one
line and a non-zero exit with nothing written, and no process is left: every command runs in the harness driver
(``hostile_driver.py``), a subreaper, which counts every process still running below it after the command.

What the child cannot do: outlive the command (new sessions, double forks, ``posix_spawn``, a killed command), stop
or trace the command, find a secret of the environment, write on the command's output, run code in the command
through its reply, fill a disk, allocate without bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hostile_driver
import pytest

from rlvrambench_hf.scoring import contained
from rlvrambench_hf.scoring.containment import wire
from rlvrambench_hf.scoring.containment.procs import Cgroup

from conftest import SNAPSHOT, cli_env
from hostile_corpus import FORGED, PWNED, SECRETS
from hubserver import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="processes are counted in /proc")
DRIVER = Path(hostile_driver.__file__)

POLICY = """
import ctypes, os, signal, subprocess, sys, tempfile, threading, time

LIBC = ctypes.CDLL(None, use_errno=True)


def command_pids():
    # the keeper and the command above this process (both run the command's code)
    found, pid = [], os.getppid()
    while pid > 1:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        parent = int(open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[1])
        if b"hostile_driver" in cmdline or b"rlvrambench_hf" in cmdline:
            found.append(pid)
        pid = parent
    return found


class Policy:
    name = "contained"

    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}

    def next_action(self, task, revealed):
        return "stop"
"""
ESTIMATOR = """
import os, pickle

class Estimator:
    def fit(self, training):
        pass

    def predict(self, targets):
        return ["within_margin"] * len(targets)
"""


def env(**extra: str) -> dict[str, str]:
    """The commands' environment: offline, the secrets the harness uses, and this checkout first."""
    return cli_env(
        HF_HUB_OFFLINE="1",
        HF_ENDPOINT="http://127.0.0.1:9",
        PYTHONPATH=f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'tests'}",
        RLVRAMBENCH_PLAIN_SETTING="visible",
        **SECRETS,
        **extra,
    )


def drive(folder: Path, cases: list[dict], **extra: str) -> list[dict]:
    """Run ``cases`` (see hostile_driver.py) in one driver process: its results."""
    cases_file, results_file = folder / "cases.json", folder / "results.json"
    cases_file.write_text(json.dumps(cases))
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(cases_file), str(results_file)],
        env=env(**extra),
        capture_output=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return list(json.loads(results_file.read_text()))


def policy_case(folder: Path, body: str, attr: str = "Policy", **case: object) -> dict:
    """A replay of the policy ``attr`` of POLICY + ``body``, written in ``folder`` (its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.py").write_text(POLICY + "\n" + body + "\n")
    argv = ["--source", str(SNAPSHOT), "replay", "--policy", f"mine.py:{attr}", "--budgets", "0"]
    argv += ["--timeout", "60", "--output", str(folder / "out.json")]
    return {"argv": argv, "cwd": str(folder), "stdin": None, "fifo": None, **case}


def method(cls: str, lines: str, hook: str = "initial_decisions", args: str = "task") -> str:
    body = "\n".join("        " + line for line in lines.strip().splitlines())
    return f"class {cls}(Policy):\n    def {hook}(self, {args}):\n{body}\n        return super().{hook}({args})\n"


ESCAPES = {
    "os._exit(0) at import": ("os._exit(0)", "Policy", "ended the process it ran in (exit status 0)"),
    "a thread that never ends, started at import": (
        "threading.Thread(target=time.sleep, args=(3600,)).start()",
        "Policy",
        "left 1 thread(s) running",
    ),
    "a fork at import": ("if os.fork() == 0:\n    time.sleep(3600)", "Policy", "forked a process"),
    "a forked copy that also returns": (method("Forks", "os.fork()"), "Forks", "initial_decisions forked a process"),
    "a fork in a new session without its death signal": (
        method("Session", "if os.fork() == 0:\n    os.setsid()\n    LIBC.prctl(1, 0, 0, 0, 0)\n    time.sleep(3600)"),
        "Session",
        "initial_decisions forked a process",
    ),
    "a double fork through libc": (
        method(
            "Double",
            "if LIBC.fork() == 0:\n    LIBC.setsid()\n    if LIBC.fork() == 0:\n        LIBC.sleep(3600)\n"
            "    LIBC._exit(0)\ntime.sleep(0.5)",
        ),
        "Double",
        "initial_decisions left 1 process(es) running",
    ),
    "a program started with posix_spawn": (
        method("Spawn", "os.posix_spawn('/bin/sleep', ['sleep', '3600'], {})"),
        "Spawn",
        "initial_decisions left 1 process(es) running",
    ),
    "a program in a session of its own": (
        method("Popen", "subprocess.Popen(['sleep', '3600'], start_new_session=True)"),
        "Popen",
        "initial_decisions left 1 process(es) running",
    ),
    "a daemon started through the shell": (
        method("Daemon", "subprocess.run(['sh', '-c', 'setsid sleep 3600 >/dev/null 2>&1 &'])\ntime.sleep(0.5)"),
        "Daemon",
        "initial_decisions left 1 process(es) running",
    ),
    "sys.exit(0) in initial_decisions": (
        method("Exits", "sys.exit(0)"),
        "Exits",
        "initial_decisions raised SystemExit",
    ),
    "SIGSTOP to its parent and the command": (
        method("Stops", "for pid in command_pids():\n    os.kill(pid, signal.SIGSTOP)"),
        "Stops",
        "initial_decisions raised PermissionError: [Errno 1] Operation not permitted",
    ),
    "SIGTSTP to its parent and the command": (
        method("Suspends", "for pid in command_pids():\n    os.kill(pid, signal.SIGTSTP)"),
        "Suspends",
        "initial_decisions raised PermissionError: [Errno 1] Operation not permitted",
    ),
    "reading the command's environment": (
        method("Reads", "for pid in command_pids():\n    open(f'/proc/{pid}/environ', 'rb').read()"),
        "Reads",
        "initial_decisions raised PermissionError",
    ),
    "a write past its disk budget": (
        method("Fills", "with tempfile.TemporaryFile() as handle:\n    handle.write(b'x' * (64 << 20))"),
        "Fills",
        "(user code may write 16 MiB, in its working folder only; RLVRAMBENCH_USER_DISK_MIB raises it)",
    ),
}


@pytest.fixture(scope="module")
def escapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    work = tmp_path_factory.mktemp("escapes")
    cases = [policy_case(work / f"case-{i}", body, attr) for i, (body, attr, _) in enumerate(ESCAPES.values())]
    return dict(zip(ESCAPES, drive(work, cases, RLVRAMBENCH_USER_DISK_MIB="16")))


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_an_escape_is_one_line_with_nothing_written_and_no_process_left(escapes: dict, escape: str) -> None:
    result, said = escapes[escape], ESCAPES[escape][2]
    lines = result["stderr"].splitlines()
    assert result["status"] == 2, result
    assert len(lines) == 1 and said in lines[0], lines
    assert result["stdout"] == ""
    assert result["left_processes"] == 0, result["left_commands"]


def test_no_output_file_is_left_by_an_escape(escapes: dict, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert all(result["status"] == 2 for result in escapes.values())
    root = Path(json.loads(json.dumps(str(tmp_path_factory.getbasetemp()))))
    assert not list(root.glob("escapes*/case-*/out.json"))


ESCAPED_THEN_WAITS = method(
    "Waits",
    "os.posix_spawn('/bin/sleep', ['sleep', '3600'], {})\n"
    "subprocess.Popen(['sleep', '3600'], start_new_session=True)\n"
    "if os.fork() == 0:\n    os.setsid()\n    LIBC.prctl(1, 0, 0, 0, 0)\n    time.sleep(3600)\n"
    "time.sleep(3600)",
)


@pytest.mark.parametrize(("name", "status"), [("TERM", -15), ("HUP", -1), ("KILL", -9), ("INT", 130)])
def test_a_killed_command_leaves_nothing_running(tmp_path: Path, name: str, status: int) -> None:
    """The command killed while its policy waits, having started a program, a program in a session of its own and
    a fork in a session of its own: nothing runs afterwards (SIGKILL included: the keeper is told by the kernel)."""
    case = policy_case(tmp_path, ESCAPED_THEN_WAITS, "Waits", signal={"name": name, "processes": 5})
    [result] = drive(tmp_path, [case])
    assert result["processes_seen"] >= 5, result  # the keeper, the child and the three it started
    assert result["status"] == status, result
    assert result["stderr"] == ("rlvrambench: interrupted\n" if name == "INT" else ""), result["stderr"]
    assert result["left_processes"] == 0, result["left_commands"]
    assert not (tmp_path / "out.json").exists()


def test_what_escapes_a_killed_keeper_comes_back_to_the_command_and_is_ended(tmp_path: Path) -> None:
    """The keeper killed (SIGKILL) while the policy waits: the child dies with it (its death signal), what it
    started is re-parented to the command (a subreaper) and ended there; the command fails with one line."""
    case = policy_case(tmp_path, ESCAPED_THEN_WAITS, "Waits", signal={"name": "KILL", "processes": 5, "to": "keeper"})
    [result] = drive(tmp_path, [case])
    assert result["processes_seen"] >= 5, result
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1 and "ended the process it ran in" in lines[0], result
    assert result["left_processes"] == 0, result["left_commands"]
    assert not (tmp_path / "out.json").exists()


def own_session(folder: Path, body: str, attr: str, **extra: str) -> subprocess.CompletedProcess:
    """The policy's replay as a command in a session of its own (an attack on its process group reaches no one
    else), in a fresh interpreter; ``RLVRAMBENCH_TEST_NO_SECCOMP`` is honoured by the script below only."""
    case = policy_case(folder, body, attr)
    script = (
        "import os, sys\n"
        "if os.environ.get('NO_SECCOMP'):\n"
        "    import rlvrambench_hf.scoring.containment.seccomp as s\n    s.install = lambda *args: False\n"
        "from rlvrambench_hf.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    command = [sys.executable, "-c", script, *case["argv"]]
    return subprocess.run(
        command, cwd=folder, env=env(**extra), capture_output=True, text=True, timeout=120, start_new_session=True
    )


def test_user_code_cannot_stop_the_commands_process_group(tmp_path: Path) -> None:
    body = method("Group", "os.killpg(os.getpgid(command_pids()[-1]), signal.SIGSTOP)")
    done = own_session(tmp_path, body, "Group")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "raised PermissionError: [Errno 1] Operation not permitted" in done.stderr


def test_without_seccomp_a_stopped_command_is_resumed_and_the_user_code_ended(tmp_path: Path) -> None:
    body = method("Stops", "os.kill(command_pids()[-1], signal.SIGSTOP)\ntime.sleep(3600)")
    done = own_session(tmp_path, body, "Stops", NO_SECCOMP="1")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "it stopped the command's process (the command was resumed)" in done.stderr
    assert not (tmp_path / "out.json").exists()


REPORTS = method(
    "Reports",
    "names = sorted(n for n in os.environ if n in " + repr(sorted(SECRETS)) + ")\n"
    "block = open('/proc/self/environ', 'rb').read().decode('latin-1')\n"
    "leaked = sorted(n for n, v in " + repr(SECRETS) + ".items() if v in block)\n"
    "import huggingface_hub\n"
    "print('secrets', names, leaked, huggingface_hub.get_token())\n"
    "print('plain', os.environ.get('RLVRAMBENCH_PLAIN_SETTING'))\n"
    "print('tmpdir', tempfile.gettempdir())\n"
    "print('cgroup', open('/proc/self/cgroup').read().split('0::')[-1].strip())\n"
    "print('init_cgroup', open('/proc/1/cgroup').read().split('0::')[-1].strip())\n"
    "links = set()\n"
    "for fd in os.listdir('/proc/self/fd'):\n"
    "    if int(fd) > 2:\n"
    "        try:\n"
    "            links.add(os.readlink(f'/proc/self/fd/{fd}'))\n"
    "        except OSError:\n"
    "            pass\n"
    "print('descriptors', sorted(links))\n"
    "print('seccomp', [line.split()[1] for line in open('/proc/self/status') if line.startswith('Seccomp:')])",
)


def test_the_child_sees_no_secret_no_descriptor_of_the_command_and_its_own_folder(tmp_path: Path) -> None:
    [result] = drive(tmp_path, [policy_case(tmp_path / "case", REPORTS, "Reports")])
    assert result["status"] == 0, result["stderr"]
    said = dict(
        (line.removeprefix(contained.MARGIN).split(" ", 1) + [""])[:2]
        for line in result["stderr"].splitlines()
        if line.startswith(contained.MARGIN)
    )
    assert said["secrets"] == "[] [] None" and said["plain"] == "visible"  # secrets removed, the rest kept
    assert Path(said["tmpdir"]).name.startswith("rlvrambench-user-") and not Path(said["tmpdir"]).exists()
    assert said["seccomp"] == "['2']"
    links = said["descriptors"].strip("[]").replace("'", "").split(", ")
    others = [link for link in links if link != "/dev/null"]
    assert len(others) == 1 and others[0].startswith("socket:"), links  # its request socket; none of the command's
    probe = Cgroup.make(f"rlvrambench-probe-{os.getpid()}")
    if probe is not None:  # where the OS lets the command make a cgroup, the child is in one, its namespace's root
        probe.remove()
        assert (said["cgroup"], said["init_cgroup"]) == ("/", "/.."), said


def test_what_user_code_prints_is_bounded_escaped_and_never_on_the_output(tmp_path: Path) -> None:
    forged = method(
        "Loud",
        "import stat\nline = (" + repr(FORGED) + " + '\\x1b[2J\\u202e\\n').encode()\nfor fd in range(1024):\n"
        "    try:\n        if not stat.S_ISSOCK(os.fstat(fd).st_mode):\n            os.write(fd, line)\n"
        "    except OSError:\n        pass\n"
        "for path in ['/dev/tty', *(f'/proc/{p}/fd/{n}' for p in command_pids() for n in (1, 2))]:\n    try:\n"
        "        open(path, 'wb').write(line)\n    except OSError:\n        pass\n"
        "sys.stdout.write('x' * (100 << 20))",
    )
    plain, loud = drive(tmp_path, [policy_case(tmp_path / "plain", ""), policy_case(tmp_path / "loud", forged, "Loud")])
    assert loud["status"] == 0, loud["stderr"][-2000:]
    assert FORGED not in loud["stdout"] and loud["stdout"] == plain["stdout"]  # the command's own output only
    assert len(loud["stderr"]) < 4 * contained.OUTPUT_KEPT
    assert "policy contained printed" in loud["stderr"] and "more bytes not shown" in loud["stderr"]
    assert f"{contained.MARGIN}{FORGED}\\x1b[2J\\u202e" in loud["stderr"]  # behind the margin, escaped
    assert "\x1b" not in loud["stderr"] and "\u202e" not in loud["stderr"]
    assert (tmp_path / "loud" / "out.json").is_file()


def test_user_code_memory_is_bounded(tmp_path: Path) -> None:
    body = "class Hog(Policy):\n    def initial_decisions(self, task):\n        return bytearray(1 << 30)"
    [result] = drive(tmp_path, [policy_case(tmp_path, body, "Hog")], **{contained.MEMORY_ENV: "256"})
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1, result
    assert "MemoryError" in lines[0] and contained.MEMORY_ENV in lines[0], lines
    assert result["left_processes"] == 0


def test_user_code_writes_only_in_its_bounded_working_folder(tmp_path: Path) -> None:
    beside = method("Beside", "open(os.path.join(os.path.dirname(__file__), 'mine.txt'), 'w').write('x')")
    many = method(
        "Many",
        "folder = tempfile.mkdtemp()\nfor i in range(64):\n"
        "    open(os.path.join(folder, str(i)), 'wb').write(b'x' * (1 << 20))",
    )
    small = method("Small", "open(os.path.join(tempfile.mkdtemp(), 'note.txt'), 'w').write('a note')")
    temp = tmp_path / "temp"
    temp.mkdir()
    cases = [policy_case(tmp_path / name, body, name) for name, body in (("Beside", beside), ("Many", many))]
    cases.append(policy_case(tmp_path / "Small", small, "Small"))
    results = drive(tmp_path, cases, RLVRAMBENCH_USER_DISK_MIB="16", TMPDIR=str(temp))
    beside_result, many_result, small_result = results
    assert small_result["status"] == 0, small_result["stderr"]  # a small file in its folder is fine
    for result in (beside_result, many_result):
        lines = result["stderr"].splitlines()
        assert result["status"] == 2 and len(lines) == 1, result["stderr"]
        assert "RLVRAMBENCH_USER_DISK_MIB raises it" in lines[0]
    assert "Read-only file system" in beside_result["stderr"] or "File too large" in beside_result["stderr"]
    assert not (tmp_path / "Beside" / "mine.txt").exists()
    assert list(temp.iterdir()) == []  # every working folder removed


def test_an_estimator_that_exits_at_import(tmp_path: Path) -> None:
    (tmp_path / "est.py").write_text("import os\nos._exit(0)\n")
    argv = ["--source", str(SNAPSHOT), "estimate", "compare", "--estimator", "est.py:Estimator"]
    argv += ["--output", str(tmp_path / "out.json")]
    [result] = drive(tmp_path, [{"argv": argv, "cwd": str(tmp_path), "stdin": None, "fifo": None}])
    lines = result["stderr"].splitlines()
    assert result["status"] == 2 and len(lines) == 1 and "ended the process it ran in" in lines[0], result
    assert not (tmp_path / "out.json").exists()
    assert result["left_processes"] == 0


#: The estimator of the issue: it answers within_margin for every target (honestly 22, 16 and 22 of 30 correct) and
#: tried to make the command score it 30 of 30 by code its reply ran in the command when unpickled.
FORGERS = {
    "a reply holding an object whose __reduce__ runs code": (
        "import rlvrambench_hf.estimation.user as user\nreal = user.checked_predictions\n"
        "class Boom:\n    def __reduce__(self):\n        return (exec, (PAYLOAD,))\n"
        "def forged(result, expected, name):\n    out = real(result, expected, name)\n    out['x'] = Boom()\n"
        "    return out\nuser.checked_predictions = forged\n",
        "returned a value that cannot be sent back as data",
    ),
    "a pickle sent in place of every reply": (
        "import multiprocessing.connection as mc\nclass Boom:\n    def __reduce__(self):\n"
        "        return (exec, (PAYLOAD,))\nsend = mc.Connection.send_bytes\n"
        "mc.Connection.send_bytes = lambda self, *args, **kwargs: send(self, pickle.dumps(('ok', Boom())))\n",
        "sent an answer that is not data the command reads",
    ),
}
#: What the forged reply would run in the command: every fold scored 30 of 30, and a marker.
PAYLOAD = (
    "import rlvrambench_hf.estimation.folds as f, sys\n"
    "real = f.fold_table\n"
    "def table(report):\n    rows = real(report)\n"
    "    for row in rows:\n        row['correct'] = row['queries']\n    return rows\n"
    f"f.fold_table = table\nopen({PWNED!r}, 'w').close()\nsys.stdout.write({FORGED!r} + '\\n')\n"
)


def test_an_estimators_reply_is_data_and_its_score_is_its_own(tmp_path: Path) -> None:
    cases = []
    for i, (forgery, _) in enumerate([("", ""), *FORGERS.values()]):
        folder = tmp_path / f"case-{i}"
        folder.mkdir()
        (folder / "est.py").write_text(ESTIMATOR + f"PAYLOAD = {PAYLOAD!r}\n" + forgery)
        argv = ["--source", str(SNAPSHOT), "estimate", "compare", "--estimator", "est.py:Estimator"]
        argv += ["--timeout", "120", "--output", str(folder / "out.json")]
        cases.append({"argv": argv, "cwd": str(folder), "stdin": None, "fifo": None})
    honest, *forged = drive(tmp_path, cases)
    assert honest["status"] == 0, honest["stderr"]
    rows = json.loads((tmp_path / "case-0" / "out.json").read_text())["table"]
    scores = {row["fold"]: row["correct"] for row in rows if row["method"] == "Estimator"}
    assert sorted(scores.values()) == [16, 22, 22], scores  # the honest score: 22 / 16 / 22
    for i, (result, (_, said)) in enumerate(zip(forged, FORGERS.values()), start=1):
        lines = result["stderr"].splitlines()
        assert result["status"] == 2 and len(lines) == 1 and said in lines[0], result["stderr"]
        assert FORGED not in result["stdout"] and not (tmp_path / f"case-{i}" / PWNED).exists()
        assert not (tmp_path / f"case-{i}" / "out.json").exists()


@pytest.mark.unit
def test_a_reply_is_plain_json_of_a_known_shape() -> None:
    import pickle

    assert wire.decode(wire.encode(("ok", {"predicted_state": ["within_margin"]}))) == (
        "ok",
        {"predicted_state": ["within_margin"]},
    )
    error = wire.decode(wire.encode(("refused", contained_error())))[1]
    assert type(error).__name__ == "InputError" and str(error) == "bad" and error.path == "p.csv"
    forged = json.dumps(["refused", {"error": "SystemExit", "message": "x", "fields": {"path": 3}}]).encode()
    assert type(wire.decode(forged)[1]).__name__ == "InputError" and wire.decode(forged)[1].path is None
    for bad in (
        pickle.dumps(("ok", 1)),
        b"[" * 100_000,
        b'["ok"]',
        b'["raised", 1, "a", "b"]',
        b'["ready", 3]',
        json.dumps(["ok", nested(wire.MAX_DEPTH + 1)]).encode(),
    ):
        with pytest.raises(wire.WireError):
            wire.decode(bad)


def nested(depth: int) -> list:
    value: list = [0]
    for _ in range(depth):
        value = [value]
    return value


def contained_error() -> Exception:
    from rlvrambench_hf.errors import InputError

    return InputError("bad", path="p.csv")


@pytest.mark.unit
def test_what_counts_as_a_secret_of_the_environment() -> None:
    from rlvrambench_hf.scoring.containment.confine import secret

    secrets = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "GITHUB_TOKEN", "MY_SERVICE_TOKEN"]
    secrets += ["OPENAI_API_KEY", "SOME_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
    secrets += ["DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "MY_SECRET", "GOOGLE_APPLICATION_CREDENTIALS"]
    secrets += ["AZURE_CLIENT_SECRET", "AZURE_STORAGE_CONNECTION_STRING", "SSH_AUTH_SOCK", "NETRC"]
    assert all(secret(name, "x") for name in secrets), [n for n in secrets if not secret(n, "x")]
    plain = ["PATH", "HOME", "PYTHONPATH", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME", "KEYBOARD", "LANG"]
    assert not any(secret(name, "x") for name in plain)
    assert secret("PIP_INDEX_URL", "https://user:pw@pypi.example/simple")  # a value that holds one
    assert secret("NOTES", "hf_" + "a" * 34) and not secret("NOTES", "hello")
