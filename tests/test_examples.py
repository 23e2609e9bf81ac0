"""Every Python example of README.md, docs/*.md and the metric card runs, against the release copy.

The ``python`` code blocks of a file run in order in one namespace, from the repository root, with
``RLVRAMBENCH_SOURCE`` set to the release snapshot and ``HF_ENDPOINT`` at the olah server: a block that shows
``>>>`` lines is checked as a doctest (its outputs must match), any other block is executed. A block preceded by
``<!-- not executed: <reason> -->`` is skipped, and the reason must be given. Break an example and this fails.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from hubserver import REPO_ROOT

DOCUMENTS = sorted(
    [REPO_ROOT / "README.md", REPO_ROOT / "metrics" / "rlvrambench" / "README.md", *(REPO_ROOT / "docs").glob("*.md")]
)
METRIC_MODULE = REPO_ROOT / "metrics" / "rlvrambench" / "rlvrambench.py"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_SKIP = re.compile(r"<!--\s*not executed:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str
    skip_reason: str | None


def examples(document: Path) -> list[Example]:
    """The ``python`` blocks of ``document``, with their first line and skip reason."""
    text = document.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        if skip and not skip.group(1):
            raise AssertionError(f"{document}: a skipped example must say why")
        line = text.count("\n", 0, match.start()) + 2
        found.append(Example(document, line, match.group(2), skip.group(1) if skip else None))
    return found


def run_example(example: Example, namespace: dict) -> None:
    where = f"{example.document.relative_to(REPO_ROOT)}:{example.line}"
    if ">>>" in example.code:
        test = doctest.DocTestParser().get_doctest(example.code, namespace, where, str(example.document), example.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        report: list[str] = []
        runner.run(test, out=report.append, clear_globs=False)
        namespace.update(test.globs)  # DocTest runs in a copy of the namespace: later blocks see its names
        assert runner.failures == 0, f"doctest failed at {where}:\n" + "".join(report)
    else:
        exec(compile(example.code, where, "exec"), namespace)


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


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.relative_to(REPO_ROOT).as_posix())
def test_examples_run(document, snapshot, hub, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("RLVRAMBENCH_SOURCE", str(snapshot))
    monkeypatch.setenv("RLVRAMBENCH_EXAMPLE_OUTPUT", str(tmp_path))
    namespace: dict = {"__name__": "__example__"}
    for example in examples(document):
        if example.skip_reason is None:
            run_example(example, namespace)
