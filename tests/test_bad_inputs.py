"""The bad-input matrix: every case through the command line AND the Python API.

For each case: the CLI exits with 2 and prints exactly one line on stderr that names the problem, with no
traceback; the Python API raises the documented exception type (a subclass of RLVRAMBenchError) with the same
kind of message; and neither creates or changes an output file or a cache entry (each run gets an empty
HF_HOME, and the output path is checked). Both faces run in fresh interpreters, as users run them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO_ID, SNAPSHOT, cli_env

API_RUNNER = """
import json, sys
from rlvrambench_hf.errors import RLVRAMBenchError
try:
    exec(sys.argv[1])
except RLVRAMBenchError as exc:
    print(json.dumps({"type": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}))
else:
    print(json.dumps({"type": None, "message": "no error"}))
"""

POLICIES = """
from rlvrambench_hf.admission import AdmissionPolicy

class Raises(AdmissionPolicy):
    def initial_decisions(self, task):
        raise RuntimeError("policy exploded")
    def next_action(self, task, revealed):
        return "stop"

class Invalid(AdmissionPolicy):
    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}
    def next_action(self, task, revealed):
        return "launch everything"
"""


@dataclass
class Case:
    name: str
    cli: list[str]  # arguments after `rlvrambench`; {W} is the work folder, {S} the snapshot
    api: str  # Python statement(s) for the API face
    error: type | str  # documented exception class name
    message: str  # text the one-line message must contain
    setup: Callable[[Path], None] | None = None
    output: str | None = "{W}/out.json"  # a path that must not appear
    env: dict = field(default_factory=dict)
    hub: bool = False


def predictions(
    rows: list[str], header: str = "query_id,predicted_state", encoding: str = "utf-8", newline: str = "\n"
) -> Callable[[Path], None]:
    def make(work: Path) -> None:
        (work / "p.csv").write_bytes(newline.join([header, *rows]).encode(encoding) + newline.encode())

    return make


def baseline_rows() -> list[str]:
    from rlvrambench_hf.transfer import load_transfer_tables, reference_predictions

    tables = load_transfer_tables(SNAPSHOT)
    table = reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    return [
        f"{q},{s}" for q, s in zip(table.column("query_id").to_pylist(), table.column("predicted_state").to_pylist())
    ]


ROWS = baseline_rows()
EVAL = ["--source", "{S}", "evaluate", "--predictions", "{W}/p.csv", "--output", "{W}/out.json"]
EVAL_API = (
    "from rlvrambench_hf.transfer import read_predictions, score_lists\n"
    "ids, states = read_predictions('{W}/p.csv')\n"
    "score_lists(ids, states, source='{S}')"
)


def copy_release(work: Path) -> Path:
    root = work / "release"
    if not root.exists():
        shutil.copytree(SNAPSHOT, root)
    return root


def edit_release(relpath: str, change: Callable[[str], str], drop_manifest: bool = True):
    def make(work: Path) -> None:
        root = copy_release(work)
        target = root / relpath
        target.write_text(change(target.read_text()))
        if drop_manifest:  # so that the reader, not the digest check, meets the damage
            (root / "benchmark" / "manifest.json").write_text('{"files": {}}')

    return make


def manifest_entry(name: str):
    def make(work: Path) -> None:
        manifest = copy_release(work) / "benchmark" / "manifest.json"
        data = json.loads(manifest.read_text())
        data["files"][name] = {"sha256": "0" * 64, "size_bytes": 1}
        manifest.write_text(json.dumps(data))

    return make


def flip_runs_byte(work: Path) -> None:
    runs = copy_release(work) / "benchmark" / "runs.csv"
    data = bytearray(runs.read_bytes())
    data[250] = ord("3") if data[250] != ord("3") else ord("4")
    runs.write_bytes(bytes(data))


def sparse_2gb(work: Path) -> None:
    with open(work / "p.csv", "wb") as handle:
        handle.write(b"query_id,predicted_state\n")
        handle.truncate(2 * 1024**3)


def forbidden_retry(work: Path) -> None:
    source = SNAPSHOT / "benchmark" / "decision" / "results" / "attempts.json"
    records = json.loads(source.read_text())
    items = records if isinstance(records, list) else records["attempts"]
    first = items[0]
    retry = dict(first, attempt_id=first["attempt_id"] + "-retry", attempt_index=2)
    items.insert(1, retry)
    (work / "attempts.json").write_text(json.dumps(records))


def policy_module(work: Path) -> None:
    (work / "bad_policies.py").write_text(POLICIES)


def built_release_with_a_changed_byte(work: Path) -> None:
    from rlvrambench_hf.release.build import build_release

    folder = work / "rel"
    build_release(folder, "1.1.0", SNAPSHOT)
    target = folder / "data" / "transfer_queries" / "evaluation-00000-of-00001.parquet"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01
    target.write_bytes(bytes(data))


def built_release(work: Path) -> None:
    from rlvrambench_hf.release.build import build_release

    build_release(work / "rel", "1.1.0", SNAPSHOT)


def malformed_card(work: Path) -> None:
    card = copy_release(work) / "README.md"
    card.write_text(card.read_text().replace("configs:\n", "configs: [unclosed\n", 1))


LOAD_API = "from rlvrambench_hf import load_dataset\nload_dataset({args})"

CASES = [
    # predictions files
    Case("missing ids", EVAL, EVAL_API, "InputError", "missing", predictions(ROWS[:-3])),
    Case("duplicate ids", EVAL, EVAL_API, "InputError", "duplicate", predictions(ROWS + ROWS[:2])),
    Case("unknown ids", EVAL, EVAL_API, "InputError", "unexpected", predictions(ROWS + ["query-nope,within_margin"])),
    Case(
        "bad label", EVAL, EVAL_API, "InputError", "fits", predictions(ROWS[:-1] + [ROWS[-1].split(",")[0] + ",fits"])
    ),
    Case(
        "wrong letter case",
        EVAL,
        EVAL_API,
        "InputError",
        "Within_Margin",
        predictions(ROWS[:-1] + [ROWS[-1].split(",")[0] + ",Within_Margin"]),
    ),
    Case(
        "latin-1 bytes",
        EVAL,
        EVAL_API,
        "InputError",
        "UTF-8",
        predictions(ROWS[:-1] + [ROWS[-1] + "é"], encoding="latin-1"),
    ),
    Case("empty file", EVAL, EVAL_API, "InputError", "empty", predictions([], header="")),
    Case("header only", EVAL, EVAL_API, "InputError", "no prediction rows", predictions([])),
    Case(
        "missing column",
        EVAL,
        EVAL_API,
        "InputError",
        "predicted_state",
        predictions([r.split(",")[0] for r in ROWS], header="query_id"),
    ),
    Case(
        "extra column",
        EVAL,
        EVAL_API,
        "InputError",
        "query_id,predicted_state",
        predictions([r + ",x" for r in ROWS], header="query_id,predicted_state,confidence"),
    ),
    Case("2 GB file", EVAL, EVAL_API, "InputError", "p.csv", sparse_2gb),
    Case(
        "directory instead of file",
        ["--source", "{S}", "evaluate", "--predictions", "{W}", "--output", "{W}/out.json"],
        "from rlvrambench_hf.transfer import read_predictions\nread_predictions('{W}')",
        "InputError",
        "directory",
    ),
    Case(
        "unreadable file",
        EVAL,
        EVAL_API,
        "InputError",
        "cannot read predictions file",
        lambda w: (w / "p.csv").symlink_to("/proc/self/mem"),
    ),  # opens, then every read fails (EIO)
    # names
    Case(
        "unknown config",
        ["--source", "{S}", "show", "runs"],
        LOAD_API.format(args="'runs', source='{S}'"),
        "UnknownConfigError",
        "unknown config 'runs'",
        output=None,
    ),
    Case(
        "unknown split",
        [
            "--source",
            "{S}",
            "export",
            "eligible_runs",
            "--split",
            "train",
            "--format",
            "csv",
            "--output",
            "{W}/out.json",
        ],
        LOAD_API.format(args="'eligible_runs', 'train', source='{S}'"),
        "UnknownConfigError",
        "split",
        output=None,
    ),
    Case(
        "unknown track",
        EVAL[:-2] + ["--track", "speed_transfer"] + EVAL[-2:],
        "from rlvrambench_hf.transfer import score_lists\nscore_lists([], [], track='speed_transfer', source='{S}')",
        "UnknownConfigError",
        "speed_transfer",
        predictions(ROWS),
    ),
    Case(
        "unknown rule",
        ["--source", "{S}", "baseline", "--rule", "coin_flip", "--output", "{W}/out.json"],
        "from rlvrambench_hf.transfer import reference_scores\nreference_scores('coin_flip', source='{S}')",
        "UnknownConfigError",
        "coin_flip",
    ),
    # sources and release files
    Case(
        "source directory missing",
        ["--source", "{W}/nowhere", "configs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/nowhere')",
        "SourceError",
        "does not exist",
        output=None,
    ),
    Case(
        "source lacks the card",
        ["--source", "{W}", "configs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}')",
        "SourceError",
        "no dataset card",
        output=None,
    ),
    Case(
        "malformed card YAML",
        ["--source", "{W}/release", "show", "eligible_runs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/release')",
        "SourceError",
        "malformed YAML",
        malformed_card,
        output=None,
    ),
    Case(
        "schema drift: extra column",
        ["--source", "{W}/release", "show", "transfer_queries"],
        "from rlvrambench_hf import load_table\nload_table('transfer_queries', '{W}/release')",
        "SchemaError",
        "unexpected column(s) note",
        edit_release(
            "benchmark/queries.csv",
            lambda t: "\n".join(line + (",note" if i == 0 else ",x") for i, line in enumerate(t.splitlines())) + "\n",
        ),
        output=None,
    ),
    Case(
        "schema drift: missing column",
        ["--source", "{W}/release", "show", "transfer_queries"],
        "from rlvrambench_hf import load_table\nload_table('transfer_queries', '{W}/release')",
        "SchemaError",
        "missing column(s) target_case_id",
        edit_release(
            "benchmark/queries.csv", lambda t: "\n".join(line.rsplit(",", 1)[0] for line in t.splitlines()) + "\n"
        ),
        output=None,
    ),
    Case(
        "value outside its type",
        ["--source", "{W}/release", "show", "eligible_runs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/release')",
        "SchemaError",
        "is not a valid float64",
        edit_release("benchmark/runs.csv", lambda t: t.replace(",35730.0,", ",35.7 GB,", 1)),
        output=None,
    ),
    Case(
        "truncated last line",
        ["--source", "{W}/release", "show", "transfer_queries"],
        "from rlvrambench_hf import load_table\nload_table('transfer_queries', '{W}/release')",
        "SchemaError",
        "queries.csv: cannot be read as CSV",
        edit_release("benchmark/queries.csv", lambda t: t[: t.rstrip().rindex(",")]),
        output=None,
    ),
    Case(
        "manifest digest mismatch",
        ["--source", "{W}/release", "show", "eligible_runs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/release')",
        "IntegrityError",
        "benchmark/runs.csv does not match",
        flip_runs_byte,
        output=None,
    ),
    Case(
        "absolute manifest path",
        ["--source", "{W}/release", "show", "eligible_runs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/release')",
        "IntegrityError",
        "unsafe path '/etc/passwd'",
        manifest_entry("/etc/passwd"),
        output=None,
    ),
    Case(
        "manifest path with ..",
        ["--source", "{W}/release", "show", "eligible_runs"],
        "from rlvrambench_hf import load_table\nload_table('eligible_runs', '{W}/release')",
        "IntegrityError",
        "unsafe path '../secret.csv'",
        manifest_entry("../secret.csv"),
        output=None,
    ),
    # the Hub
    Case(
        "revision that does not exist",
        ["--revision", "v9.9.9", "show", "eligible_runs"],
        f"from rlvrambench_hf import load_table\nload_table('eligible_runs', '{REPO_ID}', 'v9.9.9')",
        "SourceError",
        "revision 'v9.9.9' does not exist",
        output=None,
        hub=True,
    ),
    Case(
        "offline with nothing cached",
        ["--revision", "main", "show", "eligible_runs"],
        f"from rlvrambench_hf import load_table\nload_table('eligible_runs', '{REPO_ID}', 'main')",
        "SourceError",
        "not cached and HF_HUB_OFFLINE is set",
        output=None,
        env={"HF_HUB_OFFLINE": "1"},
        hub=True,
    ),
    # admission
    Case(
        "policy module missing",
        ["--source", "{S}", "replay", "--policy", "no_such_module:Policy", "--output", "{W}/out.json"],
        "from rlvrambench_hf.admission import load_policy\nload_policy('no_such_module:Policy')",
        "InputError",
        "no_such_module",
    ),
    Case(
        "policy attribute missing",
        ["--source", "{S}", "replay", "--policy", "bad_policies:Nope", "--output", "{W}/out.json"],
        "from rlvrambench_hf.admission import load_policy\nload_policy('bad_policies:Nope')",
        "InputError",
        "Nope",
        policy_module,
    ),
    Case(
        "policy raises",
        ["--source", "{S}", "replay", "--policy", "bad_policies:Raises", "--output", "{W}/out.json"],
        "from rlvrambench_hf.admission import replay_report\n"
        "replay_report('{S}', rules=(), policy='bad_policies:Raises')",
        "InputError",
        "policy exploded",
        policy_module,
    ),
    Case(
        "policy returns an invalid action",
        ["--source", "{S}", "replay", "--policy", "bad_policies:Invalid", "--output", "{W}/out.json"],
        "from rlvrambench_hf.admission import replay_report\n"
        "replay_report('{S}', rules=(), policy='bad_policies:Invalid')",
        "InputError",
        "launch everything",
        policy_module,
    ),
    Case(
        "attempts with a forbidden retry",
        ["--source", "{S}", "replay", "--attempts", "{W}/attempts.json", "--output", "{W}/out.json"],
        "from rlvrambench_hf.admission import replay_report\nreplay_report('{S}', attempts_path='{W}/attempts.json')",
        "InputError",
        "-retry",
        forbidden_retry,
    ),
    # follow-up predictions
    Case(
        "follow-up unknown id",
        [
            "--source",
            "{S}",
            "followup",
            "score",
            "--study",
            "larger_model",
            "--predictions",
            "{W}/p.csv",
            "--output",
            "{W}/out.json",
        ],
        "from rlvrambench_hf.followup import score_study\nscore_study('larger_model', '{S}', predictions='{W}/p.csv')",
        "InputError",
        "cfg-unknown",
        predictions(["cfg-unknown,within_margin"], header="configuration_id,predicted_state"),
    ),
    # releases
    Case(
        "release verify with one byte changed",
        ["release", "verify", "{W}/rel"],
        "from rlvrambench_hf.release.verify import check_release\ncheck_release('{W}/rel')",
        "IntegrityError",
        "evaluation-00000-of-00001.parquet",
        built_release_with_a_changed_byte,
        output=None,
    ),
    Case(
        "push without a token",
        ["release", "push", "{W}/rel", "--repo-id", "someone/RLVRAMBench"],
        "from rlvrambench_hf.release.push import push_release\npush_release('{W}/rel', 'someone/RLVRAMBench')",
        "InputError",
        "no Hugging Face token",
        built_release,
        output=None,
    ),
]


def snapshot_of(folder: Path) -> dict[str, tuple[int, int]]:
    return (
        {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}
        if folder.exists()
        else {}
    )


def run(args: list[str], work: Path, case: Case, hf_home: Path) -> subprocess.CompletedProcess:
    env = cli_env(
        HF_HOME=str(hf_home), HF_TOKEN=None, HF_HUB_DISABLE_IMPLICIT_TOKEN="1", PYTHONPATH=str(work), **case.env
    )
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=work, timeout=300)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_refused_cleanly_by_cli_and_api(case, tmp_path, request):
    if case.hub:
        request.getfixturevalue("hub")
    work = tmp_path / "work"
    work.mkdir()
    if case.setup:
        case.setup(work)
    fill = lambda text: text.replace("{W}", str(work)).replace("{S}", str(SNAPSHOT))  # noqa: E731
    watched = [work / "release", work / "rel"]
    before = {str(w): snapshot_of(w) for w in watched}
    error_name = case.error if isinstance(case.error, str) else case.error.__name__

    for face in ("cli", "api"):
        hf_home = tmp_path / f"hf-{face}"
        hf_home.mkdir()
        started = time.monotonic()
        if face == "cli":
            result = run([sys.executable, "-m", "rlvrambench_hf", *map(fill, case.cli)], work, case, hf_home)
            assert result.returncode == 2, (result.stdout, result.stderr)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, result.stderr
            assert "Traceback" not in result.stderr and case.message in lines[0], lines[0]
        else:
            result = run([sys.executable, "-c", API_RUNNER, fill(case.api)], work, case, hf_home)
            assert result.returncode == 0, result.stderr
            outcome = json.loads(result.stdout.strip().splitlines()[-1])
            assert outcome["type"] is not None, f"the API accepted the bad input ({case.name})"
            assert error_name in outcome["type"] and "RLVRAMBenchError" in outcome["type"], outcome
            assert "\n" not in outcome["message"] and case.message in outcome["message"], outcome["message"]
        assert time.monotonic() - started < 120
        if case.output:
            assert not Path(fill(case.output)).exists()
        assert not [p for p in hf_home.rglob("*") if p.is_file()], f"{face} wrote to the cache"
        assert not list(work.glob(".*.tmp")), "a temporary output file was left behind"
    assert {str(w): snapshot_of(w) for w in watched} == before


def test_the_matrix_has_at_least_thirty_cases():
    assert len(CASES) >= 30 and len({c.name for c in CASES}) == len(CASES)


def test_tolerated_variants_score_like_the_clean_file(tmp_path):
    """Documented tolerance: UTF-8 BOM, CRLF line ends and spaces around cells are accepted."""
    from rlvrambench_hf.transfer import read_predictions, score_lists

    clean = tmp_path / "clean.csv"
    predictions(ROWS)(tmp_path)
    (tmp_path / "p.csv").rename(clean)
    expected = score_lists(*read_predictions(clean), source=SNAPSHOT)
    variants = {
        "bom.csv": ("\ufeffquery_id,predicted_state\n" + "\n".join(ROWS) + "\n").encode("utf-8"),
        "crlf.csv": ("query_id,predicted_state\r\n" + "\r\n".join(ROWS) + "\r\n").encode(),
        "spaces.csv": (
            "query_id , predicted_state\n" + "\n".join(" " + r.replace(",", " ,\t") for r in ROWS) + "\n"
        ).encode(),
    }
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        assert score_lists(*read_predictions(tmp_path / name), source=SNAPSHOT) == expected, name
