"""xlacc's version: the wheel's, and the one a project's record names."""

__version__ = "0.2.0"
