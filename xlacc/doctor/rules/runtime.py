"""Run a command, and diagnose its output and the way it ended (an exit code or a signal)."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass

from xlacc.doctor.findings import make
from xlacc.doctor.rules.text import CRASH_CAUSES, diagnose_text
from xlacc.errors import UsageError
from xlacc.report import Finding

COMMAND_TIMEOUT_S = 600.0
OUTPUT_TAIL_LINES = 20
SHELL_SIGNAL_BASE = 128  # a shell reports death by signal N as exit status 128 + N
SIGNAL_NOTES = {
    "SIGSEGV": "a segmentation fault",
    "SIGABRT": "an abort (a failed CHECK in XLA, or std::terminate)",
    "SIGBUS": "a bus error (misaligned or unmapped memory)",
    "SIGFPE": "an arithmetic error (integer division by zero)",
    "SIGILL": "an illegal instruction (a library built for a newer CPU)",
    "SIGKILL": "killed from outside (out of memory, or a timeout)",
}


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: timed out
    output: str
    seconds: float

    @property
    def signal_name(self) -> str | None:
        return signal_name(self.returncode)

    def tail(self, lines: int = OUTPUT_TAIL_LINES) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-lines:])


def signal_name(returncode: int | None) -> str | None:
    """-11 (Python's subprocess) or 139 (a shell) -> "SIGSEGV"; None for a normal exit."""
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - SHELL_SIGNAL_BASE if returncode > SHELL_SIGNAL_BASE else 0
    try:
        name = signal.Signals(number).name
    except ValueError:
        return None
    return name if name in SIGNAL_NOTES else None


def crash_finding(returncode: int | None) -> Finding | None:
    name = signal_name(returncode)
    if name is None:
        return None
    return make(
        "kernel-crash",
        f"exit status {returncode} ({name}: {SIGNAL_NOTES[name]})",
        title=f"the process was killed by {name}",
        fix=CRASH_CAUSES,
        likelihood=0.9,
    )


def diagnose_output(text: str, returncode: int | None = None) -> list[Finding]:
    """Text rules over a process's output, plus kernel-crash when it died from a signal."""
    findings = diagnose_text(text)
    crash = crash_finding(returncode)
    if crash is not None:
        findings.append(crash)
    return findings


def run(argv: list[str], timeout: float = COMMAND_TIMEOUT_S, env: dict[str, str] | None = None) -> CommandResult:
    """Run ``argv`` with stdout and stderr merged; a timeout is a result, a missing program is not."""
    start = time.monotonic()
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, env=env)
        output, returncode = done.stdout, done.returncode
    except FileNotFoundError:
        raise UsageError(f"cannot run {argv[0]!r}: no such program") from None
    except PermissionError:
        raise UsageError(f"cannot run {argv[0]!r}: permission denied") from None
    except subprocess.TimeoutExpired as exc:
        output, returncode = exc.output or b"", None
    return CommandResult(argv, returncode, output.decode("utf-8", errors="replace"), time.monotonic() - start)
