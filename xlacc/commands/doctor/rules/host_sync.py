"""Host synchronisation inside a GPU handler: a blocking call (a stream or device wait, a blocking
copy or allocation), or a copy from the device into host memory, whose value the host then reads.

XLA runs a handler asynchronously on its stream, and inside CUDA-graph capture when the handler is
``kCmdBufferCompatible``; a wait stalls the pipeline there and fails under capture. One finding per
place that waits, naming every handler that reaches it. And, for captured handlers, copies to the
device from host memory the call owns, which every replay of the graph reads again after it is gone.
"""

from __future__ import annotations

import re

from xlacc.commands.doctor.program import EntryPoint, Program, is_setup_stage
from xlacc.commands.doctor.rules.reach import reachable
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx

HOST_SYNC_CALLS = frozenset(
    "cudaDeviceSynchronize cudaStreamSynchronize cudaEventSynchronize cudaMalloc cudaMallocManaged cudaMallocHost "
    "cudaHostAlloc cudaFree cudaFreeHost cudaMemcpy cudaMemset cuCtxSynchronize cuStreamSynchronize cuMemAlloc cuMemFree "
    "hipDeviceSynchronize hipStreamSynchronize hipMemcpy hipMalloc hipFree".split()
)
# Waits spelled with a namespace: torch's and c10's device waits.
QUALIFIED_SYNC_CALLS = frozenset({"torch::cuda::synchronize", "c10::cuda::device_synchronize", "at::cuda::device_synchronize"})
# The blocking copies and fills: they run on the default stream, not XLA's, whose work they race.
DEFAULT_STREAM_CALLS = {
    "cudaMemcpy": "cudaMemcpyAsync(dst, src, bytes, kind, stream)",
    "cudaMemset": "cudaMemsetAsync(ptr, value, bytes, stream)",
    "hipMemcpy": "hipMemcpyAsync(dst, src, bytes, kind, stream)",
}
DEVICE_WAITS = frozenset({"cudaDeviceSynchronize", "cuCtxSynchronize", "hipDeviceSynchronize"}) | QUALIFIED_SYNC_CALLS
STREAM_WAITS = frozenset({"cudaStreamSynchronize", "cuStreamSynchronize", "hipStreamSynchronize"})
DEFAULT_STREAMS = frozenset({"0", "0u", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread", "cudaStreamDefault",
                             "hipStreamDefault", "CU_STREAM_LEGACY", "CU_STREAM_PER_THREAD"})
# Copies from the device whose destination is host memory: (call, index of the destination).
TO_HOST_COPIES = {"cudaMemcpyAsync": 0, "hipMemcpyAsync": 0, "cuMemcpyDtoHAsync": 0, "cuMemcpyDtoHAsync_v2": 0}
# Copies from host memory to the device: (call, index of the source).
FROM_HOST_COPIES = {"cudaMemcpyAsync": 1, "hipMemcpyAsync": 1, "cuMemcpyHtoDAsync": 1, "cuMemcpyHtoDAsync_v2": 1}
PINNED_ALLOCATIONS = re.compile(r"\b(?:cudaMallocHost|cudaHostAlloc|hipHostMalloc|cuMemAllocHost\w*|cuMemHostAlloc)\s*\(\s*\(?[^,]*?&\s*(\w+)")
HOST_LIBRARIES = ("MPI_", "shmem_", "gloo")  # host calls of communication libraries, ordered by the host
BUFFER_MEMORY = re.compile(r"\b(?:untyped_data|typed_data|data_ptr)\s*(?:<[^>]*>)?\s*\(|\bbuffers\s*\[")
DECLARATION_WINDOW = 200  # characters before a name where its type is read
HOST_CONTAINERS = re.compile(r"\b(?:std::)?(?:vector|array|string|basic_string)\s*<")


