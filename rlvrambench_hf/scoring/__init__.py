"""What every scorer shares: the label metrics (:mod:`.labels`), estimator scores with peak errors
(:mod:`.estimators`), the predictions-file reader (:mod:`.predictions`), fast matching of fixed-width ids
(:mod:`.idmatch`) and users' own objects (:mod:`.user`)."""
