"""A command line that explains itself: every command's --help, --version, usage without a command, and one line
naming the pip install when an optional extra is missing (the module hidden in a fresh interpreter)."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvrambench_hf import REGISTRY, __version__
from rlvrambench_hf.admission import RULES as ADMISSION_RULES
from rlvrambench_hf.cli import build_parser, main
from rlvrambench_hf.data.tables.export import FORMATS
from rlvrambench_hf.followup import STUDIES
from rlvrambench_hf.transfer import RULES, TRACKS

from conftest import cli_env, run_cli


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every (command path, parser) below ``parser``, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


ALL = list(commands(build_parser()))


def help_text(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return out.getvalue()


def test_the_walk_finds_every_command():
    names = {" ".join(path) for path, _ in ALL}
    assert {"configs", "show", "export", "verify", "evaluate", "report", "followup score", "plot admission"} <= names
    assert {"release build", "release verify", "release push", "release publish-mirror", "metric space"} <= names
    assert len(names) >= 25


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_a_description_and_every_option_a_help(path):
    parser = dict(ALL)[path]
    assert parser.description and len(parser.description) > 30, f"{' '.join(path)} has no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            assert all(a.help for a in action._choices_actions), f"{' '.join(path)}: a subcommand has no help"
            continue
        assert action.help, f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest} has no help"
    text = help_text(*path)
    for action in parser._actions:
        for choice in action.choices or () if not isinstance(action, argparse._SubParsersAction) else ():
            assert choice in text, f"{' '.join(path)} --help does not list {choice}"


def test_choices_are_listed_from_the_cores():
    assert all(name in help_text("show") for name in REGISTRY)
    assert all(name in help_text("export") for name in (*REGISTRY, *FORMATS))
    assert all(rule in help_text("inputs") for rule in ADMISSION_RULES)
    assert all(rule in help_text("baseline") for rule in RULES)
    assert all(rule in help_text("replay") for rule in ADMISSION_RULES)
    for command in ("inputs", "baseline", "evaluate"):
        assert all(track in help_text(command) for track in TRACKS), command
    assert all(study in help_text("followup", "score") for study in STUDIES)
    assert all(study in help_text("report") for study in STUDIES)


@pytest.mark.parametrize(
    ("path", "extra"),
    [(("plot",), "plots"), (("plot", "stages"), "plots"), (("report",), "plots"), (("release", "verify"), "release")],
)
def test_help_names_the_extra_a_command_needs(path, extra):
    assert f"pipinstall'rlvrambench-hf[{extra}]'" in "".join(help_text(*path).split())  # wrapped at any space


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"rlvrambench-hf {__version__}"


@pytest.mark.parametrize("argv", [[], ["release"], ["plot"], ["followup"], ["metric"], ["--debug"]])
def test_no_command_prints_usage_and_exits_2(argv):
    result = run_cli(*argv)
    assert result.returncode == 2 and result.stdout == ""
    first, *rest = result.stderr.strip().splitlines()
    assert first.startswith("usage: rlvrambench") and "choose a subcommand" in rest[-1], result.stderr


HIDE = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None  # `import name` now raises ImportError, as when the extra is not installed
from rlvrambench_hf.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without(hidden: tuple[str, ...], *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HIDE.format(hidden=hidden)), *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(),
        timeout=300,
    )


@pytest.mark.parametrize(
    "argv",
    [["plot", "feasibility"], ["plot", "admission", "--against", "attempts"], ["report", "--output", "site"]],
    ids=["plot feasibility", "plot admission", "report"],
)
def test_missing_matplotlib_is_one_line_naming_the_extra(snapshot, tmp_path, argv):
    result = run_without(("matplotlib",), "--source", str(snapshot), *argv, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "rlvrambench: error: drawing figures needs matplotlib, which is not installed: "
        "pip install 'rlvrambench-hf[plots]'"
    )
    assert list(tmp_path.iterdir()) == []


def test_missing_mlcroissant_is_one_line_naming_the_extra_and_the_way_round(snapshot, tmp_path):
    from rlvrambench_hf.release.build import build_release

    folder = tmp_path / "rel"
    build_release(folder, "1.1.0", snapshot)
    result = run_without(("mlcroissant",), "release", "verify", str(folder), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "rlvrambench: error: Croissant validation needs mlcroissant, which is not installed: "
        "pip install 'rlvrambench-hf[release]' (or skip it with --no-croissant)"
    )
    skipped = run_without(("mlcroissant",), "release", "verify", str(folder), "--no-croissant", cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert "verified: 69 files, 10 configs" in skipped.stdout and "mlcroissant skipped" in skipped.stdout
    folder.joinpath("LICENSE").write_text("changed")
    broken = run_without(("mlcroissant",), "release", "verify", str(folder), "--no-croissant", cwd=tmp_path)
    assert broken.returncode == 2 and "LICENSE: present but corrupted" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
