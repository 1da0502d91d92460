"""Checks over kernels and the entry points XLA calls: what one C/C++/CUDA file says on its own
(with the functions of the other sources it calls).

Each check takes the parsed :class:`~xlacc.commands.doctor.program.Program` and returns findings; none
compiles or runs anything.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from xlacc.commands.doctor.program import (
    STREAM_TYPES,
    TYPED_FFI,
    EntryPoint,
    Program,
    is_setup_stage,
    registration_of,
)
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx

MAX_LAUNCHES_NAMED = 10  # a finding names this many unchecked launches, then counts the rest
DEFAULT_STREAMS = frozenset({"0", "0u", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread", "cudaStreamDefault"})
HOST_SYNC_CALLS = frozenset(
    "cudaDeviceSynchronize cudaStreamSynchronize cudaEventSynchronize cudaMalloc cudaMallocManaged cudaMallocHost "
    "cudaHostAlloc cudaFree cudaFreeHost cudaMemcpy cudaMemset cuCtxSynchronize cuStreamSynchronize cuMemAlloc cuMemFree".split()
)
# The blocking copies and fills: they run on the default stream, not XLA's, whose work they race.
DEFAULT_STREAM_CALLS = {"cudaMemcpy": "cudaMemcpyAsync(dst, src, bytes, kind, stream)", "cudaMemset": "cudaMemsetAsync(ptr, value, bytes, stream)"}
LAUNCH_CHECKS = re.compile(r"^(?:\w*GetLastError|\w*PeekAtLastError|\w*LAUNCH_CHECK\w*|\w*CHECK_LAST\w*)$")
# xlacc's helpers that read a launch's error (xlacc/include/xlacc/kernel.h, a header doctor does not
# read): calling one after a launch checks it, unless the program defines its own of that name.
XLACC_LAUNCH_CHECKS = frozenset({"launch_status"})
# Stream types besides program.STREAM_TYPES: xlacc's alias of cudaStream_t (xlacc/kernel.h).
XLACC_STREAM_TYPES = frozenset({"xlacc::Stream"})
ALIAS_DEPTH = 4  # `using S = xlacc::Stream;` and the like, followed this many times
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
    return called_from(entry.body, program, skip_guarded)


def called_from(start: cxx.Function, program: Program, skip_guarded: bool = False, enters=host_code) -> list[cxx.Function]:
    """``start`` and the functions of the sources it calls, a few levels deep: those ``enters`` accepts."""
    seen = {start.short_name: start}
    frontier = [start]
    for _ in range(CALL_DEPTH):
        next_frontier = []
        for function in frontier:
            for call in function.calls:
                if (skip_guarded and call.in_try) or call.name.startswith("."):
                    continue
                callee = program.functions.get(call.name)
                if callee is not None and callee.short_name not in seen and enters(callee):
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


MODIFIED = (
    r"(?<![\w.>])\b{name}\s*(?:\[[^\]]*\]\s*)?(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{name}\b|\b{name}\s*(?:\+\+|--)"
    r"|(?<![&\w)\]])&\s*{name}\b"
)


@functools.lru_cache(maxsize=256)
def _int_declarations(body: str) -> dict[str, re.Match]:
    """The first integer declaration with an initialiser of each name in a body."""
    found: dict[str, re.Match] = {}
    for match in INT_DECLARATION.finditer(body):
        found.setdefault(match.group("name"), match)
    return found


def _assigned_again(function: cxx.Function, name: str, declaration: re.Match) -> bool:
    """``int64_t n = 1;`` then ``n = std::max(n, splits);`` (or ``++n``, or ``&n`` handed on): a variable."""
    pattern = MODIFIED.format(name=re.escape(name))
    return any(not declaration.start() <= m.start() < declaration.end() for m in re.finditer(pattern, function.body))


def _constant_declaration(function: cxx.Function, name: str, depth: int = 0) -> str | None:
    """``const int size = 3;`` (or ``= 2048 / block_dim;`` where block_dim is a constant too), never
    assigned again."""
    if name not in function.body:
        return None
    match = _int_declarations(function.body).get(name)
    if match is None or _assigned_again(function, name, match):
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
    typed handler, backend_config (``opaque``) or a second operand for a legacy function. One that
    runs an xlacc launch function hands it the call's shapes in xlacc::Tensors: whether that one
    reads them is :func:`launch_function_sizes`'s to say."""
    if any(tensor_params(f) for f in functions):
        return True
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
        source = _source_of(function, program, entry.origin)
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


