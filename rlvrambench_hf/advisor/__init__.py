"""Will my run fit? Plans read from a user's own config (:mod:`.plans`), answered measurement first.

:func:`read_plans` reads a plan in the dataset's vocabulary (:mod:`.planned`), a VERL config or launch script
(:mod:`.verl`, :mod:`.launch`) or a TRL GRPOConfig (:mod:`.trl`) through the one mapping table (:mod:`.mapping`),
checks every setting (:mod:`.checks`) and reads it against the release's workloads and levels (:mod:`.measured`).
"""

from .mapping import TRL_MAPPING, TRL_SCOPE, VERL_MAPPING, VERL_SCOPE
from .plans import Plans
from .read import read_plans

__all__ = ["TRL_MAPPING", "TRL_SCOPE", "VERL_MAPPING", "VERL_SCOPE", "Plans", "read_plans"]
