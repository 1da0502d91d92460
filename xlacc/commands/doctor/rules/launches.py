"""Kernel launches: on the handler's stream, and their errors read."""

from __future__ import annotations

import re

from xlacc.commands.doctor.program import STREAM_TYPES, Program
from xlacc.commands.doctor.rules.host_sync import DEFAULT_STREAMS
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx

MAX_LAUNCHES_NAMED = 10  # a finding names this many unchecked launches, then counts the rest

LAUNCH_CHECKS = re.compile(r"^(?:\w*GetLastError|\w*PeekAtLastError|\w*LAUNCH_CHECK\w*|\w*CHECK_LAST\w*)$")

# xlacc's helpers that read a launch's error (xlacc/include/xlacc/kernel.h, a header doctor does not
# read): calling one after a launch checks it, unless the program defines its own of that name.
XLACC_LAUNCH_CHECKS = frozenset({"launch_status"})

# Stream types besides program.STREAM_TYPES: xlacc's alias of cudaStream_t (xlacc/kernel.h).
XLACC_STREAM_TYPES = frozenset({"xlacc::Stream"})

ALIAS_DEPTH = 4  # `using S = xlacc::Stream;` and the like, followed this many times




def _is_stream(param: cxx.Param, source: cxx.CxxSource) -> bool:
    """A parameter of a stream type: cudaStream_t, CUstream, xlacc::Stream, an alias of one, or a
    const reference to one (``const xlacc::Stream&``)."""
    written = param.type.rstrip("&")
    for _ in range(ALIAS_DEPTH):
        if written.lstrip(":") in XLACC_STREAM_TYPES or written.rsplit("::", 1)[-1] in STREAM_TYPES:
            return True
        if written not in source.type_aliases:
            return False
        written = source.type_aliases[written].rstrip("&")
    return False


def _stream_params(function: cxx.Function, source: cxx.CxxSource) -> list[str]:
    return [p.name for p in function.params if _is_stream(p, source)]


def stream_ignored(function: cxx.Function, source: cxx.CxxSource, typed_impls: set[str]) -> list[Finding]:
    streams = _stream_params(function, source)
    if not streams and function.short_name not in typed_impls:
        return []
    findings = []
    for launch in function.launches:
        stream = launch.stream
        if not launch.stream_known or (stream is not None and stream not in DEFAULT_STREAMS):
            continue
        receives = f"receives the stream `{streams[0]}`" if streams else "binds no stream (typed FFI handler)"
        fix = None if streams else (
            "Bind XLA's stream with `.Ctx<ffi::PlatformStream<cudaStream_t>>()` and launch with "
            "`<<<grid, block, shared_bytes, stream>>>`.")
        findings.append(
            make(
                "stream-ignored",
                f"{function.short_name} ({source.name}:{function.line}) {receives} but launches "
                f"`{launch.text}` (line {launch.line}) on the default stream{f' (`{stream}`)' if stream else ''}",
                fix=fix,
                likelihood=0.8,
            )
        )
    return findings


def _checks_after(function: cxx.Function, offset: int, checkers: set[str]) -> bool:
    return any(c.start > offset and (LAUNCH_CHECKS.match(c.name) or c.name in checkers) for c in function.calls)


def checker_functions(program: Program) -> set[str]:
    """Functions that read the launch status: calling one after a launch checks it."""
    own = {
        f.short_name for f in program.functions.values()
        if not f.launches and any(LAUNCH_CHECKS.match(c.name) for c in f.calls)
    }
    return own | {name for name in XLACC_LAUNCH_CHECKS if name not in program.functions}


def _checked(launch: cxx.Launch, function: cxx.Function, checkers: set[str]) -> bool:
    """A launch API's returned error kept (assigned, returned, tested), or a check after the launch."""
    return launch.result_kept or _checks_after(function, launch.end, checkers)


def unchecked_launch(function: cxx.Function, source: cxx.CxxSource, program: Program, checkers: set[str]) -> Finding | None:
    unchecked = [launch for launch in function.launches if not _checked(launch, function, checkers)]
    if unchecked:
        callers = [
            (f, c) for f in program.functions.values() if f.short_name != function.short_name  # recursion checks nothing
            for c in f.calls if c.name == function.short_name
        ]
        if callers and all(_checks_after(caller, call.start, checkers) for caller, call in callers):
            unchecked = []
    if not unchecked:
        return None
    shown = unchecked[:MAX_LAUNCHES_NAMED]
    kernels = ", ".join(f"`{launch.kernel}` (line {launch.line})" for launch in shown)  # lines of this function's file
    if len(unchecked) > len(shown):
        kernels += f" and {len(unchecked) - len(shown)} more"
    return make(
        "unchecked-launch",
        f"{function.short_name} ({source.name}:{function.line}) launches {kernels} and never reads the launch's error "
        "afterwards (cudaGetLastError, xlacc::launch_status, or the error a launch call returns)",
        likelihood=0.6,
    )
