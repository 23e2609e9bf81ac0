"""``rlvrambench estimate retrospective|fit|prospective|compare|advise``: the estimator comparison.

Argument parsing and printing only; the work is done by :mod:`rlvrambench_hf.estimation` (``advise``: in
:mod:`.advise`, answered by :mod:`rlvrambench_hf.advisor`). ``--output`` files are
written atomically as JSON (indent 2, no NaN); the table on stdout is the readable summary.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import one_line, summary
from .shared.common import add_group, add_timeout, checked_source, format_table
from .shared.intervals import add_interval_options, interval_legend, interval_options_of, with_interval


def add_estimate(parser: argparse.ArgumentParser) -> None:
    commands = add_group(
        parser,
        description="Memory estimators compared with whole model families held out (dataset card use #3): the "
        "three reference methods (donor copy, component regression, logistic classification) refitted from the "
        "release, your own estimator under the same folds, and advice about a run you plan.",
        metavar="SUBCOMMAND",
    )

    p = commands.add_parser(
        "retrospective",
        help="the three leave-one-family-out folds, scored per method",
        description="Fit each reference method on 60 configurations with one model family held out at a time and "
        "score it on that family's 30: approvals by observed label, correct labels, peak errors, startup-guard "
        "changes and the source cost of the evidence.",
    )
    _output(p, "the folds (fitted parameters, 90 prediction rows, scores, source costs)")
    add_interval_options(p)
    p.set_defaults(handler=run_retrospective)

    p = commands.add_parser(
        "fit",
        help="the final fit of the three references on all 90 configurations",
        description="Fit the three reference methods on all 90 historical configurations, as the release's "
        "prospective predictions were made: regression coefficients, classifier parameters and iterations.",
    )
    _output(p, "the fitted model (parameters, source cost of the 12 prospective targets' donors)")
    p.set_defaults(handler=run_fit)

    p = commands.add_parser(
        "prospective",
        help="the 36 prospective predictions, checked against the release's predictions.json",
        description="Predict the 12 planned Qwen2.5-7B targets with the three methods fitted on all 90 "
        "configurations and compare them with the sealed predictions.json (exit 1 if they differ).",
    )
    _output(p, "the predictions in the layout of the release's predictions.json")
    p.set_defaults(handler=run_prospective)

    p = commands.add_parser(
        "compare",
        help="score your own estimator under the same folds, beside the references",
        description="Fit your estimator on each training fold (settings, features and outcomes of 60 "
        "configurations) and let it predict the held-out family from settings and features only; scored exactly "
        "like the references, side by side with them.",
    )
    p.add_argument(
        "--estimator",
        action="append",
        required=True,
        metavar="[NAME=]MODULE:ATTR[,KEY=VALUE...]",
        help="an object or class with fit(training) and predict(targets) (module or path/to/file.py); a class is "
        "created with the KEY=VALUE keyword arguments (typed as --setting: integer, number, True/False, else text); "
        "repeatable, also with the same class and other arguments",
    )
    _output(p, "the folds with your estimators' scores and prediction rows")
    add_interval_options(p)
    add_timeout(p, "estimator")
    p.set_defaults(handler=run_compare)

    from .advise import add_advise  # the top-level command `rlvrambench advise`, kept here as an alias

    add_advise(commands.add_parser("advise", help="will my run fit? (the same as rlvrambench advise)"))


def _output(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--output", metavar="F.json", help=f"write {what} as JSON (atomically)")


def _write(path: str | None, data: object, *, sort_keys: bool = False) -> None:
    if path:
        from ..data.tables.output import write_json

        write_json(path, data, sort_keys=sort_keys)


def run_retrospective(args: argparse.Namespace) -> int:
    from ..estimation import run_retrospective

    options = interval_options_of(args)
    from ..data.tables.reader import load_table
    from ..data.verify import pool_figure

    source = checked_source(args, [args.output])
    report = run_retrospective(source, intervals=options)
    _write(args.output, report)
    print(render_folds(report))
    print(pool_figure(load_table("all_configurations", source)).detail)  # the card's 72 boundary + 18 four-GPU
    print("\n" + render_memory_model(report["memory_model"]))
    if options is not None:
        print("\n" + render_fold_intervals(report))
    return 0


def run_fit(args: argparse.Namespace) -> int:
    from ..estimation import run_prospective
    from ..estimation.logistic import SEALED_MODEL, sealed_comparison

    source = checked_source(args, [args.output])
    model = run_prospective(source)["fitted_model"]
    _write(args.output, model)
    rows = [[n, v] for n, v in zip(["intercept", *model["feature_names"]], model["component_coefficients_gib"])]
    donors = model["source_cost"]["distinct_selected_donors"]
    print(
        f"fitted on {len(model['training_configuration_ids'])} configurations "
        f"({model['eligible_source_processes']} processes, {model['recorded_source_attempts']} attempts); "
        f"regression on {len(model['regression_training_configuration_ids'])} complete ones, residual norm "
        f"{model['component_training_residual_norm_gib']:.6f} GiB; "
        f"classifier iterations {model['classifier_iterations']}"
    )
    print(
        f"the 12 prospective targets copy {donors['configurations']} distinct donors "
        f"({donors['eligible_source_processes']} processes, {donors['recorded_source_attempts']} attempts)"
    )
    print(format_table(["term", "coefficient_gib"], rows))
    sealed = source.read_json(SEALED_MODEL) if source.has(SEALED_MODEL) else None
    print(sealed_comparison(model, sealed if isinstance(sealed, dict) else None)["note"])
    return 0


def run_prospective(args: argparse.Namespace) -> int:
    from ..estimation import run_prospective

    result = run_prospective(checked_source(args, [args.output]))
    _write(args.output, result["predictions"], sort_keys=True)
    by_target: dict[str, dict[str, Any]] = {}
    for row in (*result["predictions"], *result["memory_model"]["predictions"]):
        by_target.setdefault(row["configuration_id"], {})[row["method"]] = row
    body = [
        [
            cid,
            m["donor_copy"]["predicted_state"],
            m["donor_copy"]["donor_configuration_id"],
            m["component_regression"]["predicted_state"],
            m["component_regression"]["predicted_peak_mib"],
            m["logistic"]["predicted_state"],
            m["donor_copy"]["startup_budget_diagnostic"]["budget_plus_actor_mib"],
            m["physical_model"]["predicted_state"],
            m["physical_model"]["predicted_peak_mib"],
        ]
        for cid, m in by_target.items()
    ]
    headers = [
        *("target", "donor_copy", "donor", "regression", "regression_peak_mib", "logistic", "startup_mib"),
        *("memory_model", "model_peak_mib"),
    ]
    print(format_table(headers, body))
    check = result["published_check"]
    if not check["available"]:
        print("the release has no predictions.json to check against")
        return 0
    if check["matches"]:
        print(
            f"equal to the release's predictions.json: {check['rows']} rows, labels and donors identical, "
            f"peaks within {check['max_peak_difference_mib']:.1e} MiB"
        )
        return 0
    differences = summary(check["differences"], quoted=False)
    print(one_line(f"rlvrambench: differs from the release's predictions.json: {differences}"), file=sys.stderr)
    return 1


def run_compare(args: argparse.Namespace) -> int:
    from ..data.tables.output import object_file
    from ..errors import InputError, quote
    from ..estimation import parse_estimator, run_retrospective

    estimators = {}
    for given in args.estimator:
        spec = parse_estimator(given)
        if spec.name in estimators:
            raise InputError(
                f"estimator name {quote(spec.name)} is given twice; name them: --estimator NAME=MODULE:ATTR"
            )
        estimators[spec.name] = spec
    files = {f"estimator {name}": object_file(spec.target) for name, spec in estimators.items()}
    options = interval_options_of(args)
    report = run_retrospective(
        checked_source(args, [args.output], files), estimators=estimators, intervals=options, timeout=args.timeout
    )
    _write(args.output, report)
    print(render_folds(report))
    if options is not None:
        from ..estimation.intervals import comparison_readings

        print("\n" + render_fold_intervals(report))
        print("\npaired comparisons, each estimator against each reference (difference per metric):")
        print("\n".join(comparison_readings(report)))
    return 0


def render_folds(report: dict[str, Any]) -> str:
    """One table of references and estimators side by side per fold: correct labels, approvals by observed
    label, the peak error beside the peaks it covers and over the peaks every peak-predicting method predicted;
    then the source costs, the spread over the folds and what three families can support."""
    table = report.get("table")
    if table is None:
        from ..estimation import fold_table

        table = fold_table(report)
    rows = [
        [
            r["fold"],
            r["method"],
            f"{r['correct']}/{r['queries']}",
            r["approved"],
            r["approved_within_margin"],
            r["approved_above_margin"],
            r["approved_memory_failure"],
            r["rejected_within_margin"],
            r["peak_mae_mib"],
            r["peaks"],
            r["peak_mae_mib_common"],
            r["common_peaks"] if r["peak_mae_mib_common"] is not None else None,
        ]
        for r in table
    ]
    headers = ["fold", "method", "correct", "approved", "W", "A", "F", "usable_rejected", "peak_mae_mib", "peaks"]
    headers += ["mae_common", "common"]
    lines = [format_table(headers, rows), ""]
    for family, fold in report["folds"].items():
        pool, donors = (
            fold["source_cost"]["full_permitted_fitting_pool"],
            fold["source_cost"]["distinct_selected_donors"],
        )
        lines.append(
            f"{family}: pool {pool['configurations']} configurations / {pool['eligible_source_processes']} processes / "
            f"{pool['recorded_source_attempts']} attempts; donors {donors['configurations']} / "
            f"{donors['eligible_source_processes']} / {donors['recorded_source_attempts']}"
        )
    lines.append("W, A, F: approved targets observed within margin, above margin, memory failure.")
    lines.append(
        "peaks: held-out peaks the MAE covers; mae_common: the MAE over the common peaks every peak-predicting "
        "method predicted."
    )
    spread = report.get("across_folds")
    if spread:
        lines.append("")
        for method, metrics in spread["methods"].items():
            correct = metrics["correct_three_state"]
            failures = metrics["approved_memory_failure"]
            lines.append(
                f"{method}: correct {correct['low']}–{correct['high']} of 30, approved memory failures "
                f"{failures['low']}–{failures['high']} over the {spread['units']} folds"
            )
        lines.append(spread["statement"])
    return "\n".join(lines)


def render_memory_model(section: dict[str, Any]) -> str:
    """The memory model's nested scores beside the best-of-forms figure per fold, and its leave-one-model-out
    check per model (by label alone, then with the band)."""
    best = section["best_of_forms"]["folds"]
    rows = [
        [
            family,
            s["form"],
            f"{s['correct']}/{s['queries']}",
            s["approved_memory_failure"],
            s["approved_above_margin"],
            s["rejected_within_margin"],
            s["completed_peak_mape_percent"],
            best[family]["form"],
            f"{best[family]['correct']}/{best[family]['queries']}",
        ]
        for family, s in section["nested"].items()
    ]
    headers = ["fold", "nested form", "correct", "F", "A", "usable_rejected", "mape_%", "best of forms", "correct"]
    lines = [
        "memory model, nested (form chosen on the training families alone) beside the best of forms (chosen after "
        "seeing the held-out family):",
        format_table(headers, rows),
        f"final form (chosen on all three families): {section['chosen_form']['name']}",
        "",
        "memory model, leave one model out (F, A: approved memory failures and above-margin runs by label; "
        "with band: approved only where the band stays off the margin):",
    ]
    rows = [
        [
            family,
            o["form"],
            o["configurations"],
            f"{o['correct']}/{o['queries']}",
            o["approved_memory_failure"],
            o["approved_above_margin"],
            o["rejected_within_margin"],
            o["completed_peak_mape_percent"],
            o["approved_with_band"]["approved_memory_failure"],
            o["approved_with_band"]["approved_above_margin"],
            o["approved_with_band"]["near_limit"],
        ]
        for family, o in section["leave_one_model_out"].items()
    ]
    headers = ["model", "form", "configs", "correct", "F", "A", "usable_rejected", "mape_%", "band_F", "band_A"]
    lines.append(format_table([*headers, "near_limit"], rows))
    return "\n".join(lines)


def render_fold_intervals(report: dict[str, Any]) -> str:
    """Per fold and method: correct labels, recall and approval errors with their intervals."""
    names = ("correct_three_state", "within_margin_recall", "approved_memory_failure", "approved_above_margin")
    rows = [
        [family, method, *(with_interval(scores.get(n), scores["intervals"], n) for n in names)]
        for family, fold in report["folds"].items()
        for method, scores in fold["scores"].items()
    ]
    headers = ["fold", "method", "correct", "wm_recall", "approved_mf", "approved_am"]
    return format_table(headers, rows) + "\n" + interval_legend(report["interval_settings"])
