"""Will my run fit? Plans read from a user's own config (:mod:`.plans`), answered measurement first."""
