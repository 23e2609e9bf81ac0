"""What every scorer shares: the label metrics (:mod:`.labels`), estimator scores with peak errors
(:mod:`.estimators`), the predictions-file reader (:mod:`.predictions`), fast matching of fixed-width ids
(:mod:`.idmatch`) and users' own objects (:mod:`.user`)."""

#: Seconds one call into user code may take unless the caller says otherwise (a normal policy needs milliseconds):
#: the default of :mod:`.bounded`, here so that a signature can name it without importing the sandbox.
DEFAULT_TIMEOUT = 300.0
