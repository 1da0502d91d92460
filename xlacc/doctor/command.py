"""``xlacc doctor -- COMMAND``: run the command, and find the program it runs.

The command runs in its own session (process group). Its output is streamed into a bounded
collector (:class:`xlacc.doctor.inputs.LogCollector`), so 100 MB of output costs seconds and a few
MB. When the command exits, or its time is up, the whole group is stopped: a grandchild left in
the background holding the output pipe open cannot make doctor wait.

The program: the Python script the command runs (``python x.py``, ``python -m pkg.mod``,
``pytest test_x.py``), the shared libraries it loads with ctypes, and the sources beside them,
so the run can be ranked with what the code says.
"""

from __future__ import annotations

import math
import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from xlacc.doctor import inputs
from xlacc.errors import UsageError

DEFAULT_TIMEOUT_S = 600.0
DRAIN_AFTER_EXIT_S = 0.5  # output a finished command's group may still flush
KILL_GRACE_S = 2.0
READ_BYTES = 1 << 16
OUTPUT_TAIL_LINES = 20
MAX_PROGRAM_FILES = 60
PYTHON = re.compile(r"(?:^|/)(?:python[\d.]*|pypy[\d.]*)$")
RUNNERS = ("pytest", "py.test")


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: timed out
    output: inputs.LogText
    seconds: float

    @property
    def signal_name(self) -> str | None:
        from xlacc.doctor.rules.runtime import signal_name

        return signal_name(self.returncode)

    def tail(self, lines: int = OUTPUT_TAIL_LINES) -> str:
        return "\n".join(self.output.text.rstrip().splitlines()[-lines:])


def check_timeout(timeout: float) -> float:
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def run(argv: list[str], timeout: float = DEFAULT_TIMEOUT_S, interesting: inputs.Interesting | None = None) -> CommandResult:
    """Run ``argv`` with stdout and stderr merged; a timeout is a result, a missing program is not."""
    timeout = check_timeout(timeout)
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
    except FileNotFoundError:
        raise UsageError(f"cannot run {argv[0]!r}: no such program") from None
    except PermissionError:
        raise UsageError(f"cannot run {argv[0]!r}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    collector = inputs.LogCollector(interesting)
    timed_out = False
    try:
        timed_out = _pump(process, collector, start + timeout)
    finally:
        _stop_group(process)
        process.stdout.close()
    returncode = None if timed_out else process.returncode
    return CommandResult(list(argv), returncode, collector.finish(), time.monotonic() - start)


def _pump(process: subprocess.Popen, collector: inputs.LogCollector, deadline: float) -> bool:
    """Read the pipe until it closes, the command exits (then a short drain) or the deadline; True on timeout."""
    stream = process.stdout
    descriptor = stream.fileno()
    drain_until = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            return True
        if drain_until is None and process.poll() is not None:
            drain_until = now + DRAIN_AFTER_EXIT_S
        if drain_until is not None and now >= drain_until:
            return False
        limit = min(deadline, drain_until or deadline) - now
        ready, _, _ = select.select([descriptor], [], [], min(limit, 0.1))
        if not ready:
            continue
        data = os.read(descriptor, READ_BYTES)
        if not data:  # every writer closed the pipe
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return True
            return False
        collector.feed(data)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop the command and everything it started in its session."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            process.wait(timeout=KILL_GRACE_S if sig == signal.SIGTERM else None)
            if sig == signal.SIGTERM:
                try:  # the leader is gone; a grandchild may ignore SIGTERM
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            break
        except subprocess.TimeoutExpired:
            continue
    if process.returncode is None:
        process.wait()


# -- the program a command runs ---------------------------------------------------------------------


def script_of(argv: list[str], cwd: Path) -> Path | None:
    """The Python file ``argv`` runs, when it names one."""
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


def program_files(script: Path, libraries: list[str], cwd: Path) -> tuple[list[Path], list[Path]]:
    """(sources, libraries) of the program a script runs: the script, the sources and notes beside
    it, and for each library it loads by a constant path, the library and the sources beside it
    (or its project's, for ``PROJECT/build/libNAME.so``)."""
    folders = [script.parent]
    found_libraries = []
    for text in libraries:
        for base in (cwd, script.parent):
            candidate = (base / text).resolve() if not Path(text).is_absolute() else Path(text)
            if candidate.is_file():
                found_libraries.append(candidate)
                folders.append(candidate.parent)
                if candidate.parent.name == "build":
                    folders.append(candidate.parent.parent)
                break
    sources: list[Path] = [script]
    for folder in dict.fromkeys(folders):
        listing = inputs.walk(folder, max_files=MAX_PROGRAM_FILES, max_entries=2_000)
        sources += [p for p in listing.files if inputs.kind_of(p) in ("c", "py") and p.parent == folder]
    return list(dict.fromkeys(sources)), list(dict.fromkeys(found_libraries))
