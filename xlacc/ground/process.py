"""Run a command in a session of its own, stream its output, and stop everything it started.

Both run-smoke's harness children and ``xlacc doctor -- COMMAND`` run through here. The command's
stdout and stderr (merged) go, as they come, to a sink that keeps only what it needs (a bounded
head and tail, or the lines diagnosis rules name), so output of any size costs bounded memory. The
command is done when its output has ended and it has exited, or when it has exited and whatever it
left behind still holds the output open after a grace period. Then, or at the timeout, or on
Ctrl-C, its whole process group is stopped. The leader stays unreaped until the group is killed,
so its group id cannot have been reused by then. A process that left the group (``setsid``, a
daemon's double fork) is still a descendant: this process is made their subreaper, so they are
reparented here when their parents end, and are stopped with the group. The command itself is
killed by the kernel if this process dies first (a SIGKILL to xlacc leaves nothing running).
"""

from __future__ import annotations

import ctypes
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from xlacc.ground.errors import UsageError

READ_BYTES = 64 * 1024
POLL_SECONDS = 0.2
EXIT_POLL_SECONDS = 0.01  # the output has ended: the exit is a moment away
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>; the standard library has no prctl
PR_SET_PDEATHSIG = 1
ESCAPED_SWEEPS = 20  # rounds of stopping escaped descendants: each round may orphan the next generation

# Modules that start threads of their own once imported (XLA's and ATen's thread pools).
THREADED_NATIVE_MODULES = ("jax", "jaxlib", "torch")


class Sink(Protocol):
    def feed(self, chunk: bytes) -> None: ...


@dataclass(frozen=True)
class Ended:
    returncode: int | None  # None: stopped at the timeout
    seconds: float


def check_timeout(timeout: float) -> float:
    """A timeout a user gave: a finite number of seconds above 0 (nan, inf and 0 were once taken)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def run_in_session(
    argv: list[str],
    timeout: float,
    sink: Sink,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    exit_grace: float,
    term_grace: float = 0.0,
    sweep_escaped: bool = True,
) -> Ended:
    """Run ``argv``, feeding its output to ``sink``; ``exit_grace``: how long after its exit a
    process it left behind may hold the output open; ``term_grace``: how long the group gets
    between SIGTERM and SIGKILL (0: SIGKILL at once); ``sweep_escaped``: also stop what left the
    group (two scans of /proc, tens of milliseconds: a tool asked its version goes without)."""
    started = time.monotonic()
    adopts_orphans = sweep_escaped and _become_subreaper()
    children_before = _children() if adopts_orphans else set()
    # Code between fork and exec only where this process has one thread: with more (a spinner, or
    # jax's and torch's own threads, which Python does not count), a lock another thread held at the
    # fork could never be released in the child, so a small Python sets the signal and execs the
    # command instead; without preexec_fn, Python starts the child without running fork handlers
    # (jax's warns "os.fork() was called").
    single = threading.active_count() == 1 and not any(name in sys.modules for name in THREADED_NATIVE_MODULES)
    proc = subprocess.Popen(
        argv if single else _dying_with_us(argv, env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=env, cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent if single else None,
    )
    timed_out = True
    try:
        timed_out = _read_until_done(proc, started + timeout, sink, exit_grace)
    finally:  # a timeout, Ctrl-C or a normal end: nothing the command started outlives it
        _stop_group(proc.pid, term_grace)
        proc.stdout.close()
        proc.wait()
        if adopts_orphans:
            _stop_escaped(children_before)
    return Ended(None if timed_out else proc.returncode, time.monotonic() - started)


def _read_until_done(proc: subprocess.Popen, deadline: float, sink: Sink, exit_grace: float) -> bool:
    """Feed the output to ``sink`` until the command is done; True when the deadline passed."""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return True
            if exited_at is None and _has_exited(proc.pid):
                exited_at = now
            if exited_at is not None and now - exited_at > exit_grace:
                return False
            if not selector.get_map():  # output closed: wait for the exit
                if exited_at is not None:
                    return False
                time.sleep(min(EXIT_POLL_SECONDS, deadline - now))
                continue
            if selector.select(min(POLL_SECONDS, deadline - now)):
                chunk = os.read(proc.stdout.fileno(), READ_BYTES)
                if chunk:
                    sink.feed(chunk)
                else:
                    selector.unregister(proc.stdout)
                    if exited_at is not None:
                        return False


def _has_exited(pid: int) -> bool:
    """Whether the leader has exited, without reaping it."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _stop_group(pid: int, term_grace: float) -> None:
    if term_grace > 0 and _signal_group(pid, signal.SIGTERM):
        give_up = time.monotonic() + term_grace
        while not _has_exited(pid) and time.monotonic() < give_up:
            time.sleep(EXIT_POLL_SECONDS)
    _signal_group(pid, signal.SIGKILL)  # a grandchild may ignore SIGTERM


