"""Users' estimators, pure parts: matching predictions by id, the evidence built through the registry's relations,
the context parameter, estimator specs with keyword arguments, the common-peak comparison and the fold spread."""

from __future__ import annotations

import pandas as pd
import pytest

from rlvrambench_hf.errors import InputError
from rlvrambench_hf.estimation.api import parse_estimator, typed_value
from rlvrambench_hf.estimation.evidence import build_evidence, link
from rlvrambench_hf.estimation.folds import THREE_FAMILIES, across_folds, common_peaks
from rlvrambench_hf.estimation.user import checked_predictions, takes_context

pytestmark = pytest.mark.unit

W, A, F = "within_margin", "above_margin", "memory_failure"
IDS = ["c1", "c2", "c3"]


def test_results_with_ids_are_matched_and_bare_sequences_stay_positional() -> None:
    frame = pd.DataFrame({"configuration_id": ["c3", "c1", "c2"], "predicted_state": [F, W, A]})
    assert checked_predictions(frame, IDS, "e")["predicted_state"] == [W, A, F]
    frame["predicted_peak_mib"] = [3.0, 1.0, None]
    assert checked_predictions(frame, IDS, "e")["predicted_peak_mib"] == [1.0, None, 3.0]
    series = pd.Series([F, W, A], index=["c3", "c1", "c2"])
    assert checked_predictions(series, IDS, "e")["predicted_state"] == [W, A, F]
    by_row = pd.Series([F, W, A], index=[2, 0, 1])  # the target view's own row labels, shuffled
    assert checked_predictions(by_row, IDS, "e")["predicted_state"] == [W, A, F]
    assert checked_predictions(pd.Series([F, W, A]), IDS, "e")["predicted_state"] == [F, W, A]
    assert checked_predictions([F, W, A], IDS, "e")["predicted_state"] == [F, W, A]


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (["c1", "c2", "c9"], "foreign 'c9'; missing 'c3'"),
        (["c1", "c1", "c3"], "duplicated 'c1'; missing 'c2'"),
        ([1, "c2", "c3"], "foreign 1; missing 'c1'"),
    ],
)
def test_ids_that_do_not_match_are_one_line_errors(ids: list, message: str) -> None:
    with pytest.raises(InputError) as caught:
        checked_predictions({"configuration_id": ids, "predicted_state": [W, W, W]}, IDS, "e")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("estimator e: predict's configuration_id values do not match the 3 targets")


def test_many_foreign_ids_are_summarised_in_one_bounded_line() -> None:
    ids = [f"cfg-{i}" for i in range(10_000)]
    given = {"configuration_id": [f"other-{i}" for i in range(10_000)], "predicted_state": [W] * 10_000}
    with pytest.raises(InputError) as caught:
        checked_predictions(given, ids, "e")
    assert len(str(caught.value)) < 500 and "more" in str(caught.value)


def test_the_evidence_follows_the_registry_relations() -> None:
    assert link("eligible_runs", "configurations") == ("configuration_id",)
    assert link("stage_measurements", "eligible_runs") == ("run_id",)
    runs = [
        _run("r1", "a", 2, W, 100.0, "idle", None),
        _run("r2", "a", 1, W, 120.0, "idle", None),
        _run("r3", "b", 1, F, None, "initializing", "rollout_init_memory"),
        _run("r4", "z", 1, W, 999.0, "idle", None),  # a configuration not asked for
    ]
    stages = [
        {"run_id": "r1", "configuration_id": "a", "stage": "rollout", "observed_peak_mib": 90.0},
        {"run_id": "r2", "configuration_id": "a", "stage": "rollout", "observed_peak_mib": 95.0},
        {"run_id": "r2", "configuration_id": "a", "stage": "idle", "observed_peak_mib": 120.0},
        {"run_id": "r3", "configuration_id": "b", "stage": "initializing", "observed_peak_mib": 30.0},
        {"run_id": "r4", "configuration_id": "z", "stage": "rollout", "observed_peak_mib": 999.0},
    ]
    evidence = build_evidence(["a", "b"], runs, stages, {"m": {"hidden_size": 8, "model_id": "m"}})
    assert set(evidence.runs) == {"a", "b"}
    a = evidence.columns({"configuration_id": "a"})
    assert [r["training_seed"] for r in a["runs"]] == [1, 2]
    assert a["seed_peaks_mib"] == {1: 120.0, 2: 100.0}
    assert a["stage_peaks_mib"] == {"idle": 120.0, "rollout": 95.0}
    assert (a["failure_stage"], a["failure_kind"]) == (None, None)
    b = evidence.columns({"configuration_id": "b"})
    assert (b["failure_stage"], b["failure_kind"]) == ("initializing", "rollout_init_memory")
    assert evidence.columns({"configuration_id": "z"})["runs"] == []
    assert evidence.architecture_of({"model_id": "m", "configuration_id": "a"})["hidden_size"] == 8
    with pytest.raises(InputError, match="names a model without metadata"):
        evidence.architecture_of({"model_id": "other", "configuration_id": "a"})


