"""RLVRAMBench metric for `evaluate`: predictions scored by the `rlvrambench_hf` package against hidden labels.

Its configs (transfer, the default; admission; estimation) and their arguments are the table
`rlvrambench_hf.adapters.metric.METRIC_CONFIGS`; this module is a thin adapter that reads it. The caller passes
predictions only. The labels are read from the dataset source: the Hub repository `kobzaond/RLVRAMBench` at the
pinned release commit (cached by huggingface_hub, reusable offline), a local folder, or whatever
`RLVRAMBENCH_SOURCE` / `RLVRAMBENCH_REVISION` (or the `source` / `revision` arguments of `compute`) name. The
package carries this module in its wheel: `evaluate.load(rlvrambench_hf.metric_path())` loads it from any folder.
"""

from typing import Any

import datasets
import evaluate

from rlvrambench_hf.adapters.metric import METRIC_CONFIGS, metric_config, metric_summary
from rlvrambench_hf.data.schema.pins import HOMEPAGE, citation

_CITATION = citation()

_DESCRIPTION = (
    f"Scores RLVRAMBench predictions against labels the caller does not pass. Configs: {metric_summary()}. "
    "Rates on a zero denominator are null, never 0."
)
_KWARGS_DESCRIPTION = (
    "\n".join(config.docs() for config in METRIC_CONFIGS.values())
    + """
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
)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Rlvrambench(evaluate.Metric):  # type: ignore[misc]  # evaluate ships no type information
    """A thin adapter: the config table of :mod:`rlvrambench_hf.adapters.metric` gives the features, the
    ``compute`` options and the scoring call."""

    def _info(self) -> evaluate.MetricInfo:
        config = metric_config(self.config_name)
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({name: datasets.Value("string") for name in config.features}),
            homepage=HOMEPAGE,
            license="MIT",
        )

    def _compute(self, **inputs: object) -> dict[str, Any]:
        return metric_config(self.config_name).compute(inputs)
