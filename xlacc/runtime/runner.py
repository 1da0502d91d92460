"""Start a harness in a child Python process and collect what happened to it.

The child runs in its own session (process group) so that a timeout kills it and everything it
started; a crash (a signal), a hang or an exit code is reported, never raised.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlacc.runtime.records import read_records

# The most output kept from a child (its tail): enough for any traceback, bounded for XLA dumps.
MAX_OUTPUT_CHARS = 1_000_000
KILL_GRACE_SECONDS = 5.0


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
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        output = _drain(proc)
    except BaseException:  # KeyboardInterrupt included: never leave the child running
        _kill_group(proc.pid)
        proc.wait()
        raise
    text = output.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
    returncode = None if timed_out else proc.returncode
    return ChildResult(
        returncode=returncode,
        signal_name=signal_name(proc.returncode),
        timed_out=timed_out,
        output=text,
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


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _drain(proc: subprocess.Popen) -> bytes:
    """What the killed child had written; a grandchild outside the group cannot hold us forever."""
    try:
        output, _ = proc.communicate(timeout=KILL_GRACE_SECONDS)
        return output or b""
    except subprocess.TimeoutExpired:  # a process that left the group still holds the pipe open
        proc.stdout.close()
        proc.wait()
        return b""
