"""What doctor reads and how: file kinds, folder walks, code blocks of notes and notebooks, and logs
read in bounded memory.

Folder walks never follow a symbolic link (a loop cannot hang them, a link to /usr/include is not
read as the project's code) and stop at :data:`MAX_FILES` files or :data:`MAX_ENTRIES` directory
entries. Logs and a command's output are streamed: doctor keeps the first and last lines, and in
between every line that names something the text rules look for (with a few lines around it, for
messages a logger wrapped), so a 200 MB log costs seconds and a few MB of memory, and no line longer
than :data:`MAX_LINE` reaches a rule.

Nothing is opened that could block or never end: a file named on the command line must be a regular
file (not a named pipe, a device or a socket), and a log may also be a pipe (``--log <(cmd)``),
opened without waiting for a writer.
"""

from __future__ import annotations

import codecs
import itertools
import json
import os
import re
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import BinaryIO, Protocol

from xlacc.ground import paths
from xlacc.ground.errors import UsageError

C_SUFFIXES = frozenset({".cu", ".cuh", ".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh"})
PY_SUFFIXES = frozenset({".py"})
SH_SUFFIXES = frozenset({".sh", ".bash"})
TEXT_SUFFIXES = frozenset({".md", ".txt", ".log", ".hlo", ".mlir", ".out", ".err", ".rst"})
NOTEBOOK_SUFFIXES = frozenset({".ipynb"})
SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", "build", "dist", "__pycache__", ".venv", "venv", "node_modules", ".pytest_cache", ".mypy_cache", ".tox",
     "site-packages", "third_party", "thirdparty", "3rdparty", "external"}
)
MAX_FILES = 400
# Over MAX_FILES, the files that name XLA's custom-call API come first: in a large repository the
# op's few files would otherwise be cut away by walk order (doctor read none of TransformerEngine's).
MAX_CANDIDATES = 5_000
PROBE_BYTES = 64 * 1024
XLA_WORDS = re.compile(rb"XLA_FFI|xla/ffi|CustomCall|custom_call|register_ffi_target|ffi_call|xla_client|_XLAC")
MAX_ENTRIES = 20_000
MAX_SOURCE_BYTES = 2_000_000  # a source or note bigger than this is read as its first 2 MB
# An HLO or MLIR module is read whole or not at all: a module cut short would seem to hold no
# custom call.
MAX_MODULE_BYTES = 16_000_000  # 16 MB: 3.3 s and 330 MB of doctor
MODULE_SUFFIXES = frozenset({".hlo", ".mlir"})
MODULE_START = re.compile(rb"^\s*HloModule\s")  # how an --xla_dump_to file (module_*.txt) begins
MAX_LINE = 4096  # longer lines are cut before any rule sees them
LOG_HEAD_LINES = 200
LOG_TAIL_LINES = 400
CONTEXT_LINES = 3
MAX_KEPT_BYTES = 4_000_000  # of matching lines in the middle of a log: its first and last halves
GROUP_LINES = 16
CHUNK_BYTES = 1 << 20
ELF_MAGIC = b"\x7fELF"