# -- sizes in an xlacc launch function --------------------------------------------------------------
# `xlacc::Status NAME_launch(xlacc::Stream stream, const xlacc::Tensor& x, ...)`: xlacc's entry points
# read the call's shapes into the tensors (xlacc/kernel.h: numel(), dim(i), rank), so a constant
# size in it is one the call never changes.

TENSOR_TYPE = "xlacc::Tensor"
TENSOR_SIZE_READ = r"\b{name}\s*(?:\[[^\]]*\]\s*)?(?:\.|->)\s*(?:numel|dims?|rank)\b"
# Constants named like these tune the kernel (threads, tiles, vector widths), whatever the shapes.
TUNING_NAME = re.compile(r"block|thread|warp|lane|tile|vec|pack|chunk|unroll|smem|shared|stage|split|align", re.I)
# Calls a size goes through without becoming one the kernel takes: casts, and clamps (`std::min`).
NOT_PASSED_TO = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dim3", "sizeof", "min", "max", "clamp"})
STATEMENT_END = re.compile(r"[;{}]")
ASSIGNED_NAME = re.compile(r"^[^=]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?=(?!=)")
SHAPE_DERIVATION_DEPTH = 2  # `n = x.numel()`, then `rows = n / cols`
TENSOR_SIZE_TITLE = "size fixed in the launch function"
TENSOR_SIZE_EVIDENCE = (
    "{where}: `{declaration}` {use}; {function} ({function_where}) receives the call's shapes in {tensors} "
    "and never reads this size from them"
)
TENSOR_SIZE_MORE = "; also `{declaration}` ({where})"
MAX_SIZES_NAMED = 4  # a finding names this many constants of one launch function
TENSOR_SIZE_FIX = (
    "Read the size from the tensors {function} receives: `{tensor}.numel()` (the element count), `{tensor}.dim(i)` "
    "(dimension i, -1 the last) or `{tensor}.rank`; where the kernel handles one shape only, compare it with "
    "them and return `xlacc::Status::Invalid(...)` for any other."
)
SHOWN_CALL_CHARS = 100


@dataclass(frozen=True)
class Statement:
    first: int  # lines
    last: int
    text: str


def tensor_params(function: cxx.Function) -> list[str]:
    """The names of a function's xlacc::Tensor parameters (by reference, value or pointer)."""
    return [p.name for p in function.params if p.name and p.base_type.lstrip(":") == TENSOR_TYPE]


def _statements(function: cxx.Function) -> list[Statement]:
    """The body cut at `;`, `{` and `}`: statements, and the heads of blocks (`if (...)`)."""
    found, start = [], 0
    for end in [m.start() for m in STATEMENT_END.finditer(function.body)]:
        text = function.body[start:end]
        if text.strip():
            first = start + len(text) - len(text.lstrip())
            found.append(Statement(function.line_at(first), function.line_at(end), text))
        start = end + 1
    return found


def _shape_reads(function: cxx.Function, statements: list[Statement]) -> re.Pattern | None:
    """What stands for a call's shape in a function: its tensors' numel()/dim()/rank, its scalar
    parameters (a helper's sizes, a launch function's attributes), and the names computed from them."""
    reads = [TENSOR_SIZE_READ.format(name=re.escape(t)) for t in tensor_params(function)]
    names = {p.name for p in function.params if p.name and p.is_scalar and p.base_type.lstrip(":") != TENSOR_TYPE}
    for _ in range(SHAPE_DERIVATION_DEPTH):
        pattern = "|".join(reads + [rf"\b{re.escape(n)}\b" for n in sorted(names)])
        if not pattern:
            return None
        found = re.compile(pattern)
        names |= {m.group(1) for s in statements if found.search(s.text) and (m := ASSIGNED_NAME.match(s.text.strip()))}
    return re.compile("|".join(reads + [rf"\b{re.escape(n)}\b" for n in sorted(names)]))


