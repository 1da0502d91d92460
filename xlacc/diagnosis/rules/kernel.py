"""Checks over kernels and the entry points XLA calls: what one C/C++/CUDA file says on its own
(with the functions of the other sources it calls).

Each check takes the parsed :class:`~xlacc.diagnosis.program.Program` and returns findings; none
compiles or runs anything.
"""

from __future__ import annotations

import functools
import re

from xlacc.diagnosis.findings import make
from xlacc.diagnosis.program import TYPED_FFI, EntryPoint, Program, registration_of
from xlacc.parsers import cxx
from xlacc.report import Finding

MAX_LAUNCHES_NAMED = 10  # a finding names this many unchecked launches, then counts the rest
DEFAULT_STREAMS = frozenset({"0", "0u", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread", "cudaStreamDefault"})
HOST_SYNC_CALLS = frozenset(
    "cudaDeviceSynchronize cudaStreamSynchronize cudaEventSynchronize cudaMalloc cudaMallocManaged cudaMallocHost "
    "cudaHostAlloc cudaFree cudaFreeHost cudaMemcpy cudaMemset cuCtxSynchronize cuStreamSynchronize cuMemAlloc cuMemFree".split()
)
LAUNCH_CHECKS = re.compile(r"^(?:\w*GetLastError|\w*PeekAtLastError|\w*LAUNCH_CHECK\w*|\w*CHECK_LAST\w*)$")
SIZE_FROM_CALL = re.compile(r"\b(?:element_count|dimensions|size_bytes|numel|dims)\b|\.size\s*\(|\bsizes?\(\)")
INT_TYPES = r"(?:unsigned\s+|signed\s+)?(?:int|long\s+long|long|short|size_t|std::size_t|int64_t|int32_t|uint32_t|uint64_t|std::int64_t|auto|unsigned)"
CONSTANT_EXPRESSION = re.compile(r"^[\d\s+\-*/()uUlL]+$")
CALL_DEPTH = 4
FFI_MACRO_PLATFORMS = frozenset({"cuda", "gpu", "host", "cpu", "rocm"})
LEGACY_MACRO_PLATFORMS = frozenset({"CUDA", "Host", "ROCM"})
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
# A file built into the binary that holds XLA's registry (jaxlib, torch_xla, XLA itself), where the
# static registration macros do reach it.
INSIDE_XLA = re.compile(r'^\s*#\s*include\s*"(?:jaxlib/|xla/service/|tensorflow/|torch_xla/csrc/)', re.M)


# -- reachability ---------------------------------------------------------------------------------


def host_code(function: cxx.Function) -> bool:
    return not function.cuda or "__host__" in function.cuda


def reachable(entry: EntryPoint, program: Program, skip_guarded: bool = False) -> list[cxx.Function]:
    """The entry point's body and the host functions of the sources it calls, a few levels deep.

    With ``skip_guarded``, calls made inside a try block are not followed (what they throw is caught)."""
    if entry.body is None:
        return []
    functions = program.functions
    seen = {entry.body.short_name: entry.body}
    frontier = [entry.body]
    for _ in range(CALL_DEPTH):
        next_frontier = []
        for function in frontier:
            for call in function.calls:
                if skip_guarded and call.in_try:
                    continue
                callee = functions.get(call.name.lstrip("."))
                if callee is not None and callee.short_name not in seen and host_code(callee) and not call.name.startswith("."):
                    seen[callee.short_name] = callee
                    next_frontier.append(callee)
        frontier = next_frontier
    return list(seen.values())


def _reached_by_entries(program: Program) -> set[str] | None:
    """Names of the functions some entry point reaches; None when the program has no entry point."""
    if not program.entries:
        return None
    return {f.short_name for entry in program.entries for f in reachable(entry, program)}


# -- sizes ----------------------------------------------------------------------------------------


INT_DECLARATION = re.compile(
    rf"(?:\b(?:const|constexpr|static)\s+)*\b{INT_TYPES}\s+(?P<name>\w+)\s*(?:=\s*|\{{\s*|\(\s*)"
    rf"(?P<value>[\w\s+\-*/()]{{1,80}}?)\s*[;}})]"
)


@functools.lru_cache(maxsize=256)
def _int_declarations(body: str) -> dict[str, re.Match]:
    """The first integer declaration with an initialiser of each name in a body."""
    found: dict[str, re.Match] = {}
    for match in INT_DECLARATION.finditer(body):
        found.setdefault(match.group("name"), match)
    return found


def _constant_declaration(function: cxx.Function, name: str, depth: int = 0) -> str | None:
    """``const int size = 3;`` (or ``= 2048 / block_dim;`` where block_dim is a constant too)."""
    if name not in function.body:
        return None
    match = _int_declarations(function.body).get(name)
    if match is None:
        return None
    value = match.group("value")
    names = [n for n in IDENTIFIER.findall(value) if not re.fullmatch(r"\d+[uUlL]*", n)]
    if not re.fullmatch(r"[\w\s+\-*/()]+", value) or not re.search(r"\d", value):
        return None
    if names and (depth > 1 or any(_constant_declaration(function, n, depth + 1) is None for n in names)):
        return None
    return " ".join(match.group(0).split())


def _reads_call_sizes(entry: EntryPoint, functions: list[cxx.Function]) -> bool:
    """Does the entry point (or what it calls) read sizes from the call: buffer dimensions for a
    typed handler, backend_config (``opaque``) or a second operand for a legacy function."""
    if entry.typed:
        return any(SIZE_FROM_CALL.search(f.body) for f in functions)
    if entry.function is None:
        return True
    params = entry.function.params
    kind = entry.signature.params
    if "opaque" in kind:
        opaque = params[kind.index("opaque")].name
        return bool(opaque) and any(re.search(rf"\b{re.escape(opaque)}\b", f.body) for f in functions)
    return False  # XLA:CPU passes sizes as operands: a constant bound below says it ignores them


def _constant_of(name: str, function: cxx.Function, source: cxx.CxxSource) -> str | None:
    declaration = _constant_declaration(function, name)
    if declaration is None and name in source.int_macros:
        declaration = f"#define {name} {source.int_macros[name]}"
    return declaration


def hardcoded_size(entry: EntryPoint, program: Program) -> Finding | None:
    functions = reachable(entry, program)
    if not functions or _reads_call_sizes(entry, functions):
        return None
    if "opaque" in entry.signature.params:
        what = "its backend_config (`opaque`) is never read"
    elif entry.typed:
        what = "the buffers' sizes are never read"
    else:
        what = "XLA:CPU passes this signature no size: pass it as an operand, or use api_version 3 and backend_config"
    for function in functions:
        source = next((s for s in program.sources if function in s.functions), entry.origin)
        for bound, line in _loop_bounds(function):
            declaration = _constant_of(bound, function, source) if _looks_like_size(bound) else None
            if declaration:
                return make(
                    "hardcoded-size",
                    f"{entry.symbol} ({entry.where}): `{declaration}` bounds the loop at {function.at(line)}; {what}",
                    likelihood=0.8,
                )
        for launch in function.launches:
            for arg in launch.args:
                for name in IDENTIFIER.findall(arg):
                    declaration = _constant_of(name, function, source)
                    if declaration:
                        return make(
                            "hardcoded-size",
                            f"{entry.symbol} ({entry.where}): `{declaration}` is passed to `{launch.text}` "
                            f"({function.at(launch.line)}); {what}",
                            likelihood=0.8,
                        )
            grid = _fixed_grid(launch, function, source)
            if grid and not any(_looks_like_size(a) for a in launch.args):
                return make(
                    "hardcoded-size",
                    f"{entry.symbol} ({entry.where}) launches `{launch.text}` ({function.at(launch.line)}) on a fixed grid "
                    f"({grid}) and passes the kernel no size; {what}",
                    likelihood=0.7,
                )
    return None


LOOP_BOUND = re.compile(r"\bfor\s*\([^;()]*;\s*[\w.]+\s*<=?\s*([A-Za-z_]\w*)\s*;")


def _loop_bounds(function: cxx.Function) -> list[tuple[str, int]]:
    """``for (...; i < size; ...)``: the bound's name and the loop's line (host code only)."""
    if not host_code(function):
        return []
    return [(m.group(1), function.line_at(m.start())) for m in LOOP_BOUND.finditer(function.body)]


def _fixed_grid(launch: cxx.Launch, function: cxx.Function, source: cxx.CxxSource) -> str | None:
    """The grid and block when both are constants (literals, or names declared as constants)."""
    if len(launch.config) < 2:
        return None
    shown = []
    for expression in launch.config[:2]:
        names = IDENTIFIER.findall(expression)
        declarations = [_constant_of(n, function, source) for n in names if n not in ("dim3",)]
        if any(d is None for d in declarations):
            return None
        if not names and not CONSTANT_EXPRESSION.match(expression):
            return None
        shown.append("; ".join(d for d in declarations if d) or expression)
    return ", ".join(f"`{s}`" for s in shown)


def _looks_like_size(argument: str) -> bool:
    return re.search(r"\b(?:n|size|count|len|length|num\w*|\w*_size|\w*_len|\w*elements?)\b", argument, re.I) is not None


# -- streams and launches ---------------------------------------------------------------------------


def _stream_params(function: cxx.Function, source: cxx.CxxSource) -> list[str]:
    from xlacc.diagnosis.program import STREAM_TYPES

    return [p.name for p in function.params if source.type_aliases.get(p.type, p.type).rsplit("::", 1)[-1] in STREAM_TYPES]


def stream_ignored(function: cxx.Function, source: cxx.CxxSource, typed_impls: set[str]) -> list[Finding]:
    streams = _stream_params(function, source)
    if not streams and function.short_name not in typed_impls:
        return []
    findings = []
    for launch in function.launches:
        stream = launch.stream
        if stream is not None and stream not in DEFAULT_STREAMS:
            continue
        receives = f"receives the stream `{streams[0]}`" if streams else "binds no stream (typed FFI handler)"
        fix = None if streams else (
            "Bind XLA's stream with `.Ctx<ffi::PlatformStream<cudaStream_t>>()` and launch with "
            "`<<<grid, block, shared_bytes, stream>>>`.")
        findings.append(
            make(
                "stream-ignored",
                f"{function.short_name} ({source.name}:{function.line}) {receives} but launches "
                f"`{launch.text}` (line {launch.line}) on {'stream ' + stream if stream else 'the default stream'}",
                fix=fix,
                likelihood=0.8,
            )
        )
    return findings


def _checks_after(function: cxx.Function, offset: int, checkers: set[str]) -> bool:
    return any(c.start > offset and (LAUNCH_CHECKS.match(c.name) or c.name in checkers) for c in function.calls)


def checker_functions(program: Program) -> set[str]:
    """Functions that read the launch status: calling one after a launch checks it."""
    return {
        f.short_name for f in program.functions.values()
        if not f.launches and any(LAUNCH_CHECKS.match(c.name) for c in f.calls)
    }


def unchecked_launch(function: cxx.Function, source: cxx.CxxSource, program: Program, checkers: set[str]) -> Finding | None:
    unchecked = [launch for launch in function.launches if not _checks_after(function, launch.end, checkers)]
    if unchecked:
        callers = [(f, c) for f in program.functions.values() for c in f.calls if c.name == function.short_name]
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
        f"{function.short_name} ({source.name}:{function.line}) launches {kernels} and never calls cudaGetLastError "
        "afterwards",
        likelihood=0.6,
    )


def host_sync(entry: EntryPoint, program: Program) -> list[Finding]:
    findings = []
    for function in reachable(entry, program):
        for call in function.calls:
            if call.name not in HOST_SYNC_CALLS:
                continue
            via = "" if function.short_name == entry.symbol else f" (in {function.short_name}, which it runs)"
            capture = " It is declared kCmdBufferCompatible: XLA captures it into a CUDA graph, where this fails." if entry.cmd_buffer else ""
            findings.append(
                make(
                    "host-sync-in-handler",
                    f"{entry.symbol} ({entry.where}) calls `{call.name}` at {function.at(call.line)}{via}.{capture}",
                    severity="error" if entry.cmd_buffer else None,
                    likelihood=0.7,
                )
            )
    return findings


# -- what XLA calls ----------------------------------------------------------------------------------


def deprecated_signature(entry: EntryPoint) -> Finding | None:
    """The 4-parameter GPU entry point (API_VERSION_ORIGINAL): deprecated, and it cannot report a failure."""
    if entry.signature.kind != "gpu-original":
        return None
    return make(
        "legacy-api-deprecated",
        f"{entry.symbol} ({entry.where}) is `{entry.signature.text}`: the api_version 1 (API_VERSION_ORIGINAL) "
        "signature, which XLA:GPU reports as deprecated and due for removal, and which has no way to report a failure",
        fix="Add `XlaCustomCallStatus* status` as a fifth parameter and call with api_version 2, or make it a typed "
        "FFI handler (`XLA_FFI_DEFINE_HANDLER_SYMBOL`, api_version 4).",
        likelihood=0.6,
    )


def exceptions(entry: EntryPoint, program: Program) -> Finding | None:
    for function in reachable(entry, program, skip_guarded=True):
        if function.throws:
            throw = function.throws[0]
            via = "" if function.short_name == entry.symbol else f" in {function.short_name}, which it runs,"
            return make(
                "exception-escapes",
                f"{entry.symbol} ({entry.where}) can throw:{via} `{throw.text}` ({function.at(throw.line)}) is not inside a try block",
                likelihood=0.6,
            )
    return None


def symbol_exposure(entry: EntryPoint, program: Program, looked_up: set[str], hidden_build: str | None) -> Finding | None:
    """Is an entry point reachable by its name? Only a name something looks up must be exported: a
    capsule made in C++ or a static registration needs no symbol, and a function other code calls
    is a helper. It counts as looked up when Python looks it up, or when nothing else examined
    could reach it (no capsule, no bindings, no Python)."""
    if entry.by_macro == "XLA_FFI_DEFINE_HANDLER_SYMBOL" or entry.captured or entry.registered:
        return None
    if entry.origin is not None and INSIDE_XLA.search(entry.origin.text):
        return None  # built into jaxlib, torch_xla or XLA: registered there, never looked up by name
    if entry.function is None or entry.function.template_params:
        return None
    if any(c.name == entry.symbol for f in program.functions.values() if f is not entry.function for c in f.calls):
        return None
    if entry.symbol not in looked_up and (program.has_capsules or program.facts):
        return None
    lookup = " and Python looks it up by that name" if entry.symbol in looked_up else ""
    severity = None
    if entry.internal:
        return make(
            "symbol-hidden",
            f"{entry.symbol} ({entry.where}) has an entry-point signature but is `static` or in an anonymous "
            f"namespace: it is not exported{lookup}",
            severity=severity,
            likelihood=0.6,
        )
    if not entry.exported:
        return make(
            "symbol-mangled",
            f"{entry.symbol} ({entry.where}), `{entry.signature.text}`, is not declared `extern \"C\"`: the library "
            f"exports it under a C++-mangled name, and a look-up of `{entry.symbol}` fails{lookup}",
            fix=f"Declare it `extern \"C\" void {entry.symbol}(...)` (or wrap it in `extern \"C\" {{ ... }}`).",
            severity=severity,
            likelihood=0.7,
        )
    if hidden_build and not entry.visible:
        return make(
            "symbol-hidden",
            f"{hidden_build} builds with -fvisibility=hidden, and {entry.symbol} ({entry.where}) is not marked "
            f"visibility(\"default\"){lookup}",
            severity=severity,
            likelihood=0.6,
        )
    return None


# -- backend_config -------------------------------------------------------------------------------


def opaque_read(entry: EntryPoint, program: Program) -> tuple[str | None, bool, int] | None:
    """How a legacy entry point reads its backend_config as a struct: (struct name if known, whether
    the length is checked, line). None when it does not read one."""
    if entry.function is None or "opaque" not in entry.signature.params:
        return None
    kinds = entry.signature.params
    opaque = entry.function.params[kinds.index("opaque")].name
    length = entry.function.params[kinds.index("size")].name
    return _opaque_in(entry.function, opaque, length, program, depth=0)


def _opaque_in(function: cxx.Function, opaque: str, length: str, program: Program, depth: int):
    if not opaque:
        return None
    body = function.body
    name = re.escape(opaque)
    checked = bool(length) and re.search(rf"\b{re.escape(length)}\b", body) is not None
    cast = re.search(
        rf"(?:reinterpret_cast|static_cast|bit_cast)\s*<\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?\*\s*>\s*\(\s*{name}\s*\)"
        rf"|\(\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?\*\s*\)\s*{name}\b",
        body,
    )
    if cast and (cast.group(1) or cast.group(2)) not in ("char", "void", "uint8_t", "std::uint8_t", "unsigned"):
        return cast.group(1) or cast.group(2), checked, function.at(function.line_at(cast.start()))
    copy = re.search(rf"\bmemcpy\s*\(\s*&?\s*(\w+)\s*,\s*{name}\s*,", body)
    if copy:
        declared = re.search(rf"\b([\w:]+)\s+{re.escape(copy.group(1))}\s*[;={{(]", body)
        return (declared.group(1) if declared else None), checked, function.at(function.line_at(copy.start()))
    for call in function.calls:
        if opaque not in call.args:
            continue
        template = re.search(r"<\s*([\w:]+)\s*>\s*\(", call.text)
        callee = program.functions.get(call.name)
        passes_length = bool(length) and length in call.args
        if callee is not None and depth < 2:
            index = call.args.index(opaque)
            inner_length = callee.params[call.args.index(length)].name if passes_length and call.args.index(length) < len(callee.params) else ""
            if index < len(callee.params):
                found = _opaque_in(callee, callee.params[index].name, inner_length, program, depth + 1)
                if found is not None:
                    struct, inner_checked, line = found
                    return struct or (template.group(1) if template else None), inner_checked or checked, line
        elif template and ("Unpack" in call.name or "Descriptor" in call.name or "opaque" in call.name.lower()):
            return template.group(1), checked or passes_length, function.at(call.line)
    return None


def opaque_unchecked(entry: EntryPoint, program: Program) -> Finding | None:
    read = opaque_read(entry, program)
    if read is None or read[1]:
        return None
    struct, _, line = read
    what = f"as `{struct}`" if struct else "as a struct"
    return make(
        "opaque-unchecked",
        f"{entry.symbol} ({entry.where}) reads its backend_config {what} at {line} and never compares "
        "`opaque_len` with its size",
        likelihood=0.6,
    )


# -- static registration ----------------------------------------------------------------------------


def static_registrations(source: cxx.CxxSource) -> list[Finding]:
    """XLA's registration macros fill the registry of the binary they are linked into: XLA's own build,
    jaxlib or torch_xla themselves, never theirs from a library loaded with ctypes or LD_PRELOAD."""
    findings = []
    inside_xla = INSIDE_XLA.search(source.text) is not None
    for use in source.xla_macros:
        registration = registration_of(use)
        if registration is None:
            continue
        if not inside_xla or registration.arity_problem:
            findings.append(_static_registration(registration, source))
        finding = _registration_platform(registration, source)
        if finding is not None:
            findings.append(finding)
    return findings


def _static_registration(registration, source: cxx.CxxSource) -> Finding:
    arity = f" ({registration.arity_problem})" if registration.arity_problem else ""
    return make(
        "ld-preload",
        f"{source.name}:{registration.line}: `{registration.text}` registers `{registration.target}` when the library "
        f"loads; that reaches only a registry linked into the same binary (XLA built from source), never the one "
        f"inside jaxlib or torch_xla{arity}",
        title="relying on loading the library to register a target",
        likelihood=0.6,
    )


def _registration_platform(registration, source: cxx.CxxSource) -> Finding | None:
    typed = registration.macro == "XLA_FFI_REGISTER_HANDLER"
    platform = registration.platform
    ok = platform.lower() in FFI_MACRO_PLATFORMS if typed else platform in LEGACY_MACRO_PLATFORMS
    if not platform or ok:
        return None
    allowed = "\"CUDA\" (or \"gpu\") / \"Host\" (or \"cpu\")" if typed else "exactly \"CUDA\" or \"Host\""
    return make(
        "platform-name",
        f"{source.name}:{registration.line}: `{registration.text}` registers for platform \"{platform}\"; "
        f"{registration.macro} needs {allowed}",
        likelihood=0.8,
    )


# -- all kernel checks --------------------------------------------------------------------------------


def kernel_findings(program: Program, looked_up: set[str], hidden_build: str | None) -> dict[str, list[Finding]]:
    """Findings per source name (a file, or the document a block came from)."""
    checkers = checker_functions(program)
    typed_impls = {e.body.short_name for e in program.entries if e.signature is TYPED_FFI and e.body is not None}
    reached = _reached_by_entries(program)
    by_source: dict[str, list[Finding]] = {s.name: [] for s in program.sources}
    for source in program.sources:
        findings = by_source[source.name]
        for function in source.functions:
            if function.launches and host_code(function):
                findings.extend(stream_ignored(function, source, typed_impls))
                if reached is None or function.short_name in reached:
                    unchecked = unchecked_launch(function, source, program, checkers)
                    if unchecked:
                        findings.append(unchecked)
        findings.extend(static_registrations(source))
    for entry in program.entries:
        findings = by_source[entry.source]
        for check in (hardcoded_size(entry, program), deprecated_signature(entry), exceptions(entry, program),
                      opaque_unchecked(entry, program), symbol_exposure(entry, program, looked_up, hidden_build)):
            if check is not None:
                findings.append(check)
        findings.extend(host_sync(entry, program))
    return by_source
