"""Timing of intervals: each scorer with and without ``intervals`` (2,000 resamples), in process.

Prints medians (seconds) and the ratio with/without; it asserts nothing. The source is the release snapshot
($RLVRAMBENCH_SOURCE, else ../shared/rlvrambench/hub).

    .venv/bin/python bench/bench_intervals.py [--repeat 5]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from timing import SNAPSHOT, median_seconds


def scorers() -> dict[str, Callable[[object], object]]:
    """Each scorer as a function of its ``intervals`` argument (inputs loaded once, outside the timing)."""
    from rlvrambench_hf import admission, transfer
    from rlvrambench_hf.estimation import run_retrospective
    from rlvrambench_hf.followup import score_study

    tables = transfer.load_transfer_tables(SNAPSHOT)
    key = transfer.scoring_key(tables["queries"], tables["outcomes"])
    rows = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    ids, states = rows.column("query_id"), rows.column("predicted_state")
    return {
        "transfer score (400 queries, 94 targets)": lambda i: transfer.score_predictions(key, ids, states, intervals=i),
        "admission replay (12 rows, 4 cases)": lambda i: admission.replay_report(SNAPSHOT, intervals=i),
        "follow-up larger_model": lambda i: score_study("larger_model", SNAPSHOT, intervals=i),
        "estimate retrospective (3 folds x 3 methods)": lambda i: run_retrospective(SNAPSHOT, intervals=i),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'scorer':46}  {'without':>8}  {'with':>8}  ratio")
    for name, run in scorers().items():
        run(None)  # warm the imports and caches
        without = median_seconds(lambda run=run: run(None), args.repeat)
        with_intervals = median_seconds(lambda run=run: run(True), args.repeat)
        print(f"{name:46}  {without:8.3f}  {with_intervals:8.3f}  {with_intervals / without:5.1f}x")
    from rlvrambench_hf import transfer

    tables = transfer.load_transfer_tables(SNAPSHOT)
    rows = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    ids, states = rows.column("query_id").to_pylist(), rows.column("predicted_state").to_pylist()
    pair = {"source_label": states, "always_approve": ["within_margin"] * len(ids)}
    paired = median_seconds(lambda: transfer.compare_lists(ids, pair, source=SNAPSHOT), args.repeat)
    print(f"{'transfer compare (paired, overall and 4 tracks)':46}  {'':8}  {paired:8.3f}")


if __name__ == "__main__":
    main()
