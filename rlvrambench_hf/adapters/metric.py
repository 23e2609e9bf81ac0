"""The configs of the ``evaluate`` metric, in one table: each config's features, its ``compute`` options and the
scoring call it makes.

The module ``metrics/rlvrambench/rlvrambench.py`` reads this table for ``_info``, ``_compute`` and its argument
docs, and computes nothing itself; its card and ``rlvrambench metric --help`` name the same configs (a test
compares them). Each scoring call is the package's own, so the metric and the command line give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, UnknownConfigError, quote

#: How ``evaluate.load(path)`` names the default config.
DEFAULT_NAMES = (None, "default")
_REQUIRED = object()


@dataclass(frozen=True)
class Argument:
    """One argument of ``compute``: a feature (a list with one string per row, which ``add_batch`` takes too) or
    an option with its default."""

    name: str
    doc: str
    default: Any = _REQUIRED

    @property
    def is_feature(self) -> bool:
        return self.default is _REQUIRED


@dataclass(frozen=True)
class MetricConfig:
    """One config of the metric: its arguments (features first) and the call that scores them."""

    name: str
    summary: str
    arguments: tuple[Argument, ...]
    score: Callable[..., dict[str, Any]]

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arguments if a.is_feature)

    @property
    def options(self) -> dict[str, Any]:
        return {a.name: a.default for a in self.arguments if not a.is_feature}

    def compute(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Score ``inputs`` (features and options by name); an argument this config does not take is refused."""
        known = {a.name for a in self.arguments}
        unknown = [name for name in inputs if name not in known]
        if unknown:
            takes = ", ".join(a.name for a in self.arguments)
            raise InputError(
                f"metric config {quote(self.name)} takes no argument {quote(unknown[0])}; it takes {takes}"
            )
        rows = [[] if inputs.get(name) is None else list(inputs[name]) for name in self.features]
        options = {name: inputs.get(name, default) for name, default in self.options.items()}
        return self.score(*rows, **options)

    def docs(self) -> str:
        """The config's arguments as a docstring section."""
        lines = [f'Args (config "{self.name}"):']
        for a in self.arguments:
            kind = "`list` of `str`" if a.is_feature else f"optional, default {a.default!r}"
            lines.append(f"    {a.name} ({kind}): {a.doc}")
        return "\n".join(lines)


def _shaped(scores: dict[str, Any], flat: bool) -> dict[str, Any]:
    """The score dict, or its flat view (:func:`~rlvrambench_hf.scoring.flat.flat_scores`) when ``flat``."""
    if not isinstance(flat, bool):
        raise InputError(f"flat must be True or False, not {quote(flat)}")
    from ..scoring.flat import flat_scores

    return flat_scores(scores) if flat else scores


def _transfer(
    predictions: Sequence[str], query_ids: Sequence[str], flat: bool = False, **options: Any
) -> dict[str, Any]:
    from ..transfer.api import score_lists

    return _shaped(score_lists(query_ids, predictions, **options), flat)


def _admission(
    candidate_ids: Sequence[str], decisions: Sequence[str], flat: bool = False, **options: Any
) -> dict[str, Any]:
    from ..admission.api import score_decisions

    return _shaped(score_decisions(candidate_ids, decisions, **options), flat)


def _estimation(
    predictions: Sequence[str], configuration_ids: Sequence[str], flat: bool = False, **options: Any
) -> dict[str, Any]:
    from ..estimation.api import score_fold_predictions

    return _shaped(score_fold_predictions(configuration_ids, predictions, **options), flat)


_SOURCE = (
    Argument("source", "Hub repo id or local folder of the labels ($RLVRAMBENCH_SOURCE, else the Hub release)", None),
    Argument("revision", "Hub revision ($RLVRAMBENCH_REVISION, else the release commit the package pins)", None),
)
_LABEL = "within_margin, above_margin or memory_failure"
#: The options every config takes beside its own: intervals on every rate and count, and the flat view.
_SHAPE = (
    Argument(
        "intervals",
        "True, or a mapping of level/resamples/seed (defaults 0.95, 2000, 0): add a bootstrap interval over the "
        "independent units (or the exact range where they are too few) to every rate and count",
        None,
    ),
    Argument("flat", "True: return the flat view {'overall/within_margin_recall': ...}, nulls left out", False),
)

#: Every config of the metric, the default first.
METRIC_CONFIGS: dict[str, MetricConfig] = {
    config.name: config
    for config in (
        MetricConfig(
            "transfer",
            "one predicted label per transfer query, scored overall, per track and per task",
            (
                Argument("predictions", f"the predicted label of each query: {_LABEL}"),
                Argument("query_ids", "the query of each prediction; together they cover the selected queries once"),
                Argument("track", "all, or one track name to score only that track's queries", "all"),
                *_SHAPE,
                *_SOURCE,
            ),
            _transfer,
        ),
        MetricConfig(
            "admission",
            "final approve/reject decisions of the admission-panel candidates, scored per case",
            (
                Argument("candidate_ids", "admission candidate ids; every case that appears is complete"),
                Argument("decisions", "the final decision for each candidate: approve, reject or abstain"),
                Argument(
                    "budget",
                    "the target attempts per case the decisions were made at; the scores then report the target "
                    "attempts that budget requests on the scored cases (requested_target_attempts)",
                    None,
                ),
                *_SHAPE,
                *_SOURCE,
            ),
            _admission,
        ),
        MetricConfig(
            "estimation",
            "one predicted label (and optionally a peak) per held-out configuration of the leave-one-family-out "
            "folds, scored per fold as the reference estimators are",
            (
                Argument("predictions", f"the predicted label of each held-out configuration: {_LABEL}"),
                Argument("configuration_ids", "the configuration of each prediction (all 90, or the 30 of fold)"),
                Argument("predicted_peaks_mib", "a mapping from configuration id to predicted peak, MiB", None),
                Argument("fold", "all, or one held-out family (granite33, phi4, qwen25)", "all"),
                *_SHAPE,
                *_SOURCE,
            ),
            _estimation,
        ),
    )
}
DEFAULT_METRIC_CONFIG = next(iter(METRIC_CONFIGS))


def metric_config(name: str | None) -> MetricConfig:
    """The config ``name`` (``None`` or ``"default"``: the default); an unknown name is the package's one-line
    :class:`~rlvrambench_hf.errors.UnknownConfigError`."""
    key = DEFAULT_METRIC_CONFIG if name in DEFAULT_NAMES else name
    if key not in METRIC_CONFIGS:
        raise UnknownConfigError(
            f"unknown RLVRAMBench metric config {quote(name)}; known configs: {', '.join(METRIC_CONFIGS)}"
        )
    return METRIC_CONFIGS[key]


def metric_summary() -> str:
    """One sentence naming every config, the default first (the module's description, the card, ``--help``)."""
    return "; ".join(
        f'"{c.name}"{" (default)" if c.name == DEFAULT_METRIC_CONFIG else ""}: {c.summary}'
        for c in METRIC_CONFIGS.values()
    )
