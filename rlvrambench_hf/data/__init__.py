"""Bytes of a release to typed tables, and typed tables back to files: three rooms and what joins them.

- :mod:`.schema`: what the tables are — the registry (every table, the single source of truth), the column
  vocabulary, the column kinds, the card's front matter, and the package's pins (repository, release commit,
  benchmark constants, citation);
- :mod:`.sources`: where the files come from — a local folder or a Hub revision, each file checked against its
  Hub object id and the release's manifests, Hub errors mapped to one line, the caller's source resolved once;
- :mod:`.tables`: typed reading, export, atomic output and the pyarrow/numpy helpers.

:mod:`.builder` and :mod:`.loading` make ``datasets`` objects of the typed tables; :mod:`.verify` checks a whole
source.
"""
