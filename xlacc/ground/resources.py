"""Where xlacc's own files are: the C++ headers generated code includes, and the templates
(inside the wheel, or beside the package in a checkout)."""

from __future__ import annotations

from pathlib import Path

from xlacc.ground.errors import UsageError

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # xlacc/
INCLUDE_DIR = PACKAGE_DIR / "include"  # xlacc/kernel.h, entry.h, ffi.h
CHECKOUT_DIR = PACKAGE_DIR.parent  # the repository, when xlacc runs from a checkout


def templates_root() -> Path:
    """Templates ship inside the wheel as ``xlacc/templates``; a source checkout has them at the top."""
    for folder in (PACKAGE_DIR / "templates", CHECKOUT_DIR / "templates"):
        if folder.is_dir():
            return folder
    raise UsageError("xlacc's templates are missing from this installation: reinstall xlacc")
