"""Where a build may write its library: inside the project or the current folder, never over a
source, a folder or a file that is not a shared library."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from xlacc.ground.errors import UsageError
from xlacc.ground.paths import check_directory, resolve_inside, same_file
from xlacc.readers.elf_tables import is_shared_library


def library_output(path: Path, *, roots: Sequence[Path], sources: Iterable[Path], origin: str) -> Path:
    """Where a build may write its library: the resolved path, or a one-line UsageError.

    ``origin`` is the path as the user gave it (``-o 'k.cc'``, ``demo/xlacc.toml: [build.output] 'k.cc'``).
    """
    resolved = resolve_inside(path, roots, origin)
    if any(same_file(resolved, source) for source in sources):
        raise UsageError(f"{origin} is one of the sources: the library would replace it; nothing was written")
    if resolved.is_dir():
        raise UsageError(f"{origin} is a directory: name the library file, such as build/libNAME.so")
    if resolved.exists() and not is_shared_library(resolved):
        raise UsageError(f"{origin} exists and is not a shared library: xlacc does not overwrite it; choose another path")
    check_directory(resolved.parent, origin)
    return resolved
