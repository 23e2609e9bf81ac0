"""Typed tables in and out: reading a release file into the registry's types (:mod:`.reader`), export
(:mod:`.export`) and atomic outputs that never clobber an input (:mod:`.output`). The pyarrow/numpy helpers
(:mod:`rlvrambench_hf.arrow`) and the reader of a user's file (:mod:`rlvrambench_hf.userfile`) sit below every room
of ``data``."""
