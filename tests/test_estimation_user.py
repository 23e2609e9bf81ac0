"""Users' estimators under the comparison's folds, on the real release: predictions matched by configuration id,
the evidence in the views and the proof that no value of a held-out family reaches ``fit``, the context,
parameterised estimators, the side-by-side table and the spread over the three folds."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rlvrambench_hf import estimation
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.estimation.api import VIEW_TABLES, inputs_from_tables
from rlvrambench_hf.estimation.evidence import ARCHITECTURE_FIELDS, EVIDENCE_COLUMNS
from rlvrambench_hf.estimation.folds import retrospective, split
from rlvrambench_hf.estimation.references import BUILT_IN, METHODS, MODEL
from rlvrambench_hf.estimation.user import bind_estimator, checked_predictions, estimator_run

from conftest import run_cli

FOLDS = ("granite33", "phi4", "qwen25")


class ByRule:
    """A fixed rule of the features (no fitting): within margin under a budget, else a memory failure, with a
    peak; ``shape`` says how the result is returned."""

    def __init__(self, shape: str = "list") -> None:
        self.shape = shape

    def fit(self, training):
        return None

    def predict(self, targets):
        used = targets["actor_shards_gib"] + targets["generation_budget_gib"]
        states = ["within_margin" if u < 34 else "memory_failure" for u in used]
        peaks = [1024 * (u + 4.0) for u in used]
        ids = targets["configuration_id"].tolist()
        if self.shape == "list":
            return {"predicted_state": states, "predicted_peak_mib": peaks}
        if self.shape == "frame":  # by id, in reverse order, with a fresh index
            frame = pd.DataFrame({"configuration_id": ids, "predicted_state": states, "predicted_peak_mib": peaks})
            return frame.iloc[::-1].reset_index(drop=True)
        if self.shape == "series":  # indexed by id, shuffled
            return pd.Series(states, index=ids).sample(frac=1.0, random_state=7)
        if self.shape == "rows":  # the target view's own row labels, shuffled
            return pd.DataFrame({"predicted_state": states}, index=targets.index).sample(frac=1.0, random_state=3)
        raise AssertionError(self.shape)


@pytest.fixture(scope="module")
def inputs(snapshot: Path) -> estimation.api.EstimationInputs:
    return estimation.load_inputs(snapshot)


@pytest.fixture(scope="module")
def shapes(snapshot: Path) -> dict:
    estimators = {shape: ByRule(shape) for shape in ("list", "frame", "series", "rows")}
    return estimation.run_retrospective(snapshot, estimators=estimators)


def test_reordered_results_score_as_their_correctly_ordered_twins(shapes: dict) -> None:
    for fold in FOLDS:
        scores = shapes["folds"][fold]["scores"]
        assert scores["frame"] == scores["list"]
        labels_only = {k: v for k, v in scores["list"].items() if "peak" not in k}
        assert {k: v for k, v in scores["series"].items() if "peak" not in k} == labels_only
        assert scores["rows"] == scores["series"]
        assert scores["list"]["completed_peak_prediction_coverage"] > 0
        rows = {m: [r for r in shapes["folds"][fold]["user_predictions"] if r["method"] == m] for m in scores}
        assert [r["predicted_state"] for r in rows["frame"]] == [r["predicted_state"] for r in rows["list"]]


def test_a_reordered_frame_read_by_position_would_be_wrong(inputs) -> None:
    _, test = split(inputs.pool, "phi4")
    targets = estimation.target_view(test, inputs.evidence)
    frame = ByRule("frame").predict(targets)
    matched = checked_predictions(frame, test.ids, "e")
    assert matched == checked_predictions(ByRule("list").predict(targets), test.ids, "e")
    assert matched["predicted_state"] != frame["predicted_state"].tolist()  # what a positional reading takes


def test_ids_that_do_not_match_the_targets_are_one_line_errors() -> None:
    ids = ["cfg-a", "cfg-b", "cfg-c"]
    frame = pd.DataFrame({"configuration_id": ["cfg-c", "cfg-x", "cfg-a"], "predicted_state": ["within_margin"] * 3})
    with pytest.raises(InputError) as caught:
        checked_predictions(frame, ids, "e")
    message = str(caught.value)
    assert "\n" not in message
    assert "predict's configuration_id values do not match the 3 targets: foreign 'cfg-x'; missing 'cfg-b'" in message
    frame = pd.DataFrame({"configuration_id": ["cfg-a", "cfg-a", "cfg-c"], "predicted_state": ["within_margin"] * 3})
    with pytest.raises(InputError, match="duplicated 'cfg-a'; missing 'cfg-b'"):
        checked_predictions(frame, ids, "e")
    with pytest.raises(InputError, match="foreign 7"):
        checked_predictions(pd.Series(["within_margin"] * 3, index=[2, 7, 0]), ids, "e")
    # a mapping with ids is matched too; a bare sequence stays positional
    matched = checked_predictions(
        {
            "configuration_id": ["cfg-b", "cfg-c", "cfg-a"],
            "predicted_state": ["above_margin", "memory_failure", "within_margin"],
        },
        ids,
        "e",
    )
    assert matched["predicted_state"] == ["within_margin", "above_margin", "memory_failure"]
    positional = checked_predictions(["above_margin", "memory_failure", "within_margin"], ids, "e")
    assert positional["predicted_state"] == ["above_margin", "memory_failure", "within_margin"]


def test_a_foreign_id_from_an_estimator_is_refused_in_one_line(snapshot: Path) -> None:
    class Foreign(ByRule):
        def predict(self, targets):
            ids = targets["configuration_id"].tolist()
            ids[0] = "cfg-not-in-this-fold"
            return pd.DataFrame({"configuration_id": ids, "predicted_state": ["within_margin"] * len(ids)})

    with pytest.raises(InputError) as caught:
        estimation.run_retrospective(snapshot, estimators={"foreign": Foreign()})
    assert "\n" not in str(caught.value)
    assert "estimator foreign" in str(caught.value) and "foreign 'cfg-not-in-this-fold'" in str(caught.value)


class Recorder:
    """Records what ``fit`` saw (its fitted state) and what ``predict`` saw, and the context."""

    def __init__(self) -> None:
        self.fitted: list[pd.DataFrame] = []
        self.targets: list[pd.DataFrame] = []
        self.contexts: list = []

    def fit(self, training, context):
        self.fitted.append(training)
        self.contexts.append(context)

    def predict(self, targets, context=None):
        self.targets.append(targets)
        return ["within_margin"] * len(targets)


def test_views_carry_the_evidence_and_the_targets_only_the_architecture(inputs) -> None:
    recorder = Recorder()
    run = estimator_run(bind_estimator(recorder, "r", timeout=None), "r", inputs.evidence, {"source": "here"})
    retrospective(inputs.pool, inputs.parameters, {"r": run})
    granite_fit, granite_targets = recorder.fitted[0], recorder.targets[0]
    assert set(ARCHITECTURE_FIELDS) <= set(granite_fit.columns) and set(ARCHITECTURE_FIELDS) <= set(
        granite_targets.columns
    )
    assert set(EVIDENCE_COLUMNS) <= set(granite_fit.columns)
    assert not set(EVIDENCE_COLUMNS) & set(granite_targets.columns)
    assert set(granite_targets["num_key_value_heads"]) == {8} and set(granite_targets["hidden_size"]) == {2048}
    stage_rows = sum(len(r["stage_peaks_mib"]) for runs in granite_fit["runs"] for r in runs)
    assert stage_rows == sum(
        len(s) for s in granite_fit["runs"].map(lambda runs: [x for r in runs for x in r["stage_peaks_mib"]])
    )
    every = [s for runs in inputs.evidence.runs.values() for r in runs for s in r["stage_peaks_mib"]]
    assert len(every) == 1360  # the pool's share of the 3,434 stage measurements
    failed = granite_fit[granite_fit["observed_state"] == "memory_failure"]
    assert set(failed["failure_stage"]) <= {"initializing", "rollout", "weight_sync"}
    assert set(failed["failure_kind"]) <= {"rollout_init_memory", "rollout_oom", "weight_sync_oom"}
    assert granite_fit["failure_stage"][granite_fit["completed"]].isna().all()
    complete = granite_fit[granite_fit["completed"]].iloc[0]
    assert len(complete["seed_peaks_mib"]) == 3
    assert max(complete["seed_peaks_mib"].values()) == complete["max_completed_run_peak_mib"]
    assert complete["stage_peaks_mib"]["idle"] <= complete["max_completed_run_peak_mib"] + 1e-9
    context = recorder.contexts[0]
    assert (context.source, context.fold, context.training_families) == ("here", "granite33", ("phi4", "qwen25"))


def _perturbed(tables: dict, table: str, family: str, inputs) -> dict:
    """``tables`` with every row of ``table`` that belongs to ``family`` changed."""
    held_ids = {r["configuration_id"] for r in inputs.pool.rows if r["model_family_coarse"] == family}
    held_models = {m for m in inputs.metadata if estimation.coarse_family(m) == family}
    changed = dict(tables)
    rows = []
    for row in tables[table]:
        row = dict(row)
        if table == "model_metadata" and row["model_id"] in held_models:
            row.update(hidden_size=row["hidden_size"] + 64, vocab_size=row["vocab_size"] + 7, num_key_value_heads=1)
        elif table == "configurations" and row["configuration_id"] in held_ids:
            row.update(vllm_gpu_memory_utilization=0.55, actor_micro_batch=row["actor_micro_batch"] * 2)
        elif table == "outcomes" and row["configuration_id"] in held_ids:
            row.update(recorded_attempts=row["recorded_attempts"] + 5, mean_completed_run_peak_mib=1.0)
            if row["max_completed_run_peak_mib"] is not None:
                row["max_completed_run_peak_mib"] += 1000.0
        elif table in ("eligible_runs", "stage_measurements") and row["configuration_id"] in held_ids:
            for peak in ("observed_peak_mib", "completed_run_peak_mib"):
                if row.get(peak) is not None:
                    row[peak] += 1000.0
        rows.append(row)
    changed[table] = rows
    return changed


def _fitted_views(tables: dict, target_rows: list, inputs) -> tuple[list, object]:
    """What ``fit`` saw in each fold (the references are not needed: the views alone are built)."""
    perturbed = inputs_from_tables(tables, target_rows, inputs.protocol, inputs.source)
    recorder = Recorder()
    run = estimator_run(bind_estimator(recorder, "r", timeout=None), "r", perturbed.evidence, {"source": "s"})
    for family in FOLDS:
        run(*split(perturbed.pool, family))
    return recorder.fitted, perturbed


@pytest.fixture(scope="module")
def tables(snapshot: Path, inputs) -> tuple[dict, list, list]:
    """The rows of every view table, the targets, and what ``fit`` saw from them unchanged."""
    from rlvrambench_hf.data.tables.reader import load_table

    rows = {n: load_table(n, snapshot, decode=n != "model_metadata").to_pylist() for n in VIEW_TABLES}
    target_rows = load_table("estimation_targets", snapshot, decode=True).to_pylist()
    return rows, target_rows, _fitted_views(rows, target_rows, inputs)[0]


@pytest.mark.parametrize("table", VIEW_TABLES)
def test_no_value_of_the_held_out_family_reaches_fit(tables, inputs, table: str) -> None:
    rows, target_rows, original = tables
    for i, family in enumerate(FOLDS):
        fitted, perturbed = _fitted_views(_perturbed(rows, table, family, inputs), target_rows, inputs)
        pd.testing.assert_frame_equal(fitted[i], original[i])  # the held-out family's fold: nothing reached fit
        held = [r["configuration_id"] for r in inputs.pool.rows if r["model_family_coarse"] == family]
        before = [_everything(inputs, c) for c in held]
        after = [_everything(perturbed, c) for c in held]
        assert before != after, f"the perturbation of {table} did not reach the {family} rows"
        others = [j for j in range(len(FOLDS)) if j != i]
        assert any(not fitted[j].equals(original[j]) for j in others)  # where it trains, the family is seen


def _everything(inputs, configuration_id: str) -> str:
    row = next(r for r in inputs.pool.rows if r["configuration_id"] == configuration_id)
    index = inputs.pool.ids.index(configuration_id)
    return json.dumps(
        [row, inputs.evidence.columns(row), inputs.evidence.architecture_of(row), inputs.pool.features[index].tolist()],
        default=str,
        sort_keys=True,
    )


def test_the_side_by_side_table_and_the_spread_over_folds(shapes: dict) -> None:
    table = shapes["table"]
    assert len(table) == 3 * (len(BUILT_IN) + 4)
    for row in table:
        if row["method"] in METHODS:
            assert row["kind"] == "reference" and "startup_guard_changed_states" in row and "arguments" not in row
        elif row["method"] == MODEL:
            assert row["kind"] == "memory model" and not {"startup_guard_changed_states", "arguments"} & set(row)
        else:
            assert row["kind"] == "estimator" and "startup_guard_changed_states" not in row and "arguments" in row
            assert "startup_guard_changed_states" not in shapes["folds"][row["fold"]]["scores"][row["method"]]
    phi4 = {r["method"]: r for r in table if r["fold"] == "phi4"}
    assert (phi4["donor_copy"]["peaks"], phi4["component_regression"]["peaks"]) == (22, 22)
    granite = {r["method"]: r for r in table if r["fold"] == "granite33"}
    assert (granite["donor_copy"]["peaks"], granite["component_regression"]["peaks"]) == (22, 26)
    assert granite["component_regression"]["common_peaks"] == 22 and granite["logistic"]["peak_mae_mib_common"] is None
    assert granite["donor_copy"]["peak_mae_mib_common"] == granite["donor_copy"]["peak_mae_mib"]
    assert granite["component_regression"]["peak_mae_mib_common"] != granite["component_regression"]["peak_mae_mib"]
    spread = shapes["across_folds"]
    assert spread["units"] == 3 and "cannot support a claim" in spread["statement"]
    logistic = spread["methods"]["logistic"]["correct_three_state"]
    assert logistic["per_fold"] == {"granite33": 26, "phi4": 24, "qwen25": 21} and (
        logistic["low"],
        logistic["high"],
    ) == (21, 26)


def test_keyword_arguments_are_typed_and_named() -> None:
    spec = estimation.parse_estimator("mine.py:Physical,overhead_gib=2.5,layers=3,strict=True,note=x")
    assert spec.target == "mine.py:Physical"
    assert spec.arguments == {"overhead_gib": 2.5, "layers": 3, "strict": True, "note": "x"}
    assert spec.name == "Physical(overhead_gib=2.5,layers=3,strict=True,note=x)"
    assert estimation.parse_estimator("big=pkg.mod:Cls,a=1").name == "big"
    with pytest.raises(InputError, match="argument 'oops' is not KEY=VALUE"):
        estimation.parse_estimator("mine.py:Physical,oops")
    with pytest.raises(InputError, match="given twice"):
        estimation.parse_estimator("mine.py:Physical,a=1,a=2")


def test_one_command_line_scores_a_parameterised_estimator_twice(snapshot: Path, tmp_path: Path) -> None:
    (tmp_path / "budget.py").write_text(
        "class Budget:\n"
        "    def __init__(self, headroom_gib=6.0):\n"
        "        self.headroom_gib = headroom_gib\n"
        "    def fit(self, training, context=None):\n"
        "        self.capacity_gib = training['device_capacity_mib'].iloc[0] / 1024\n"
        "    def predict(self, targets):\n"
        "        used = targets['actor_shards_gib'] + targets['generation_budget_gib']\n"
        "        limit = self.capacity_gib - self.headroom_gib\n"
        "        return ['within_margin' if u < limit else 'memory_failure' for u in used]\n"
    )
    output = tmp_path / "compare.json"
    result = run_cli(
        "--source",
        str(snapshot),
        "estimate",
        "compare",
        "--estimator",
        "budget.py:Budget,headroom_gib=2",
        "--estimator",
        "strict=budget.py:Budget,headroom_gib=12",
        "--output",
        str(output),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(output.read_text())
    assert report["estimators"] == {
        "Budget(headroom_gib=2)": {"estimator": "budget.py:Budget", "arguments": {"headroom_gib": 2}},
        "strict": {"estimator": "budget.py:Budget", "arguments": {"headroom_gib": 12}},
    }
    rows = {(r["fold"], r["method"]): r for r in report["table"]}
    loose, strict = rows[("phi4", "Budget(headroom_gib=2)")], rows[("phi4", "strict")]
    assert loose["arguments"] == {"headroom_gib": 2} and strict["arguments"] == {"headroom_gib": 12}
    assert loose["approved"] > strict["approved"]
    assert "cannot support a claim about how it would do on a fourth" in result.stdout
    from argparse import Namespace

    from rlvrambench_hf.cli.estimate import run_compare

    with pytest.raises(InputError, match="estimator name 'Budget' is given twice"):
        run_compare(Namespace(estimator=["budget.py:Budget", "budget.py:Budget"]))


def test_eval_results_carry_one_record_per_fold_naming_its_family(shapes: dict) -> None:
    from rlvrambench_hf.release.evalresults import eval_entries, eval_results_text

    identity = {"dataset_id": "kobzaond/RLVRAMBench", "dataset_revision": "abc", "version": "x"}
    with pytest.raises(InputError, match="exactly one estimator of yours, found 'list', 'frame', 'series', 'rows'"):
        eval_entries(shapes, **identity)
    one = {
        **shapes,
        "folds": {
            family: {**fold, "scores": {m: s for m, s in fold["scores"].items() if m in (*METHODS, "list")}}
            for family, fold in shapes["folds"].items()
        },
        "estimators": {"list": {"estimator": "tests.ByRule", "arguments": {"shape": "list"}}},
    }
    export = eval_entries(json.loads(json.dumps(one)), **identity)
    tasks = [e.task_id for e in export.entries]
    assert tasks[:2] == [
        "held_out_granite33-within_margin_recall",
        "held_out_granite33-within_margin_approval_precision",
    ]
    assert {t.split("-")[0] for t in tasks} == {f"held_out_{f}" for f in FOLDS}
    qwen = next(e for e in export.entries if e.task_id == "held_out_qwen25-approved_memory_failure")
    assert qwen.value == shapes["folds"]["qwen25"]["scores"]["list"]["approved_memory_failure"]
    assert "held-out family qwen25 (30 configurations), fitted on granite33, phi4" in qwen.notes
    assert "estimator list with shape='list'" in qwen.notes and "cannot support a claim about a fourth" in qwen.notes
    assert eval_results_text(export.entries).count("task_id") == len(tasks)
    with pytest.raises(InputError, match="exactly one estimator of yours, found none"):
        eval_entries({"folds": {f: {"scores": {m: {} for m in METHODS}} for f in FOLDS}}, **identity)


def test_an_estimator_loaded_from_a_spec_gets_its_context_in_its_own_process(snapshot: Path, tmp_path: Path) -> None:
    """An estimator named as module:attr lives in a child process of its own; its context arrives there too (read
    from its own signature in that process), and no second child is started to read it."""
    from rlvrambench_hf.scoring import contained

    source = tmp_path / "needs_context.py"
    source.write_text(
        "import os\n"
        "class Estimator:\n"
        "    def fit(self, training, context=None):\n"
        "        assert context is not None and context.source and context.fold, context\n"
        "        self.pid = os.getpid()\n"
        "        return self\n"
        "    def predict(self, targets, context=None):\n"
        "        assert self.pid == os.getpid() and context.training_families, context\n"
        "        return ['within_margin'] * len(targets)\n"
    )
    started: list[int] = []
    original = contained.Child.__init__

    def recording(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        started.append(self.pid)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(contained.Child, "__init__", recording)
        report = estimation.run_retrospective(snapshot, estimators={"mine": f"{source}:Estimator"})
    assert {f: fold["scores"]["mine"]["approved"] for f, fold in report["folds"].items()} == dict.fromkeys(
        report["folds"], 30
    )
    assert len(started) == 1 and not Path(f"/proc/{started[0]}").exists()  # one child, ended with the command
