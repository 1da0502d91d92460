"""Start a harness in a child Python process and collect what happened to it.

The child runs in its own session (:mod:`xlacc.ground.process`) so that a timeout, Ctrl-C or its end
kills it and everything it started; a crash (a signal), a hang or an exit code is reported, never
raised. Only a bounded head and tail of its output are kept: a kernel that prints gigabytes costs
xlacc no more memory than one that prints a line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlacc.commands.smoke.records import followed, read_records
from xlacc.ground import resources
from xlacc.ground.paths import process_alive
from xlacc.ground.process import BoundedOutput, run_in_session

# Output kept from a child: its first bytes (what it started with) and its last (the traceback).
# After the child exits, how long a process it left behind may keep its output open.
EXIT_GRACE_SECONDS = 2.0


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
    package_root = str(resources.PACKAGE_DIR.parent)
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
    output = BoundedOutput()
    ended = run_in_session(argv, timeout, output, env=env, cwd=cwd, exit_grace=EXIT_GRACE_SECONDS)
    return ChildResult(
        returncode=ended.returncode,
        signal_name=signal_name(ended.returncode),
        timed_out=ended.returncode is None,
        output=output.text(),
        records=read_records(records_path) if records_path else [],
        seconds=ended.seconds,
    )


RECORDS_PREFIX = "xlacc-records-"  # then the pid of the run-smoke that reads it


def _clear_dead_records() -> None:
    """Records files a SIGKILLed run-smoke left in the temporary folder (its pid is gone)."""
    for leftover in Path(tempfile.gettempdir()).glob(f"{RECORDS_PREFIX}*-*.jsonl"):
        pid = leftover.name[len(RECORDS_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            leftover.unlink(missing_ok=True)


def run_harness(
    module: str,
    args: list[str],
    timeout: float,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> ChildResult:
    """``python -m module ARGS --records FILE`` in a child; its records are read back from FILE
    (and passed to ``on_record`` as the child writes them, when given)."""
    _clear_dead_records()
    fd, records_path = tempfile.mkstemp(prefix=f"{RECORDS_PREFIX}{os.getpid()}-", suffix=".jsonl")
    os.close(fd)
    try:
        argv = [sys.executable, "-m", module, *args, "--records", records_path]
        with followed(records_path, on_record) if on_record else contextlib.nullcontext():
            return run_child(argv, timeout, env=child_env(env), cwd=cwd, records_path=records_path)
    finally:
        os.unlink(records_path)
