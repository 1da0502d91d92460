"""Every path xlacc writes: resolved and checked here, and written all at once or not at all; and
the one way it reads a file the user named (a regular file, of bounded size).

A path xlacc writes lies inside the place it was asked to write to (the project; for kernel files
the current directory or the sources' own), reached without a symlink that leads out. It is never
one of the sources, and an existing file is replaced only when it is a shared library (what a
build writes), never a file the user wrote. A write that was killed (SIGKILL, a power cut) leaves
hidden ``.NAME.PID.XXXXXXXX.tmp`` and ``.bak`` files beside its targets: a later write of the same
files removes those of a process that is gone (:func:`clear_leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from xlacc.ground.errors import UsageError

SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


# -- reading -----------------------------------------------------------------------------------


def special_kind(mode: int) -> str | None:
    """What a file of this ``st_mode`` is when it is neither a regular file nor a directory."""
    return next((kind for is_kind, kind in SPECIAL_KINDS if is_kind(mode)), None)


def read_user_file(path: Path, limit: int) -> bytes:
    """A regular file's bytes. Opened without blocking (a named pipe with no writer would wait
    forever), and refused when it is not a regular file (/dev/zero never ends) or holds more than
    ``limit`` bytes. FileNotFoundError passes through; other failures are a UsageError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        _check_readable(path, os.fstat(fd), limit)  # before fdopen, which refuses a directory with an OSError
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as stream:
        os.set_blocking(fd, True)
        return stream.read(limit + 1)[:limit]


def _check_readable(path: Path, status: os.stat_result, limit: int) -> None:
    """A UsageError unless ``status`` is a regular file's of at most ``limit`` bytes."""
    if stat.S_ISDIR(status.st_mode):
        raise UsageError(f"{path} is a directory, not a file")
    if not stat.S_ISREG(status.st_mode):
        raise UsageError(f"{path}: {special_kind(status.st_mode) or 'an unusual file'}, not a regular file")
    if status.st_size > limit:
        raise UsageError(f"{path}: {status.st_size / 1e6:.1f} MB, more than the {limit / 1e6:.0f} MB xlacc reads of such a file")


# -- checks ------------------------------------------------------------------------------------


def real(path: Path | str) -> Path:
    """``path`` made absolute with every symlink resolved (missing tail components kept)."""
    return Path(os.path.realpath(path))


def shown(path: Path, root: Path) -> str:
    """A path as a user (or a compiler run in ``root``) reads it: relative to ``root`` when inside it."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def for_user(path: Path) -> str:
    """A path in xlacc's output: relative to the current folder when inside it, absolute otherwise
    (and absolute where the current folder is gone)."""
    path = Path(os.path.abspath(path))
    try:
        here = Path.cwd()
    except OSError:
        return str(path)
    return str(path.relative_to(here)) if is_inside(path, here) else str(path)


# A source or header named in a compiler's message: `./kernel.cc:17:3:`, `kernel.cu(3):`,
# `In file included from demo/_entry_points.cc:5`, or an absolute path.
SOURCE_IN_MESSAGE = re.compile(r"(?<![\w/.+-])((?:/|\./)?[\w+-][\w./+-]*\.(?:cu|cuh|cc|cpp|cxx|c|h|hh|hpp|hxx|inc|inl))(?=[:(,]|$)", re.MULTILINE)


def for_user_in(text: str, root: Path) -> str:
    """A compiler's output, run in ``root``, with each file it names as :func:`for_user` shows it."""
    known: dict[str, str] = {}

    def rewrite(match: re.Match) -> str:
        name = match.group(1)
        if name not in known:
            path = Path(name) if name.startswith("/") else root / name
            known[name] = for_user(path) if path.is_file() else name
        return known[name]

    return SOURCE_IN_MESSAGE.sub(rewrite, text)


