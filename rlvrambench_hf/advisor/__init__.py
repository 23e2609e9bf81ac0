"""Will my run fit? Plans read from a user's own config (:mod:`.plans`), answered measurement first.

The answer to a plan: the release's measured records of its settings (:mod:`.records`, :mod:`.lookup`), its
physical floors (:mod:`.floors`), the three reference methods' predictions with their track record
(:mod:`.predict`, :mod:`.fitted`), the single-setting changes that would make it fit (:mod:`.changes`) and its
distance to the measured cloud (:mod:`.trust`); :mod:`.answer` decides the verdict (measured > floor > predicted),
:mod:`.document` writes the JSON, :mod:`.sweep` the one-row-per-plan table. :mod:`.api` meets a source.
"""

from .api import advise, advise_planned, plans_of
from .document import STATEMENT
from .hardware import BENCHMARK_HARDWARE, Hardware
from .plans import Plans

__all__ = ["BENCHMARK_HARDWARE", "STATEMENT", "Hardware", "Plans", "advise", "advise_planned", "plans_of"]
