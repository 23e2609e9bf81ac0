"""Every Python example and shell session of README.md, docs/*.md and the metric card runs, against the release copy.

The ``python`` code blocks of a file run in order in one namespace, from the repository root, with
``RLVRAMBENCH_SOURCE`` set to the release snapshot and ``HF_ENDPOINT`` at the olah server: a block that shows
``>>>`` lines is checked as a doctest (its outputs must match), any other block is executed. A block preceded by
``<!-- not executed: <reason> -->`` is skipped, and the reason must be given. Break an example and this fails.

A ``console`` block is a maintainer's shell session: each ``$ `` line runs in bash, in a scratch folder, and what
it prints (standard output and error) must match the lines that follow it (``...`` matches anything). Its Hub is a
server that takes commits (:mod:`commitserver`) holding ``kobzaond/RLVRAMBench`` as the release copy, reached the
way a maintainer reaches huggingface.co: ``HF_ENDPOINT`` and ``HF_TOKEN`` in the environment.
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
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_SKIP = re.compile(r"<!--\s*not executed:\s*(.*?)\s*-->\s*$")


_OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str
    skip_reason: str | None
    language: str = "python"


def examples(document: Path) -> list[Example]:
    """The ``python`` and ``console`` blocks of ``document``, with their first line and skip reason."""
    text = document.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) not in ("python", "console"):
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        if skip and not skip.group(1):
            raise AssertionError(f"{document}: a skipped example must say why")
        line = text.count("\n", 0, match.start()) + 2
        found.append(Example(document, line, match.group(2), skip.group(1) if skip else None, match.group(1)))
    return found


def run_example(example: Example, namespace: dict) -> None:
    where = f"{example.document.relative_to(REPO_ROOT)}:{example.line}"
    if example.language == "console":
        run_session(example, namespace["__console__"])
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


def console_setting(document: Path, snapshot: Path, folder: Path):
    """For a document with ``console`` blocks: a started commit server holding the release copy as ``REPO_ID``,
    a scratch folder and the session's environment (None when the document has no such block)."""
    if not any(e.language == "console" and e.skip_reason is None for e in examples(document)):
        return None
    server = CommitServer(folder / "commit-hub").start()
    server.seed(REPO_ID, snapshot)
    scratch = folder / "session"
    scratch.mkdir()
    env = cli_env(
        HF_ENDPOINT=server.endpoint,
        HF_TOKEN=server.token,
        HF_HUB_DISABLE_XET="1",  # the server speaks the LFS transfer protocol, not Xet
        HF_HOME=str(folder / "hf-session"),
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return server, (scratch, env)


def test_the_metric_module_examples_run(snapshot, hub, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
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
def test_examples_run(document, snapshot, hub, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    monkeypatch.setenv("RLVRAMBENCH_EXAMPLE_OUTPUT", str(tmp_path))
    namespace: dict = {"__name__": "__example__"}
    console = console_setting(document, snapshot, tmp_path)
    if console is not None:
        namespace["__console__"] = console[1]
    try:
        for example in examples(document):
            if example.skip_reason is None:
                run_example(example, namespace)
    finally:
        if console is not None:
            console[0].stop()


def test_a_console_block_is_checked_command_by_command():
    pairs = session_commands("$ echo one\none\n$ printf 'a\\nb\\n'\na\n...\n")
    assert pairs == [("echo one", "one\n"), ("printf 'a\\nb\\n'", "a\n...\n")]
    setting = (REPO_ROOT, dict(os.environ))
    with pytest.raises(AssertionError, match="echo hello"):
        run_session(Example(REPO_ROOT / "README.md", 1, "$ echo hello\ngoodbye\n", None, "console"), setting)
    run_session(Example(REPO_ROOT / "README.md", 1, "$ echo hello world\nhello ...\n", None, "console"), setting)
