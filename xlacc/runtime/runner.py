"""Start a harness in a child Python process and collect what happened to it.

The child runs in its own session (process group) so that a timeout, Ctrl-C or its end kills it
and everything it started; a crash (a signal), a hang or an exit code is reported, never raised.
Its output is read as it comes and only a bounded head and tail are kept: a kernel that prints
gigabytes costs xlacc no more memory than one that prints a line.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlacc.runtime.records import read_records

# Output kept from a child: its first bytes (what it started with) and its last (the traceback).
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024
MAX_LINE_CHARS = 4_000  # longer lines keep their two ends: a base64 dump is no diagnosis
READ_BYTES = 64 * 1024
# After the child exits, how long a process it left behind may keep its output open.
EXIT_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.2
EXIT_POLL_SECONDS = 0.01  # the output has ended: the exit is a moment away


@dataclass
class ChildResult:
    returncode: int | None  # None: killed after the timeout
    signal_name: str | None  # "SIGSEGV" when a signal ended the child
    timed_out: bool
    output: str  # stdout and stderr, interleaved as the child wrote them
    records: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def crashed(self) -> bool:
        return self.signal_name is not None and not self.timed_out

    @property
    def finished(self) -> bool:
        """The harness reached its end and said so (an ``exit`` record)."""
        return any(r.get("type") == "exit" for r in self.records)

    @property
    def last_step(self) -> str | None:
        steps = [r["name"] for r in self.records if r.get("type") == "step"]
        return steps[-1] if steps else None

    def describe(self) -> str:
        """How the child ended, in a few words."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        if self.signal_name:
            return f"was killed by {self.signal_name}"
        return f"exited with code {self.returncode}"


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment, with this xlacc importable first and ``extra`` on top."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != package_root]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def run_child(
    argv: list[str],
    timeout: float,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    records_path: str | Path | None = None,
) -> ChildResult:
    """Run ``argv`` in a new session; kill its whole process group after ``timeout`` seconds."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    output = BoundedOutput()
    try:
        timed_out = _read_until_done(proc, started + timeout, output)
    finally:  # a timeout, Ctrl-C or a normal end: nothing the child started outlives it
        _kill_group(proc.pid)
        proc.stdout.close()
        proc.wait()
    return ChildResult(
        returncode=None if timed_out else proc.returncode,
        signal_name=None if timed_out else signal_name(proc.returncode),
        timed_out=timed_out,
        output=output.text(),
        records=read_records(records_path) if records_path else [],
        seconds=time.monotonic() - started,
    )


def run_harness(
    module: str,
    args: list[str],
    timeout: float,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
) -> ChildResult:
    """``python -m module ARGS --records FILE`` in a child; its records are read back from FILE."""
    fd, records_path = tempfile.mkstemp(prefix="xlacc-records-", suffix=".jsonl")
    os.close(fd)
    try:
        argv = [sys.executable, "-m", module, *args, "--records", records_path]
        return run_child(argv, timeout, env=child_env(env), cwd=cwd, records_path=records_path)
    finally:
        os.unlink(records_path)


def _read_until_done(proc: subprocess.Popen, deadline: float, output: BoundedOutput) -> bool:
    """Read the child's output into ``output`` until it is done; True when the deadline passed.

    Done: the output ended and the child exited, or the child exited and whatever it left behind
    still holds the output open after a grace period. The child is left unreaped (a zombie keeps
    its process group id from being reused before the group is killed).
    """
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return True
            if exited_at is None and _has_exited(proc.pid):
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE_SECONDS:
                return False
            if not selector.get_map():  # output closed: wait for the exit
                if exited_at is not None:
                    return False
                time.sleep(min(EXIT_POLL_SECONDS, deadline - now))
                continue
            if selector.select(min(POLL_SECONDS, deadline - now)):
                chunk = os.read(proc.stdout.fileno(), READ_BYTES)
                if chunk:
                    output.add(chunk)
                else:
                    selector.unregister(proc.stdout)
                    if exited_at is not None:
                        return False


def _has_exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class BoundedOutput:
    """The first and last bytes of a stream of any length, in bounded memory."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES):
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
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
