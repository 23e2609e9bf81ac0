"""Figures of the release: the boundary feasibility heatmap, per-stage peaks and admission recall curves.

Each figure has a data function in :mod:`.figuredata` (pure, tested) and a drawing function here returning a
matplotlib ``Figure`` (:func:`feasibility_figure`, :func:`stages_figure`, :func:`admission_figure`); ``plot_*``
load the data from a source and draw it.
matplotlib is imported inside the drawing functions; each figure is drawn on its own non-interactive Agg canvas
(no pyplot state is touched, so an interactive session keeps its backend).
Colours follow the Okabe–Ito palette, which stays distinguishable under the common colour-vision deficiencies;
labels are also told apart by hatching or marker shape, never by colour alone.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..data.registry import MARGIN_LIMIT_MIB
from ..errors import InputError
from .figuredata import (
    MIB_PER_GIB,
    CurvePoint,
    FeasibilityMatrix,
    FoldApprovals,
    admission_curve,
    feasibility_matrix,
    fold_approvals,
    stage_table,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

LABEL_COLOURS: dict[str, str] = {
    "within_margin": "#009E73",  # bluish green
    "above_margin": "#F0E442",  # yellow
    "memory_failure": "#D55E00",  # vermillion
    "not_repeated": "#BBBBBB",  # grey
}
LABEL_HATCHES: dict[str, str] = {
    "within_margin": "",
    "above_margin": "..",
    "memory_failure": "//",
    "not_repeated": "xx",
}
#: How each stage-record coverage is drawn: (legend text, marker, face colour, edge colour).
COVERAGE_STYLES: dict[str, tuple[str, str, str, str]] = {
    "completed_run": ("completed run", "o", "#0072B2", "#0072B2"),
    "terminal_stage_partial": ("failure, partial stage", "X", "#D55E00", "#000000"),
    "stage_completion_not_certified": ("completion not certified", "^", "none", "#CC79A7"),
}
RULE_STYLES: tuple[tuple[str, str, str | tuple], ...] = (  # (colour, marker, line style), cycled over the rules
    ("#0072B2", "o", "-"),
    ("#E69F00", "s", "--"),
    ("#009E73", "D", ":"),
    ("#CC79A7", "^", "-."),
    ("#56B4E9", "v", (0, (5, 1))),
    ("#000000", "P", (0, (3, 1, 1, 1))),
)


def feasibility_figure(matrix: FeasibilityMatrix) -> Figure:
    """Heatmap: repeated label per cell, annotated with the maximum completed peak in GiB (blank for failures)."""
    from matplotlib.patches import Patch, Rectangle

    fig, ax = _new_figure(figsize=(8.6, 1.0 + 0.45 * len(matrix.rows)))
    for i, row_states in enumerate(matrix.states):
        for j, state in enumerate(row_states):
            colour = LABEL_COLOURS.get(state or "", "#FFFFFF")
            ax.add_patch(
                Rectangle(
                    (j, i),
                    1,
                    1,
                    facecolor=colour,
                    edgecolor="white",
                    linewidth=1.5,
                    hatch=LABEL_HATCHES.get(state or "", ""),
                )
            )
            text = _peak_text(state, matrix.peaks_mib[i][j])
            if text:
                ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=8, color="black")
    ax.set_xlim(0, len(matrix.levels))
    ax.set_ylim(len(matrix.rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(matrix.levels))], matrix.levels)
    ax.set_yticks([i + 0.5 for i in range(len(matrix.rows))], [f"{m} · {w}" for m, w in matrix.rows], fontsize=8)
    ax.set_xlabel("Configuration level (2 GPUs; increasing memory demand c0 → c5)")
    ax.set_ylabel("Model · workload")
    ax.set_title("Boundary study: repeated label and maximum completed peak (GiB)")
    present = [s for s in LABEL_COLOURS if any(s in row for row in matrix.states)]
    ax.legend(
        handles=[
            Patch(facecolor=LABEL_COLOURS[s], hatch=LABEL_HATCHES[s], edgecolor="#555555", label=s) for s in present
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title="Repeated label",
        title_fontsize=8,
        frameon=False,
    )
    fig.text(
        0.01,
        0.005,
        f"Numbers: maximum completed per-device peak in GiB (1 GiB = 1,024 MiB); blank for "
        f"memory failures. Limit: {MARGIN_LIMIT_MIB:,} MiB ({MARGIN_LIMIT_MIB / MIB_PER_GIB:.1f} GiB) "
        f"per device.",
        fontsize=7,
        ha="left",
        va="bottom",
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def stages_figure(table: pa.Table, *, title: str = "Per-stage device-memory peaks") -> Figure:
    """Per-stage peaks (GiB) as boxes of completed runs with every record as a strip, against the limit line."""
    import numpy as np
    from matplotlib.lines import Line2D

    if table.num_rows == 0:
        raise InputError("no stage measurements to plot")
    stage_names = list(dict.fromkeys(table.column("stage").to_pylist()))
    peaks = np.asarray(table.column("observed_peak_mib").to_numpy(zero_copy_only=False), dtype=float) / MIB_PER_GIB
    stages = np.asarray(table.column("stage").to_pylist(), dtype=object)
    coverage = np.asarray(table.column("coverage").to_pylist(), dtype=object)
    fig, ax = _new_figure(figsize=(9.0, 4.8))
    completed = [peaks[(stages == s) & (coverage == "completed_run") & ~np.isnan(peaks)] for s in stage_names]
    ax.boxplot(
        [c if len(c) else [np.nan] for c in completed],
        positions=range(len(stage_names)),
        widths=0.55,
        showfliers=False,
        medianprops={"color": "#000000"},
        boxprops={"color": "#555555"},
        whiskerprops={"color": "#555555"},
        capprops={"color": "#555555"},
    )
    jitter = np.random.default_rng(0).uniform(-0.22, 0.22, size=len(peaks))
    position = np.array([stage_names.index(s) for s in stages], dtype=float) + jitter
    handles = []
    for kind, (label, marker, face, edge) in COVERAGE_STYLES.items():
        mask = coverage == kind
        if mask.any():
            ax.scatter(
                position[mask],
                peaks[mask],
                s=14 if kind == "completed_run" else 30,
                marker=marker,
                facecolors=face,
                edgecolors=edge,
                linewidths=0.8,
                alpha=0.35 if kind == "completed_run" else 0.9,
                zorder=3,
            )
            handles.append(
                Line2D(
                    [],
                    [],
                    linestyle="",
                    marker=marker,
                    markerfacecolor=face,
                    markeredgecolor=edge,
                    label=f"{label} (n={int(mask.sum())})",
                )
            )
    limit = MARGIN_LIMIT_MIB / MIB_PER_GIB
    ax.axhline(limit, color="#000000", linestyle="--", linewidth=1)
    handles.append(
        Line2D([], [], color="#000000", linestyle="--", label=f"limit {MARGIN_LIMIT_MIB:,} MiB ({limit:.1f} GiB)")
    )
    ax.set_xticks(range(len(stage_names)), [s.replace("_", "\n") for s in stage_names], fontsize=8)
    ax.set_xlabel("Execution stage")
    ax.set_ylabel("Per-device peak memory (GiB)")
    ax.set_title(title)
    ax.set_xlim(-0.6, len(stage_names) - 0.4)
    ax.legend(handles=handles, fontsize=8, loc="lower right", framealpha=0.9)
    fig.tight_layout()
    return fig


def admission_figure(points: Sequence[CurvePoint]) -> Figure:
    """Case-averaged within-margin recall (%) against the per-case screening budget, one line per rule.

    Rules are told apart by colour, marker and line style, and dodged slightly so identical curves stay visible;
    a budget at which a rule approves a memory failure or an above-margin target gets a labelled ring.
    """
    if not points:
        raise InputError("no admission curve points to plot")
    fig, ax = _new_figure(figsize=(7.2, 4.6))
    rules = list(dict.fromkeys(p.rule for p in points))
    budgets = sorted({p.budget for p in points})
    errors = 0
    for k, rule in enumerate(rules):
        colour, marker, style = RULE_STYLES[k % len(RULE_STYLES)]
        dodge = (k - (len(rules) - 1) / 2) * 0.04
        mine = [p for p in points if p.rule == rule and p.macro_recall is not None]
        ax.plot(
            [p.budget + dodge for p in mine],
            [100 * _recall(p) for p in mine],
            color=colour,
            marker=marker,
            linestyle=style,
            linewidth=1.6,
            markersize=7,
            label=rule,
        )
        for p in mine:
            if p.approved_memory_failure or p.approved_above_margin:
                errors += 1
                ax.scatter(
                    [p.budget + dodge],
                    [100 * _recall(p)],
                    s=260,
                    facecolors="none",
                    edgecolors="#D55E00",
                    linewidths=2,
                    zorder=4,
                )
                ax.annotate(
                    f"MF {p.approved_memory_failure} / AM {p.approved_above_margin}",
                    (p.budget + dodge, 100 * _recall(p)),
                    textcoords="offset points",
                    xytext=(6, -14),
                    fontsize=7,
                    color="#D55E00",
                )
    ax.set_xticks(budgets)
    ax.set_xlim(budgets[0] - 0.25, budgets[-1] + (0.6 if errors else 0.25))  # room for the error labels
    ax.set_ylim(-5, 105)
    ax.set_xlabel("Screening budget (target attempts per case)")
    ax.set_ylabel("Case-averaged within-margin recall (%)")
    ax.set_title("Admission panel: recall against screening budget")
    note = (
        "ringed: approvals of memory failures (MF) / above-margin targets (AM)"
        if errors
        else "no rule approves a memory failure or an above-margin target at any budget"
    )
    ax.legend(title=note, title_fontsize=7, fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_feasibility(source=None, revision: str | None = None) -> Figure:
    """The feasibility heatmap of a release."""
    from ..data.tables import load_table

    return feasibility_figure(feasibility_matrix(load_table("all_configurations", source, revision, decode=True)))


def plot_stages(
    source=None, revision: str | None = None, *, configuration_id: str | None = None, study: str | None = None
) -> Figure:
    """The per-stage peak figure of a release, for one configuration, one study or everything."""
    from ..data.tables import load_table

    table = stage_table(
        load_table("stage_measurements", source, revision, decode=True),
        load_table("all_configurations", source, revision, decode=True),
        configuration_id=configuration_id,
        study=study,
    )
    scope = (
        f"configuration {configuration_id}"
        if configuration_id
        else f"study {study}"
        if study
        else "all eligible processes"
    )
    return stages_figure(table, title=f"Per-stage device-memory peaks: {scope}")


def plot_admission(source=None, revision: str | None = None, *, policy: str | None = None) -> Figure:
    """The admission curves of the published rules (and a ``module:attr`` policy, if given)."""
    return admission_figure(admission_curve(_replay(source, revision, policy)))


def figure_png(fig: Figure) -> bytes:
    """The PNG bytes of ``fig``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    return buffer.getvalue()


