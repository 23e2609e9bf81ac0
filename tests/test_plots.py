"""The data behind each figure (on the real release), the figures themselves, and ``rlvrambench plot``."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.reporting.figuredata import (
    BOUNDARY_LEVELS,
    CurvePoint,
    admission_curve,
    feasibility_matrix,
    stage_table,
)
from rlvrambench_hf.reporting.plots import (
    COVERAGE_STYLES,
    admission_figure,
    feasibility_figure,
    plot_admission,
    stages_figure,
)

from conftest import cli_env, invoke

APPROVE_ALL_POLICY = """
class ApproveAll:
    name = "approve_all_test"
    uses_donors = False

    def initial_decisions(self, task):
        return {c: "approve" for c in task.candidate_ids}

    def next_action(self, task, revealed):
        return "stop"
"""


@pytest.fixture(scope="module")
def configurations(snapshot: Path):
    return load_table("all_configurations", snapshot, decode=True)


@pytest.fixture(scope="module")
def stages(snapshot: Path):
    return load_table("stage_measurements", snapshot, decode=True)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


# --------------------------------------------------------------------------- feasibility heatmap


def test_heatmap_matrix_gives_every_boundary_label(configurations) -> None:
    matrix = feasibility_matrix(configurations)
    assert len(matrix.rows) == 12 and matrix.levels == BOUNDARY_LEVELS
    truth = {
        r["configuration_id"]: r for r in configurations.to_pylist() if r["study"] == "boundary" and r["gpu_count"] == 2
    }
    assert len(truth) == 72
    seen = {}
    for i, (model, workload) in enumerate(matrix.rows):
        for j, level in enumerate(matrix.levels):
            cid = matrix.configuration_ids[i][j]
            assert cid is not None, f"empty cell {model}/{workload}/{level}"
            row = truth[cid]
            assert (row["model_name"], row["workload_name"], row["configuration_level"]) == (model, workload, level)
            assert matrix.states[i][j] == row["observed_state"]
            assert matrix.peaks_mib[i][j] == row["max_completed_run_peak_mib"]
            seen[cid] = matrix.states[i][j]
    assert set(seen) == set(truth)
    assert Counter(seen.values()) == {"within_margin": 44, "above_margin": 8, "memory_failure": 20}
    assert {m for m, _ in matrix.rows} == {"Granite-3.3-2B-Instruct", "Phi-4-mini-instruct", "Qwen2.5-3B-Instruct"}
    assert matrix.cell("Qwen2.5-3B-Instruct", "GSM8K mathematics", "c4") == ("memory_failure", None)
    assert matrix.cell("Granite-3.3-2B-Instruct", "GSM8K mathematics", "c4") == ("above_margin", 40382.0)


def test_heatmap_annotates_peaks_in_gib_blank_for_failures(configurations) -> None:
    matrix = feasibility_matrix(configurations)
    fig = feasibility_figure(matrix)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    expected = [
        f"{p / 1024:.1f}"
        for states, peaks in zip(matrix.states, matrix.peaks_mib)
        for s, p in zip(states, peaks)
        if s != "memory_failure"
    ]
    assert sorted(texts) == sorted(expected) and len(texts) == 52
    assert all(float(t) > 0 for t in texts)
    assert "39.4" in texts  # Granite GSM8K c4: 40,382 MiB, above the limit
    assert ax.get_xlabel() and ax.get_ylabel()
    caption = " ".join(t.get_text() for t in fig.texts)
    assert "38,912 MiB" in caption and "GiB" in caption


# --------------------------------------------------------------------------- stage peaks


def test_stage_table_filters_and_orders(stages, configurations) -> None:
    everything = stage_table(stages, configurations)
    assert everything.num_rows == 3434
    order = list(dict.fromkeys(everything.column("stage").to_pylist()))
    assert order == [
        "initializing",
        "rollout",
        "reference_logprob",
        "actor_update",
        "weight_sync",
        "validation",
        "checkpoint",
        "idle",
        "unknown",
    ]
    boundary = stage_table(stages, configurations, study="boundary")
    boundary_ids = {r["configuration_id"] for r in configurations.to_pylist() if r["study"] == "boundary"}
    expected = sum(1 for c in stages.column("configuration_id").to_pylist() if c in boundary_ids)
    assert boundary.num_rows == expected > 0
    assert set(boundary.column("study").to_pylist()) == {"boundary"}
    cid = stages.column("configuration_id")[0].as_py()
    one = stage_table(stages, configurations, configuration_id=cid)
    assert set(one.column("configuration_id").to_pylist()) == {cid}
    assert one.num_rows == stages.column("configuration_id").to_pylist().count(cid)
    assert Counter(everything.column("coverage").to_pylist()) == {
        "completed_run": 3298,
        "terminal_stage_partial": 84,
        "stage_completion_not_certified": 52,
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"configuration_id": "cfg-nope"}, "unknown configuration id 'cfg-nope'"),
        ({"study": "nope"}, "unknown study 'nope'; studies: "),
        ({"configuration_id": "x", "study": "boundary"}, "either a configuration id or a study"),
    ],
)
def test_stage_table_rejects_bad_filters(stages, configurations, kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        stage_table(stages, configurations, **kwargs)


def test_stage_figure_draws_partial_records_distinctly(stages, configurations) -> None:
    fig = stages_figure(stage_table(stages, configurations))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "completed run (n=3298)" in labels and "failure, partial stage (n=84)" in labels
    assert any("38,912 MiB" in label for label in labels)
    markers = {h.get_marker() for h in ax.get_legend().legend_handles if h.get_marker() not in (None, "None")}
    assert len(markers) == len(COVERAGE_STYLES)
    assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] == [38.0]
    assert "GiB" in ax.get_ylabel() and ax.get_xlabel()


# --------------------------------------------------------------------------- admission curves


def test_admission_curve_points_match_the_published_recall(snapshot: Path) -> None:
    from rlvrambench_hf.admission import replay_report

    points = admission_curve(replay_report(snapshot))
    recall = {(p.rule, p.budget): p.macro_recall for p in points}
    assert [recall["source_copy", b] for b in range(4)] == [1.0, 1.0, 1.0, 1.0]
    assert [recall["headroom_guard", b] for b in range(4)] == [0.75, 1.0, 1.0, 1.0]
    assert [recall["direct_screen", b] for b in range(4)] == [0.0, 0.25, 0.75, 1.0]
    assert all(p.approved_memory_failure == 0 and p.approved_above_margin == 0 for p in points)


def test_admission_curve_rejects_a_malformed_summary() -> None:
    with pytest.raises(InputError, match="malformed"):
        admission_curve({"summary": [{"rule": "x"}]})


def test_user_policy_approval_errors_are_marked(snapshot: Path, tmp_path: Path) -> None:
    policy = tmp_path / "approve_all_policy.py"
    policy.write_text(APPROVE_ALL_POLICY)
    fig = plot_admission(snapshot, policy=f"{policy}:ApproveAll")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()][-1] == "approve_all_test"
    # approving all 12 candidates admits the 4 memory failures and 2 above-margin targets at every budget
    assert sorted({t.get_text() for t in ax.texts}) == ["MF 4 / AM 2"]
    assert "Screening budget" in ax.get_xlabel() and "(%)" in ax.get_ylabel()


def test_admission_figure_keeps_undefined_recall_off_the_plot() -> None:
    fig = admission_figure([CurvePoint("r", 0, None, 0, 0), CurvePoint("r", 1, 0.5, 1, 0)])
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_ydata()) == [50.0]
    assert [t.get_text() for t in fig.axes[0].texts] == ["MF 1 / AM 0"]


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize("args", [["feasibility"], ["stages"], ["stages", "--study", "boundary"], ["admission"]])
def test_plot_commands_write_pngs(snapshot: Path, tmp_path: Path, args: list[str]) -> None:
    output = tmp_path / "figure.png"
    result = invoke("--source", str(snapshot), "plot", *args, "--output", str(output))
    assert result.returncode == 0, result.stderr
    width, height = png_size(output)
    assert width > 300 and height > 200 and output.stat().st_size > 10_000


def test_plot_stages_bad_config_id_exits_2_without_output(snapshot: Path, tmp_path: Path) -> None:
    output = tmp_path / "stages.png"
    result = invoke("--source", str(snapshot), "plot", "stages", "--config-id", "cfg-nope", "--output", str(output))
    assert result.returncode == 2
    assert result.stderr.strip() == "rlvrambench: error: unknown configuration id 'cfg-nope'"
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_command_line_parsing_does_not_import_matplotlib() -> None:
    code = "import sys; from rlvrambench_hf.cli import build_parser; build_parser(); print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