def host_syncs(program: Program) -> dict[str, list[Finding]]:
    """One finding per place a GPU handler waits, naming every handler that reaches it, in the first
    handler's source."""
    sites: dict[tuple[str, str, bool], list[tuple[EntryPoint, cxx.Function, cxx.CallSite, str | None]]] = {}
    for entry in program.entries:
        if is_setup_stage(entry.binding) or entry.gpu is False:
            continue  # once per executable, on the host, before any stream work; or no stream at all
        for function, call, into in _waits(entry, program):
            sites.setdefault((function.at(function.line), call.name, into is None), []).append((entry, function, call, into))
    found: dict[str, list[Finding]] = {}
    for (_, name, _), reaching in sites.items():
        entry, function, call, into = reaching[0]
        lines = sorted({c.line for _, _, c, _ in reaching})
        site = function.at(lines[0]) + "".join(f", {function.at(line)}" for line in lines[1:])
        handlers = list(dict.fromkeys(e.symbol for e, _, _, _ in reaching))
        who = f"{entry.symbol} ({entry.where}){_and_others(handlers[1:])}"
        via = "" if function.short_name == entry.symbol else f" (in {function.short_name}, which it runs)"
        captured = any(e.cmd_buffer for e, _, _, _ in reaching)
        capture = f" It is declared kCmdBufferCompatible: XLA captures it into {_graph(entry)}, where this fails." if captured else ""
        calls = "call" if len(handlers) > 1 else "calls"
        what = f"`{call.qualified.lstrip(':') if call.qualified.lstrip(':') in QUALIFIED_SYNC_CALLS else name}`"
        if into is not None:
            text = (f"{who} {calls} {what} at {site}{via} to copy device memory into host memory (`{into}`): into "
                    "pageable memory such a copy returns only once the stream has reached it, and the host reads the value: "
                    "a hidden wait for the stream.")
        else:
            text = f"{who} {calls} {what} at {site}{via}."
        found.setdefault(entry.source, []).append(
            make(
                "host-sync-in-handler",
                text + capture,
                fix=_fix(call, function, into, next(filter(None, (_host_consumer(c, f, e, program) for e, f, c, _ in reaching)), None)),
                severity="error" if captured else None,
                likelihood=0.7,
            )
        )
    return found


def captured_host_sources(program: Program) -> dict[str, list[Finding]]:
    """One finding per copy to the device from host memory a function owns (a local, a local array
    or container), reached by a handler XLA captures into a graph (declared kCmdBufferCompatible):
    each replay copies from that address again, long after the memory is gone."""
    sites: dict[str, list[tuple[EntryPoint, cxx.Function, cxx.CallSite, str]]] = {}
    for entry in program.entries:
        if not entry.cmd_buffer or is_setup_stage(entry.binding) or entry.gpu is False:
            continue
        for function in reachable(entry, program):
            for call in function.calls:
                source = _host_source(call, function)
                if source is not None:
                    sites.setdefault(function.at(call.line), []).append((entry, function, call, source))
    found: dict[str, list[Finding]] = {}
    for site, reaching in sites.items():
        entry, function, call, source = reaching[0]
        handlers = list(dict.fromkeys(e.symbol for e, _, _, _ in reaching))
        via = "" if function.short_name == entry.symbol else f" (in {function.short_name}, which it runs)"
        text = (f"{entry.symbol} ({entry.where}){_and_others(handlers[1:])} is declared kCmdBufferCompatible and copies "
                f"`{source}` to the device with `{call.name}` at {site}{via}: XLA captures the handler into {_graph(entry)} once, "
                f"and every replay copies from that address again, after `{_base_name(source)}` is gone.")
        found.setdefault(entry.source, []).append(make("host-source-in-graph", text, likelihood=0.8))
    return found


def _host_source(call: cxx.CallSite, function: cxx.Function) -> str | None:
    """The source of a copy to the device when it is host memory the function owns and does not
    keep (a local, a local array or container, not `static`); None otherwise."""
    index = FROM_HOST_COPIES.get(call.name)
    if index is None or len(call.args) <= index or call.once:
        return None
    if call.name.startswith(("cudaMemcpy", "hipMemcpy")) and not any("HostToDevice" in a for a in call.args[index + 1 :]):
        return None
    source = call.args[index].strip()
    name = _base_name(source)
    if name is None or _static_local(name, function):
        return None
    if (source.startswith("&") and _declared_local(name, function)) or _local_array_or_container(name, function):
        return source
    return None


