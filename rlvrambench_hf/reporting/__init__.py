"""Figures (:mod:`.plots`) and the HTML report (:mod:`.report`) of a release; both need the ``[plots]`` extra."""
