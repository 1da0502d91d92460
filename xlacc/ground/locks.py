"""One writer of a project at a time: ``xlacc new``, ``update`` and ``build`` hold an advisory lock
(``fcntl.flock``) on a file of the project, so two of them started together run one after the
other instead of interleaving their writes (two ``new`` into one folder once left one op's spec
beside both ops' packages).

The lock file is ``.xlacc/lock`` in a project with a record, ``.xlacc-lock`` in one without, and
``.NAME.xlacc-lock`` beside a folder ``new`` has yet to make. It holds the holder's pid and
command, so a waiting process can say whom it waits for, and is removed when the lock is released.
A lock that cannot be made (a read-only folder) is skipped: the write that follows fails or
succeeds on its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = "lock"  # under the project's .xlacc/
RECORD_DIR = ".xlacc"

_held: dict[Path, int] = {}  # lock file -> how many times this process holds it (build inside update)


def lock_file(folder: Path) -> Path | None:
    """The file that guards ``folder``: in its record when it has one, else beside it (in the
    nearest folder above it that exists, as ``new`` may have to make several); None for ``/``."""
    child = Path(os.path.realpath(folder))
    if (child / RECORD_DIR).is_dir():
        return child / RECORD_DIR / LOCK_NAME
    while not child.parent.is_dir() and child.parent != child:
        child = child.parent
    return child.parent / f".{child.name}.xlacc-lock" if child.name else None


@contextlib.contextmanager
def project_lock(folder: Path, command: str) -> Iterator[None]:
    """Hold the lock of the project in ``folder`` while the block runs; wait (saying for whom on
    stderr) while another xlacc process holds it. Re-entrant within one process (a build that
    updates first)."""
    path, fd = _lock(folder, command)
    if path is None:
        yield
        return
    _held[path] = _held.get(path, 0) + 1
    try:
        yield
    finally:
        _held[path] -= 1
        if not _held[path]:
            del _held[path]
            if fd is not None:
                _release(path, fd)


def _lock(folder: Path, command: str) -> tuple[Path | None, int | None]:
    """The lock file and its locked descriptor (None: this process holds it already); the file
    is found again after a wait, as the holder may have made the folder or its record."""
    while True:
        path = lock_file(folder)
        if path is None or path in _held:
            return path, None
        fd = _acquire(path, command, folder)
        if fd is None:
            return None, None
        if lock_file(folder) == path:
            return path, fd
        _release(path, fd)


def _acquire(path: Path, command: str, folder: Path) -> int | None:
    """An open descriptor of ``path`` holding its lock, or None where the file cannot be made."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stderr.write(f"xlacc: waiting for {_holder(fd)}, which is writing {folder}\n")
            sys.stderr.flush()
            fcntl.flock(fd, fcntl.LOCK_EX)
        if _still_linked(path, fd):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {command}\n".encode())
            return fd
        os.close(fd)  # its holder removed it as we waited: lock the file that is there now


def _still_linked(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _release(path: Path, fd: int) -> None:
    """Remove the file while holding it (a waiter then finds it gone and locks a new one), then unlock."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    os.close(fd)


def _holder(fd: int) -> str:
    """``xlacc new (pid 1234)`` from what the holder wrote, or ``another xlacc process``."""
    try:
        pid, _, command = os.pread(fd, 200, 0).decode("utf-8", "replace").strip().partition(" ")
    except OSError:
        return "another xlacc process"
    return f"xlacc {command} (pid {pid})" if pid.isdigit() and command else "another xlacc process"
