"""The admission curves: case-averaged within-margin recall of each rule against the per-case screening budget
(:func:`admission_figure`) and against the attempts it really spent, target plus donor (:func:`attempts_figure`).

At budget 0 a donor-based rule can reach full recall without a single target attempt, because its evidence comes
from donor attempts; the second figure puts every point where its total cost lies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InputError
from .canvas import RULE_STYLES, new_figure
from .figuredata import CurvePoint

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

ERROR_COLOUR = "#D55E00"  # vermillion: approvals of memory failures or above-margin targets


def admission_figure(points: Sequence[CurvePoint]) -> Figure:
    """Case-averaged within-margin recall (%) against the per-case screening budget, one line per rule.

    Rules are told apart by colour, marker and line style, and dodged slightly so identical curves stay visible;
    a budget at which a rule approves a memory failure or an above-margin target gets a labelled ring.
    """
    if not points:
        raise InputError("no admission curve points to plot")
    fig, ax = new_figure(figsize=(7.2, 4.6))
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
                    edgecolors=ERROR_COLOUR,
                    linewidths=2,
                    zorder=4,
                )
                ax.annotate(
                    f"MF {p.approved_memory_failure} / AM {p.approved_above_margin}",
                    (p.budget + dodge, 100 * _recall(p)),
                    textcoords="offset points",
                    xytext=(6, -14),
                    fontsize=7,
                    color=ERROR_COLOUR,
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


def attempts_figure(points: Sequence[CurvePoint]) -> Figure:
    """Case-averaged within-margin recall (%) against the total attempts spent (target + donor), one line per
    rule through its budgets (each point labelled ``b<budget>``); approval errors get a ring as in
    :func:`admission_figure`, and the donor attempts behind each rule are named in the legend."""
    if not points:
        raise InputError("no admission curve points to plot")
    fig, ax = new_figure(figsize=(7.6, 4.8))
    rules = list(dict.fromkeys(p.rule for p in points))
    span = max(p.total_attempts for p in points) or 1
    for k, rule in enumerate(rules):
        colour, marker, style = RULE_STYLES[k % len(RULE_STYLES)]
        dodge = (k - (len(rules) - 1) / 2) * 0.008 * span
        mine = sorted((p for p in points if p.rule == rule and p.macro_recall is not None), key=lambda p: p.budget)
        donors = sorted({p.donor_attempts for p in mine})
        donor_text = f"; donor attempts {', '.join(map(str, donors))}" if any(donors) else "; no donor attempts"
        xs = [p.total_attempts + dodge for p in mine]
        ys = [100 * _recall(p) for p in mine]
        ax.plot(
            xs,
            ys,
            color=colour,
            marker=marker,
            linestyle=style,
            linewidth=1.6,
            markersize=7,
            label=f"{rule}{donor_text}",
        )
        for p, x, y in zip(mine, xs, ys):
            ax.annotate(
                f"b{p.budget}",
                (x, y),
                textcoords="offset points",
                xytext=(4, 7) if k % 2 == 0 else (4, -13),
                fontsize=7,
                color=colour,
            )
            if p.approved_memory_failure or p.approved_above_margin:
                ax.scatter([x], [y], s=260, facecolors="none", edgecolors=ERROR_COLOUR, linewidths=2, zorder=4)
    ax.set_xlim(-0.04 * span, 1.1 * span)
    ax.set_ylim(-5, 112)
    ax.set_xlabel("Attempts spent: target attempts within the budget + donor attempts")
    ax.set_ylabel("Case-averaged within-margin recall (%)")
    ax.set_title("Admission panel: recall against the attempts really spent")
    ax.legend(title="rule (b = budget per case)", title_fontsize=7, fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def _recall(point: CurvePoint) -> float:
    """The recall of a point that has one (points without are not drawn)."""
    assert point.macro_recall is not None
    return point.macro_recall
