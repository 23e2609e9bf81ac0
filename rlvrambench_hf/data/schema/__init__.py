"""What the tables of a release are: the registry (:mod:`.registry`, the entries) and its classes (:mod:`.spec`),
the column vocabulary (:mod:`.columns`), the column kinds (:mod:`.kinds`), the card's front matter (:mod:`.card`)
and what the package pins about the release (:mod:`.pins`)."""
