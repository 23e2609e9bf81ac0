"""The pure cores of intervals, paired readings and the flat view, on small inline data."""

from __future__ import annotations

import numpy as np
import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.scoring.compare import Design, Side, compare_scope
from rlvrambench_hf.scoring.flat import flat_scores
from rlvrambench_hf.scoring.intervals import (
    BOOTSTRAP,
    MIN_UNITS,
    RANGE,
    IntervalOptions,
    interval_options,
    percentile,
    resample_weights,
    unit_block,
)

pytestmark = pytest.mark.unit


def test_resample_weights_draw_each_unit_count_with_replacement_reproducibly():
    options = IntervalOptions(resamples=500, seed=3)
    weights = resample_weights(25, options)
    assert weights.shape == (500, 25) and (weights.sum(axis=1) == 25).all()
    assert (weights == resample_weights(25, options)).all()
    assert not (weights == resample_weights(25, IntervalOptions(resamples=500, seed=4))).all()
    assert not (weights == resample_weights(25, options, stream=1)).all()
    # every unit is drawn about as often as any other
    assert abs(weights.mean() - 1) < 0.02 and weights.max() > 2


def test_percentile_ends_are_resampled_values_and_undefined_draws_are_counted():
    values = [*range(100), None, None]
    low, high, undefined = percentile(values, 0.9)
    assert (low, high, undefined) == (4, 94, 2)
    assert isinstance(low, int)
    assert percentile([0.5, 0.25, None], 0.5)[:2] == (0.25, 0.5)
    assert percentile([None, None], 0.95) == (None, None, 2)


def test_too_few_units_give_the_exact_range_and_enough_units_a_bootstrap():
    values = np.arange(MIN_UNITS, dtype=float)

    def mean(weights: np.ndarray) -> dict:
        return {"mean": float(weights @ values[: len(weights)] / weights.sum())}

    few = unit_block(mean, {"mean": 1.5}, ["mean"], unit="case", units=4, options=IntervalOptions())
    assert few["method"] == RANGE and few["units"] == 4
    assert few["metrics"]["mean"] == {"low": 0.0, "high": 3.0}
    assert few["note"].startswith("4 cases: too few for a bootstrap interval (at least 20)")
    many = unit_block(
        mean,
        mean(np.ones(MIN_UNITS, dtype=np.int64)),
        ["mean"],
        unit="case",
        units=MIN_UNITS,
        options=IntervalOptions(resamples=400),
    )
    assert many["method"] == BOOTSTRAP
    assert 6 < many["metrics"]["mean"]["low"] < 9.5 < many["metrics"]["mean"]["high"] < 13


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"level": 1.5}, "interval level 1.5 must be a number between 0 and 1"),
        ({"resamples": 10}, "interval resamples 10 must be an integer from 100 to 100000"),
        ({"seed": -1}, "interval seed -1 must be a non-negative integer"),
        ({"levels": 0.9}, "intervals takes level, resamples and seed, not 'levels'"),
        ("yes", "intervals must be True, False, None or a mapping"),
    ],
)
def test_bad_interval_options_are_one_line(value, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        interval_options(value)


def test_interval_options_accept_true_false_and_mappings():
    assert interval_options(None) is None and interval_options(False) is None
    assert interval_options(True) == IntervalOptions()
    assert interval_options({"seed": 5}) == IntervalOptions(seed=5)


def test_a_paired_reading_names_both_values_and_the_interval():
    a = Side("mine", {"approved_memory_failure": 1}, [{"approved_memory_failure": v} for v in (0, 1, 2, 1)])
    b = Side("theirs", {"approved_memory_failure": 4}, [{"approved_memory_failure": v} for v in (3, 5, 6, 4)])
    block = compare_scope(a, b, Design("case", 30, BOOTSTRAP, 0.5), names=["approved_memory_failure"])
    entry = block["metrics"]["approved_memory_failure"]
    assert (entry["a"], entry["b"], entry["difference"]) == (1, 4, -3)
    assert (entry["low"], entry["high"]) == (-4, -3)
    assert entry["reading"] == "mine approves 3 fewer memory failures than theirs (1 against 4), 50% interval 3–4 fewer"


def test_a_reading_says_when_the_interval_includes_no_difference_and_when_a_rate_is_undefined():
    a = Side(
        "a",
        {"within_margin_recall": 0.5, "within_margin_approval_precision": None},
        [{"within_margin_recall": v, "within_margin_approval_precision": None} for v in (0.4, 0.6)],
    )
    b = Side(
        "b",
        {"within_margin_recall": 0.45, "within_margin_approval_precision": 1.0},
        [{"within_margin_recall": v, "within_margin_approval_precision": 1.0} for v in (0.5, 0.5)],
    )
    names = ["within_margin_recall", "within_margin_approval_precision"]
    block = compare_scope(a, b, Design("case", 25, BOOTSTRAP, 0.95), names=names)["metrics"]
    assert block["within_margin_recall"]["reading"] == (
        "a's within-margin recall is 0.05 higher than b's (0.5 against 0.45), 95% interval from 0.1 lower to 0.1 "
        "higher (the interval includes no difference)"
    )
    assert block["within_margin_approval_precision"]["reading"].endswith(
        "undefined for a (zero denominator), no difference to state"
    )


def test_the_flat_view_keeps_numbers_drops_levels_and_counts_nulls():
    nested = {
        "protocol_version": "1.1",
        "overall": {"within_margin_recall": 0.5, "approved": 3, "flag": True, "ids": ["x"]},
        "per_track": {"gpu_count_transfer": {"approved_memory_failure": 2, "within_margin_approval_precision": None}},
        "folds": {"phi4": {"peaks": [1.5, None]}},
    }
    flat = flat_scores(nested)
    assert flat == {
        "overall/within_margin_recall": 0.5,
        "overall/approved": 3,
        "gpu_count_transfer/approved_memory_failure": 2,
        "folds/phi4/peaks/0": 1.5,
    }
    assert flat.left_out == ("gpu_count_transfer/within_margin_approval_precision", "folds/phi4/peaks/1")
    assert flat.nulls == 2
