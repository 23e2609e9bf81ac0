"""The memory model's grid of calibrations: its memos are not pickled (the advisor's store keeps the grid of its
record), and a grid read back computes them again, the same."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rlvrambench_hf.memory.select import Grid

pytestmark = pytest.mark.unit


def test_a_pickled_grid_leaves_its_memos_behind_and_computes_them_again_the_same(mini_context):
    grid = mini_context.memory.grid
    assert isinstance(grid, Grid)
    models = grid.models()
    form, scores = grid.select(models)
    assert grid._calibrations and grid._peaks and grid._selected
    copy = pickle.loads(pickle.dumps(grid, protocol=5))
    assert copy._calibrations == {} and copy._peaks == {} and copy._selected == {}
    assert grid._calibrations, "pickling emptied the original's memos"
    again, again_scores = copy.select(models)
    assert again == form and {f: s.as_dict() for f, s in again_scores.items()} == {
        f: s.as_dict() for f, s in scores.items()
    }
    assert np.array_equal(copy.peak(models, form), grid.peak(models, form), equal_nan=True)
    assert copy.calibration(models, form) == grid.calibration(models, form)
