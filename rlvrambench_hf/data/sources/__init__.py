"""Where a release comes from and how its files are checked.

:mod:`.base` is the :class:`~.base.Source` every reader takes (files by repository path, each checked against the
release's manifests); :mod:`.local` is a folder laid out like the Hub repository; :mod:`.hub` a Hub repository at a
revision, read through huggingface_hub's cache, whose copies :mod:`.hubcache` checks against their Hub object ids;
:mod:`.huberrors` maps Hub and network exceptions to one-line errors; :mod:`.resolve` turns what a caller gives
(:data:`~.resolve.SourceLike`, the environment) into a Source.
"""