def _declared_local(name: str, function: cxx.Function) -> bool:
    """Declared in the function's body (``int total = 0;``), not a parameter, a member or a global:
    its first `name` followed by `;`, `=`, `(` or `{` comes right after a type."""
    found = _declaration(name, function)
    if found is None:
        return False
    before = found[1].rstrip()
    return re.search(r"(?:[\w>]\s*[*&]?|[*&])$", before) is not None and re.search(r"\breturn$", before) is None


def _static_local(name: str, function: cxx.Function) -> bool:
    found = _declaration(name, function)
    return found is not None and re.search(r"\bstatic\b", re.split(r"[;{}]", found[1])[-1]) is not None


def _waits(entry: EntryPoint, program: Program):
    """(function, call, host destination or None) for every wait the handler reaches: the blocking
    calls, and copies to host memory that no blocking call after them already stands for."""
    for function in reachable(entry, program):
        blocking = [c for c in function.calls if _blocks(c)]
        for call in blocking:
            yield function, call, None
        for call in function.calls:
            into = _host_destination(call, function)
            if into is not None and not any(b.start > call.start for b in blocking):
                yield function, call, into


def _blocks(call: cxx.CallSite) -> bool:
    """A blocking call the handler makes on its calls: not one inside a `std::call_once`, which
    runs once per process (a lazy allocation of a pinned host buffer, say), not per call."""
    return not call.once and (call.name in HOST_SYNC_CALLS or call.qualified.lstrip(":") in QUALIFIED_SYNC_CALLS)


def _host_destination(call: cxx.CallSite, function: cxx.Function) -> str | None:
    """The destination of a copy from the device when it is host memory the function owns (a
    local, a local array or container), not pinned memory it allocated; None otherwise."""
    index = TO_HOST_COPIES.get(call.name)
    if index is None or len(call.args) <= index:
        return None
    if call.name.startswith(("cudaMemcpy", "hipMemcpy")) and not any("DeviceToHost" in a for a in call.args[index + 1 :]):
        return None
    destination = call.args[index].strip()
    name = _base_name(destination)
    if name is None or name in set(PINNED_ALLOCATIONS.findall(function.body)):
        return None
    if destination.startswith("&") or _local_array_or_container(name, function):
        return destination
    return None


def _base_name(expression: str) -> str | None:
    """``&count`` -> count; ``host.data()`` -> host; ``buf`` -> buf; anything else None."""
    match = re.fullmatch(r"\(?\s*(?:\(\s*[\w:\s*]+\)\s*)?&?\s*(\w+)\s*(?:\[[^\]]*\])?(?:\s*\.\s*data\s*\(\s*\))?\s*\)?", expression)
    return match.group(1) if match else None


def _local_array_or_container(name: str, function: cxx.Function) -> bool:
    """Declared in the function as an array (``int64_t counts[8];``) or a host container."""
    found = _declaration(name, function)
    if found is None:
        return False
    declaration, before = found
    return bool(declaration.group(1)) or HOST_CONTAINERS.search(before.rsplit(";", 1)[-1].rsplit("{", 1)[-1]) is not None


def _declaration(name: str, function: cxx.Function) -> tuple[re.Match[str], str] | None:
    """The first `name` in the function's body followed by `;`, `=`, `(` or `{` (after an optional
    `[...]`: group 1), where a declaration would be, and the few characters before it, where its
    type would be (read from a window: time stays linear in the body)."""
    found = re.search(rf"\b{re.escape(name)}\s*(\[[^\]\n]*\])?\s*[;({{=]", function.body)
    if found is None:
        return None
    return found, function.body[max(0, found.start() - DECLARATION_WINDOW) : found.start()]


def _graph(entry: EntryPoint) -> str:
    """What XLA captures the handler into: a HIP graph for a handler on a HIP stream."""
    return "a HIP graph" if "hipStream_t" in (entry.binding or "") else "a CUDA graph"


