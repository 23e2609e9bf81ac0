"""RLVRAMBench metric for `evaluate`: transfer-task scores (config "transfer", the default), admission-panel
decision scores (config "admission") and held-out-family estimator scores (config "estimation"), computed by the
`rlvrambench_hf` package against hidden labels.

The caller passes predictions only. The labels are read through `rlvrambench_hf` from the dataset source: the
Hub repository `kobzaond/RLVRAMBench` at the pinned release commit (cached by huggingface_hub, reusable offline),
a local folder, or whatever `RLVRAMBENCH_SOURCE` / `RLVRAMBENCH_REVISION` (or the `source` / `revision` arguments
of `compute`) name. This module is a thin adapter: all validation and scoring live in the package.
"""

import datasets
import evaluate

_CITATION = """\
@misc{kobza2026rlvrambench,
  title  = {{RLVRAMBench}},
  author = {Kobza, Ond{\\v{r}}ej and {\\v{S}}ediv{\\'y}, Jan},
  year   = {2026},
  howpublished = {Hugging Face dataset kobzaond/RLVRAMBench},
  note   = {Evidence release 2026.09.14, MIT licence}
}
"""

_DESCRIPTION = """\
Scores RLVRAMBench predictions against labels the caller does not pass. "transfer": one predicted label
(within_margin, above_margin or memory_failure) per transfer query; returns the benchmark's score file
(protocol 1.1: overall, per_track and per_task confusion matrices, approvals, approval errors, within-margin
recall and approval precision, null rates on zero denominators). "admission": final approve/reject decisions of
the admission-panel candidates against the hidden evaluation labels. "estimation": one predicted label (and
optionally a peak in MiB) per held-out configuration of the estimator comparison's leave-one-family-out folds,
scored per fold exactly as the reference estimators are.
"""

_KWARGS_DESCRIPTION = """
Args (config "transfer"):
    predictions (`list` of `str`): predicted label of each query: within_margin, above_margin or memory_failure.
    query_ids (`list` of `str`): the query id of each prediction; together they must cover the selected queries
        exactly once.
    track (`str`, optional): "all" (default) or one of model_transfer, workload_transfer, gpu_count_transfer,
        horizon_transfer.
    source (`str`, optional): Hub repo id or local folder (default: $RLVRAMBENCH_SOURCE, else the Hub release).
    revision (`str`, optional): Hub revision (default: $RLVRAMBENCH_REVISION, else the pinned release commit).
Args (config "admission"):
    candidate_ids (`list` of `str`): admission candidate ids.
    decisions (`list` of `str`): the final decision for each candidate.
    source, revision: as above.
Args (config "estimation"):
    predictions (`list` of `str`): predicted label of each held-out configuration.
    configuration_ids (`list` of `str`): the configuration of each prediction (all 90 of the pool, or the 30 of
        `fold`).
    predicted_peaks_mib (`dict`, optional, a `compute` argument): configuration id -> predicted peak in MiB.
    fold (`str`, optional): "all" (default) or one held-out family: granite33, phi4, qwen25.
    source, revision: as above.
Returns:
    The score dict (see the metric card).
Examples:
    The four queries of the horizon track, all approved:

    >>> import evaluate
    >>> metric = evaluate.load("metrics/rlvrambench")
    >>> ids = ["query-69f16a44c67f378b", "query-8d86cf5af0ae2aca", "query-a9650bee46606c7d", "query-c706b21190a01dfb"]
    >>> scores = metric.compute(predictions=["within_margin"] * 4, query_ids=ids, track="horizon_transfer")
    >>> overall = scores["overall"]
    >>> overall["approved"], overall["approved_within_margin"], overall["within_margin_recall"]
    (4, 3, 1.0)
"""

_FEATURES = {
    "transfer": {"predictions": "query_ids"},
    "admission": {"decisions": "candidate_ids"},
    "estimation": {"predictions": "configuration_ids"},
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Rlvrambench(evaluate.Metric):
    def _config(self) -> str:
        name = "transfer" if self.config_name in (None, "default") else self.config_name
        if name not in _FEATURES:
            raise KeyError(
                f"unknown RLVRAMBench metric config {self.config_name!r}; use 'transfer', 'admission' or 'estimation'"
            )
        return name

    def _info(self):
        if self._config() == "transfer":
            features = datasets.Features(
                {"predictions": datasets.Value("string"), "query_ids": datasets.Value("string")}
            )
        elif self._config() == "admission":
            features = datasets.Features(
                {"candidate_ids": datasets.Value("string"), "decisions": datasets.Value("string")}
            )
        else:
            features = datasets.Features(
                {"predictions": datasets.Value("string"), "configuration_ids": datasets.Value("string")}
            )
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=features,
            homepage="https://huggingface.co/datasets/kobzaond/RLVRAMBench",
            license="MIT",
        )

    def _compute(
        self,
        predictions=None,
        query_ids=None,
        candidate_ids=None,
        decisions=None,
        configuration_ids=None,
        predicted_peaks_mib=None,
        track="all",
        fold="all",
        source=None,
        revision=None,
    ):
        if self._config() == "estimation":
            from rlvrambench_hf.estimation import score_fold_predictions

            return score_fold_predictions(
                configuration_ids, predictions, predicted_peaks_mib, fold=fold, source=source, revision=revision
            )
        if self._config() == "transfer":
            from rlvrambench_hf.transfer import score_lists

            return score_lists(query_ids, predictions, track=track, source=source, revision=revision)
        from rlvrambench_hf.admission import score_decisions

        return score_decisions(list(candidate_ids), list(decisions), source=source, revision=revision)