def _tied_to_shapes(name: str, use_line: int, statements: list[Statement], shapes: re.Pattern | None) -> bool:
    """Is the constant compared with a shape, or combined into one, in a statement other than the
    one that passes it on (``if (x.dim(-1) != hidden_size) return xlacc::Status::Invalid(...);``)?"""
    if shapes is None:
        return False
    word = re.compile(rf"\b{re.escape(name)}\b")
    for statement in statements:
        if statement.first <= use_line <= statement.last or not word.search(statement.text):
            continue
        if shapes.search(word.sub(" ", statement.text)):
            return True
    return False


def _helper(function: cxx.Function) -> bool:
    """A host function a launch function runs; one that takes tensors is checked on its own (the
    generated dispatch calls the launch function)."""
    return host_code(function) and not tensor_params(function)


def _size_named(name: str) -> bool:
    return _looks_like_size(name) and not TUNING_NAME.search(name)


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CALL_CHARS else text[: SHOWN_CALL_CHARS - 3] + "..."


def _size_uses(function: cxx.Function, program: Program) -> list[tuple[str, str, int]]:
    """(expression, what is done with it, line) for each size a function passes to a launch or a
    call (named like a size, or where the callee takes one) or bounds a host loop with."""
    uses = []
    for launch in function.launches:
        uses += _sized(launch.args, program.functions.get(launch.short_kernel), launch.text, launch.line)
    for call in function.calls:
        if not call.name.startswith(".") and call.name not in NOT_PASSED_TO and not call.qualified.startswith("std::"):
            uses += _sized(call.args, program.functions.get(call.name), call.text, call.line)
    uses += [(bound, f"bounds the loop at {function.at(line)}", line) for bound, line in _loop_bounds(function) if _size_named(bound)]
    return uses


def _sized(args: tuple[str, ...], callee: cxx.Function | None, text: str, line: int) -> list[tuple[str, str, int]]:
    found = []
    for position, arg in enumerate(args):
        param = callee.params[position].name if callee is not None and position < len(callee.params) else ""
        if _size_named(arg) or _size_named(param):
            found.append((arg, f"is passed to `{_shown(text)}` (line {line})", line))
    return found


def _declared_at(name: str, function: cxx.Function, source: cxx.CxxSource) -> str:
    match = _int_declarations(function.body).get(name)
    if match is not None:
        return function.at(function.line_at(match.start()))
    macro = source.macros.get(name)
    own = macro is not None and re.search(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}\b", source.text, re.M)
    return f"{source.name}:{macro.line}" if own else f"`#define {name}`"


def _fixed_sizes(function: cxx.Function, source: cxx.CxxSource, program: Program) -> list[tuple[str, str, str]]:
    """(where it is declared, the declaration, its use) for each constant size a function uses as
    one, unless it is compared with or combined into the call's shapes."""
    statements = None
    shapes = None
    found = []
    for expression, use, line in _size_uses(function, program):
        for name in IDENTIFIER.findall(expression):
            declaration = _constant_of(name, function, source)
            if declaration is None:
                continue
            if statements is None:
                statements = _statements(function)
                shapes = _shape_reads(function, statements)
            if not _tied_to_shapes(name, line, statements, shapes):
                found.append((_declared_at(name, function, source), declaration, use))
    return found


def launch_function_sizes(function: cxx.Function, source: cxx.CxxSource, program: Program, reported: set[str]) -> Finding | None:
    """An xlacc launch function (or a helper it runs) that uses a constant as a size, where the
    call's shapes are at hand in its tensors; ``reported``: declarations already named."""
    tensors = tensor_params(function)
    if not tensors or not host_code(function):
        return None
    fixed = []
    for helper in called_from(function, program, enters=_helper):
        for where, declaration, use in _fixed_sizes(helper, _source_of(helper, program, source), program):
            if where not in reported:
                reported.add(where)
                fixed.append((where, declaration, use))
    if not fixed:
        return None
    where, declaration, use = fixed[0]
    evidence = TENSOR_SIZE_EVIDENCE.format(
        where=where, declaration=declaration, use=use, function=function.short_name,
        function_where=function.at(function.line), tensors=", ".join(f"`{t}`" for t in tensors),
    )
    evidence += "".join(TENSOR_SIZE_MORE.format(where=w, declaration=d) for w, d, _ in fixed[1:MAX_SIZES_NAMED])
    return make(
        "hardcoded-size",
        evidence,
        title=TENSOR_SIZE_TITLE,
        fix=TENSOR_SIZE_FIX.format(function=function.short_name, tensor=tensors[0]),
        likelihood=0.8,
    )


