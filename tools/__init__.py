"""Maintenance tools for xlacc's own repository, outside the package's import graph."""
