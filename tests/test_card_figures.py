"""The eight figures of the dataset card and its guides that no command printed before, each read from the output of
the command a user would look in and compared with the card's number (issue 28).

The card (README.md), its data dictionary and the two follow-up guides state them; the numbers below are theirs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvrambench_hf.cli import main


def run(capsys: pytest.CaptureFixture[str], snapshot: Path, *args: str) -> str:
    assert main(["--source", str(snapshot), *args]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def verify_lines(snapshot: Path) -> dict[str, str]:
    """``verify``'s figure rows: subject -> status and text."""
    from rlvrambench_hf.data.sources.resolve import open_source
    from rlvrambench_hf.data.verify import verify_source

    return {c.subject: f"{c.status} {c.detail}" for c in verify_source(open_source(snapshot)) if c.kind == "figure"}


def test_verify_prints_the_figures_in_the_cards_wording(capsys, snapshot: Path) -> None:
    out = run(capsys, snapshot, "verify")
    figures = [line for line in out.splitlines() if line.startswith("figure ")]
    assert len(figures) == 6 and all(" passed " in line for line in figures)


def test_the_588_process_corpus_and_24_controls(verify_lines: dict[str, str]) -> None:
    # "The 612 eligible runs comprise the paper's original 588-process corpus and 24 completed batch-by-logging
    # controls."
    expected = "passed 612 eligible processes: the original 588-process corpus and 24 completed batch-by-logging "
    expected += "controls"
    assert verify_lines["eligible processes"] == expected


def test_657_original_and_26_control_attempts(verify_lines: dict[str, str]) -> None:
    # "The 683 attempts comprise 657 original attempts and 26 started controls."
    expected = "passed 683 recorded attempts: 657 original attempts and 26 started controls"
    assert verify_lines["recorded attempts"] == expected


def test_16_historical_source_screens_counted_separately(verify_lines: dict[str, str]) -> None:
    # "Sixteen historical source screens are counted separately in the archive."
    assert verify_lines["historical source screens"].startswith(
        "passed 16 historical source screens counted separately, not added to these totals"
    )


def test_12_single_process_not_repeated_settings(verify_lines: dict[str, str]) -> None:
    # "`not_repeated` appears only for the twelve single-process sampling calibration settings"
    line = verify_lines["not_repeated"]
    assert line.startswith("passed 12 single-process calibration settings labelled not_repeated")
    assert "(study sampling_calibration); 0 of them in the transfer tasks" in line


def test_the_100_step_extension(verify_lines: dict[str, str]) -> None:
    # "twelve attempts complete out of fourteen, whereas all twelve selected eligible outcomes complete within
    # margin. Two excluded attempts stop after 63 and 77 steps"
    assert verify_lines["100-step extension"] == (
        "passed original 100-step extension: 12 of 14 attempts complete; 2 excluded attempts stop after steps 63 "
        "and 77; 12 of 12 eligible outcomes within_margin"
    )


def test_the_estimation_pool_72_boundary_and_18_four_gpu(verify_lines: dict[str, str]) -> None:
    from rlvrambench_hf.data.verify import POOL_STUDIES
    from rlvrambench_hf.estimation.folds import POOL_STUDIES as ESTIMATION_POOL

    # "The historical fitting pool has 90 configurations: 72 boundary settings and 18 four-GPU settings. The three
    # retrospective tests each withhold every configuration from one model family, giving 60 fitting and 30 test"
    expected = (
        "estimation pool: 90 historical configurations, 72 boundary and 18 four-GPU settings; each of the 3 folds "
        "fits on 60 and tests 30"
    )
    assert verify_lines["estimation pool"] == "passed " + expected
    assert POOL_STUDIES == ESTIMATION_POOL


def test_estimate_retrospective_prints_the_pool(capsys, snapshot: Path) -> None:
    out = run(capsys, snapshot, "estimate", "retrospective")
    assert "estimation pool: 90 historical configurations, 72 boundary and 18 four-GPU settings" in out


def test_replay_says_screens_and_evaluations_agree(capsys, snapshot: Path, tmp_path: Path) -> None:
    # "The twelve evaluation candidates contain six within-margin configurations, two above-margin configurations,
    # and four memory failures. Screens and separate evaluation repetitions agree in this panel."
    out = run(capsys, snapshot, "replay", "--output", str(tmp_path / "scores.json"))
    assert (
        "12 evaluation candidates: 6 within_margin, 2 above_margin, 4 memory_failure. Screens and separate "
        "evaluation repetitions agree in this panel" in out
    )
    assert json.loads((tmp_path / "scores.json").read_text())["screen_agreement"]["agree"] == 12


def test_followup_names_host_memory_failures_and_the_missing_preflight(capsys, snapshot: Path) -> None:
    # "Thirteen slots remain unresolved, including seven host-memory failures."
    larger = run(capsys, snapshot, "followup", "score", "--study", "larger_model")
    assert "13 unresolved slots (failure kind host_memory_failure: 7," in larger
    assert "host memory: 7 unresolved slots are host-memory failures" in larger
    # "The separate device preflight used 0.08 GPU-hours." -- not in this copy: said once, naming the file
    expanded = run(capsys, snapshot, "followup", "score", "--study", "expanded_host")
    missing = "device preflight (0.08 GPU-hours on the card): not in this copy of the release, "
    assert expanded.count(missing + "benchmark/host_capacity/execution_history.json is absent") == 1
    assert expanded.count("preflight") == 1 and "preflight" not in larger


#: The metric card's table of the reference rules on the GPU-count track, and evaluate's columns for its figures.
CARD_COLUMNS = {
    "Correct": "correct",
    "Within-margin approved": "approved_wm",
    "Memory failures approved": "approved_mf",
    "Above-margin approved": "approved_am",
}


def test_evaluate_prints_the_cards_approvals_under_the_cards_names(capsys, snapshot: Path, tmp_path: Path) -> None:
    # The metric card: "Reference rules on the GPU-count track (36 queries)", | Rule | Correct | Within-margin
    # approved | Memory failures approved | Above-margin approved |. evaluate's table once printed all approvals
    # (26 for source_label) where the card reports its 20 within-margin approvals (issue 39).
    from hubserver import REPO_ROOT

    card = (REPO_ROOT / "metrics" / "rlvrambench" / "README.md").read_text(encoding="utf-8").splitlines()
    header = next(line for line in card if line.startswith("| Rule |"))
    names = [cell.strip() for cell in header.strip("|").split("|")][1:]
    assert names == list(CARD_COLUMNS)
    for rule in ("source_label", "always_approve", "always_reject"):
        row = next(line for line in card if line.startswith(f"| `{rule}` |"))
        figures = [int(cell) for cell in row.strip().strip("|").split("|")[1:]]
        predictions = tmp_path / f"{rule}.csv"
        run(capsys, snapshot, "baseline", "--rule", rule, "--track", "gpu_count_transfer", "--output", str(predictions))
        out = run(capsys, snapshot, "evaluate", "--predictions", str(predictions), "--track", "gpu_count_transfer")
        table = out.splitlines()
        columns = table[0].split()
        track = dict(zip(columns, next(line for line in table if line.startswith("gpu_count_transfer")).split()))
        assert track["queries"] == "36"
        assert [int(track[CARD_COLUMNS[n]]) for n in names] == figures, (rule, track)
