"""Running the compiler: the command line (nvcc or the host compiler, archs, flags), a compile in its
own session with bounded output and a timeout, the library it wrote checked, and what its messages say."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from xlacc.commands.doctor.rules import compiler as compiler_output
from xlacc.commands.build import record as build_record
from xlacc.ground import paths, process, toolchain
from xlacc.ground.report import Check, console
from xlacc.commands.build.cache import not_a_library, temporary_output
from xlacc.commands.build.plan import XLACC_INCLUDE, Options, Plan, Target


NO_LIBRARY_WRITTEN = "it exited 0 but wrote no shared library (the library there, if any, is kept)"


COMPILER_EXIT_GRACE_S = 1.0  # after the compiler exits, how long what it left behind may hold its output


COMPILER_TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL when it is stopped: nvcc removes its temporaries


COMPILER_HEAD_BYTES = 256 * 1024  # of its output: the first errors...


COMPILER_TAIL_BYTES = 256 * 1024  # ...and the last (the link, the count of errors)


# The compiler could not write (a folder it may not write to, a full disk): not the sources' fault.
# nvcc's words when it cannot run the host compiler it needs (none on PATH, or -ccbin wrong).
NO_HOST_COMPILER = re.compile(r"Failed to preprocess host compiler properties|cannot find compiler '(?:cl|g\+\+|c\+\+)' in PATH", re.IGNORECASE)


WRITE_FAILURE = re.compile(
    r"^\S.*(?:cannot open output file|could not open output file|error writing to|"
    r"No space left on device|Disk quota exceeded|Read-only file system|File too large).*$",
    re.MULTILINE | re.IGNORECASE,
)


NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC")


NVCC_HIDE_SYMBOLS = ("-Xcompiler", "-fvisibility=hidden")


NVCC_TRAILING_FLAGS = ("-lineinfo",)


# Each gencode target's cicc and ptxas in a thread of its own (nvcc >= 11.2): on a 16-core host a
# default two-arch paged-attention build took 17.4-20.9 s instead of 24.5-32.0 s (benchmarks/RESULTS.md).
NVCC_PARALLEL_ARCHS = ("--threads", "0")


NVCC_THREADS_SINCE = (11, 2)


HOST_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC")


HOST_HIDE_SYMBOLS = ("-fvisibility=hidden",)


FFI_MARKERS = (b"xla/ffi", b"xlacc/ffi.h")  # a source that mentions one needs the FFI headers on the include path


def gencode_flags(archs: list[str], ptx: bool = True) -> list[str]:
    """SASS for every arch, and (unless ``ptx`` is off) PTX of the highest so newer GPUs can JIT it."""
    ptx_arch = _ptx_arch(archs) if ptx else None
    flags = []
    for arch in archs:
        virtual = "compute_" + arch.split("_", 1)[1]
        code = f"[{arch},{virtual}]" if arch == ptx_arch else arch
        flags += ["-gencode", f"arch={virtual},code={code}"]
    return flags


def _ptx_arch(archs: list[str]) -> str:
    # An arch-specific PTX (compute_90a) runs only on that GPU: prefer the portable one.
    return max(archs, key=lambda a: (toolchain.arch_number(a), not a.endswith("a")))


def describe_archs(archs: list[str], ptx: bool = True) -> str:
    if not ptx:
        return f"{', '.join(archs)} (SASS only, no PTX)"
    return f"{', '.join(archs)} + PTX compute_{_ptx_arch(archs).split('_', 1)[1]}"


def compile_command(compiler: toolchain.Compiler, target: Target, archs: list[str], ffi_dir: Path | None) -> list[str]:
    folders = [str(XLACC_INCLUDE), *(paths.shown(d, target.root) for d in target.include_dirs), *([str(ffi_dir)] if ffi_dir else [])]
    include = [arg for folder in folders for arg in ("-I", folder)]
    defines = [f"-D{d}" for d in target.defines]
    sources = [paths.shown(s, target.root) for s in target.sources]
    output = ["-o", paths.shown(target.output, target.root)]
    if compiler.kind == "nvcc":
        hide = list(NVCC_HIDE_SYMBOLS) if target.hide_symbols else []
        parallel = list(NVCC_PARALLEL_ARCHS) if _archs_compile_in_parallel(compiler, archs, target.flags) else []
        flags = [*NVCC_FLAGS, *hide, *gencode_flags(archs, target.ptx), *parallel, *include, *defines, *NVCC_TRAILING_FLAGS, *target.flags]
    else:
        hide = list(HOST_HIDE_SYMBOLS) if target.hide_symbols else []
        flags = [*HOST_FLAGS, *hide, *include, *defines, *target.flags]
    return [*compiler.argv, *flags, *sources, *output]


def _archs_compile_in_parallel(compiler: toolchain.Compiler, archs: list[str], user_flags: tuple[str, ...]) -> bool:
    """Several archs, an nvcc that has --threads, and no thread count of the user's own."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", compiler.version)[:2])
    chosen = any(flag in ("-t", "--threads") or flag.startswith(("-t=", "--threads=")) for flag in user_flags)
    return len(archs) > 1 and numbers >= NVCC_THREADS_SINCE and not chosen


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    returncode: int | None  # None: stopped at the timeout
    output: str
    seconds: float
    not_a_library: str = ""  # it exited 0, and this says what it wrote instead of a library

    @property
    def timed_out(self) -> bool:
        return self.returncode is None




