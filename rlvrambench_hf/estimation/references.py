"""The three reference methods fitted together on one training set, and their prediction rows (ESTIMATION.md §5).

:func:`fit_references` fits donor copy (a lookup over the training rows), the component regression (complete rows)
and the logistic classifier (all rows); :meth:`FittedReferences.predict` gives three rows per target in the order
donor_copy, component_regression, logistic; :meth:`FittedReferences.model_fields` the fitted parameters in the
structure of the authors' ``retrospective.json`` / ``fitted_model.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .donor import Donor, choose_donor
from .features import FEATURE_NAMES, startup_diagnostic
from .logistic import LogisticClassifier, fit_logistic
from .regression import ComponentRegression, fit_regression, regression_states

DONOR, REGRESSION, LOGISTIC = "donor_copy", "component_regression", "logistic"
#: The reference methods, in the order of the prediction rows.
METHODS: tuple[str, ...] = (DONOR, REGRESSION, LOGISTIC)
#: The per-phase memory model (:mod:`.physical`), scored under the same folds after the references.
MODEL = "physical_model"
#: Every method the package itself scores: the references, then the memory model.
BUILT_IN: tuple[str, ...] = (*METHODS, MODEL)


@dataclass(frozen=True)
class Examples:
    """Configurations (settings, and for training rows their outcomes and ``completed``) with their features."""

    rows: tuple[Mapping[str, Any], ...]
    features: np.ndarray

    @property
    def ids(self) -> list[str]:
        return [r["configuration_id"] for r in self.rows]

    def subset(self, mask: Sequence[bool]) -> Examples:
        keep = np.asarray(mask, dtype=bool)
        return Examples(tuple(r for r, k in zip(self.rows, keep) if k), self.features[keep])


@dataclass(frozen=True)
class FittedReferences:
    """The three references fitted on ``training``; ``parameters`` maps model ids to floating elements."""

    training: Examples
    parameters: Mapping[str, int]
    regression: ComponentRegression
    regression_ids: tuple[str, ...]
    classifier: LogisticClassifier

    def donors(self, targets: Examples) -> list[Donor | None]:
        """The donor of each target (None where no training row shares its workload and level)."""
        return [choose_donor(t, self.training.rows, self.parameters) for t in targets.rows]

    def predict(self, targets: Examples, *, require_donor: bool = True) -> list[dict[str, Any]]:
        """Three prediction rows per target (§5). Without a donor candidate: an error, or a donor row with null
        prediction when ``require_donor`` is False."""
        donors = self.donors(targets)
        if require_donor:
            lost = [t["configuration_id"] for t, d in zip(targets.rows, donors) if d is None]
            if lost:
                raise InputError(f"no donor candidate (same workload and level) for {', '.join(lost)}")
        diagnostics = [startup_diagnostic(t, x) for t, x in zip(targets.rows, targets.features)]
        peaks = self.regression.predict_peaks_mib(targets.features)
        final, peak_only = regression_states(
            peaks,
            [t["device_capacity_mib"] for t in targets.rows],
            [t["margin_limit_mib"] for t in targets.rows],
            [d["predicted_startup_budget_failure"] for d in diagnostics],
        )
        classes = self.classifier.predict(targets.features)
        rows: list[dict[str, Any]] = []
        for i, target in enumerate(targets.rows):
            common = {"configuration_id": target["configuration_id"], "startup_budget_diagnostic": diagnostics[i]}
            donor = donors[i]
            rows.append(
                _row(
                    common,
                    DONOR,
                    donor.state if donor else None,
                    donor.peak_mib if donor else None,
                    donor_configuration_id=donor.configuration_id if donor else None,
                    donor_gpu_count_matches=donor.gpu_count_matches if donor else None,
                )
            )
            rows.append(
                _row(
                    common,
                    REGRESSION,
                    final[i],
                    float(peaks[i]),
                    peak_only_predicted_state=peak_only[i],
                    startup_guard_changed_state=final[i] != peak_only[i],
                )
            )
            rows.append(_row(common, LOGISTIC, classes[i], None))
        return rows

    def model_fields(self) -> dict[str, Any]:
        """The fitted parameters (§7 ``model``)."""
        c = self.classifier
        return {
            "training_configuration_ids": self.training.ids,
            "regression_training_configuration_ids": list(self.regression_ids),
            "feature_names": list(FEATURE_NAMES),
            "component_divisors": self.regression.divisors.tolist(),
            "component_coefficients_gib": self.regression.coefficients_gib.tolist(),
            "component_training_residual_norm_gib": self.regression.residual_norm_gib,
            "scaler_mean": c.scaler_mean.tolist(),
            "scaler_scale": c.scaler_scale.tolist(),
            "classifier_classes": list(c.classes),
            "classifier_coefficients": c.coefficients.tolist(),
            "classifier_intercepts": c.intercepts.tolist(),
            "classifier_iterations": c.iterations,
            **evidence_cost(self.training.rows),
        }


def fit_references(training: Examples, parameters: Mapping[str, int]) -> FittedReferences:
    """Fit the regression on the complete rows and the classifier on all rows of ``training``."""
    complete = [bool(r["completed"]) for r in training.rows]
    fitted = training.subset(complete)
    regression = fit_regression(fitted.features, np.array([r["max_completed_run_peak_mib"] for r in fitted.rows]))
    classifier = fit_logistic(training.features, [r["observed_state"] for r in training.rows])
    return FittedReferences(training, parameters, regression, tuple(fitted.ids), classifier)


def evidence_cost(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Eligible processes and recorded attempts behind ``rows``."""
    return {
        "eligible_source_processes": sum(int(r["eligible_processes"]) for r in rows),
        "recorded_source_attempts": sum(int(r["recorded_attempts"]) for r in rows),
    }


def _row(
    common: Mapping[str, Any], method: str, state: str | None, peak: float | None, **specific: object
) -> dict[str, Any]:
    return {
        "configuration_id": common["configuration_id"],
        "method": method,
        "predicted_state": state,
        "predicted_peak_mib": peak,
        "peak_only_predicted_state": specific.get("peak_only_predicted_state"),
        "startup_guard_changed_state": specific.get("startup_guard_changed_state"),
        "donor_configuration_id": specific.get("donor_configuration_id"),
        "donor_gpu_count_matches": specific.get("donor_gpu_count_matches"),
        "startup_budget_diagnostic": common["startup_budget_diagnostic"],
    }
