"""Typed tables in and out: reading a release file into the registry's types (:mod:`.reader`), export
(:mod:`.export`), atomic outputs that never clobber an input (:mod:`.output`) and pyarrow/numpy helpers
(:mod:`.arrow`)."""
