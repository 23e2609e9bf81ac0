"""A command line that explains itself: every command's --help, --version, usage without a command, and one line
naming the pip install when an optional extra is missing (the module hidden in a fresh interpreter). The command
table: unique names, each module imported only for its command, and no heavy library on a command's way unless the
command uses it (each command in a fresh interpreter: the interpreter is what is tested there)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvrambench_hf import REGISTRY, __version__
from rlvrambench_hf.admission import RULES as ADMISSION_RULES
from rlvrambench_hf.cli import COMMANDS, build_parser, main
from rlvrambench_hf.data.tables.export import FORMATS
from rlvrambench_hf.followup import STUDIES
from rlvrambench_hf.transfer import RULES, TRACKS

from conftest import cli_env, invoke


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every (command path, parser) below ``parser``, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


ALL = list(commands(build_parser(complete=True)))


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
    assert parser.description.rstrip().endswith("."), f"{' '.join(path)}: the description stops mid-sentence"
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


def test_verify_help_names_every_kind_of_row_it_prints(snapshot):
    """``verify --help`` says what its rows are, the card's figures included (issue 39)."""
    text = " ".join(help_text("verify").split())
    printed = invoke("--source", str(snapshot), "verify")
    kinds = {line.split()[0] for line in printed.stdout.splitlines()[3:] if line.strip() and "passed," not in line}
    assert kinds == {"digest", "seal", "rows", "keys", "relation", "figure"}, kinds
    for words in ("SHA-256", "seals", "row counts", "key uniqueness", "relation", "figures the dataset card states"):
        assert words in text, words
    for figure in ("eligible processes", "recorded attempts", "estimation pool"):
        assert figure in text and figure in printed.stdout, figure


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


def test_version_answers_before_any_core_is_imported():
    code = "import sys; from rlvrambench_hf.cli import run; sys.argv[1:] = ['--version']; " + _REPORT_AT_EXIT + "run()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), timeout=300)
    assert result.returncode == 0 and result.stdout.splitlines()[0] == f"rlvrambench-hf {__version__}"
    loaded = json.loads(result.stderr.splitlines()[-1])
    assert sorted(loaded["package"]) == [
        "rlvrambench_hf",
        "rlvrambench_hf.cli",
        "rlvrambench_hf.cli.shared",
        "rlvrambench_hf.cli.shared.common",
        "rlvrambench_hf.errors",
        "rlvrambench_hf.lazy",  # the package's names imported when first asked for (importlib alone)
        "rlvrambench_hf.redaction",  # the formatter every error line goes through
    ]
    assert "pyarrow" not in loaded["libraries"] and "numpy" not in loaded["libraries"], loaded


def duplicates(names: list[str]) -> list[str]:
    return sorted({name for name in names if names.count(name) > 1})


def test_command_names_are_unique_and_each_names_a_function_of_its_module():
    assert duplicates([command.name for command in COMMANDS]) == []
    for command in COMMANDS:
        module = importlib.import_module(f"rlvrambench_hf.cli.{command.module}")
        assert callable(getattr(module, command.function, None)), command
    for path, parser in [((), build_parser(complete=True)), *ALL]:  # argparse 3.11 lets a name replace another
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert duplicates([choice.dest for choice in action._choices_actions]) == [], path


def test_the_duplicate_check_sees_a_duplicate():
    assert duplicates([c.name for c in (*COMMANDS, COMMANDS[3])]) == [COMMANDS[3].name]


def test_advise_is_a_command_and_estimate_advise_its_alias():
    top, alias = help_text("advise"), help_text("estimate", "advise")
    assert "usage: rlvrambench advise" in top and "usage: rlvrambench estimate advise" in alias
    assert _options(top) == _options(alias) and "--verl" in _options(top)
    assert "".join(top.split("usage:")[1].split()[-40:]) in "".join(alias.split())  # the same description
    assert "advise" in help_text() and "the same as rlvrambench advise" in help_text("estimate")


def _options(text: str) -> list[str]:
    return sorted(set(re.findall(r"--[a-z-]+", text)))


@pytest.mark.parametrize("argv", [[], ["release"], ["plot"], ["followup"], ["metric"], ["--debug"]])
def test_no_command_prints_usage_and_exits_2(argv):
    result = invoke(*argv)
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


#: Printed at exit by the fresh interpreters below: the package's modules and the libraries that were imported.
_REPORT_AT_EXIT = (
    "import atexit, json; atexit.register(lambda: print(json.dumps({'package': sorted(m for m in sys.modules "
    "if m.startswith('rlvrambench_hf')), 'libraries': sorted({m.split('.')[0] for m in sys.modules})}), "
    "file=sys.stderr)); "
)
#: The libraries no command may import unless it uses them (house rule; the architecture's "heavy imports").
HEAVY = ("scipy", "pandas", "datasets", "evaluate", "matplotlib", "sklearn")
#: The private helper modules of the command line, shared by several commands.
SHARED_CLI = {
    "rlvrambench_hf.cli",
    "rlvrambench_hf.cli.shared",
    "rlvrambench_hf.cli.shared.common",
    "rlvrambench_hf.cli.shared.intervals",
}

