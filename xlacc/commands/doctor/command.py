"""``xlacc doctor -- COMMAND``: run the command, and find the program it runs.

The command runs in its own session (:mod:`xlacc.ground.process`). Its output is streamed into a bounded
collector (:class:`xlacc.commands.doctor.inputs.LogCollector`), so 100 MB of output costs seconds and a few
MB. When the command exits, or its time is up, the whole group is stopped: a grandchild left in
the background holding the output pipe open cannot make doctor wait.

The program: the Python script the command runs (``python x.py``, ``python -m pkg.mod``,
``pytest test_x.py``), the shared libraries it loads with ctypes, and the sources beside them,
so the run can be ranked with what the code says.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from xlacc.commands.doctor import inputs
from xlacc.commands.doctor.rules.run import signal_name
from xlacc.ground.errors import UsageError
from xlacc.ground.process import check_timeout, run_in_session
from xlacc.readers import python as pyparse

DEFAULT_TIMEOUT_S = 600.0
DRAIN_AFTER_EXIT_S = 0.5  # output a finished command's group may still flush
KILL_GRACE_S = 2.0
OUTPUT_TAIL_LINES = 20
MAX_PROGRAM_FILES = 60
IMPORT_DEPTH = 3
PYTHON = re.compile(r"(?:^|/)(?:python[\d.]*|pypy[\d.]*)$")
RUNNERS = ("pytest", "py.test")
SHELLS = ("bash", "sh", "zsh", "dash")
MAX_SHELL_LINES = 500


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: timed out
    output: inputs.LogText
    seconds: float

    @property
    def signal_name(self) -> str | None:
        return signal_name(self.returncode)

    def tail(self, lines: int = OUTPUT_TAIL_LINES) -> str:
        return "\n".join(self.output.text.rstrip().splitlines()[-lines:])


def run(
    argv: list[str], timeout: float = DEFAULT_TIMEOUT_S, interesting: inputs.Interesting | None = None, env: dict[str, str] | None = None
) -> CommandResult:
    """Run ``argv`` with stdout and stderr merged; a timeout is a result, a missing program is not.
    At the end its group gets SIGTERM, and SIGKILL after a grace period."""
    timeout = check_timeout(timeout)
    if not argv[0].strip():
        raise UsageError("the command after -- is empty: give a program to run")
    collector = inputs.LogCollector(interesting)
    try:
        ended = run_in_session(argv, timeout, collector, env=env, exit_grace=DRAIN_AFTER_EXIT_S, term_grace=KILL_GRACE_S)
    except FileNotFoundError:
        raise UsageError(f"cannot run {argv[0]!r}: no such program") from None
    except PermissionError:
        raise UsageError(f"cannot run {argv[0]!r}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    return CommandResult(list(argv), ended.returncode, collector.finish(), ended.seconds)


# -- the program a command runs ---------------------------------------------------------------------


def script_of(argv: list[str], cwd: Path, depth: int = 0) -> Path | None:
    """The Python file ``argv`` runs, when it names one (through a shell script too: the first
    Python file a line of the script runs)."""
    if not argv:
        return None
    words = list(argv)
    if Path(words[0]).name in ("env",):
        words = [w for w in words[1:] if "=" not in w]
    if not words:
        return None
    program = Path(words[0]).name
    if PYTHON.search(words[0]) or program.startswith("python"):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:] if rest[0] not in ("-W", "-X") else rest[2:]
        if rest[:1] == ["-m"] and len(rest) > 1:
            if rest[1] in RUNNERS:
                return _first_python(rest[2:], cwd)
            return _module_file(rest[1], cwd)
        return _existing(rest[0], cwd) if rest and rest[0].endswith(".py") else None
    if program in RUNNERS:
        return _first_python(words[1:], cwd)
    if words[0].endswith(".py"):
        return _existing(words[0], cwd)
    shell = words[1:] if program in SHELLS else words
    shell = [w for w in shell if not w.startswith("-")]
    if depth < 2 and shell and shell[0].endswith((".sh", ".bash")):
        found = _existing(shell[0], cwd)
        if found is not None:
            return _script_in_shell(found, cwd, depth)
    return None


def _script_in_shell(script: Path, cwd: Path, depth: int) -> Path | None:
    for line in inputs.read_text(script).splitlines()[:MAX_SHELL_LINES]:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        for command in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(command)
            except ValueError:
                continue
            while words and ("=" in words[0] and not words[0].startswith("-") or words[0] in ("exec", "time", "env")):
                words = words[1:]
            found = script_of(words, cwd, depth + 1) if words else None
            if found is not None:
                return found
    return None


def _first_python(words: list[str], cwd: Path) -> Path | None:
    for word in words:
        if word.endswith(".py") or "::" in word:
            found = _existing(word.split("::", 1)[0], cwd)
            if found:
                return found
    return None


def _module_file(module: str, cwd: Path) -> Path | None:
    base = cwd.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__main__.py"):
        if candidate.is_file():
            return candidate
    return None


def _existing(word: str, cwd: Path) -> Path | None:
    path = Path(word)
    path = path if path.is_absolute() else cwd / path
    return path if path.is_file() else None


def local_modules(script: Path, imports: list[str]) -> list[Path]:
    """The files of the script's own modules it imports (``import ops``, ``from . import gpu_ops``,
    ``from pkg.mod import f``), found beside it; compiled extensions included (``gpu_ops*.so``)."""
    found = []
    for name in imports:
        relative = name.startswith(".")
        parts = [p for p in name.lstrip(".").split(".") if p]
        base = script.parent
        for _ in range(len(name) - len(name.lstrip(".")) - 1 if relative else 0):
            base = base.parent
        for length in range(len(parts), 0, -1):
            stem = base.joinpath(*parts[:length])
            candidates = [stem.with_suffix(".py"), stem / "__init__.py", *sorted(stem.parent.glob(f"{stem.name}*.so"))]
            hit = next((c for c in candidates if c.is_file()), None)
            if hit is not None:
                found.append(hit)
                break
    return list(dict.fromkeys(found))


def program_files(script: Path, cwd: Path) -> tuple[list[Path], list[Path]]:
    """(sources, libraries) of the program a script runs: the script and the local modules it
    imports (:data:`IMPORT_DEPTH` levels deep), the libraries they load by a constant path (or import as compiled
    extensions), and the C/C++ sources beside those libraries and the script (or in the library's
    project, for ``PROJECT/build/libNAME.so``)."""
    python_files, libraries = [script], []
    frontier = [script]
    for _ in range(IMPORT_DEPTH + 1):
        next_frontier = []
        for path in frontier:
            facts = pyparse.read(str(path), inputs.read_text(path))
            for module in local_modules(path, facts.imports):
                if module.suffix == ".so":
                    libraries.append(module)
                elif module not in python_files:
                    python_files.append(module)
                    next_frontier.append(module)
            libraries += _loaded(facts, path.parent, cwd)
        frontier = next_frontier
    folders = [script.parent] + [lib.parent for lib in libraries] + [lib.parent.parent for lib in libraries if lib.parent.name == "build"]
    sources = list(python_files)
    for folder in dict.fromkeys(folders):
        listing = inputs.walk(folder, max_files=MAX_PROGRAM_FILES, max_entries=2_000)
        sources += [p for p in listing.files if inputs.kind_of(p) == "c" and p.parent == folder]
    return list(dict.fromkeys(sources)), list(dict.fromkeys(libraries))


def _loaded(facts, here: Path, cwd: Path) -> list[Path]:
    """Libraries a file loads with ctypes by a constant path (relative to the working directory,
    as ctypes resolves it, or to the file's folder)."""
    found = []
    for load in facts.libraries:
        if not load.path:
            continue
        for base in (cwd, here):
            candidate = Path(load.path) if Path(load.path).is_absolute() else (base / load.path)
            if candidate.is_file():
                found.append(candidate.resolve())
                break
    return found
