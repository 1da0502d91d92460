"""What a build reads and keeps: its inputs (sources and the headers they include), the cache key,
the project's cache file and the shared cache ($XLACC_CACHE_DIR), each read defensively: a damaged
entry costs a compile, never an error."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from xlacc.ground import paths, toolchain
from xlacc.ground.errors import UsageError
from xlacc.ground.report import Check


CACHE_FILE = ".xlacc-cache.json"


CACHE_FORMAT = 1


# A folder that builds share (CI, several checkouts, tests): a library is stored there under its
# cache key, which covers the sources, their headers, the command and the compiler, but not where
# the project is; a build with the same key copies it instead of compiling.
SHARED_CACHE_ENV = "XLACC_CACHE_DIR"


MAX_SOURCE_BYTES = 64_000_000  # a source or header read for the cache key


MAX_CACHE_FILE_BYTES = 16_000_000  # .xlacc-cache.json, a KEY.log: larger is no cache, not an error


# #include "x.h" or <x.h>: followed into the include folders xlacc knows (for the cache key).
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)


def digests(inputs: dict[Path, bytes]) -> dict[Path, str]:
    """Each input's text and the time it was last written: a save undone while the compiler ran
    leaves the text as it was, not the time."""
    return {path: f"{hashlib.sha256(data).hexdigest()} {(_file_stamp(path) or [0])[0]}" for path, data in inputs.items()}


def read_inputs(sources: tuple[Path, ...], search_path: tuple[Path, ...] = ()) -> dict[Path, bytes]:
    """The sources and every header they include that sits next to its includer or in one of
    ``search_path`` (xlacc's headers, the project, its include_dirs): what the cache key covers."""
    inputs: dict[Path, bytes] = {}
    pending = list(sources)
    while pending:
        path = pending.pop(0)
        if path in inputs:
            continue
        try:
            inputs[path] = paths.read_user_file(path, MAX_SOURCE_BYTES)
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file") from None
        for quote, name in INCLUDE.findall(inputs[path].decode("utf-8", errors="replace")):
            folders = ((path.parent,) if quote == '"' else ()) + search_path
            header = next((d / name for d in folders if (d / name).exists() and not (d / name).is_dir()), None)
            if header is not None and header.resolve() not in inputs:
                pending.append(header.resolve())
    return inputs


def cache_key(inputs: dict[Path, bytes], command: list[str], compiler: toolchain.Compiler, ffi_digest: str) -> str:
    digest = hashlib.sha256()
    for part in (json.dumps(command), compiler.kind, compiler.version, ffi_digest):
        digest.update(part.encode() + b"\0")
    for path, data in inputs.items():
        digest.update(path.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _file_stamp(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


@dataclass
class BuildCache:
    """``.xlacc-cache.json``: per library the key it was built from; the compilers' versions."""

    path: Path
    libraries: dict[str, dict] = field(default_factory=dict)
    compilers: toolchain.VersionMemo = field(default_factory=dict)
    _loaded: str = field(default="", repr=False, compare=False)

    @classmethod
    def load(cls, path: Path) -> BuildCache:
        """The cache in ``path``; an empty one when it cannot be read (missing, damaged, not a
        regular file, oversized): that only costs a compile."""
        try:
            raw = json.loads(paths.read_user_file(path, MAX_CACHE_FILE_BYTES))
        except (OSError, ValueError, UsageError):
            return cls(path)
        if not isinstance(raw, dict) or raw.get("format") != CACHE_FORMAT:
            return cls(path)
        cache = cls(path, _well_formed(raw.get("libraries"), _library_entry), _well_formed(raw.get("compilers"), _compiler_entry))
        cache._loaded = cache._serialize()
        return cache

    def _name(self, library: Path) -> str:
        return os.path.relpath(library, self.path.parent)

    def fresh(self, library: Path, key: str) -> bool:
        entry = self.libraries.get(self._name(library))
        return bool(entry) and entry.get("key") == key and entry.get("stamp") == _file_stamp(library)

    def record(self, library: Path, key: str, command: list[str], archs: list[str]) -> None:
        self.libraries[self._name(library)] = {
            "key": key,
            "stamp": _file_stamp(library),
            "command": command,
            "archs": archs,
        }

    def mark_current(self, library: Path, inputs: tuple[Path, ...]) -> None:
        """A fresh library older than an input (touched, or edited and put back): given the time of
        now, so that a newer source means a stale library to whoever compares times (doctor, the
        generated package), and its entry the new stamp."""
        stamp = _file_stamp(library)
        if stamp is None or not any((_file_stamp(path) or [0])[0] > stamp[0] for path in inputs):
            return
        with contextlib.suppress(OSError):
            os.utime(library)
        entry = self.libraries.get(self._name(library))
        if entry is not None:
            entry["stamp"] = _file_stamp(library)

    def verification(self, library: Path, question: dict) -> list[Check] | None:
        entry = self.libraries.get(self._name(library)) or {}
        verified = entry.get("verified") or {}
        if verified.get("question") != question or entry.get("stamp") != _file_stamp(library):
            return None
        return [Check(name, ok, detail) for name, ok, detail in verified["checks"]]

    def remember_verification(self, library: Path, question: dict, checks: list[Check]) -> None:
        entry = self.libraries.get(self._name(library))
        if entry is not None and entry.get("stamp") == _file_stamp(library):
            entry["verified"] = {"question": question, "checks": [[c.name, c.ok, c.detail] for c in checks]}

    def _serialize(self) -> str:
        body = {"format": CACHE_FORMAT, "libraries": self.libraries, "compilers": self.compilers}
        return json.dumps(body, indent=1, sort_keys=True)

    def save(self) -> None:
        text = self._serialize()
        if text == self._loaded:
            return
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:  # a cache that cannot be written only costs a rebuild
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            return
        self._loaded = text


def _well_formed(table: Any, valid: Callable[[dict], bool]) -> dict[str, dict]:
    """A cache table's entries of the shape xlacc writes; any other (a list, a string, a damaged
    entry: a file edited by hand or cut short) is left out, and costs only a compile."""
    if not isinstance(table, dict):
        return {}
    return {name: entry for name, entry in table.items() if isinstance(entry, dict) and valid(entry)}


def _is_stamp(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in value)


def _library_entry(entry: dict) -> bool:
    verified = entry.get("verified", {"question": None, "checks": []})
    checks = verified.get("checks") if isinstance(verified, dict) else None
    return (
        isinstance(entry.get("key"), str)
        and _is_stamp(entry.get("stamp"))
        and isinstance(checks, list)
        and all(isinstance(c, list) and len(c) == 3 and isinstance(c[0], str) and c[1] in (True, False, None) and isinstance(c[2], str) for c in checks)
    )


def _compiler_entry(entry: dict) -> bool:
    return _is_stamp(entry.get("stamp")) and isinstance(entry.get("version"), str)


@dataclass(frozen=True)
class SharedCache:
    """``$XLACC_CACHE_DIR``: ``KEY.so`` and the compiler's output ``KEY.log`` per library. Written
    through a temporary file and a rename, so that builds running at once never see half a file."""

    folder: Path

    @classmethod
    def from_environment(cls) -> SharedCache | None:
        folder = os.environ.get(SHARED_CACHE_ENV, "").strip()
        return cls(Path(folder).expanduser()) if folder else None

    def unusable(self) -> str | None:
        """Why the folder cannot give libraries (it is a file, or not readable); None when it can
        (a folder that does not exist yet is made by the first store)."""
        if not self.folder.exists():
            return None
        if not self.folder.is_dir():
            return "is a file, not a folder"
        if not os.access(self.folder, os.R_OK | os.X_OK):
            return "is a folder xlacc cannot read"
        return None

    def read_only(self) -> bool:
        """A cache CI filled and mounted read-only: libraries are copied from it, none stored."""
        return self.folder.is_dir() and not os.access(self.folder, os.W_OK)

    def copy(self, key: str, library: Path, entry_points: tuple[str, ...] = ()) -> str | None:
        """Put the stored library at ``library``; its compiler output, or None if none is stored.
        A damaged entry (a log that is no regular file or too large, a stored file that is no
        shared library or exports not every entry point) is dropped, and never replaces the
        library there."""
        output = self._stored_output(key)
        if output is None:
            return None
        paths.make_directory(library.parent)
        temporary = temporary_output(library)
        try:
            if not self._copy_library(key, temporary) or not exports_all(temporary, entry_points):
                self._drop(key)
                return None
            os.replace(temporary, library)
        except OSError:
            return None
        finally:
            temporary.unlink(missing_ok=True)
        return output

    def _stored_output(self, key: str) -> str | None:
        """``KEY.log``, whose presence marks an entry whole; None when there is none, or when it
        cannot be read (then the entry is dropped)."""
        try:
            data = paths.read_user_file(self.folder / f"{key}.log", MAX_CACHE_FILE_BYTES)
        except FileNotFoundError:
            return None
        except (OSError, UsageError):
            self._drop(key)
            return None
        return data.decode("utf-8", errors="replace")

    def _copy_library(self, key: str, destination: Path) -> bool:
        """``KEY.so`` copied to ``destination``; False when it is no shared library (a pipe, garbage, cut short)."""
        stored = self.folder / f"{key}.so"
        if not stat.S_ISREG(os.stat(stored).st_mode):
            return False
        shutil.copyfile(stored, destination)
        return not_a_library(destination) is None

    def _drop(self, key: str) -> None:
        for name in (f"{key}.log", f"{key}.so"):  # the log first: it marks the pair whole
            with contextlib.suppress(OSError):
                (self.folder / name).unlink()

    def store(self, key: str, library: Path, compiler_output: str) -> None:
        """Keep a copy; a cache that cannot be written only costs a later build its compile."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._write(f"{key}.so", lambda path: shutil.copyfile(library, path))
            self._write(f"{key}.log", lambda path: path.write_text(compiler_output, encoding="utf-8"))  # last: it marks the pair whole
        except OSError:
            return

    def _write(self, name: str, write) -> None:
        temporary = self.folder / f".{name}.{os.getpid()}.tmp"
        try:
            write(temporary)
            os.replace(temporary, self.folder / name)
        finally:
            temporary.unlink(missing_ok=True)


def temporary_output(library: Path) -> Path:
    """Where the compiler writes before the rename; the pid lets a later build clear leftovers."""
    return library.with_name(f".{library.name}.{os.getpid()}.tmp")


def exports_all(path: Path, entry_points: tuple[str, ...]) -> bool:
    """Whether the library at ``path`` exports every entry point (a stored copy that does not is
    not the one its key names)."""
    if not entry_points:
        return True
    from xlacc.readers import elf  # lazy: pyelftools' import; a no-op build reads no library

    try:
        exported = elf.read_shared_object(path).exported
    except elf.ElfError:
        return False
    return all(name in exported for name in entry_points)


def not_a_library(path: Path) -> str | None:
    """Why the file a compiler (or the shared cache) wrote is not a shared library xlacc may put in
    place, "" when there is no file; None when it is one (one built for another machine too:
    verification says so)."""
    from xlacc.readers import elf  # lazy: pyelftools' import; a no-op build reads no library

    try:
        elf.read_shared_object(path)
    except elf.ElfError as exc:
        if exc.kind == "wrong-machine":
            return None
        return "" if exc.kind == "not-found" else str(exc).removeprefix(f"{path}: ")
    return None
