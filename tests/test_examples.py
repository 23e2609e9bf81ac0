"""Every example of README.md, docs/*.md and the metric card runs, from a folder outside the checkout.

The examples of a file run in order, in one scratch folder of a temporary directory (never the repository), with
only the documented environment: ``RLVRAMBENCH_SOURCE`` naming the release copy (the snapshot) and the Hub reached
through ``HF_ENDPOINT`` (the olah server), ``rlvrambench`` on the ``PATH``. Break an example and this fails.

- ``python`` blocks run in one namespace, as a Python session started in that folder (it is the working directory
  and the first entry of ``sys.path``): a block that shows ``>>>`` lines is checked as a doctest (its outputs must
  match), any other block is executed. A block whose fence names a file (```` ```python file=my_policies.py ````,
  the page saying "saved as ``my_policies.py``") is also written to that file first, as a reader saves it.
- ``bash`` blocks run as one script each (``bash -e -o pipefail``): every command must succeed.
- ``console`` blocks are a shell session: each ``$ `` line runs in bash, and what it prints (standard output and
  error) must match the lines that follow it (``...`` matches anything). A document whose session publishes
  (``release push``, ``metric push``) reaches a Hub that takes commits (:mod:`commitserver`) holding
  ``kobzaond/RLVRAMBench`` as the release copy, the way a maintainer reaches huggingface.co: ``HF_ENDPOINT`` and
  ``HF_TOKEN`` in the environment; its ``bash`` blocks run there too.

The README's first command (``rlvrambench advise --verl example:... --gpu H100``, the first screen's answer) is also
run alone, as a new user copies it: from an empty folder, with nothing in the environment but ``PATH``, ``HOME`` and
``RLVRAMBENCH_SOURCE``.

A block preceded by ``<!-- not executed: <reason> -->`` is skipped, and the reason must be given.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from commitserver import CommitServer
from conftest import REPO_ID, cli_env
from hubserver import REPO_ROOT

DOCUMENTS = sorted(
    [REPO_ROOT / "README.md", REPO_ROOT / "metrics" / "rlvrambench" / "README.md", *(REPO_ROOT / "docs").glob("*.md")]
)
METRIC_MODULE = REPO_ROOT / "metrics" / "rlvrambench" / "rlvrambench.py"
_FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
_FILE = re.compile(r"\bfile=([\w.-]+)")
_SKIP = re.compile(r"<!--\s*not executed:\s*(.*?)\s*-->\s*$")
#: The languages of the blocks that are examples (other fences are text: tables, layouts, synopses of options).
LANGUAGES = ("python", "console", "bash")
#: A session that publishes to the Hub (it gets a Hub that takes commits, and a token).
PUBLISHES = re.compile(r"^\$ rlvrambench\b.*\b(release|metric) push\b", re.M)
README = REPO_ROOT / "README.md"


_OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str
    skip_reason: str | None
    language: str = "python"
    file: str | None = None  # a python block the page saves as this file


def examples(document: Path) -> list[Example]:
    """The example blocks of ``document`` (:data:`LANGUAGES`), with their first line and skip reason."""
    text = document.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) not in LANGUAGES:
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        if skip and not skip.group(1):
            raise AssertionError(f"{document}: a skipped example must say why")
        line = text.count("\n", 0, match.start()) + 2
        saved = _FILE.search(match.group(2))
        found.append(
            Example(
                document,
                line,
                match.group(3),
                skip.group(1) if skip else None,
                match.group(1),
                saved.group(1) if saved else None,
            )
        )
    return found


def run_example(example: Example, namespace: dict) -> None:
    where = f"{example.document.relative_to(REPO_ROOT)}:{example.line}"
    if example.language == "console":
        run_session(example, namespace["__console__"])
    elif example.language == "bash":
        run_script(example, namespace["__console__"])
    elif example.file is not None:
        (namespace["__console__"][0] / example.file).write_text(example.code, encoding="utf-8")
        exec(compile(example.code, where, "exec"), namespace)
    elif ">>>" in example.code:
        test = doctest.DocTestParser().get_doctest(example.code, namespace, where, str(example.document), example.line)
        runner = doctest.DocTestRunner(optionflags=_OPTIONS)
        report: list[str] = []
        runner.run(test, out=report.append, clear_globs=False)
        namespace.update(test.globs)  # DocTest runs in a copy of the namespace: later blocks see its names
        assert runner.failures == 0, f"doctest failed at {where}:\n" + "".join(report)
    else:
        exec(compile(example.code, where, "exec"), namespace)


def session_commands(code: str) -> list[tuple[str, str]]:
    """The (command, expected output) pairs of a ``console`` block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"a console block starts with a '$ ' command, not {line!r}")
    return [(command, "\n".join(output) + "\n") for command, output in pairs]