FENCE_LANGUAGES = {
    "c": ("cuda", "cu", "cpp", "c++", "cc", "c", "cxx", "h", "hpp", "cuh"),
    "py": ("python", "py", "python3", "ipython", "pycon"),
    "sh": ("bash", "sh", "shell", "console", "zsh"),
    "text": ("text", "txt", "log", "hlo", "mlir", "plaintext"),
}
# Code fences: the opening line, then the body up to a closing fence of the same kind and indent.
FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]{0,8})(?P<fence>```+|~~~+)[ \t]*(?P<lang>[\w+.-]{0,40})[^\n]*$", re.M)
GUESSES = (
    ("text", re.compile(r"\bHloModule\b|\bENTRY\s+%|custom-call\(|stablehlo\.")),
    ("c", re.compile(r"#include|__global__|extern\s+\"C\"|<<<|\bXLA_FFI_")),
    ("py", re.compile(r"^\s*(?:import|from)\s+\w|^\s*def\s+\w+\(|^\s*@\w", re.M)),
    ("sh", re.compile(r"^\s*(?:\$\s+)?(?:nvcc|python3?|export|cd|LD_PRELOAD=|pip)\b", re.M)),
)


@dataclass(frozen=True)
class SourceFile:
    name: str  # what findings call it (a path, or path:line for a block of a document)
    kind: str  # c | py | sh | text
    text: str
    group: str  # the file it came from (one check line per group)
    line_offset: int = 0


# -- kinds and blocks -------------------------------------------------------------------------------


def kind_of(path: PurePath) -> str | None:
    suffix = path.suffix.lower()
    for kind, suffixes in (("c", C_SUFFIXES), ("py", PY_SUFFIXES), ("sh", SH_SUFFIXES), ("text", TEXT_SUFFIXES), ("notebook", NOTEBOOK_SUFFIXES)):
        if suffix in suffixes:
            return kind
    return None


def guess_kind(body: str) -> str:
    return next((kind for kind, pattern in GUESSES if pattern.search(body)), "text")


def code_blocks(name: str, text: str) -> list[SourceFile]:
    """The fenced code blocks of a Markdown document (or a note written like one)."""
    blocks = []
    position = 0
    while True:
        opening = FENCE_OPEN.search(text, position)
        if opening is None:
            return blocks
        fence = opening.group("fence")
        closing = re.compile(rf"^{re.escape(opening.group('indent'))}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        body_start = opening.end() + 1
        end = closing.search(text, body_start)
        if end is None:
            return blocks
        body = text[body_start : end.start()]
        lang = opening.group("lang").lower()
        kind = next((k for k, names in FENCE_LANGUAGES.items() if lang in names), None) or guess_kind(body)
        first_line = text.count("\n", 0, body_start)
        blocks.append(SourceFile(f"{name}:{first_line + 1}", kind, body, name, first_line))
        position = end.end()


def notebook_parts(name: str, text: str) -> tuple[list[SourceFile], str]:
    """A Jupyter notebook's code cells (as Python blocks) and its Markdown and outputs (as text).

    Line numbers count the cells' lines in order, as a reader scrolling the notebook would."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError, RecursionError):
        return [], text
    blocks, prose, line = [], [], 0
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        if not isinstance(cell, dict):
            continue
        source = _cell_text(cell.get("source"))
        if cell.get("cell_type") == "code":
            # IPython magics and shell escapes are not Python.
            code = "\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in source.splitlines())
            blocks.append(SourceFile(f"{name}:cell {index + 1}", "py", code, name, line))
            for output in cell.get("outputs", []) if isinstance(cell.get("outputs"), list) else []:
                if isinstance(output, dict):
                    prose.append(_cell_text(output.get("text")) + "\n".join(output.get("traceback", []) or []))
        else:
            prose.append(source)
        line += source.count("\n") + 1
    return blocks, "\n".join(prose)


def _cell_text(value) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


# -- files and folders ------------------------------------------------------------------------------


def require_regular_file(path: Path, flag: str = "") -> None:
    """Refuse (after following links) what reading would block on or never finish: a named pipe
    waits for a writer, /dev/zero never ends. ``flag``: the option that named it, for the message."""
    try:
        kind = paths.special_kind(os.stat(path).st_mode)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if kind is not None:
        raise UsageError(f"{flag + ' ' if flag else ''}{path}: {kind}, not a regular file")


def is_module(path: Path) -> bool:
    """An HLO or MLIR module: by its suffix, or an XLA dump's ``.txt`` by how it begins."""
    if path.suffix.lower() in MODULE_SUFFIXES:
        return True
    try:
        with path.open("rb") as stream:
            return MODULE_START.match(stream.read(256)) is not None
    except OSError:
        return False


def read_module(path: Path) -> str:
    """An HLO or MLIR file's text, whole: a UsageError for one too large to read."""
    size = path.stat().st_size
    if size > MAX_MODULE_BYTES:
        raise UsageError(
            f"{path} is {size / 1e6:.0f} MB; doctor reads an HLO module up to {MAX_MODULE_BYTES // 1_000_000} MB whole: "
            "pass the module that holds your op (--xla_dump_to writes one file per module), or its folder"
        )
    return read_text(path, MAX_MODULE_BYTES)


def read_text(path: Path, limit: int = MAX_SOURCE_BYTES) -> str:
    """A file's text (its first ``limit`` bytes), never raising for its content."""
    try:
        with path.open("rb") as stream:
            data = stream.read(limit)
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return data.decode("utf-8", errors="replace").replace("\0", "")


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(4) == ELF_MAGIC
    except OSError:
        return False


@dataclass
class Walk:
    files: list[Path] = field(default_factory=list)
    links_skipped: int = 0
    truncated: bool = False  # stopped at MAX_FILES or MAX_ENTRIES


def walk(directory: Path, wanted=kind_of, max_files: int = MAX_FILES, max_entries: int = MAX_ENTRIES) -> Walk:
    """Files under ``directory`` whose kind doctor reads, sorted, without following any link; over
    ``max_files``, those that name XLA's custom-call API first."""
    found = _walk(directory, wanted, max(max_files, MAX_CANDIDATES), max_entries)
    if len(found.files) > max_files:
        found.files = sorted(found.files, key=lambda path: not _names_xla(path))[:max_files]
        found.truncated = True
    return _sorted(found)


def _names_xla(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return XLA_WORDS.search(stream.read(PROBE_BYTES)) is not None
    except OSError:
        return False


def _walk(directory: Path, wanted, max_files: int, max_entries: int) -> Walk:
    result = Walk()
    pending = [directory]
    entries = 0
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as listing:
                children = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        subdirectories = []
        for entry in children:
            entries += 1
            if entries > max_entries or len(result.files) >= max_files:
                result.truncated = True
                return result
            try:
                if entry.is_symlink():
                    result.links_skipped += 1
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRECTORIES and not entry.name.startswith("."):
                        subdirectories.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False) and wanted(PurePath(entry.name)) is not None:
                    result.files.append(Path(entry.path))
            except OSError:
                continue
        pending.extend(reversed(subdirectories))
    return result


def _sorted(result: Walk) -> Walk:
    result.files.sort()
    return result


# -- logs -----------------------------------------------------------------------------------------


class Interesting(Protocol):
    """What a text rule reads (:class:`xlacc.commands.doctor.rules.error_text.Anchors`)."""

    def within(self, text: str) -> Interesting | None: ...  # what of it the text names; None: nothing

    def segments_holding(self, text: str, starts: list[int]) -> set[int]: ...  # which segments name some


@dataclass
class LogText:
    """What was kept of a log: its text (head, matching lines with context, tail) and its size."""

    text: str
    lines: int
    bytes: int
    omitted: int  # lines not kept

    @property
    def cut(self) -> bool:
        return self.omitted > 0


class LogCollector:
    """Fed bytes in chunks (a file, a child's pipe); keeps a bounded head, tail and matching middle.

    ``interesting`` tells a text that names something the text rules look for
    (:func:`xlacc.commands.doctor.rules.error_text.interesting`). Lines come in groups of :data:`GROUP_LINES`;
    the groups of a chunk that name something are found with one substring scan per word (no
    Python loop per line), and each is kept whole, with :data:`CONTEXT_LINES` lines on each side
    for messages a logger wrapped.
    Of the middle, the first and the last :data:`MAX_KEPT_BYTES` / 2 are kept: a log full of
    matching lines costs no more than that, and its first and last errors both survive."""

    def __init__(self, interesting: Interesting | None):
        self.interesting = interesting
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.partial = ""
        self.head: list[str] = []
        self.early: list[tuple[int, str]] = []  # kept lines (number, text), in order, first half
        self.early_bytes = 0
        self.late: deque[tuple[int, str]] = deque()  # the last kept lines, second half
        self.late_bytes = 0
        self.recent: deque[tuple[int, str]] = deque(maxlen=LOG_TAIL_LINES)
        self.count = 0
        self.bytes = 0
        self.keep_until = -1  # context after a match: keep lines up to this number

    def feed(self, data: bytes) -> None:
        self.bytes += len(data)
        text = self.partial + self.decoder.decode(data).replace("\0", "")
        held = "\r" if text.endswith("\r") else ""  # the \n that may follow comes in the next chunk
        text = text.removesuffix(held).replace("\r\n", "\n").replace("\r", "\n")  # a progress bar's \r ends a line too
        lines = text.split("\n")
        self.partial = lines.pop() + held
        if len(self.partial) > MAX_LINE * 4:  # a newline-free flood: cut it into lines
            lines.append(self.partial[:MAX_LINE])
            self.partial = ""
        self._lines(lines)

    def _lines(self, lines: list[str]) -> None:
        if self.count < LOG_HEAD_LINES:
            taken = lines[: LOG_HEAD_LINES - self.count]
            self.head.extend(line[:MAX_LINE] for line in taken)
            self.count += len(taken)
            lines = lines[len(taken) :]
        if not lines:
            return
        text = "\n".join(lines)
        interesting = self.interesting.within(text) if self.interesting else None
        if self.count > self.keep_until and interesting is None:
            self._recent(lines)
            return
        base = self.count
        before = dict(list(self.recent)[-CONTEXT_LINES:])  # the lines just before these, by number
        matching = interesting.segments_holding(text, _group_starts(lines)) if interesting else set()
        for start in range(0, len(lines), GROUP_LINES):
            first = base + start
            if first > self.keep_until and start // GROUP_LINES not in matching:
                continue
            group = [line[:MAX_LINE] for line in lines[start : start + GROUP_LINES]]
            if start // GROUP_LINES in matching:
                for number in range(first - CONTEXT_LINES, first):
                    line = lines[number - base][:MAX_LINE] if number >= base else before.get(number)
                    if line is not None:
                        self._keep(number, line)
                for offset, line in enumerate(group):
                    self._keep(first + offset, line)
                self.keep_until = first + len(group) - 1 + CONTEXT_LINES
            else:
                for offset, line in enumerate(group[: max(0, self.keep_until - first + 1)]):
                    self._keep(first + offset, line)
        self._recent(lines)

    def _recent(self, lines: list[str]) -> None:
        start = self.count
        self.count += len(lines)
        skip = max(0, len(lines) - LOG_TAIL_LINES)
        self.recent.extend((start + i, line[:MAX_LINE]) for i, line in enumerate(lines[skip:], skip))

    def _keep(self, number: int, text: str) -> None:
        last = self.late[-1][0] if self.late else (self.early[-1][0] if self.early else -1)
        if number <= last:
            return
        if self.early_bytes < MAX_KEPT_BYTES // 2 and not self.late:
            self.early.append((number, text))
            self.early_bytes += len(text) + 1
            return
        self.late.append((number, text))
        self.late_bytes += len(text) + 1
        while self.late_bytes > MAX_KEPT_BYTES // 2:
            self.late_bytes -= len(self.late.popleft()[1]) + 1

    def finish(self) -> LogText:
        tail = self.decoder.decode(b"", final=True)
        if self.partial or tail:
            self._lines([(self.partial + tail).removesuffix("\r")[:MAX_LINE]])
            self.partial = ""
        recent = list(self.recent)
        first_recent = recent[0][0] if recent else self.count
        kept = [(n, t) for n, t in self.early + list(self.late) if n < first_recent]
        parts: list[str] = list(self.head)
        previous = len(self.head) - 1
        omitted = 0
        for number, text in kept + recent:
            if number > previous + 1:
                omitted += number - previous - 1
                parts.append("")  # a gap: an empty line keeps messages on either side apart
            parts.append(text)
            previous = number
        return LogText("\n".join(parts), self.count, self.bytes, omitted)


def _group_starts(lines: list[str]) -> list[int]:
    """Where each group of GROUP_LINES lines starts in ``"\\n".join(lines)``."""
    lengths = list(itertools.accumulate(map(len, lines)))  # no newlines: they add one per line
    return [0] + [lengths[last] + last + 1 for last in range(GROUP_LINES - 1, len(lines) - 1, GROUP_LINES)]


def read_log(stream: BinaryIO, interesting: Interesting | None) -> LogText:
    collector = LogCollector(interesting)
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            return collector.finish()
        collector.feed(chunk)


def read_log_file(path: Path, interesting: Interesting | None) -> LogText:
    """A log file, or a pipe (``--log <(cmd)`` is /dev/fd/63); a device or a socket is refused."""
    try:
        with _open_log(path) as stream:
            return read_log(stream, interesting)
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; --log takes a file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _open_log(path: Path) -> BinaryIO:
    mode = os.stat(path).st_mode
    if stat.S_ISFIFO(mode):
        # Opening a pipe for reading waits for a writer unless non-blocking; once open, a pipe
        # without a writer reads as empty, and one with a writer is read to its end.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    kind = paths.special_kind(mode)
    if kind is not None:
        raise UsageError(f"{path}: {kind}; --log takes a regular file or a pipe")
    return path.open("rb")
