"""RLVRAMBench metric for `evaluate`: transfer-task scores (config "transfer", the default), admission-panel
decision scores (config "admission") and held-out-family estimator scores (config "estimation"), computed by the
`rlvrambench_hf` package against hidden labels.

The caller passes predictions only. The labels are read through `rlvrambench_hf` from the dataset source: the
Hub repository `kobzaond/RLVRAMBench` at the pinned release commit (cached by huggingface_hub, reusable offline),
a local folder, or whatever `RLVRAMBENCH_SOURCE` / `RLVRAMBENCH_REVISION` (or the `source` / `revision` arguments
of `compute`) name. This module is a thin adapter: all validation and scoring live in the package, which also
carries this module in its wheel: `evaluate.load(rlvrambench_hf.metric_path())` loads it from any folder.
"""

import datasets
import evaluate

from rlvrambench_hf.data.registry import citation
from rlvrambench_hf.estimation import ALL_FOLDS, FAMILIES
from rlvrambench_hf.transfer import ALL_TRACKS, TRACKS

_FOLDS = sorted(set(FAMILIES.values()))

_CITATION = citation()

_DESCRIPTION = """\
Scores RLVRAMBench predictions against labels the caller does not pass. "transfer": one predicted label
(within_margin, above_margin or memory_failure) per transfer query; returns the benchmark's score file
(protocol 1.1: overall, per_track and per_task confusion matrices, approvals, approval errors, within-margin
recall and approval precision, null rates on zero denominators). "admission": final approve/reject decisions of
the admission-panel candidates against the hidden evaluation labels. "estimation": one predicted label (and
optionally a peak in MiB) per held-out configuration of the estimator comparison's leave-one-family-out folds,
scored per fold exactly as the reference estimators are.
"""

_KWARGS_DESCRIPTION = f"""
Args (config "transfer"):
    predictions (`list` of `str`): predicted label of each query: within_margin, above_margin or memory_failure.
    query_ids (`list` of `str`): the query id of each prediction; together they must cover the selected queries
        exactly once.
    track (`str`, optional): "{ALL_TRACKS}" (default) or one of {", ".join(TRACKS)}.
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
    fold (`str`, optional): "{ALL_FOLDS}" (default) or one held-out family: {", ".join(_FOLDS)}.
    source, revision: as above.
Returns:
    The score dict (see the metric card).
Examples:
    The four queries of the horizon track, all approved:

    >>> import evaluate, rlvrambench_hf
    >>> metric = evaluate.load(rlvrambench_hf.metric_path())
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
            choices = " or ".join(repr(name) for name in _FEATURES)
            raise KeyError(f"unknown RLVRAMBench metric config {self.config_name!r}; use {choices}")
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
        track=ALL_TRACKS,
        fold=ALL_FOLDS,
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