def clear_leftovers(library: Path) -> None:
    """Remove temporary outputs of builds that were killed (their process is gone)."""
    for leftover in library.parent.glob(f".{library.name}.*.tmp"):
        pid = leftover.name[len(library.name) + 2 : -len(".tmp")]
        if pid.isdigit() and not paths.process_alive(int(pid)):
            leftover.unlink(missing_ok=True)


def compile_library(plan: Plan, options: Options) -> CompileOutcome:
    """Run the compiler into a temporary file; replace the library only when it succeeded."""
    library = plan.target.output
    paths.make_directory(library.parent)
    temporary = temporary_output(library)
    command = plan.command[:-1] + [str(temporary)]
    output = process.BoundedOutput(COMPILER_HEAD_BYTES, COMPILER_TAIL_BYTES)
    started = time.perf_counter()
    try:
        if plan.record is not None:
            build_record.write_source(plan.record)
        with _progress(f"compiling {plan.target.title} with {plan.compiler.kind}", options.show_progress):
            ended = process.run_in_session(
                command, options.timeout, output, cwd=plan.target.root, exit_grace=COMPILER_EXIT_GRACE_S, term_grace=COMPILER_TERM_GRACE_S
            )
        text = paths.for_user_in(output.text().replace(str(temporary), str(library)), plan.target.root)
        problem = not_a_library(temporary) if ended.returncode == 0 else None
        ok = ended.returncode == 0 and problem is None
        if ok:
            os.replace(temporary, library)
        wrote = _wrote_no_library(problem) if problem is not None else ""
        return CompileOutcome(ok, ended.returncode, text + (f"\n{wrote}" if wrote else ""), time.perf_counter() - started, wrote)
    except OSError as exc:
        return CompileOutcome(False, -1, f"{plan.compiler.path}: {exc.strerror or exc}", time.perf_counter() - started)
    finally:
        temporary.unlink(missing_ok=True)






def _wrote_no_library(problem: str) -> str:
    if not problem:
        return NO_LIBRARY_WRITTEN
    return f"it exited 0, but the file it wrote is not a shared library: {problem}; the library there, if any, is kept"


@contextmanager
def _progress(message: str, enabled: bool) -> Iterator[None]:
    if not enabled or not sys.stderr.isatty():
        yield
        return
    with console(stderr=True).status(Elapsed(message)):
        yield


class Elapsed:
    """A spinner's text with the seconds since it started: rich renders it again on every refresh."""

    def __init__(self, message: str):
        self.message = message
        self.started = time.monotonic()

    def __rich__(self) -> str:
        return f"{self.message} ({time.monotonic() - self.started:.0f} s)"


def not_the_sources(plan: Plan, outcome: CompileOutcome, timeout: float) -> str | None:
    """Why a compile failed, in one line, when the sources are not the cause: the compiler ran past
    the timeout, exited 0 without writing a library, or could not write (permissions, a full disk)."""
    compiler = f"{plan.compiler.kind} ({shlex.join(plan.compiler.argv)})"
    if outcome.timed_out:
        return f"{compiler} did not finish in {timeout:g} s: xlacc stopped it and everything it started (--timeout SECONDS allows longer)"
    if outcome.not_a_library:
        return f"{plan.compiler.kind} failed: {outcome.not_a_library}"
    killed = compiler_output.killed_by_signal(plan.compiler.kind, outcome.returncode, outcome.output)
    if killed is not None:
        return killed
    unwritable = WRITE_FAILURE.search(outcome.output)
    if unwritable is not None:
        return f"{plan.compiler.kind} could not write the library, not a compile error: {unwritable.group(0).strip()}"
    if plan.compiler.kind == "nvcc" and NO_HOST_COMPILER.search(outcome.output):
        return "nvcc found no host C++ compiler to run (it compiles host code with g++, c++ or clang++ on PATH, or -ccbin): install g++, not a compile error"
    return None


def compile_failure_check(plan: Plan, outcome: CompileOutcome, messages: compiler_output.CompilerMessages) -> Check:
    count = len(messages.errors)
    if messages.errors:
        first = messages.errors[0].splitlines()[0]
    else:
        first = f"exit status {outcome.returncode}"
    more = f" (and {count - 1} more)" if count > 1 else ""
    return Check("compile", False, f"{plan.compiler.kind} failed: {first}{more}")


