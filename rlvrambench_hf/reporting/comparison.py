"""The estimator comparison in one figure: approvals per held-out model family and method (the card's story).

Each bar stacks a method's approvals of one held-out family's 30 configurations by their observed label —
within-margin (useful), above-margin and memory-failure (errors) — and is annotated with the correct labels and the
usable settings it rejected. The data come from :func:`.figuredata.fold_approvals`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..data.sources.resolve import SourceLike
from ..errors import InputError
from .canvas import new_figure
from .figuredata import FoldApprovals, fold_approvals
from .plots import LABEL_COLOURS, LABEL_HATCHES

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


def estimation_figure(bars: Sequence[FoldApprovals]) -> Figure:
    """Stacked approvals per held-out family and method: within-margin (useful), above-margin and memory-failure
    approvals (errors); correct labels and usable settings rejected are written above each bar."""
    from matplotlib.patches import Patch

    if not bars:
        raise InputError("no estimator comparison to plot")
    folds, methods = list(dict.fromkeys(b.fold for b in bars)), list(dict.fromkeys(b.method for b in bars))
    width = 0.8 / len(methods)
    fig, ax = new_figure(figsize=(8.6, 4.8))
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


def plot_estimation(source: SourceLike = None, revision: str | None = None) -> Figure:
    """The per-fold estimator comparison of a release (references fitted with each family held out)."""
    from ..estimation import run_retrospective

    return estimation_figure(fold_approvals(run_retrospective(source, revision)))
