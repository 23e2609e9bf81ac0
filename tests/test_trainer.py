"""The training-loop view (issue 28): ``compute_metrics`` logs the card's headline figures by default, the full flat
view on request, and a subset of queries only when the caller says so, marked in every key.

Tested with transformers' own ``EvalPrediction``, ``denumpify_detensorize`` and callback machinery
(``CallbackHandler.on_evaluate`` / ``on_log``), the steps ``Trainer.evaluate`` takes after its evaluation loop; a
``Trainer`` itself needs torch, whose default wheel is gigabytes, so a real training run is the documented example
in docs/reporting.md, not a test dependency.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlvrambench_hf import OUTCOME_LABELS, trainer_metrics, transfer
from rlvrambench_hf.errors import InputError
from rlvrambench_hf.scoring.flat import HEADLINE

transformers = pytest.importorskip("transformers")
from transformers import TrainingArguments  # noqa: E402
from transformers.trainer_callback import CallbackHandler, TrainerCallback, TrainerControl, TrainerState  # noqa: E402
from transformers.trainer_utils import EvalPrediction, denumpify_detensorize  # noqa: E402

SCOPES = ("model_transfer", "workload_transfer", "gpu_count_transfer", "horizon_transfer", "overall")


@pytest.fixture(scope="module")
def baseline(snapshot) -> tuple[list[str], np.ndarray, dict[str, str]]:
    """The source_label rule's predictions as logits over the three labels, and each query's track."""
    tables = transfer.load_transfer_tables(snapshot)
    rows = transfer.reference_predictions(tables["queries"], tables["outcomes"], "source_label")
    ids = rows["query_id"].to_pylist()
    codes = np.array([OUTCOME_LABELS.index(s) for s in rows["predicted_state"].to_pylist()])
    logits = np.zeros((len(ids), 3), dtype=np.float32)
    logits[np.arange(len(ids)), codes] = 5.0
    tracks = dict(zip(tables["queries"]["query_id"].to_pylist(), tables["queries"]["track"].to_pylist()))
    return ids, logits, tracks


class Recorder(TrainerCallback):
    def __init__(self) -> None:
        self.evaluations: list[dict] = []
        self.logs: list[dict] = []

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.evaluations.append(dict(metrics))

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs))


def evaluate_like_a_trainer(compute_metrics, logits: np.ndarray, tmp_path, prefix: str = "eval") -> Recorder:
    """What ``Trainer.evaluate`` does with compute_metrics' result: denumpify, prefix, log, then on_evaluate."""
    recorder = Recorder()
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    handler = CallbackHandler([recorder], None, None, None, None)
    state, control = TrainerState(), TrainerControl()
    metrics = denumpify_detensorize(compute_metrics(EvalPrediction(predictions=logits, label_ids=None)))
    metrics = {k if k.startswith(f"{prefix}_") else f"{prefix}_{k}": v for k, v in metrics.items()}
    handler.on_log(args, state, control, {**metrics, "epoch": 1.0})
    handler.on_evaluate(args, state, control, metrics)
    return recorder


def test_the_default_view_logs_the_headline_figures_only(snapshot, baseline, tmp_path) -> None:
    ids, logits, _ = baseline
    recorder = evaluate_like_a_trainer(trainer_metrics(ids, source=snapshot), logits, tmp_path)
    logged = recorder.evaluations[0]
    assert len(logged) <= 30 and len(recorder.logs[0]) <= 31  # was 1,739 keys per evaluation
    assert set(logged) == {f"eval_{scope}/{figure}" for scope in SCOPES for figure in HEADLINE}
    # the card's GPU-count example: the source-copy rule approves 2 memory failures and 4 above-margin targets
    assert logged["eval_gpu_count_transfer/approved_memory_failure"] == 2
    assert logged["eval_gpu_count_transfer/approved_above_margin"] == 4
    assert round(logged["eval_overall/within_margin_recall"], 4) == 0.9438
    assert all(type(v) in (int, float) for v in logged.values())  # JSON-ready after denumpify_detensorize


def test_the_full_view_on_request(snapshot, baseline) -> None:
    ids, logits, _ = baseline
    full = trainer_metrics(ids, source=snapshot, view="full")(EvalPrediction(predictions=logits, label_ids=None))
    assert len(full) > 1000 and full["overall/correct_three_state"] == 352
    with pytest.raises(InputError, match="view must be one of headline, full"):
        trainer_metrics(ids, source=snapshot, view="everything")


def test_a_subset_is_scored_only_when_the_caller_says_so(snapshot, baseline, tmp_path) -> None:
    ids, logits, tracks = baseline
    rows = [i for i, q in enumerate(ids) if tracks[q] == "gpu_count_transfer"][::2]  # 18 of the track's 36 queries
    subset = [ids[i] for i in rows]
    with pytest.raises(InputError, match="missing query id"):
        trainer_metrics(subset, source=snapshot, track="gpu_count_transfer")  # not said: refused as before
    named = trainer_metrics(subset, source=snapshot, track="gpu_count_transfer", partial="dev")
    logged = evaluate_like_a_trainer(named, logits[rows], tmp_path).evaluations[0]
    assert logged and all(k.startswith("eval_partial-dev/") for k in logged)
    assert set(logged) == {f"eval_partial-dev/{s}/{f}" for s in ("gpu_count_transfer", "overall") for f in HEADLINE}
    unnamed = trainer_metrics(subset, source=snapshot, track="gpu_count_transfer", partial=True)
    scores = unnamed(EvalPrediction(predictions=logits[rows], label_ids=None))
    assert all(k.startswith("partial/") for k in scores) and all(k.startswith("partial/") for k in scores.left_out)
    full = trainer_metrics(subset, source=snapshot, partial=True, view="full")(
        EvalPrediction(predictions=logits[rows], label_ids=None)
    )
    assert full["partial/overall/queries"] == 18 and all(k.startswith("partial/") for k in full)
    assert full["partial/overall/approved_memory_failure"] <= 2  # a subset of the track's two


def test_a_partial_subset_must_be_known_and_distinct(snapshot, baseline) -> None:
    ids, _, tracks = baseline
    horizon = [q for q in ids if tracks[q] == "horizon_transfer"]
    model = next(q for q in ids if tracks[q] == "model_transfer")
    with pytest.raises(InputError, match="1 id\\(s\\) not among the queries of track horizon_transfer"):
        trainer_metrics([*horizon, model], source=snapshot, track="horizon_transfer", partial=True)
    with pytest.raises(InputError, match="1 duplicated query id"):
        trainer_metrics([horizon[0], horizon[0]], source=snapshot, partial=True)
    with pytest.raises(InputError, match="partial must be False, True or a subset name"):
        trainer_metrics(horizon, source=snapshot, partial="a b")


def test_batch_eval_metrics_gathers_the_batches(snapshot, baseline) -> None:
    ids, logits, _ = baseline
    whole = trainer_metrics(ids, source=snapshot)(EvalPrediction(predictions=logits, label_ids=None))
    batched = trainer_metrics(ids, source=snapshot)
    assert batched(EvalPrediction(predictions=logits[:150], label_ids=None), compute_result=False) == {}
    assert batched(EvalPrediction(predictions=logits[150:], label_ids=None), compute_result=True) == whole