def _source_of(function: cxx.Function, program: Program, default: cxx.CxxSource | None) -> cxx.CxxSource | None:
    return next((s for s in program.sources if any(f is function for f in s.functions)), default)


# -- streams and launches ---------------------------------------------------------------------------


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


def host_syncs(program: Program) -> dict[str, list[Finding]]:
    """One finding per blocking call a handler reaches, naming every handler that reaches it (a
    helper many handlers share gave one finding per handler), in the first handler's source."""
    sites: dict[tuple[str, str], list[tuple[EntryPoint, cxx.Function, cxx.CallSite]]] = {}
    for entry in program.entries:
        if is_setup_stage(entry.binding):
            continue  # once per executable, on the host, before any stream work
        for function in reachable(entry, program):
            for call in function.calls:
                if call.name in HOST_SYNC_CALLS:
                    sites.setdefault((function.at(call.line), call.name), []).append((entry, function, call))
    found: dict[str, list[Finding]] = {}
    for (site, name), reaching in sites.items():
        entry, function, call = reaching[0]
        handlers = list(dict.fromkeys(e.symbol for e, _, _ in reaching))
        who = f"{entry.symbol} ({entry.where}){_and_others(handlers[1:])}"
        via = "" if function.short_name == entry.symbol else f" (in {function.short_name}, which it runs)"
        captured = any(e.cmd_buffer for e, _, _ in reaching)
        capture = " It is declared kCmdBufferCompatible: XLA captures it into a CUDA graph, where this fails." if captured else ""
        found.setdefault(entry.source, []).append(
            make(
                "host-sync-in-handler",
                f"{who} {'call' if len(handlers) > 1 else 'calls'} `{name}` at {site}{via}.{capture}",
                fix=_host_sync_fix(call, function),
                severity="error" if captured else None,
                likelihood=0.7,
            )
        )
    return found


def _and_others(others: list[str], shown: int = 3) -> str:
    """` and 4 other handlers (op1, op2, op3, ...)`; nothing without others."""
    if not others:
        return ""
    names = ", ".join(others[:shown]) + (", ..." if len(others) > shown else "")
    return f" and {len(others)} other handler{'s' if len(others) > 1 else ''} ({names})"


def _host_sync_fix(call: cxx.CallSite, function: cxx.Function) -> str | None:
    """The fix for this call where the catalogue's (drop it) is wrong: a blocking copy or fill
    races XLA's stream, and a wait after a copy to the host is what lets the handler read it."""
    if call.name in DEFAULT_STREAM_CALLS:
        return (f"`{call.name}` runs on the default stream, not the stream XLA gives the handler, and races its work: "
                f"use `{DEFAULT_STREAM_CALLS[call.name]}` on the handler's stream.")
    copied_to_host = any(c.name == "cudaMemcpyAsync" and c.line <= call.line and "DeviceToHost" in c.text for c in function.calls)
    if copied_to_host and "Synchronize" in call.name:
        return ("The wait lets the handler read what it copied to the host, so it cannot simply go: compute the value on the "
                "device, or pass it as an attribute; and do not declare this handler kCmdBufferCompatible.")
    return None


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
    sizes_reported: set[str] = set()
    for source in program.sources:
        findings = by_source[source.name]
        for function in source.functions:
            fixed = launch_function_sizes(function, source, program, sizes_reported)
            if fixed is not None:
                findings.append(fixed)
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
    for source, findings in host_syncs(program).items():
        by_source[source].extend(findings)
    return by_source