def _and_others(others: list[str], shown: int = 3) -> str:
    """` and 4 other handlers (op1, op2, op3, ...)`; nothing without others."""
    if not others:
        return ""
    names = ", ".join(others[:shown]) + (", ..." if len(others) > shown else "")
    return f" and {len(others)} other handler{'s' if len(others) > 1 else ''} ({names})"


def _fix(call: cxx.CallSite, function: cxx.Function, into: str | None, consumer: str | None) -> str | None:
    """The fix for this wait where the catalogue's (drop it, XLA orders the stream) does not fit."""
    if into is not None:
        return ("Keep the value on the device (let the next kernel read it), or compute it on the host before the call and "
                "pass it as an attribute; if the host must have it, the handler cannot run asynchronously: do not declare it "
                "kCmdBufferCompatible.")
    if call.name in DEFAULT_STREAM_CALLS:
        return (f"`{call.name}` runs on the default stream, not the stream XLA gives the handler, and races its work: "
                f"use `{DEFAULT_STREAM_CALLS[call.name]}` on the handler's stream.")
    copied_to_host = any(c.name in TO_HOST_COPIES and c.start < call.start and _copies_to_host(c) for c in function.calls)
    if copied_to_host and call.name in STREAM_WAITS | DEVICE_WAITS:
        return ("The wait lets the handler read what it copied to the host, so it cannot simply go: compute the value on the "
                "device, or pass it as an attribute; and do not declare this handler kCmdBufferCompatible.")
    if consumer is not None and call.name in STREAM_WAITS | DEVICE_WAITS:
        return (f"The wait makes the stream's work finish before `{consumer}`, a host call of another library that XLA's "
                "stream does not order, so it cannot simply go: keep it (and do not declare the handler "
                "kCmdBufferCompatible), or use a call of that library that takes the stream and queues its work there.")
    if _waits_elsewhere(call, function):
        return ("This waits for work outside XLA's stream (the default stream, another stream or the whole device), which "
                "XLA does not order: if the handler needs that work (another library's kernels or callbacks) finished, "
                "make XLA's stream wait for it on the device instead: record an event where that work runs "
                "(`cudaEventRecord`) and `cudaStreamWaitEvent` on the handler's stream, so the host does not block.")
    return None


def _host_consumer(call: cxx.CallSite, function: cxx.Function, entry: EntryPoint, program: Program) -> str | None:
    """A call after the wait (in its function, or in the handler after it runs that function) that
    hands a buffer's memory to a host library: what the wait is for."""
    later = [c for c in function.calls if c.start > call.start]
    if entry.body is not None and entry.body is not function:
        into = [c.start for c in entry.body.calls if c.name == function.short_name]
        later += [c for c in entry.body.calls if into and c.start > into[0]]
    for candidate in later:
        if candidate.qualified.startswith((".", "std::")) or candidate.name.startswith(("cuda", "cu", "hip")):
            continue  # a method, the standard library, CUDA itself
        if candidate.name in program.functions or candidate.name in program.macros:
            continue  # the program's own code, or its error-check macro around a call
        if candidate.name.startswith(HOST_LIBRARIES) or any(BUFFER_MEMORY.search(a) for a in candidate.args):
            return candidate.name
    return None


def _copies_to_host(call: cxx.CallSite) -> bool:
    return "DtoH" in call.name or any("DeviceToHost" in a for a in call.args)


def _waits_elsewhere(call: cxx.CallSite, function: cxx.Function) -> bool:
    """A device-wide wait, or a stream wait on another stream than the handler's own."""
    if call.name in DEVICE_WAITS or call.qualified.lstrip(":") in DEVICE_WAITS:
        return True
    if call.name not in STREAM_WAITS or not call.args:
        return False
    stream = re.sub(r"^\(\s*\w+\s*\)\s*", "", call.args[0].strip())
    own = {p.name for p in function.params if p.name and "tream" in p.type}
    return stream in DEFAULT_STREAMS or (bool(own) and stream not in own)