def save_png(fig: Figure, path: str | os.PathLike) -> None:
    """Write ``fig`` to ``path`` as PNG, atomically."""
    from ..data.output import write_atomic

    write_atomic(path, figure_png(fig))


def _replay(source, revision: str | None, policy: str | None) -> dict:
    from .. import admission

    if policy is None:
        return admission.replay_report(source, revision)
    return admission.replay_report(source, revision, policy=admission.load_policy(policy))


def _peak_text(state: str | None, peak_mib: float | None) -> str:
    if state is None or state == "memory_failure" or peak_mib is None or peak_mib <= 0:
        return ""
    return f"{peak_mib / MIB_PER_GIB:.1f}"


def _new_figure(figsize: tuple[float, float]):
    """A figure on its own Agg canvas (no pyplot state, whatever backend the session uses)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _recall(point: CurvePoint) -> float:
    """The recall of a point that has one (points without are not drawn)."""
    assert point.macro_recall is not None
    return point.macro_recall


def estimation_figure(bars: Sequence[FoldApprovals]) -> Figure:
    """Stacked approvals per held-out family and method: within-margin (useful), above-margin and memory-failure
    approvals (errors); correct labels and usable settings rejected are written above each bar."""
    from matplotlib.patches import Patch

    if not bars:
        raise InputError("no estimator comparison to plot")
    folds, methods = list(dict.fromkeys(b.fold for b in bars)), list(dict.fromkeys(b.method for b in bars))
    width = 0.8 / len(methods)
    fig, ax = _new_figure(figsize=(8.6, 4.8))
    layers = {
        "within_margin": "within margin (useful)",
        "above_margin": "above margin",
        "memory_failure": "memory failure",
    }
    style: dict[str, dict[str, Any]] = {
        label: {"facecolor": LABEL_COLOURS[label], "hatch": LABEL_HATCHES[label], "edgecolor": "#333"}
        for label in layers
    }
    for bar in bars:
        x = folds.index(bar.fold) + (methods.index(bar.method) - (len(methods) - 1) / 2) * width
        bottom = 0
        for label in layers:
            value = getattr(bar, f"approved_{label}")
            if value:
                ax.bar(x, value, width * 0.92, bottom=bottom, linewidth=0.6, **style[label])
            bottom += value
        note = f"{bar.correct}/{bar.queries}" + (
            f"\n−{bar.rejected_within_margin} usable" if bar.rejected_within_margin else ""
        )
        ax.text(x, bottom + 0.4, note, ha="center", va="bottom", fontsize=7)
        name = bar.method.replace("_", " ").replace("component ", "")
        ax.text(x, -0.6, name, ha="center", va="top", fontsize=7, rotation=30)
    ax.set_xticks(range(len(folds)))
    ax.set_xticklabels([f"\n\n\nheld out: {f}" for f in folds])
    ax.set_ylim(
        0, max(b.approved_within_margin + b.approved_above_margin + b.approved_memory_failure for b in bars) + 12
    )
    ax.set_ylabel("Approved held-out configurations (of 30)")
    ax.set_title("Estimator comparison: approvals per held-out model family")
    handles = [Patch(label=f"approved, {text}", **style[label]) for label, text in layers.items()]
    title = "above each bar: correct labels of 30, and usable settings rejected"
    ax.legend(handles=handles, fontsize=7, loc="upper center", ncol=3, title=title, title_fontsize=7)
    fig.tight_layout()
    return fig


def plot_estimation(source=None, revision: str | None = None) -> Figure:
    """The per-fold estimator comparison of a release (references fitted with each family held out)."""
    from ..estimation import run_retrospective

    return estimation_figure(fold_approvals(run_retrospective(source, revision)))
