"""What every figure shares: the matplotlib check, a private Agg canvas, PNG bytes and the rule styles.

matplotlib (the ``plots`` extra) is imported only here and inside the drawing functions; a missing matplotlib is
one line naming ``pip install 'rlvrambench-hf[plots]'``. Each figure is drawn on its own non-interactive Agg
canvas, so no pyplot state is touched and an interactive session keeps its backend.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

from ..errors import import_extra

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: The optional extra that brings matplotlib.
PLOTS_EXTRA = "plots"
#: (colour, marker, line style) of the rules of a curve figure, cycled over the rules (Okabe–Ito colours).
RULE_STYLES: tuple[tuple[str, str, str | tuple[int, tuple[int, ...]]], ...] = (
    ("#0072B2", "o", "-"),
    ("#E69F00", "s", "--"),
    ("#009E73", "D", ":"),
    ("#CC79A7", "^", "-."),
    ("#56B4E9", "v", (0, (5, 1))),
    ("#000000", "P", (0, (3, 1, 1, 1))),
)


def require_matplotlib() -> None:
    """A one-line :class:`~rlvrambench_hf.errors.MissingExtraError` naming ``pip install 'rlvrambench-hf[plots]'``
    when matplotlib is missing (called before any work, so that nothing is computed in vain)."""
    import_extra("matplotlib", PLOTS_EXTRA, "drawing figures")


def new_figure(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure on its own Agg canvas (no pyplot state, whatever backend the session uses) and its axes."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def figure_png(fig: Figure) -> bytes:
    """The PNG bytes of ``fig``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    return buffer.getvalue()


def save_png(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Write ``fig`` to ``path`` as PNG, atomically."""
    from ..data.tables.output import write_atomic

    write_atomic(path, figure_png(fig))