def run_session(example: Example, setting: tuple[Path, dict[str, str]]) -> None:
    folder, env = setting
    checker = doctest.OutputChecker()
    for command, expected in session_commands(example.code):
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        printed = done.stdout + done.stderr
        if not checker.check_output(expected, printed, _OPTIONS):
            raise AssertionError(
                f"{example.document.relative_to(REPO_ROOT)}:{example.line}: $ {command}\n"
                + checker.output_difference(doctest.Example(command, expected), printed, _OPTIONS)
            )


def run_script(example: Example, setting: tuple[Path, dict[str, str]]) -> None:
    """A ``bash`` block as one script: every command must succeed."""
    folder, env = setting
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", example.code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{example.document.relative_to(REPO_ROOT)}:{example.line}: exit status {done.returncode}\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


def shell_setting(document: Path, snapshot: Path, folder: Path, scratch: Path):
    """The commit server the document's ``console`` session needs (None without one) and the environment of its
    shell blocks: the documented one (the release copy, a Hub, ``rlvrambench`` on the path)."""
    shell = {
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    if not any(
        e.language == "console" and e.skip_reason is None and PUBLISHES.search(e.code) for e in examples(document)
    ):
        return None, (scratch, cli_env(**shell))
    server = CommitServer(folder / "commit-hub").start()
    server.seed(REPO_ID, snapshot)
    env = cli_env(
        HF_ENDPOINT=server.endpoint,
        HF_TOKEN=server.token,
        HF_HUB_DISABLE_XET="1",  # the server speaks the LFS transfer protocol, not Xet
        HF_HOME=str(folder / "hf-session"),
        **shell,
    )
    return server, (scratch, env)


@pytest.fixture
def elsewhere(tmp_path: Path, snapshot: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch folder outside the checkout, the working directory and first entry of ``sys.path`` (as for a
    Python session started there), with the documented environment: ``RLVRAMBENCH_SOURCE`` names the release."""
    scratch = tmp_path / "session"
    scratch.mkdir()
    assert REPO_ROOT not in scratch.resolve().parents, "the examples must run outside the checkout"
    monkeypatch.chdir(scratch)
    monkeypatch.syspath_prepend(str(scratch))
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    return scratch


def test_the_metric_module_examples_run(hub, elsewhere):
    spec = importlib.util.spec_from_file_location("rlvrambench_metric", METRIC_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    docstring = module._KWARGS_DESCRIPTION
    assert ">>>" in docstring and "+SKIP" not in docstring
    run_example(Example(METRIC_MODULE, 1, textwrap.dedent(docstring.split("Examples:", 1)[1]), None), {})


def test_every_document_with_examples_is_collected():
    with_examples = {d.relative_to(REPO_ROOT).as_posix() for d in DOCUMENTS if examples(d)}
    assert {"README.md", "metrics/rlvrambench/README.md", "docs/transfer.md", "docs/admission.md"} <= with_examples
    assert any(e.language == "console" for e in examples(REPO_ROOT / "docs" / "release.md"))  # build to push


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.relative_to(REPO_ROOT).as_posix())
def test_examples_run(document, snapshot, hub, elsewhere, tmp_path):
    server, setting = shell_setting(document, snapshot, tmp_path, elsewhere)
    namespace: dict = {"__name__": "__example__", "__console__": setting}
    try:
        for example in examples(document):
            if example.skip_reason is None:
                run_example(example, namespace)
    finally:
        if server is not None:
            server.stop()


def test_a_console_block_is_checked_command_by_command():
    pairs = session_commands("$ echo one\none\n$ printf 'a\\nb\\n'\na\n...\n")
    assert pairs == [("echo one", "one\n"), ("printf 'a\\nb\\n'", "a\n...\n")]
    setting = (REPO_ROOT, dict(os.environ))
    with pytest.raises(AssertionError, match="echo hello"):
        run_session(Example(REPO_ROOT / "README.md", 1, "$ echo hello\ngoodbye\n", None, "console"), setting)
    run_session(Example(REPO_ROOT / "README.md", 1, "$ echo hello world\nhello ...\n", None, "console"), setting)


def test_a_bash_block_is_one_script_that_stops_at_a_failing_command(tmp_path):
    setting = (tmp_path, dict(os.environ))
    script = "echo one > a.txt \\\n  && cat a.txt | grep one\ncat <<'END' > b.txt\ntwo\nEND\n"
    run_script(Example(REPO_ROOT / "README.md", 1, script, None, "bash"), setting)
    assert (tmp_path / "b.txt").read_text() == "two\n"
    with pytest.raises(AssertionError, match="exit status 1"):
        run_script(Example(REPO_ROOT / "README.md", 1, "false | cat\ntouch after\n", None, "bash"), setting)
    assert not (tmp_path / "after").exists()


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, str(REPO_ROOT.parent / "shared" / "rlvrambench" / "hub")),
        ({"RLVRAMBENCH_SOURCE": "/data/RLVRAMBench"}, "/data/RLVRAMBench"),
        ({"RLVRAMBENCH_SOURCE": "kobzaond/RLVRAMBench"}, "kobzaond/RLVRAMBench"),
        ({"RLVRAMBENCH_SNAPSHOT": "/old/name"}, "/old/name"),  # the older names, when the new one is not set
        ({"SNAPSHOT": "/older/name"}, "/older/name"),
        ({"RLVRAMBENCH_SOURCE": "/new", "RLVRAMBENCH_SNAPSHOT": "/old"}, "/new"),
    ],
)
def test_make_demo_reads_the_release_copy_from_RLVRAMBENCH_SOURCE(tmp_path, variables, expected):
    """The README's ``make demo`` runs the demo on ``$RLVRAMBENCH_SOURCE`` (its older names still work), from any
    folder through ``make -C``, and ends with the README's first command; ``make -n`` prints the commands without
    running them."""
    env = {k: v for k, v in os.environ.items() if k not in ("RLVRAMBENCH_SOURCE", "RLVRAMBENCH_SNAPSHOT", "SNAPSHOT")}
    env |= variables
    done = subprocess.run(
        ["make", "-s", "-n", "-C", str(REPO_ROOT), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-3].endswith(f'rlvrambench --source "{expected}" demo'), done.stdout
    command, _ = readme_first_command()  # then the README's first command, on the same release
    assert lines[-1].endswith(f'rlvrambench --source "{expected}" {command.removeprefix("rlvrambench ")}'), lines


def readme_first_command() -> tuple[str, str]:
    """The first command of README.md's first ``console`` block and the lines of its answer the README shows."""
    first = next(e for e in examples(README) if e.language == "console" and e.skip_reason is None)
    return session_commands(first.code)[0]


def test_the_readmes_first_command_answers_from_an_empty_folder(snapshot, tmp_path):
    """A new user's first command, copied from the first screen of README.md: it answers as the README shows, from
    an empty folder outside the checkout, with nothing in the environment but PATH, a fresh HOME (no cache) and
    the release copy; it writes nothing in that folder."""
    command, shown = readme_first_command()
    assert command.startswith("rlvrambench advise --verl example:") and command.endswith("--gpu H100"), command
    assert "pip install rlvrambench-hf" in README.read_text(encoding="utf-8").split(command, 1)[0]
    folder, home = tmp_path / "anywhere", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    assert REPO_ROOT not in folder.resolve().parents
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "RLVRAMBENCH_SOURCE": str(snapshot),
    }
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    checker = doctest.OutputChecker()
    assert checker.check_output(shown, done.stdout + done.stderr, _OPTIONS), checker.output_difference(
        doctest.Example(command, shown), done.stdout + done.stderr, _OPTIONS
    )
    lines = done.stdout.splitlines()
    assert "read: workload gsm8k: data.train_files" in done.stdout  # inferred from the launch file's data files
    example = command.split("--verl ", 1)[1].split()[0]
    assert lines[-1].startswith(f"{example} is ") and lines[-1].endswith(": copy it to start your own")
    assert Path(lines[-1].split(" is ", 1)[1].split(": copy it")[0]).is_file()
    assert os.listdir(folder) == []