def is_inside(path: Path, root: Path) -> bool:
    """Whether the resolved ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


def resolve_inside(path: Path, roots: Sequence[Path], origin: str) -> Path:
    """``path`` resolved; a UsageError unless it lands inside one of ``roots``.

    Resolving first means a symlink inside the project that leads out is refused like ``..``.
    ``origin`` is the path as the user gave it, with where it came from (``-o 'k.cc'``).
    """
    resolved = real(path)
    if not any(is_inside(resolved, real(root)) for root in roots):
        places = " or ".join(str(root) for root in dict.fromkeys(roots))
        raise UsageError(f"{origin} leads outside {places}: xlacc writes only there; nothing was written")
    return resolved


def check_directory(directory: Path, origin: str) -> None:
    """A one-line UsageError when a file stands where ``directory`` (or one of its parents) must be."""
    blocker = _file_in_the_way(directory)
    if blocker is not None:
        raise UsageError(f"{origin}: {blocker} is a file, not a directory; nothing was written")


def make_directory(directory: Path) -> None:
    """Create ``directory`` (and its parents); a one-line UsageError when it cannot be."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"cannot create {directory}: a file of that name is in the way") from None
    except OSError as exc:
        raise UsageError(f"cannot create {directory}: {exc.strerror or exc}") from None


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same path once resolved (whether or not it exists
    yet), or one file reached by two paths (a hard link)."""
    if real(a) == real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _file_in_the_way(directory: Path) -> Path | None:
    """The nearest existing ancestor of ``directory`` (itself included) when it is not a directory."""
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


# -- all-or-nothing writes ---------------------------------------------------------------------


def write_all(root: Path, files: Mapping[str, bytes | str]) -> None:
    """Write every file under ``root`` or none of them.

    Each file goes to a temporary name beside its target; only when all are written are they
    renamed into place. A failure (or Ctrl-C) puts back what had been replaced, removes the
    temporaries and the directories made for them, and raises UsageError (KeyboardInterrupt is
    re-raised). SIGINT and SIGTERM wait while the files are renamed or put back: one that came
    meanwhile puts everything back, then interrupts. New files get the mode the umask allows; a
    replaced file keeps its mode.
    """
    targets = {target_path(root, relative): as_bytes(data) for relative, data in files.items()}
    made: list[Path] = []
    temporaries: dict[Path, Path] = {}
    backups: dict[Path, Path] = {}
    renamed: list[Path] = []
    target = Path(root)
    try:
        for target, data in targets.items():
            made += _make_parents(target.parent)
            temporaries[target] = _write_temporary(target, data)
        with _signals_held() as signal_waiting:
            try:
                for target in targets:
                    if target.exists():
                        backups[target] = _backup(target)
                for target, temporary in temporaries.items():
                    renamed.append(target)
                    os.replace(temporary, target)
                if signal_waiting():
                    raise KeyboardInterrupt
            except BaseException:
                _roll_back(renamed, backups, temporaries, made)
                raise
            renamed.clear()  # written: nothing is put back from here on
            _discard(backups.values())
    except BaseException as exc:
        _roll_back(renamed, backups, temporaries, made)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}; nothing was written") from None
        raise


HELD_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def _signals_held() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT and SIGTERM until the block ends, then deliver them; yields whether one is
    waiting. Their Python handlers are swapped for ones that only note the signal: a signal mask
    would hold it for this thread alone, and another thread (a spinner) could still take it and
    run the handler here. Off the main thread, where handlers cannot be set, nothing is held."""
    waiting: list[int] = []
    try:
        previous = {number: signal.signal(number, lambda number, _frame: waiting.append(number)) for number in HELD_SIGNALS}
    except ValueError:  # not the main thread
        yield lambda: False
        return
    try:
        yield lambda: bool(waiting)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(waiting):
            signal.raise_signal(number)


def target_path(root: Path, relative: str) -> Path:
    """The absolute target of a project-relative path; refuses paths that leave ``root``."""
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise UsageError(f"{relative!r} is not a path inside {root}; nothing was written")
    target = Path(os.path.abspath(root)) / relative
    resolve_inside(target, [root], str(target))
    if target.is_dir() and not target.is_symlink():
        raise UsageError(f"{target} is a directory where xlacc writes a file; nothing was written (move it away first)")
    blocker = _file_in_the_way(target.parent)
    if blocker is not None:
        raise UsageError(f"{blocker} is a file where xlacc needs a directory; nothing was written")
    return target


def as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return those it created, outermost first."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for created in reversed(missing):
        created.mkdir()
    return list(reversed(missing))


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.{kind}")


def _write_temporary(target: Path, data: bytes) -> Path:
    temporary = _sibling(target, "tmp")
    # 0o666 through open(2): the kernel applies the umask, as for any file a program creates.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if target.exists():
            os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _backup(target: Path) -> Path:
    """A second name for the file about to be replaced (a hard link; a copy where links fail)."""
    backup = _sibling(target, "bak")
    try:
        os.link(target, backup)
    except OSError:
        shutil.copy2(target, backup)
    return backup


def _roll_back(renamed: list[Path], backups: dict[Path, Path], temporaries: dict[Path, Path], made: list[Path]) -> None:
    """Put back what was replaced, remove what was added; emptied, so that a second call does nothing."""
    for target in reversed(renamed):
        if target in backups:
            os.replace(backups.pop(target), target)
        elif target in temporaries and not temporaries[target].exists():  # renamed into place: it is new
            target.unlink(missing_ok=True)
    for leftover in [*temporaries.values(), *backups.values()]:
        leftover.unlink(missing_ok=True)
    for directory in reversed(made):
        try:
            directory.rmdir()
        except OSError:
            pass
    renamed.clear()
    backups.clear()
    temporaries.clear()
    made.clear()


def _discard(leftovers: Iterable[Path]) -> None:
    """Remove what is no longer needed; one that stays is removed by a later write (clear_leftovers)."""
    for leftover in leftovers:
        with contextlib.suppress(OSError):
            leftover.unlink(missing_ok=True)


# -- what an interrupted write left ------------------------------------------------------------

LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.(?:tmp|bak)$")


def clear_leftovers(root: Path, relatives: Iterable[str]) -> None:
    """Remove the temporaries and backups (``.NAME.PID.XXXXXXXX.tmp|bak``) that a killed write of
    these files left beside them: those of a process that is gone. Nothing else is touched, and
    nothing outside ``root``."""
    names: dict[Path, set[str]] = {}
    for relative in relatives:
        target = Path(root) / relative
        names.setdefault(target.parent, set()).add(target.name)
    for folder, wanted in names.items():
        if not is_inside(real(folder), real(root)):
            continue
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        _discard(Path(entry.path) for entry in entries if _left_by_a_dead_write(entry, wanted))


def _left_by_a_dead_write(entry: os.DirEntry, wanted: set[str]) -> bool:
    match = LEFTOVER.match(entry.name)
    return bool(match and match["name"] in wanted and entry.is_file(follow_symlinks=False) and not process_alive(int(match["pid"])))


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
