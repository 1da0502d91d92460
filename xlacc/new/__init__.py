"""`xlacc new`: writing a project, from a template or from a kernel the user has."""
