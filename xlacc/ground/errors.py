"""Errors that end a command with a one-line message instead of a traceback."""

from __future__ import annotations


class XlaccError(Exception):
    """A problem the user can fix; the CLI prints ``str(self)`` on one line."""

    exit_code = 1


class UsageError(XlaccError):
    """Bad input: a flag, a name, a spec, a missing file (exit 2)."""

    exit_code = 2


class SpecError(UsageError):
    """An invalid ``xlacc.toml``: the message names the file, the key and what is allowed."""

    def __init__(self, path, key: str, message: str):
        super().__init__(f"{path}: [{key}] {message}")
        self.path = path
        self.key = key
        self.message = message


class ToolchainMissing(UsageError):
    """No compiler (or headers) to build with; the message says what to install."""
