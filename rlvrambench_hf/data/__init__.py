"""Bytes of a release to typed tables, and typed tables back to files.

:mod:`.registry` describes every table (the single source of truth); :mod:`.sources` fetches and checks the files
of a release (a folder, or the Hub through :mod:`.hubsource`, :mod:`.hubcache` and :mod:`.hub`); :mod:`.tables`
reads them into typed Arrow tables; :mod:`.builder` and :mod:`.loading` make ``datasets`` objects of them;
:mod:`.verify` checks a whole source; :mod:`.export` and :mod:`.output` write files; :mod:`.arrowtools` moves data
between pyarrow and numpy.
"""