def _signal_group(pid: int, sig: int) -> bool:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# argv: parent pid, program, arguments. Set the signal, make sure the parent is still there, exec.
TRAMPOLINE = (
    "import ctypes, os, sys; ctypes.CDLL(None).prctl(%d, %d, 0, 0, 0); "
    "os.getppid() == int(sys.argv[1]) or os._exit(137); os.execv(sys.argv[2], sys.argv[2:])" % (PR_SET_PDEATHSIG, signal.SIGKILL)
)


def _dying_with_us(argv: list[str], env: dict[str, str] | None) -> list[str]:
    """``argv`` run through :data:`TRAMPOLINE`; the program is looked up here, so that one that is
    missing is still a FileNotFoundError from Popen."""
    path = env.get("PATH") if env is not None else None
    program = shutil.which(argv[0], path=path) if os.sep not in argv[0] else argv[0]
    if program is None or not os.access(program, os.X_OK):
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    return [sys.executable, "-I", "-S", "-c", TRAMPOLINE, str(os.getpid()), program, *argv[1:]]


def _die_with_parent() -> None:
    """In the child: SIGKILL when xlacc ends, however it ends (a SIGKILL to xlacc, the OOM killer)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stop_escaped(children_before: set[int]) -> None:
    """Kill and reap the command's descendants that left its group and were reparented here; each
    one killed may orphan its own children to here, hence the rounds."""
    for _ in range(ESCAPED_SWEEPS):
        escaped = _children() - children_before
        if not escaped:
            return
        for pid in escaped:
            _kill(pid)
        for pid in escaped:
            _reap(pid)


def _children() -> set[int]:
    """This process's children: every process in /proc whose parent is this one (the per-thread
    ``children`` lists need a kernel option that not every kernel has)."""
    me = os.getpid()
    children: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()  # the name before it may hold anything
        except OSError:  # it ended while the folder was read
            continue
        if len(fields) > 1 and fields[1] == str(me):
            children.add(int(stat.parent.name))
    return children


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# -- what a child printed, in bounded memory ------------------------------------------------------

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024
MAX_LINE_CHARS = 4_000  # longer lines keep their two ends: a base64 dump is no diagnosis


class BoundedOutput:
    """The first and last bytes of a stream of any length, in bounded memory."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES):
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.tail_limit:  # trim now and then, not on every chunk
            del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_limit :])
        omitted = self.total - len(self.head) - len(tail)
        marker = f"\n[xlacc: {omitted} bytes of output left out]\n" if omitted > 0 else ""
        text = self.head.decode("utf-8", errors="replace") + marker + tail.decode("utf-8", errors="replace")
        return cap_lines(text)


def cap_lines(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Every line at most ``limit`` characters: an overlong one keeps its two ends."""
    if all(len(line) <= limit for line in text.splitlines()):
        return text
    half = limit // 2
    lines = [
        line if len(line) <= limit else f"{line[:half]} [... {len(line) - 2 * half} characters ...] {line[-half:]}"
        for line in text.splitlines()
    ]
    return "\n".join(lines)
