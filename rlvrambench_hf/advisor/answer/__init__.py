"""The typed answer: frozen dataclasses per plan (:mod:`.entry`: the answer, its verdict, floors and changes;
:mod:`.evidence`: measured matches, predictions and the rest it rests on; :mod:`.memory`: the per-phase peaks; and
:mod:`.remedy`: a failure log's fixes), each serialised by ``to_json()`` (the JSON contract) and readable as a
mapping of that JSON (:mod:`.part`)."""

from typing import TYPE_CHECKING, Any

from .entry import FLOOR, MEASURED, PREDICTED, Answer, Change, FloorResult, Verdict, Wording
from .evidence import Distance, Donor, MeasuredMatch, MeasuredRef, NearestMeasured, NearMatch, Prediction, StartupCheck
from .memory import Band, BandPart, Fits, NotModelled, PhasePeak, PhasePeaks, PhaseTerm
from .part import Part, UserKeys, as_json

if TYPE_CHECKING:
    from .remedy import Remedy


def __getattr__(name: str) -> Any:
    """:class:`~.remedy.Remedy`, imported when first asked for (answering a plan does not; explaining a log does)."""
    if name != "Remedy":
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    from .remedy import Remedy

    return Remedy


__all__ = [
    "FLOOR",
    "MEASURED",
    "PREDICTED",
    "Answer",
    "Band",
    "BandPart",
    "Change",
    "Distance",
    "Donor",
    "Fits",
    "FloorResult",
    "MeasuredMatch",
    "MeasuredRef",
    "NearMatch",
    "NearestMeasured",
    "NotModelled",
    "Part",
    "PhasePeak",
    "PhasePeaks",
    "PhaseTerm",
    "Prediction",
    "Remedy",
    "StartupCheck",
    "UserKeys",
    "Verdict",
    "Wording",
    "as_json",
]
