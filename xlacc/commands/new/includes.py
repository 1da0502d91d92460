"""The files a kernel source includes, found as the compiler will find them: a quoted include next
to its includer first, then in the ``--include`` folders ([build] include_dirs). Headers found
nowhere (the system's, CUDA's, PyTorch's) are left out: xlacc reads only the user's code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
MAX_FILES = 200
MAX_BYTES = 16_000_000  # a kernel tree larger than this is read only in part


@dataclass(frozen=True)
class Included:
    path: Path
    text: str
    by: Path  # the file that includes it


def search_folders(includer: Path, quote: str, include_dirs: tuple[Path, ...]) -> tuple[Path, ...]:
    return ((includer.parent,) if quote == '"' else ()) + tuple(include_dirs)


def find(name: str, folders: tuple[Path, ...]) -> Path | None:
    for folder in folders:
        candidate = folder / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def closure(root: Path, text: str, include_dirs: tuple[Path, ...]) -> list[Included]:
    """Every file ``root`` includes, directly or not, that lies next to its includer or in
    ``include_dirs``: breadth first, each once, up to MAX_FILES files and MAX_BYTES bytes."""
    seen = {root.resolve()}
    found: list[Included] = []
    pending = [(root.resolve(), text)]
    total = 0
    while pending and len(found) < MAX_FILES and total < MAX_BYTES:
        includer, source = pending.pop(0)
        for quote, name in INCLUDE.findall(source):
            header = find(name.strip(), search_folders(includer, quote, include_dirs))
            if header is None or header in seen:
                continue
            seen.add(header)
            try:
                body = header.read_bytes()[:MAX_BYTES].decode("utf-8", errors="replace")
            except OSError:
                continue
            total += len(body)
            found.append(Included(header, body, includer))
            pending.append((header, body))
    return found
