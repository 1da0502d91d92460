"""A process killed by a signal: which signal, and the causes left once the steps that passed
before it are known (registration passed: a registration crash is ruled out). The one home of
kernel-crash: run-smoke hands it how its child process ended."""

from __future__ import annotations

import dataclasses
import signal

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding

SHELL_SIGNAL_BASE = 128  # a shell reports death by signal N as exit status 128 + N
SIGNAL_NOTES = {
    "SIGSEGV": "a segmentation fault",
    "SIGABRT": "an abort (a failed CHECK in XLA, or std::terminate)",
    "SIGBUS": "a bus error (misaligned or unmapped memory)",
    "SIGFPE": "an arithmetic error (integer division by zero)",
    "SIGILL": "an illegal instruction (a library built for a newer CPU)",
    "SIGKILL": "killed from outside (out of memory, or a timeout)",
}
KILLED_FROM_OUTSIDE_FIX = (
    "SIGKILL comes from outside the process, most often the out-of-memory killer (`dmesg | grep -i 'killed process'`): "
    "run smaller problems (`--sizes`), or make example_inputs and the reference allocate less."
)
# The phases of a custom call's life, in order, and the step names that belong to each.
PHASES = ("registration", "lowering", "execution")
PHASE_OF_STEP = (("regist", "registration"), ("import", "registration"), ("lower", "lowering"), ("compil", "lowering"),
                 ("numerics", "execution"), ("bench", "execution"), ("execut", "execution"), ("run", "execution"))


@dataclasses.dataclass(frozen=True)
class CrashCause:
    text: str
    phase: str  # the phase in which this cause crashes the process
    settled_by: str = ""  # a phase whose passing rules the cause out, though it crashes later


CRASH_CAUSES = (
    CrashCause("a legacy function registered as typed FFI (`jax.ffi.register_ffi_target(...)` without api_version=0): "
               "XLA calls it to read handler metadata", "registration"),
    CrashCause("a typed FFI handler registered as legacy (api_version=0) and called with api 1-3", "execution", settled_by="registration"),
    CrashCause("out-of-bounds reads or writes in the kernel: legacy calls check no sizes or counts (a hard-coded size, "
               "one result too few, buffers in the wrong order)", "execution"),
    CrashCause("torch_xla `get_stablehlo` with api 4 and a backend_config that is not an MLIR dictionary", "lowering"),
    CrashCause("an abort inside XLA or torch_xla (a `Check failed:` line; `Unknown PJRT_DEVICE 'CUDA'` on torch_xla 2.5-2.8)", ""),
)
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


def phase_of(step: str | None) -> str | None:
    if not step:
        return None
    lowered = step.lower()
    return next((phase for word, phase in PHASE_OF_STEP if word in lowered), None)


def crash_fix(passed: list[str] | None = None, during: str | None = None) -> str:
    """The likely causes of a crash, ruled in and out by the steps that passed and the one it died in."""
    passed_phases = checked = {p for p in map(phase_of, passed or []) if p}  # checked: a check of that phase passed
    now = phase_of(during)
    if now in PHASES:  # every phase before the one it died in has passed
        passed_phases = passed_phases | set(PHASES[: PHASES.index(now)])
    # A phase that passed rules out its causes, except the one it died in: a kernel that ran at one
    # size can still read out of bounds at the next.
    possible = [c for c in CRASH_CAUSES if (not c.phase or c.phase == now or c.phase not in passed_phases) and c.settled_by not in checked]
    possible.sort(key=lambda c: (c.phase != now, not c.phase))
    ruled_out = [c for c in CRASH_CAUSES if c not in possible]
    lines = ["Likely causes, most likely first:"] + [f"{i}. {c.text};" for i, c in enumerate(possible, 1)]
    if ruled_out:
        lines.append(f"Ruled out ({', '.join(sorted(passed_phases))} passed): " + "; ".join(c.text.split(":")[0] for c in ruled_out) + ".")
    elif now is None:
        lines.append("Tell them apart by the last step printed before the crash (registration, compilation, execution).")
    return "\n".join(lines)


def crash_finding(returncode: int | None, passed: list[str] | None = None, during: str | None = None) -> Finding | None:
    name = signal_name(returncode)
    if name is None:
        return None
    steps = f"; it died during {during}" if during else ""
    return make(
        "kernel-crash",
        f"exit status {returncode} ({name}: {SIGNAL_NOTES[name]}){steps}",
        title=f"the process was killed by {name}",
        fix=crash_fix(passed, during),
        likelihood=0.9,
    )


def child_crash(how: str, signal_name: str | None, python_frame: str | None, likelihood: float) -> Finding:
    """kernel-crash for a child process that ended unexpectedly (``how``: how it ended), whose output
    names no cause: killed from outside (SIGKILL, most likely out of memory), a signal while the
    user's own Python ran (``python_frame``: ``file:line (in function)``), or a crash as such."""
    if signal_name == "SIGKILL":  # sent from outside: no crash of the kernel's ends this way
        return make("kernel-crash", f"{how}: most likely out of memory", fix=KILLED_FROM_OUTSIDE_FIX, likelihood=likelihood)
    if python_frame is not None:  # the user's Python was running, not a custom call
        return make(
            "kernel-crash",
            f"{how}, in your Python code at {python_frame}",
            title=f"the process was killed by {signal_name} while your Python code ran",
            fix=f"The signal came from {python_frame} or what it called (os.abort, os.kill, a C extension), not from a kernel: look there.",
            likelihood=likelihood,
        )
    return make("kernel-crash", how, likelihood=likelihood)
