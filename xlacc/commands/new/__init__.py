"""``xlacc new`` and ``xlacc update``: a project rendered from a template (:mod:`.project`) or around
a kernel the user has (:mod:`.wrap`), kept current without losing edits (:mod:`.update`), with
xlacc's record of what it wrote (:mod:`.record`)."""
