"""Follow-up scoring on the real larger-model and expanded-host panels, the CLI, and predictions validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.followup import (
    ALWAYS_FAILURE,
    FROZEN_METHODS,
    USER_METHOD,
    MethodPredictions,
    frozen_predictions,
    peak_metrics,
    read_predictions,
    score_panel,
    score_study,
    study_rows,
)
from rlvrambench_hf.transfer import label_metrics

from conftest import cli_env, invoke, run_cli

TOP_LEVEL = [
    "planned_configurations",
    "resolved_configurations",
    "unresolved_configurations",
    "resolved_ids",
    "unresolved_ids",
    "full_panel_coverage",
    "metric_scope",
    "approvals",
    "resolved_subset_metrics",
]
APPROVAL_KEYS = {
    "full_panel_approved_configurations",
    "full_panel_approved_ids",
    "scored_approved_configurations",
    "unscored_approved_configurations",
    "unscored_approved_ids",
    "unscored_approvals_with_known_failure",
    "unscored_approvals_with_known_margin_exceedance",
}
PEAK_KEYS = {
    "completed_peak_mae_mib",
    "completed_peak_mean_signed_error_mib",
    "completed_peak_worst_underestimate_mib",
}
# the fields the published evaluation files (and the estimator comparison's fold scores) add to the label metrics
COUNT_KEYS = {
    "queries",
    "distinct_target_configurations",
    "startup_guard_changed_states",
    "completed_peak_prediction_coverage",
}
LARGER_UNRESOLVED = [
    "est-qwen25-7b-code_heavy_tail-c2-4gpu",
    "est-qwen25-7b-gsm8k-c2-4gpu",
    "est-qwen25-7b-math-c2-2gpu",
    "est-qwen25-7b-math-c2-4gpu",
    "est-qwen25-7b-math-c3-2gpu",
    "est-qwen25-7b-math-c3-4gpu",
]
FOUR_GPU_C2 = ["code_heavy_tail-c2-4gpu", "gsm8k-c2-4gpu", "math-c2-4gpu"]


@pytest.fixture(scope="module")
def larger(snapshot: Path) -> dict:
    return score_study("larger_model", snapshot)


@pytest.fixture(scope="module")
def expanded(snapshot: Path) -> dict:
    return score_study("expanded_host", snapshot)


def check_larger_model_figures(scores: dict) -> None:
    assert list(scores)[: len(TOP_LEVEL)] == TOP_LEVEL
    assert scores["planned_configurations"] == 12
    assert scores["resolved_configurations"] == 6 and scores["unresolved_configurations"] == 6
    assert scores["full_panel_coverage"] == 0.5
    assert scores["unresolved_ids"] == LARGER_UNRESOLVED
    donor, regression, logistic = (scores["approvals"][m] for m in FROZEN_METHODS)
    assert donor["full_panel_approved_configurations"] == 12
    assert donor["scored_approved_configurations"] == 6 and donor["unscored_approved_configurations"] == 6
    assert donor["unscored_approved_ids"] == LARGER_UNRESOLVED
    assert donor["unscored_approvals_with_known_failure"] == 3
    assert donor["unscored_approvals_with_known_margin_exceedance"] == 0
    assert scores["resolved_subset_metrics"]["donor_copy"]["approved_memory_failure"] == 6
    assert regression["full_panel_approved_configurations"] == 3
    assert regression["scored_approved_configurations"] == 0 and regression["unscored_approved_configurations"] == 3
    assert regression["unscored_approved_ids"] == [f"est-qwen25-7b-{s}" for s in FOUR_GPU_C2]
    assert logistic["full_panel_approved_configurations"] == 0 and logistic["full_panel_approved_ids"] == []


def test_larger_model_figures(larger: dict) -> None:
    check_larger_model_figures(larger)
    for method in FROZEN_METHODS:
        assert set(larger["approvals"][method]) == APPROVAL_KEYS
        metrics = larger["resolved_subset_metrics"][method]
        # all six resolved targets are memory failures: no within-margin target, so recall is null, not 0
        assert metrics["target_memory_failure"] == 6 and metrics["target_within_margin"] == 0
        assert metrics["within_margin_recall"] is None
        # no resolved target has a completed peak: every peak error is null, and the coverage count is 0
        assert {k: metrics[k] for k in PEAK_KEYS} == dict.fromkeys(PEAK_KEYS)
        assert metrics["completed_peak_prediction_coverage"] == 0
        assert (metrics["queries"], metrics["distinct_target_configurations"]) == (6, 6)
        assert metrics["startup_guard_changed_states"] == 0
    donor = larger["resolved_subset_metrics"]["donor_copy"]
    assert donor["correct_three_state"] == 0 and donor["approved"] == 6
    assert donor["within_margin_approval_precision"] == 0.0
    for fitted in ("component_regression", "logistic"):
        assert larger["resolved_subset_metrics"][fitted]["correct_three_state"] == 6
        assert larger["resolved_subset_metrics"][fitted]["within_margin_approval_precision"] is None


def test_resolved_metrics_are_the_transfer_label_metrics(snapshot: Path, larger: dict) -> None:
    rows = [r for r in study_rows("larger_model", snapshot) if r["observed_state"] != "unresolved"]
    for method in FROZEN_METHODS:
        expected = label_metrics([r[f"{method}_predicted_state"] for r in rows], [r["observed_state"] for r in rows])
        metrics = larger["resolved_subset_metrics"][method]
        assert set(metrics) == set(expected) | PEAK_KEYS | COUNT_KEYS
        assert {k: metrics[k] for k in expected} == expected


@pytest.mark.parametrize("study", ["larger_model", "expanded_host"])
def test_unscored_approvals_agree_with_the_release_flags(snapshot: Path, study: str) -> None:
    rows = study_rows(study, snapshot)
    scores = score_study(study, snapshot)
    for method in FROZEN_METHODS:
        flagged = sorted(r["configuration_id"] for r in rows if r[f"{method}_unscored_approval"])
        assert scores["approvals"][method]["unscored_approved_ids"] == flagged


def test_expanded_host_figures(expanded: dict) -> None:
    # no validated completion; the 2-GPU settings are memory failures, the 4-GPU labels unresolved
    assert expanded["planned_configurations"] == 6
    assert expanded["resolved_configurations"] == 3 and expanded["full_panel_coverage"] == 0.5
    assert expanded["resolved_ids"] == [f"host-qwen25-7b-{w}-c2-2gpu" for w in ("code_heavy_tail", "gsm8k", "math")]
    assert expanded["unresolved_ids"] == [f"host-qwen25-7b-{s}" for s in FOUR_GPU_C2]
    donor, regression, logistic = (expanded["approvals"][m] for m in FROZEN_METHODS)
    assert (
        donor["full_panel_approved_configurations"],
        donor["scored_approved_configurations"],
        donor["unscored_approved_configurations"],
    ) == (6, 3, 3)
    assert donor["unscored_approvals_with_known_failure"] == 0
    assert (regression["scored_approved_configurations"], regression["unscored_approved_configurations"]) == (0, 3)
    assert logistic["full_panel_approved_configurations"] == 0
    metrics = expanded["resolved_subset_metrics"]
    assert metrics["donor_copy"]["approved_memory_failure"] == 3
    assert metrics["donor_copy"]["correct_three_state"] == 0
    assert metrics["component_regression"]["correct_three_state"] == 3
    assert metrics["logistic"]["correct_three_state"] == 3
    for method in FROZEN_METHODS:
        assert metrics[method]["target_within_margin"] == 0 and metrics[method]["within_margin_recall"] is None
        assert metrics[method]["completed_peak_mae_mib"] is None
        assert metrics[method]["completed_peak_prediction_coverage"] == 0 and metrics[method]["queries"] == 3


def test_cli_reproduces_the_larger_model_figures(snapshot: Path, tmp_path: Path, larger: dict) -> None:
    output = tmp_path / "scores.json"
    result = invoke("--source", str(snapshot), "followup", "score", "--study", "larger_model", "--output", str(output))
    assert result.returncode == 0, result.stderr
    written = json.loads(output.read_text())
    check_larger_model_figures(written)
    assert written == json.loads(json.dumps(larger))
    assert "6 of 12 configurations resolved" in result.stdout
    donor_line = next(line for line in result.stdout.splitlines() if line.startswith("donor_copy "))
    assert donor_line.split()[1:5] == ["12", "6", "6", "3"]


def test_the_seven_host_memory_failures_are_named_as_such(larger: dict, expanded: dict) -> None:
    from rlvrambench_hf.cli.followup import render_scores

    # the card: "Thirteen slots remain unresolved, including seven host-memory failures"
    slots = larger["slots"]
    assert slots["unresolved_processes"] == 13 and slots["host_memory_failures"] == 7
    assert slots["unresolved_failure_kinds"]["host_memory_failure"] == 7
    assert "vllm_executor_failure" not in slots["unresolved_failure_kinds"]
    assert slots["host_memory_failures_logged_as"] == {"vllm_executor_failure": 7}
    text = render_scores("larger_model", larger)
    assert "13 unresolved slots (failure kind host_memory_failure: 7," in text
    assert "host memory: 7 unresolved slots are host-memory failures" in text
    # the follow-up guide: "No scheduler host OOM was recorded"
    assert expanded["slots"]["host_memory_failures"] == 0 and "host memory:" not in render_scores("x", expanded)


def test_the_missing_preflight_is_said_once_naming_the_file(larger: dict, expanded: dict) -> None:
    from rlvrambench_hf.cli.followup import render_scores

    preflight = expanded["preflight"]
    assert preflight["card_gpu_hours"] == 0.08 and preflight["file_present"] is False
    text = render_scores("expanded_host", expanded)
    line = "device preflight (0.08 GPU-hours on the card): not in this copy of the release, "
    assert text.count(line + "benchmark/host_capacity/execution_history.json is absent") == 1
    assert "preflight" not in larger and "preflight" not in render_scores("larger_model", larger)


def write(tmp_path: Path, text: str, name: str = "predictions.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def larger_ids(snapshot: Path) -> list[str]:
    return [r["configuration_id"] for r in study_rows("larger_model", snapshot)]


def test_user_predictions_are_scored_beside_the_frozen_methods(snapshot: Path, tmp_path: Path) -> None:
    ids = larger_ids(snapshot)
    lines = ["\ufeffconfiguration_id , predicted_state,predicted_peak_mib"]
    lines += [
        f" {cid}\t,{'within_margin' if '4gpu' in cid else 'memory_failure'},{'' if i % 2 else 40000}"
        for i, cid in enumerate(ids)
    ]
    path = write(tmp_path, "\n".join(lines) + "\n\n")
    scores = score_study("larger_model", snapshot, predictions=path)
    user = scores["approvals"][USER_METHOD]
    # 4-GPU approvals: c2 (3 unresolved) and c3 (gsm8k, code resolved failures; math unresolved, known failure)
    assert user["full_panel_approved_configurations"] == 6
    assert user["scored_approved_configurations"] == 2 and user["unscored_approved_configurations"] == 4
    assert user["unscored_approvals_with_known_failure"] == 1
    assert scores["resolved_subset_metrics"][USER_METHOD]["approved_memory_failure"] == 2
    assert scores["resolved_subset_metrics"][USER_METHOD]["correct_three_state"] == 4
    assert list(scores["approvals"]) == [*FROZEN_METHODS, ALWAYS_FAILURE, USER_METHOD]


def test_cli_user_predictions(snapshot: Path, tmp_path: Path) -> None:
    ids = larger_ids(snapshot)
    path = write(tmp_path, "configuration_id,predicted_state\n" + "".join(f"{c},within_margin\n" for c in ids))
    result = invoke(
        "--source", str(snapshot), "followup", "score", "--study", "larger_model", "--predictions", str(path)
    )
    assert result.returncode == 0, result.stderr
    user_line = next(line for line in result.stdout.splitlines() if line.startswith("user "))
    assert user_line.split()[1:5] == ["12", "6", "6", "3"]


def _bad_cases(ids: list[str]) -> dict[str, tuple[str, str]]:
    header = "configuration_id,predicted_state\n"
    rows = [f"{c},memory_failure\n" for c in ids]
    return {
        "empty": ("", "empty"),
        "header only": (header, "has a header but no prediction rows"),
        "missing column": ("configuration_id\n" + "".join(f"{c}\n" for c in ids), "; missing predicted_state"),
        "extra column": (
            "configuration_id,predicted_state,confidence\n",
            "must have exactly the columns configuration_id,predicted_state[,predicted_peak_mib]",
        ),
        "missing ids": (header + "".join(rows[:-2]), "2 missing configuration id(s), e.g."),
        "unknown id": (
            header + "".join(rows) + "est-nope,memory_failure\n",
            "1 unknown configuration id(s), e.g. 'est-nope'",
        ),
        "duplicate": (header + "".join(rows) + rows[0], f"1 duplicate configuration id(s), e.g. {ids[0]!r}"),
        "bad label": (header + "".join(rows[:-1]) + f"{ids[-1]},Within_Margin\n", "1 invalid predicted_state"),
        "unresolved label": (header + "".join(rows[:-1]) + f"{ids[-1]},unresolved\n", "1 invalid predicted_state"),
        "bad peak": (
            "configuration_id,predicted_state,predicted_peak_mib\n"
            + "".join(f"{c},memory_failure,{'-5' if i == 0 else '1e3'}\n" for i, c in enumerate(ids)),
            "1 invalid predicted_peak_mib",
        ),
        "short row": (header + "".join(rows[:-1]) + f"{ids[-1]}\n", "has 1 cell where the header has 2"),
        "empty id": (header + "".join(rows) + ",memory_failure\n", "1 row(s) have an empty configuration_id"),
    }


@pytest.mark.parametrize("case", list(_bad_cases(["x"])))
def test_bad_predictions_are_one_line_errors(snapshot: Path, tmp_path: Path, case: str) -> None:
    text, message = _bad_cases(larger_ids(snapshot))[case]
    path = write(tmp_path, text)
    with pytest.raises(InputError) as error:
        read_predictions(path, larger_ids(snapshot))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_cli_bad_predictions_exit_2_without_output(snapshot: Path, tmp_path: Path) -> None:
    ids = larger_ids(snapshot)
    path = write(tmp_path, "configuration_id,predicted_state\n" + "".join(f"{c},memory_failure\n" for c in ids[:5]))
    output = tmp_path / "scores.json"
    result = invoke(
        "--source",
        str(snapshot),
        "followup",
        "score",
        "--study",
        "larger_model",
        "--predictions",
        str(path),
        "--output",
        str(output),
    )
    assert result.returncode == 2
    assert "7 missing configuration id(s)" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists() and list(tmp_path.iterdir()) == [path]


def test_cli_unknown_study_is_rejected(snapshot: Path) -> None:
    result = invoke("--source", str(snapshot), "followup", "score", "--study", "nope")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_peak_metrics_on_completed_targets() -> None:
    resolved = [
        {"configuration_id": "a", "completed_peak_mib": 30000.0},
        {"configuration_id": "b", "completed_peak_mib": 36000.0},
        {"configuration_id": "c", "completed_peak_mib": 20000.0},
        {"configuration_id": "d", "completed_peak_mib": None},  # a failure: never a numerical target
    ]
    metrics = peak_metrics(resolved, {"a": 31000.0, "b": 33000.0, "c": None, "d": 99999.0})
    assert metrics == {
        "completed_peak_prediction_coverage": 2,
        "completed_peak_mae_mib": 2000.0,
        "completed_peak_mean_signed_error_mib": -1000.0,
        "completed_peak_worst_underestimate_mib": 3000.0,
    }
    assert peak_metrics(resolved, {"a": 31000.0})["completed_peak_worst_underestimate_mib"] == 0.0
    assert peak_metrics(resolved[:1], {})["completed_peak_mae_mib"] is None
    assert peak_metrics(resolved[:1], {})["completed_peak_prediction_coverage"] == 0


def test_score_panel_requires_exact_method_coverage() -> None:
    rows = [
        {
            "configuration_id": "a",
            "observed_state": "within_margin",
            "known_memory_failure": False,
            "known_margin_exceedance": False,
            "completed_peak_mib": 30000.0,
        }
    ]
    with pytest.raises(InputError, match="1 missing configuration id"):
        score_panel(rows, {"m": MethodPredictions(states={})})
    scores = score_panel(rows, {"m": MethodPredictions(states={"a": "within_margin"}, peaks_mib={"a": 29000.0})})
    assert scores["resolved_subset_metrics"]["m"]["within_margin_recall"] == 1.0
    assert scores["resolved_subset_metrics"]["m"]["completed_peak_worst_underestimate_mib"] == 1000.0


def test_followup_score_through_the_hub(hub, tmp_path: Path, larger: dict) -> None:
    output = tmp_path / "scores.json"
    result = run_cli(
        "--source",
        "kobzaond/RLVRAMBench",
        "--revision",
        hub.first_commit,
        "followup",
        "score",
        "--study",
        "larger_model",
        "--output",
        str(output),
        env=cli_env(HF_HOME=str(tmp_path / "hf")),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(output.read_text()) == json.loads(json.dumps(larger))


def test_guard_changes_are_counted_for_the_guarded_frozen_method() -> None:
    """A regression label that its own peak does not imply was set by the startup guard."""
    rows = [
        {
            "configuration_id": cid,
            "observed_state": "memory_failure",
            "known_memory_failure": True,
            "known_margin_exceedance": False,
            "completed_peak_mib": None,
            **{f"{m}_predicted_state": "memory_failure" for m in FROZEN_METHODS},
            **{f"{m}_predicted_peak_mib": peak for m in FROZEN_METHODS},
        }
        for cid, peak in (("a", 30000.0), ("b", 45000.0), ("c", None))
    ]
    scores = score_panel(rows, frozen_predictions(rows))["resolved_subset_metrics"]
    assert scores["component_regression"]["startup_guard_changed_states"] == 1  # only "a": 30000 MiB is within
    assert scores["donor_copy"]["startup_guard_changed_states"] == 0
