"""The estimator comparison (dataset card use #3): memory estimators with whole model families held out.

Pure cores: :mod:`.features` (the eight features, families, startup check), :mod:`.donor`, :mod:`.regression`,
:mod:`.logistic` and :mod:`.references` (the three reference methods), :mod:`.folds` (pool, leave-one-family-out
retrospective, final fit, prospective predictions), :mod:`.user` (your own estimator), :mod:`.hubmeta` (metadata
of a Hub model from its headers). :mod:`.api` is where they meet a source; :mod:`rlvrambench_hf.advisor` answers
planned runs with them.
scipy and scikit-learn are imported when a method is fitted, not here; the names below are imported on first use
(reading a release's features does not import the comparison's folds, nor users' estimators).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .api import (
        ALL_FOLDS,
        EstimatorSpec,
        load_estimator,
        load_inputs,
        parse_estimator,
        run_final_fit,
        run_prospective,
        run_retrospective,
        score_fold_predictions,
    )
    from .evidence import ARCHITECTURE_FIELDS, EVIDENCE_COLUMNS, Evidence
    from .features import FAMILIES, FEATURE_NAMES, coarse_family, feature_matrix, feature_vector
    from .folds import THREE_FAMILIES, across_folds, check_against_published, fold_table, retrospective
    from .hubmeta import fetch_model_metadata, metadata_from_shapes
    from .references import METHODS, Examples, FittedReferences, fit_references
    from .user import OUTCOME_COLUMNS, Estimator, EstimatorContext, target_view, training_view

#: Where each public name lives (imported when first asked for, PEP 562).
_LAZY = {
    "ALL_FOLDS": ".api",
    "EstimatorSpec": ".api",
    "load_estimator": ".api",
    "load_inputs": ".api",
    "parse_estimator": ".api",
    "run_final_fit": ".api",
    "run_prospective": ".api",
    "run_retrospective": ".api",
    "score_fold_predictions": ".api",
    "ARCHITECTURE_FIELDS": ".evidence",
    "EVIDENCE_COLUMNS": ".evidence",
    "Evidence": ".evidence",
    "FAMILIES": ".features",
    "FEATURE_NAMES": ".features",
    "coarse_family": ".features",
    "feature_matrix": ".features",
    "feature_vector": ".features",
    "THREE_FAMILIES": ".folds",
    "across_folds": ".folds",
    "check_against_published": ".folds",
    "fold_table": ".folds",
    "retrospective": ".folds",
    "fetch_model_metadata": ".hubmeta",
    "metadata_from_shapes": ".hubmeta",
    "METHODS": ".references",
    "Examples": ".references",
    "FittedReferences": ".references",
    "fit_references": ".references",
    "OUTCOME_COLUMNS": ".user",
    "Estimator": ".user",
    "EstimatorContext": ".user",
    "target_view": ".user",
    "training_view": ".user",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "ALL_FOLDS",
    "ARCHITECTURE_FIELDS",
    "EVIDENCE_COLUMNS",
    "THREE_FAMILIES",
    "Evidence",
    "EstimatorContext",
    "EstimatorSpec",
    "across_folds",
    "parse_estimator",
    "FAMILIES",
    "FEATURE_NAMES",
    "METHODS",
    "OUTCOME_COLUMNS",
    "Estimator",
    "Examples",
    "FittedReferences",
    "check_against_published",
    "coarse_family",
    "feature_matrix",
    "feature_vector",
    "fetch_model_metadata",
    "fit_references",
    "fold_table",
    "load_estimator",
    "load_inputs",
    "metadata_from_shapes",
    "retrospective",
    "run_final_fit",
    "run_prospective",
    "run_retrospective",
    "score_fold_predictions",
    "target_view",
    "training_view",
]