# One representative call per command (after `baseline` where it needs predictions) and the heavy libraries it
# uses: scipy for bootstrap intervals and the estimators' fits (the logistic method follows scikit-learn's solver
# with scipy's L-BFGS-B), matplotlib for figures.
_BASELINE = ["baseline", "--output", "baseline.csv"]
_EVALUATE = ["evaluate", "--predictions", "baseline.csv", "--output", "scores.json"]
CALLS: dict[str, tuple[list[list[str]], tuple[str, ...]]] = {
    "configs": ([["configs", "--all"]], ()),
    "show": ([["show", "eligible_runs", "--limit", "2"]], ()),
    "export": ([["export", "eligible_runs", "--format", "csv", "--output", "e.csv"]], ()),
    "verify": ([["verify"]], ()),
    "inputs": ([["inputs", "--output", "inputs.json"]], ()),
    "baseline": ([_BASELINE], ()),
    "evaluate": ([_BASELINE, _EVALUATE], ()),
    "compare": ([_BASELINE, ["compare", "baseline.csv", "rule:always_reject"]], ("scipy",)),
    "leaderboard": ([_BASELINE, _EVALUATE, ["leaderboard", "scores.json"]], ()),
    "results": ([_BASELINE, _EVALUATE, ["results", "export", "scores.json", "--repo-id", "me/model"]], ()),
    "replay": ([["replay", "--rule", "source_copy", "--budgets", "0,1", "--output", "replay.json"]], ()),
    "followup": ([["followup", "score", "--study", "larger_model"]], ()),
    "estimate": ([["estimate", "fit"]], ("scipy",)),  # scikit-learn is named in the record, never imported
    "advise": ([["advise", "--verl", "run.sh", "--workload", "gsm8k"]], ("scipy", "sklearn", "pandas")),
    "plot": ([["plot", "stages", "--output", "stages.png"]], ("matplotlib",)),
    "report": ([["report", "--output", "site", "--followup-predictions", "no-such-study=x.csv"]], ()),
    "release": ([["release", "diff", "{source}", "{source}", "--config", "eligible_runs"]], ()),
    "metric": ([["metric", "path"]], ()),
    "demo": ([], ()),  # runs the calls of configs, show, evaluate, replay, estimate in one process: their checks
}
#: A VERL launch script, as docs/advisor.md's (read, never run).
VERL_SCRIPT = """python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=32 \\
  data.max_prompt_length=1024 data.max_response_length=2048 actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
  actor_rollout_ref.model.lora_rank=64 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \\
  actor_rollout_ref.rollout.n=2 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 trainer.n_gpus_per_node=2 trainer.nnodes=1 \\
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.actor.fsdp_config.param_offload=False \\
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=False actor_rollout_ref.rollout.max_num_seqs=64 \\
  actor_rollout_ref.rollout.free_cache_engine=True actor_rollout_ref.model.target_modules=all-linear
"""


def test_every_command_has_a_representative_call():
    assert set(CALLS) == {command.name for command in COMMANDS}


@pytest.mark.parametrize("command", [c for c in COMMANDS], ids=[c.name for c in COMMANDS])
def test_a_command_imports_its_module_and_the_heavy_libraries_it_uses_only(snapshot, tmp_path, command):
    """``COMMAND --help`` imports the command's module alone and no heavy library; then one real call imports only
    the heavy libraries that command uses."""
    (tmp_path / "run.sh").write_text(VERL_SCRIPT)
    calls, uses = CALLS[command.name]
    argvs = [[a.format(source=snapshot) for a in argv] for argv in calls]
    code = (
        "import json, sys\nfrom rlvrambench_hf.cli import main\n"
        f"try:\n    main([{command.name!r}, '--help'])\nexcept SystemExit:\n    pass\n"
        "cli = sorted(m for m in sys.modules if m.startswith('rlvrambench_hf.cli'))\n"
        "print('@@', json.dumps(cli), file=sys.stderr)\n"
        f"print('@@', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
        f"statuses = [main(['--source', {str(snapshot)!r}, *argv]) for argv in {argvs!r}]\n"
        f"print('@@', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
        "print('@@', json.dumps(statuses), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=tmp_path, timeout=300
    )
    assert result.returncode == 0, result.stderr
    cli_modules, heavy_at_help, heavy_after, statuses = (
        json.loads(line[3:]) for line in result.stderr.splitlines() if line.startswith("@@ ")
    )
    own = {f"rlvrambench_hf.cli.{command.module}"} | (
        {"rlvrambench_hf.cli.advise"} if command.name == "estimate" else set()
    )
    assert set(cli_modules) - SHARED_CLI == own, cli_modules
    assert heavy_at_help == [], heavy_at_help
    assert set(heavy_after) <= set(uses), (command.name, heavy_after)
    expected = [2 if command.name == "report" else 0] * len(argvs)  # report: refused before any work
    assert statuses == expected, result.stderr


def test_the_advisor_help_imports_no_numerical_library_and_the_folds_name_scikit_learn_without_importing_it(
    snapshot, tmp_path
):
    """``advise --help`` and ``estimate [advise] --help`` import neither numpy nor pyarrow; ``estimate
    retrospective`` records scikit-learn's version without importing it (issue 39)."""
    code = (
        "import json, sys\nfrom rlvrambench_hf.cli import main\n"
        "for argv in (['advise', '--help'], ['estimate', '--help'], ['estimate', 'advise', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('@@', json.dumps([m for m in ('numpy', 'pyarrow') if m in sys.modules]), file=sys.stderr)\n"
        f"main(['--source', {str(snapshot)!r}, 'estimate', 'retrospective', '--output', 'r.json'])\n"
        "print('@@', json.dumps([m for m in ('sklearn', 'scipy') if m in sys.modules]), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=tmp_path, timeout=300
    )
    assert result.returncode == 0, result.stderr
    at_help, after = (json.loads(line[3:]) for line in result.stderr.splitlines() if line.startswith("@@ "))
    assert at_help == [] and after == ["scipy"], (at_help, after)
    environment = json.loads((tmp_path / "r.json").read_text())["numerical_environment"]
    assert environment["scikit_learn"] and environment["scipy"] and environment["numpy"]
