"""Will my run fit? Plans read from a user's own config (:mod:`.plans`), answered measurement first.

:func:`read_plans` reads a plan in the dataset's vocabulary (:mod:`.planned`), a VERL config or launch script
(:mod:`.verl`, :mod:`.launch`) or a TRL GRPOConfig (:mod:`.trl`) through the one mapping table (:mod:`.mapping`),
checks every setting (:mod:`.checks`) and reads it against the release's workloads and levels (:mod:`.measured`).

The answer to a plan: the release's measured records of its settings (:mod:`.records`, :mod:`.lookup`), its
physical floors (:mod:`.floors`), the three reference methods' predictions with their track record
(:mod:`.predict`, :mod:`.fitted`), the single-setting changes that would make it fit (:mod:`.changes`) and its
distance to the measured cloud (:mod:`.trust`); :mod:`.answer` decides the verdict (measured > floor > predicted),
:mod:`.document` writes the JSON, :mod:`.sweep` the one-row-per-plan table. :mod:`.api` meets a source.
"""

from .api import advise, advise_planned
from .document import STATEMENT
from .hardware import BENCHMARK_HARDWARE, Hardware
from .mapping import TRL_MAPPING, TRL_SCOPE, VERL_MAPPING, VERL_SCOPE
from .plans import Plans
from .read import read_plans

__all__ = [
    "BENCHMARK_HARDWARE",
    "STATEMENT",
    "TRL_MAPPING",
    "TRL_SCOPE",
    "VERL_MAPPING",
    "VERL_SCOPE",
    "Hardware",
    "Plans",
    "advise",
    "advise_planned",
    "read_plans",
]