def _run(run: str, config: str, seed: int, state: str, peak: float | None, stage: str, kind: str | None) -> dict:
    return {
        "run_id": run,
        "configuration_id": config,
        "training_seed": seed,
        "observed_state": state,
        "observed_peak_mib": peak,
        "completed_run_peak_mib": peak,
        "terminal_stage": stage,
        "failure_kind": kind,
    }


def test_the_context_is_the_second_parameter_when_declared() -> None:
    class With:
        def fit(self, training, context=None): ...

        def predict(self, targets): ...

    class Misplaced:
        def fit(self, training, *, context=None): ...

    assert takes_context(With(), "fit") and not takes_context(With(), "predict")
    with pytest.raises(InputError, match="context must be its second parameter"):
        takes_context(Misplaced(), "fit")


def test_estimator_specs_take_typed_keyword_arguments() -> None:
    assert [typed_value(v) for v in ("3", "-2", "2.5", "1e3", "True", "false", "nan", "text", " 7 ")] == [
        3,
        -2,
        2.5,
        1000.0,
        True,
        False,
        "nan",
        "text",
        7,
    ]
    spec = parse_estimator("C:/work/mine.py:Physical,quantile=0.9")
    assert (spec.target, spec.arguments, spec.name) == (
        "C:/work/mine.py:Physical",
        {"quantile": 0.9},
        "Physical(quantile=0.9)",
    )
    assert parse_estimator("pkg.mod:Outer.Inner").name == "Outer.Inner"
    with pytest.raises(InputError, match="must have the form"):
        parse_estimator("no_colon_here")
    with pytest.raises(InputError, match="not KEY=VALUE with a Python name"):
        parse_estimator("m:C,1x=2")


def test_common_peaks_compare_methods_on_the_same_targets() -> None:
    truth = {i: {"max_completed_run_peak_mib": p} for i, p in (("c1", 100.0), ("c2", 200.0), ("c3", None))}
    rows = [
        {"configuration_id": "c1", "method": "a", "predicted_peak_mib": 110.0},
        {"configuration_id": "c2", "method": "a", "predicted_peak_mib": 230.0},
        {"configuration_id": "c3", "method": "a", "predicted_peak_mib": 50.0},
        {"configuration_id": "c1", "method": "b", "predicted_peak_mib": 90.0},
        {"configuration_id": "c2", "method": "b", "predicted_peak_mib": None},
        {"configuration_id": "c1", "method": "labels_only", "predicted_peak_mib": None},
    ]
    common = common_peaks(rows, truth, ["a", "b", "labels_only"])
    assert common["methods"] == ["a", "b"] and common["configuration_ids"] == ["c1"]
    assert common["scores"]["a"]["completed_peak_mae_mib"] == 10.0
    assert common["scores"]["b"]["completed_peak_mae_mib"] == 10.0


def test_the_spread_over_folds_says_what_three_families_support() -> None:
    report = {
        "folds": {
            f: {"scores": {"m": {"correct_three_state": c, "completed_peak_mae_mib": None}}}
            for f, c in (("x", 20), ("y", 27), ("z", 25))
        }
    }
    spread = across_folds(report)
    assert spread["units"] == 3 and spread["statement"] == THREE_FAMILIES
    correct = spread["methods"]["m"]["correct_three_state"]
    assert (correct["low"], correct["high"], correct["per_fold"]["y"]) == (20, 27, 27)
    assert spread["methods"]["m"]["completed_peak_mae_mib"]["low"] is None


class Evil(str):
    def __hash__(self):
        raise RuntimeError("hash")

    def __eq__(self, other):
        raise RuntimeError("eq")


def test_ids_are_compared_without_running_their_class_code() -> None:
    given = {"configuration_id": [Evil("c2"), Evil("c1"), Evil("c3")], "predicted_state": [A, W, F]}
    assert checked_predictions(given, IDS, "e")["predicted_state"] == [W, A, F]
    series = pd.Series([A, W, F], index=pd.Index([Evil("c2"), Evil("c1"), object()], dtype=object))
    with pytest.raises(InputError, match="foreign an object of type object; missing 'c3'"):
        checked_predictions(series, IDS, "e")


def test_an_estimator_may_not_take_a_reference_name(shared_mini) -> None:
    from rlvrambench_hf.estimation.api import run_retrospective

    class Any_:
        def fit(self, training): ...

        def predict(self, targets):
            return ["within_margin"] * len(targets)

    with pytest.raises(InputError, match="estimator name 'logistic' is a built-in method's"):
        run_retrospective(shared_mini.root, estimators={"logistic": Any_()})
