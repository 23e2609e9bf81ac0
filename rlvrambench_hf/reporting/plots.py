"""Figures of the release: the boundary feasibility heatmap, per-stage peaks and the admission curves.

Each figure has a data function in :mod:`.figuredata` (pure, tested) and a drawing function returning a matplotlib
``Figure``: :func:`feasibility_figure` and :func:`stages_figure` here, :func:`admission_figure` (recall against the
budget) and :func:`attempts_figure` (recall against the attempts spent) in :mod:`.curves`; ``plot_*`` load the data
from a source and draw it. :mod:`.canvas` holds what they share (the matplotlib check, the Agg canvas, PNG bytes).
Colours follow the Okabe–Ito palette, which stays distinguishable under the common colour-vision deficiencies;
labels are also told apart by hatching or marker shape, never by colour alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..data.schema.pins import MARGIN_LIMIT_MIB
from ..data.sources.resolve import SourceLike
from ..errors import InputError, quote
from ..scoring.bounded import DEFAULT_TIMEOUT
from .canvas import PLOTS_EXTRA, RULE_STYLES, figure_png, new_figure, require_matplotlib, save_png
from .curves import admission_figure, attempts_figure
from .figuredata import MIB_PER_GIB, FeasibilityMatrix, admission_curve, feasibility_matrix, stage_table

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "PLOTS_EXTRA",
    "RULE_STYLES",
    "admission_figure",
    "attempts_figure",
    "feasibility_figure",
    "figure_png",
    "plot_admission",
    "plot_feasibility",
    "plot_stages",
    "require_matplotlib",
    "save_png",
    "stages_figure",
]

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


def feasibility_figure(matrix: FeasibilityMatrix) -> Figure:
    """Heatmap: repeated label per cell, annotated with the maximum completed peak in GiB (blank for failures)."""
    require_matplotlib()
    from matplotlib.patches import Patch, Rectangle

    fig, ax = new_figure(figsize=(8.6, 1.0 + 0.45 * len(matrix.rows)))
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
    require_matplotlib()
    import numpy as np
    from matplotlib.lines import Line2D

    if table.num_rows == 0:
        raise InputError("no stage measurements to plot")
    stage_names = list(dict.fromkeys(table.column("stage").to_pylist()))
    peaks = np.array(table.column("observed_peak_mib").to_pylist(), dtype=float) / MIB_PER_GIB  # no pandas: null is nan
    stages = np.asarray(table.column("stage").to_pylist(), dtype=object)
    coverage = np.asarray(table.column("coverage").to_pylist(), dtype=object)
    fig, ax = new_figure(figsize=(9.0, 4.8))
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


def plot_feasibility(source: SourceLike = None, revision: str | None = None) -> Figure:
    """The feasibility heatmap of a release."""
    require_matplotlib()
    from ..data.tables.reader import load_table

    return feasibility_figure(feasibility_matrix(load_table("all_configurations", source, revision, decode=True)))


def plot_stages(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    configuration_id: str | None = None,
    study: str | None = None,
) -> Figure:
    """The per-stage peak figure of a release, for one configuration, one study or everything."""
    require_matplotlib()
    from ..data.tables.reader import load_table

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


def plot_admission(
    source: SourceLike = None,
    revision: str | None = None,
    *,
    policy: str | None = None,
    against: str = "budget",
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Figure:
    """The admission curves of the published rules (and a ``module:attr`` policy, if given, each of its calls
    within ``timeout`` seconds): recall against the per-case budget (``against="budget"``) or against the attempts
    spent, target plus donor (``"attempts"``)."""
    if against not in ("budget", "attempts"):
        raise InputError(f"admission curves are drawn against 'budget' or 'attempts', not {quote(against)}")
    require_matplotlib()
    points = admission_curve(_replay(source, revision, policy, timeout))
    return admission_figure(points) if against == "budget" else attempts_figure(points)


def _replay(source: SourceLike, revision: str | None, policy: str | None, timeout: float | None) -> dict[str, Any]:
    from .. import admission

    if policy is None:
        return admission.replay_report(source, revision)
    return admission.replay_report(source, revision, policy=policy, timeout=timeout)


def _peak_text(state: str | None, peak_mib: float | None) -> str:
    if state is None or state == "memory_failure" or peak_mib is None or peak_mib <= 0:
        return ""
    return f"{peak_mib / MIB_PER_GIB:.1f}"
