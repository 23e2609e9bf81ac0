"""What every scorer shares: the label metrics (:mod:`.labels`), the predictions-file reader
(:mod:`.predictions`) and fast matching of fixed-width ids (:mod:`.idmatch`)."""
