"""Checks over sources: kernels (.cu/.cc), Python that registers and calls them, shell scripts.

Single-file checks look at one kernel or script. Cross-file checks put together the entry points
the kernels define (their C signatures say which api_version they take) with where Python registers
and calls the same targets.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import PurePath

from xlacc.doctor.findings import make
from xlacc.doctor.rules import cxx, python_facts
from xlacc.doctor.rules.python_facts import PyCall, PyFacts, PyRegistration
from xlacc.report import Finding

C_SUFFIXES = frozenset({".cu", ".cuh", ".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh"})
PY_SUFFIXES = frozenset({".py"})
SH_SUFFIXES = frozenset({".sh", ".bash"})
TEXT_SUFFIXES = frozenset({".md", ".txt", ".log", ".hlo", ".mlir", ".out", ".err"})
FENCE_LANGUAGES = {
    "c": ("cuda", "cu", "cpp", "c++", "cc", "c", "cxx", "h", "hpp", "cuh"),
    "py": ("python", "py", "python3", "ipython", "pycon"),
    "sh": ("bash", "sh", "shell", "console", "zsh"),
    "text": ("text", "txt", "log", "hlo", "mlir", "plaintext"),
}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.M | re.S)
GUESSES = (
    ("text", re.compile(r"\bHloModule\b|\bENTRY\s+%|custom-call\(|stablehlo\.")),
    ("c", re.compile(r"#include|__global__|extern\s+\"C\"|<<<|\bXLA_FFI_")),
    ("py", re.compile(r"^\s*(?:import|from)\s+\w|^\s*def\s+\w+\(|^\s*@\w", re.M)),
    ("sh", re.compile(r"^\s*(?:\$\s+)?(?:nvcc|python3?|export|cd|LD_PRELOAD=|pip)\b", re.M)),
)

# api_version each C entry-point shape accepts, by parameter type classes in order.
STATUS_TYPE = re.compile(r"^XlaCustomCallStatus_?\*$")
SIZE_TYPES = frozenset({"size_t", "unsigned long", "uint64_t"})


@dataclass(frozen=True)
class Signature:
    kind: str
    params: tuple[str, ...]
    apis: frozenset[int]
    text: str
    gpu: bool


SIGNATURES = (
    Signature("gpu-original", ("stream", "buffers", "opaque", "size"), frozenset({1}),
              "void f(cudaStream_t, void** buffers, const char* opaque, size_t opaque_len)", True),
    Signature("gpu-status", ("stream", "buffers", "opaque", "size", "status"), frozenset({2, 3}),
              "void f(cudaStream_t, void** buffers, const char* opaque, size_t opaque_len, XlaCustomCallStatus*)", True),
    Signature("cpu-original", ("out", "buffers"), frozenset({1}), "void f(void* out, const void** in)", False),
    Signature("cpu-status", ("out", "buffers", "status"), frozenset({2}),
              "void f(void* out, const void** in, XlaCustomCallStatus*)", False),
    Signature("cpu-opaque-status", ("out", "buffers", "opaque", "size", "status"), frozenset({3}),
              "void f(void* out, const void** in, const char* opaque, size_t opaque_len, XlaCustomCallStatus*)", False),
    Signature("typed-ffi", ("call_frame",), frozenset({4}), "XLA_FFI_Error* f(XLA_FFI_CallFrame*)", True),
)
TYPED_FFI = next(s for s in SIGNATURES if s.kind == "typed-ffi")
TYPE_CLASSES = {
    "stream": lambda p, src: p.base_type in src.stream_types,
    "buffers": lambda p, src: p.type == "void**",
    "opaque": lambda p, src: p.type == "char*",
    "size": lambda p, src: p.base_type in SIZE_TYPES,
    "status": lambda p, src: bool(STATUS_TYPE.match(p.base_type)),
    "out": lambda p, src: p.type == "void*",
    "call_frame": lambda p, src: p.base_type == "XLA_FFI_CallFrame*",
}

DEFAULT_STREAMS = frozenset({"0", "0u", "nullptr", "NULL", "cudaStreamLegacy", "cudaStreamPerThread", "cudaStreamDefault"})
HOST_SYNC = re.compile(
    r"(?<![\w.])(?P<call>cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaMalloc|cudaMallocManaged"
    r"|cudaMallocHost|cudaHostAlloc|cudaFree|cudaFreeHost|cudaMemcpy|cudaMemset)\s*\("
)
SIZE_FROM_CALL = re.compile(r"\b(?:element_count|dimensions|size_bytes|numel|dims)\b|\.size\s*\(")
INT_TYPES = r"(?:unsigned\s+|signed\s+)?(?:int|long\s+long|long|short|size_t|std::size_t|int64_t|int32_t|uint32_t|uint64_t|auto|unsigned)"
CALL_DEPTH = 4
JAX_PLATFORMS = frozenset({"cpu", "gpu", "CUDA", "Host", "ROCM"})
TORCH_XLA_PLATFORM = "CUDA"
FFI_MACRO_PLATFORMS = frozenset({"cuda", "gpu", "host", "cpu", "rocm"})
LEGACY_MACRO_PLATFORMS = frozenset({"CUDA", "Host", "ROCM"})
HLO_APIS = frozenset({1, 2, 3, 4})
JAX_REGISTER_APIS = frozenset({0, 1})
# A shell assignment (`LD_PRELOAD=./x.so python t.py`), or Python setting it in an environment.
LD_PRELOAD = {
    "sh": re.compile(r"(?<![\w\"'])LD_PRELOAD\s*=\s*[\"']?(?P<lib>[^\s\"';]+)"),
    "py": re.compile(r"[\"']LD_PRELOAD[\"']\s*(?:\]\s*=|:|,)\s*f?[\"'](?P<lib>[^\"']+)"),
}
SYSTEM_PRELOADS = re.compile(r"lib(?:stdc\+\+|gomp|tcmalloc|jemalloc|asan|ubsan|tsan|cuda|nccl|python)")
HIDDEN_VISIBILITY_FLAG = re.compile(r"-fvisibility=hidden")


@dataclass(frozen=True)
class SourceFile:
    name: str  # what findings call it (a path, or path:line for a block of a document)
    kind: str  # c | py | sh | text
    text: str
    group: str  # the file it came from (one check line per group)
    line_offset: int = 0


@dataclass(frozen=True)
class EntryPoint:
    symbol: str
    signature: Signature
    source: str
    line: int
    body: cxx.Function | None  # what runs when XLA calls it (a typed handler's implementation)
    exported: bool  # extern "C", or a XLA_FFI_DEFINE_HANDLER_SYMBOL
    internal: bool
    visible: bool  # declared visibility("default")
    traits: str
    in_handler_macro: bool
    origin: cxx.CxxSource | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def cmd_buffer(self) -> bool:
        return "kCmdBufferCompatible" in self.traits


# -- reading files ------------------------------------------------------------------------------


def kind_of(path: PurePath) -> str | None:
    suffix = path.suffix.lower()
    for kind, suffixes in (("c", C_SUFFIXES), ("py", PY_SUFFIXES), ("sh", SH_SUFFIXES), ("text", TEXT_SUFFIXES)):
        if suffix in suffixes:
            return kind
    return None


def guess_kind(body: str) -> str:
    return next((kind for kind, pattern in GUESSES if pattern.search(body)), "text")


def code_blocks(name: str, text: str) -> list[SourceFile]:
    """The fenced code blocks of a Markdown document (or a note written like one)."""
    blocks = []
    for match in FENCE.finditer(text):
        lang = match.group("lang").lower()
        kind = next((k for k, names in FENCE_LANGUAGES.items() if lang in names), None) or guess_kind(match.group("body"))
        first_line = text.count("\n", 0, match.start("body"))
        blocks.append(SourceFile(f"{name}:{first_line + 1}", kind, match.group("body"), name, first_line))
    return blocks


# -- entry points -------------------------------------------------------------------------------


def _signature(function: cxx.Function, source: cxx.CxxSource) -> Signature | None:
    for signature in SIGNATURES:
        if len(function.params) == len(signature.params) and all(
            TYPE_CLASSES[c](p, source) for c, p in zip(signature.params, function.params)
        ):
            return signature
    return None


def _visible(head: str, source: cxx.CxxSource) -> bool:
    return 'visibility("default")' in head.replace(" ", "") or any(m in head for m in source.visibility_macros)


def entry_points(sources: list[cxx.CxxSource]) -> list[EntryPoint]:
    functions = {f.short_name: f for s in sources for f in s.functions}
    found: list[EntryPoint] = []
    for source in sources:
        for handler in source.handlers:
            impl = functions.get(handler.impl.rsplit("::", 1)[-1])
            found.append(
                EntryPoint(handler.name, TYPED_FFI, source.name, handler.line, impl, handler.exported, False,
                           True, handler.traits, True, source)
            )
        for function in source.functions:
            if function.member:
                continue
            signature = _signature(function, source)
            if signature is None or any(e.symbol == function.short_name and e.origin is source for e in found):
                continue
            found.append(
                EntryPoint(function.short_name, signature, source.name, function.line, function, function.extern_c,
                           function.internal, _visible(function.head, source), "", False, source)
            )
    return found


# -- kernel checks ------------------------------------------------------------------------------


def _identifiers(text: str) -> list[str]:
    return re.findall(r"\b[A-Za-z_]\w*\b", text)


def _constant_declaration(function: cxx.Function, name: str) -> str | None:
    pattern = re.compile(
        rf"(?:\b(?:const|constexpr|static)\s+)*\b{INT_TYPES}\s+{re.escape(name)}\s*(?:=\s*|\{{\s*|\(\s*)\d+[uUlL]*\s*[;}})]"
    )
    match = pattern.search(function.body)
    return " ".join(match.group(0).split()) if match else None


def _reads_size_from_call(entry: EntryPoint) -> bool:
    body = entry.body
    if entry.signature.kind == "typed-ffi":
        return bool(SIZE_FROM_CALL.search(body.skeleton))
    if "opaque" not in entry.signature.params:
        return False
    opaque = body.params[entry.signature.params.index("opaque")].name
    return bool(opaque) and re.search(rf"\b{re.escape(opaque)}\b", body.skeleton) is not None


def hardcoded_size(entry: EntryPoint, source: cxx.CxxSource) -> Finding | None:
    if entry.body is None or _reads_size_from_call(entry):
        return None
    for launch in entry.body.launches:
        for arg in launch.args:
            for name in _identifiers(arg):
                declaration = _constant_declaration(entry.body, name)
                if declaration is None and name in source.int_macros:
                    declaration = f"#define {name} {source.int_macros[name]}"
                if declaration:
                    what = "its backend_config (`opaque`) is never read" if "opaque" in entry.signature.params else (
                        "the buffers' sizes are never read" if entry.signature.kind == "typed-ffi" else "it receives no size")
                    return make(
                        "hardcoded-size",
                        f"{entry.symbol} ({entry.where}): `{declaration}` is passed to `{launch.text}` "
                        f"(line {launch.line}); {what}",
                        likelihood=0.8,
                    )
    return None


def _stream_params(function: cxx.Function, source: cxx.CxxSource) -> list[str]:
    return [p.name for p in function.params if p.base_type in source.stream_types]


def stream_ignored(function: cxx.Function, source: cxx.CxxSource, typed_impls: set[str]) -> list[Finding]:
    streams = _stream_params(function, source)
    if not streams and function.short_name not in typed_impls:
        return []
    findings = []
    for launch in function.launches:
        stream = launch.config[3] if len(launch.config) >= 4 else None
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


def unchecked_launch(function: cxx.Function, source: cxx.CxxSource, checkers: set[str]) -> Finding | None:
    unchecked = [launch for launch in function.launches if not cxx.launch_checked(function, launch, checkers)]
    if not unchecked:
        return None
    kernels = ", ".join(f"`{l.kernel}` (line {l.line})" for l in unchecked)
    return make(
        "unchecked-launch",
        f"{function.short_name} ({source.name}:{function.line}) launches {kernels} and never calls cudaGetLastError "
        "afterwards",
        likelihood=0.6,
    )


def _reachable(entry: EntryPoint, functions: dict[str, cxx.Function]) -> list[cxx.Function]:
    """The entry point's body and the functions of these sources it calls, a few levels deep."""
    if entry.body is None:
        return []
    seen = {entry.body.short_name: entry.body}
    frontier = [entry.body]
    for _ in range(CALL_DEPTH):
        next_frontier = []
        for function in frontier:
            for name in set(_identifiers(function.skeleton)) & functions.keys():
                if name not in seen and function.calls(name):
                    seen[name] = functions[name]
                    next_frontier.append(functions[name])
        frontier = next_frontier
    return list(seen.values())


def host_sync(entry: EntryPoint, functions: dict[str, cxx.Function]) -> list[Finding]:
    findings = []
    for function in _reachable(entry, functions):
        for match in HOST_SYNC.finditer(function.skeleton):
            line = function.line_in_body(match.start())
            via = "" if function is entry.body else f" (in {function.short_name}, which it calls)"
            capture = " It is declared kCmdBufferCompatible: XLA captures it into a CUDA graph, where this fails." if entry.cmd_buffer else ""
            findings.append(
                make(
                    "host-sync-in-handler",
                    f"{entry.symbol} ({entry.where}) calls `{match.group('call')}` at line {line}{via}.{capture}",
                    severity="error" if entry.cmd_buffer else None,
                    likelihood=0.7,
                )
            )
    return findings


def symbol_exposure(entry: EntryPoint, called: bool, hidden_build: str | None) -> Finding | None:
    if entry.in_handler_macro or called:
        return None
    if entry.internal:
        return make(
            "symbol-hidden",
            f"{entry.symbol} ({entry.where}) has an entry-point signature but is `static` or in an anonymous "
            "namespace: it is not exported",
            likelihood=0.6,
        )
    if not entry.exported:
        return make(
            "symbol-mangled",
            f"{entry.symbol} ({entry.where}), `{entry.signature.text}`, is not declared `extern \"C\"`: the library "
            f"exports it under a C++-mangled name, and a look-up of `{entry.symbol}` fails",
            fix=f"Declare it `extern \"C\" void {entry.symbol}(...)` (or wrap it in `extern \"C\" {{ ... }}`).",
            likelihood=0.7,
        )
    if hidden_build and not entry.visible:
        return make(
            "symbol-hidden",
            f"{hidden_build} builds with -fvisibility=hidden, and {entry.symbol} ({entry.where}) is not marked "
            "visibility(\"default\")",
            likelihood=0.6,
        )
    return None


def static_registration(registration: cxx.Registration, source: cxx.CxxSource) -> Finding:
    """XLA's registration macros fill the registry of the binary they are linked into: XLA's own build,
    not jaxlib or torch_xla reached from a library loaded with ctypes or LD_PRELOAD."""
    return make(
        "ld-preload",
        f"{source.name}:{registration.line}: `{registration.text}` registers `{registration.target}` when the library "
        "loads; that reaches only a registry linked into the same binary (XLA built from source), never the one "
        "inside jaxlib or torch_xla",
        title="relying on loading the library to register a target",
        likelihood=0.6,
    )


def platform_of_macro(registration: cxx.Registration, source: cxx.CxxSource) -> Finding | None:
    typed = registration.macro == "XLA_FFI_REGISTER_HANDLER"
    ok = registration.platform.lower() in FFI_MACRO_PLATFORMS if typed else registration.platform in LEGACY_MACRO_PLATFORMS
    if ok or not registration.platform:
        return None
    allowed = "\"CUDA\" (or \"gpu\") / \"Host\" (or \"cpu\")" if typed else "exactly \"CUDA\" or \"Host\""
    return make(
        "platform-name",
        f"{source.name}:{registration.line}: `{registration.text}` registers for platform \"{registration.platform}\"; "
        f"{registration.macro} needs {allowed}",
        likelihood=0.8,
    )


def kernel_findings(sources: list[cxx.CxxSource], entries: list[EntryPoint], hidden_build: str | None) -> dict[str, list[Finding]]:
    """Findings per source name (a file, or the document a block came from)."""
    functions = {f.short_name: f for s in sources for f in s.functions}
    checkers = cxx.checker_functions(sources)
    typed_impls = {e.body.short_name for e in entries if e.signature is TYPED_FFI and e.body is not None}
    by_source: dict[str, list[Finding]] = {s.name: [] for s in sources}
    for source in sources:
        findings = by_source[source.name]
        for function in source.functions:
            if function.launches:
                findings.extend(stream_ignored(function, source, typed_impls))
                unchecked = unchecked_launch(function, source, checkers)
                if unchecked:
                    findings.append(unchecked)
        for registration in source.registrations:
            findings.append(static_registration(registration, source))
            finding = platform_of_macro(registration, source)
            if finding:
                findings.append(finding)
    for entry in entries:
        findings = by_source[entry.source]
        size = hardcoded_size(entry, entry.origin)
        if size:
            findings.append(size)
        findings.extend(host_sync(entry, functions))
        called = any(f.calls(entry.symbol) for f in functions.values() if f.short_name != entry.symbol)
        exposure = symbol_exposure(entry, called, hidden_build)
        if exposure:
            findings.append(exposure)
    return by_source


# -- Python checks ------------------------------------------------------------------------------


def _where(facts: PyFacts, line: int) -> str:
    return f"{facts.name}:{line}"


def registration_findings(facts: PyFacts, reg: PyRegistration) -> list[Finding]:
    findings = []
    where = _where(facts, reg.line)
    if reg.capsule in ("int-address", "ctypes-pointer", "ctypes-function"):
        what = {"int-address": "an int address", "ctypes-pointer": "a ctypes pointer", "ctypes-function": "a ctypes function"}[reg.capsule]
        findings.append(make("capsule-required", f"{where}: `{reg.text}` passes {what} (`{reg.capsule_text}`)", likelihood=0.85))
    if reg.framework == "torch_xla" and reg.platform is not None and reg.platform != TORCH_XLA_PLATFORM:
        findings.append(
            make("platform-name", f"{where}: `{reg.text}` registers for \"{reg.platform}\"; torch_xla accepts exactly \"CUDA\"", likelihood=0.85)
        )
    if reg.framework == "jax" and reg.platform is not None and reg.platform not in JAX_PLATFORMS:
        findings.append(
            make(
                "platform-name",
                f"{where}: `{reg.text}` registers for \"{reg.platform}\": JAX queues it silently and never applies it "
                "(only \"CUDA\"/\"gpu\" and \"cpu\"/\"Host\" do)",
                likelihood=0.85,
            )
        )
    if reg.framework == "jax" and reg.api_version is not None and reg.api_version not in JAX_REGISTER_APIS:
        findings.append(
            make(
                "api-version-invalid",
                f"{where}: `{reg.text}` uses api_version={reg.api_version}; register_ffi_target takes 0 (legacy) or 1 "
                "(typed FFI), not the HLO numbers 1-4",
                likelihood=0.9,
            )
        )
    return findings


def call_findings(facts: PyFacts, call: PyCall) -> list[Finding]:
    findings = []
    where = _where(facts, call.line)
    if call.framework == "torch_xla" and call.api_source == "missing":
        findings.append(
            make(
                "api-version-invalid",
                f"{where}: `{call.text}` passes {call.positional} arguments; `_xla_custom_call` has no defaults and "
                "takes api_version as its 7th (and frontend_attributes as its 8th)",
                likelihood=0.85,
            )
        )
    elif call.api is not None and call.api not in HLO_APIS:
        default = " (stablehlo_custom_call's default)" if call.api_source == "default" else ""
        findings.append(
            make("api-version-invalid", f"{where}: `{call.text}` calls with api_version {call.api}{default}", likelihood=0.9)
        )
    elif call.api == 1:
        findings.append(
            make(
                "legacy-api-deprecated",
                f"{where}: `{call.text}` calls with api_version 1 (API_VERSION_ORIGINAL)",
                likelihood=0.7,
            )
        )
    if call.dtype_problem:
        findings.append(
            make("output-dtype-type", f"{where}: output dtype `{call.dtype_problem}` in `{call.text}`", likelihood=0.85)
        )
    findings.extend(_config_findings(where, call))
    return findings


def _config_findings(where: str, call: PyCall) -> list[Finding]:
    problems = []
    if call.framework == "jax" and call.api is not None and call.api < 4 and call.attrs:
        problems.append(f"attributes {', '.join(call.attrs)} are passed with custom_call_api_version={call.api}; "
                        "attributes need api 4 (legacy calls take legacy_backend_config)")
    if call.framework == "jax" and call.api == 4 and call.legacy_config:
        problems.append("legacy_backend_config is passed to a typed FFI call (api 4); pass attributes as keyword arguments")
    if call.framework == "torch_xla" and call.api == 4:
        text = (call.backend_config or "").strip()
        not_dictionary = (call.backend_config_kind == "constant" and text and not (text.startswith("{") and text.endswith("}")))
        if not_dictionary or call.backend_config_kind in ("json", "str-call"):
            shown = f'"{text}"' if call.backend_config_kind == "constant" else f"a {call.backend_config_kind} value"
            problems.append(f"backend_config {shown} with api_version 4 is not an MLIR dictionary (`{{n = 3 : i64}}`)")
    return [make("backend-config-invalid", f"{where}: `{call.text}`: {p}", likelihood=0.8) for p in problems]


def python_findings(facts: PyFacts) -> list[Finding]:
    findings = []
    for reg in facts.registrations:
        findings.extend(registration_findings(facts, reg))
    for call in facts.calls:
        findings.extend(call_findings(facts, call))
    for line, text in dict(facts.gpu_custom_call).items():
        findings.append(make("fixed-target-api", f"{_where(facts, line)}: `{text}`", likelihood=0.9))
    for line, text in dict(facts.legacy_jax_api).items():
        findings.append(make("jax-legacy-api-removed", f"{_where(facts, line)}: `{text}`", likelihood=0.9))
    for line, function, returned in facts.constant_impls:
        findings.append(
            make(
                "op-optimized-away",
                f"{_where(facts, line)}: the XLA implementation `{function}` returns `{returned}`: a constant that XLA "
                "folds away, so the HLO holds no custom-call",
                likelihood=0.8,
            )
        )
    fork = _fork_after_init(facts)
    if fork:
        findings.append(fork)
    return findings


def _fork_after_init(facts: PyFacts) -> Finding | None:
    """A device initialised, then a fork later in the same function (or both at module level)."""
    if facts.spawn_configured:
        return None
    for init_line, init, scope in facts.gpu_inits:
        later = [(line, text) for line, text, fork_scope in facts.forks if fork_scope == scope and line > init_line]
        if later:
            return make(
                "cuda-init-before-fork",
                f"{_where(facts, init_line)}: `{init}` initialises the device, then {_where(facts, later[0][0])}: "
                f"`{later[0][1]}` forks, and no 'spawn' start method is set",
                severity="warning",
                likelihood=0.6,
            )
    return None


def ld_preload_findings(file: SourceFile) -> list[Finding]:
    findings = []
    for match in LD_PRELOAD[file.kind].finditer(file.text):
        library = match.group("lib")
        if ".so" not in library or SYSTEM_PRELOADS.search(PurePath(library).name):
            continue
        line = file.line_offset + file.text.count("\n", 0, match.start()) + 1
        findings.append(
            make(
                "ld-preload",
                f"{file.group}:{line}: `{' '.join(match.group(0).split())}`: preloading {library} registers no custom-call target",
                likelihood=0.7,
            )
        )
    return findings


# -- cross-file: entry points vs registrations and calls ----------------------------------------


@dataclass
class Program:
    entries: list[EntryPoint]
    facts: list[PyFacts]

    def registrations(self, target: str | None, framework: str) -> list[tuple[PyFacts, PyRegistration]]:
        """Where ``target`` is registered for ``framework`` (JAX and torch_xla keep separate registries)."""
        return [
            (f, r) for f in self.facts for r in f.registrations if target and r.target == target and r.framework == framework
        ]

    def entry_for(self, target: str | None, registrations: list[tuple[PyFacts, PyRegistration]]) -> EntryPoint | None:
        by_symbol = {e.symbol: e for e in self.entries}
        for _, reg in registrations:
            named = [by_symbol[s] for s in reg.symbols if s in by_symbol]
            if named:
                return named[0]
        return by_symbol.get(target or "")


def _api_fit(entry: EntryPoint, api: int) -> str | None:
    if api in entry.signature.apis:
        return None
    wanted = " or ".join(str(a) for a in sorted(entry.signature.apis))
    consequence = {
        (True, 4): "XLA would look for a typed FFI handler and call it with one XLA_FFI_CallFrame*",
        (False, 4): "XLA would call a typed FFI handler as a legacy function: a crash at execution",
    }.get((entry.signature is not TYPED_FFI, api), "")
    if entry.signature.kind in ("gpu-original",) and api in (2, 3):
        consequence = (
            "XLA passes a fifth argument, XlaCustomCallStatus*, that this function does not declare: calling it "
            "through that type is undefined behaviour and it can never report a failure"
        )
    elif entry.signature.kind == "gpu-status" and api == 1:
        consequence = "XLA passes no status: the fifth parameter holds garbage"
    return f"`{entry.symbol}` ({entry.where}) is `{entry.signature.text}`, which takes api_version {wanted}, not {api}" + (
        f": {consequence}" if consequence else ""
    )


def _call_mismatches(program: Program, facts: PyFacts, call: PyCall) -> list[Finding]:
    if call.api not in HLO_APIS:  # unknown, or invalid (api-version-invalid says so)
        return []
    registrations = program.registrations(call.target, call.framework)
    entry = program.entry_for(call.target, registrations)
    reasons = []
    if call.framework == "torch_xla" and call.api == 4:
        reasons.append("torch_xla registers targets only in the legacy registry, so api_version 4 (typed FFI) never finds them")
    if entry is not None:
        reason = _api_fit(entry, call.api)
        if reason:
            reasons.append(reason)
    for reg_facts, reg in registrations:
        if reg.framework != "jax" or reg.api_version not in JAX_REGISTER_APIS:
            continue
        if reg.api_version == 1 and call.api in (1, 2, 3):
            reasons.append(f"{_where(reg_facts, reg.line)} registers it as typed FFI (api_version=1), but api {call.api} looks in the legacy registry")
        elif reg.api_version == 0 and call.api == 4:
            reasons.append(f"{_where(reg_facts, reg.line)} registers it as legacy (api_version=0), but api 4 looks in the typed FFI registry")
    if not reasons:
        return _cpu_deprecation(facts, call, entry)
    return [
        make(
            "api-version-mismatch",
            f"{_where(facts, call.line)}: `{call.text}` calls `{call.target or '?'}` with api_version {call.api}:\n- " + "\n- ".join(reasons),
            likelihood=0.9 if entry is not None else 0.7,
        )
    ]


def _cpu_deprecation(facts: PyFacts, call: PyCall, entry: EntryPoint | None) -> list[Finding]:
    """On XLA:CPU, api 2 logs the deprecation line as api 1 does (measured with jax 0.10.2); 3 does not."""
    if entry is None or entry.signature.kind != "cpu-status" or call.api != 2:
        return []
    return [
        make(
            "legacy-api-deprecated",
            f"{_where(facts, call.line)}: `{call.text}` calls the XLA:CPU entry point `{entry.symbol}` ({entry.where}) "
            "with api_version 2 (API_VERSION_STATUS_RETURNING), which XLA:CPU reports as deprecated",
            fix="On XLA:CPU use api_version 3 with `void f(void* out, const void** in, const char* opaque, size_t "
            "opaque_len, XlaCustomCallStatus*)`, or a typed FFI handler (api 4).",
            likelihood=0.6,
        )
    ]


def _registration_mismatches(program: Program, facts: PyFacts, reg: PyRegistration) -> list[Finding]:
    entry = program.entry_for(reg.target, [(facts, reg)])
    if entry is None:
        return []
    where = _where(facts, reg.line)
    legacy = entry.signature is not TYPED_FFI
    findings = []
    if reg.framework == "jax" and reg.api_version == 1 and legacy:
        findings.append(make(
            "api-version-mismatch",
            f"{where}: `{reg.text}` registers `{entry.symbol}` ({entry.where}), a legacy `{entry.signature.text}`, as a "
            "typed FFI handler (api_version=1, the default): XLA calls it to read handler metadata and crashes during registration",
            fix="Register a legacy function with api_version=0 and call it with custom_call_api_version=2 (GPU) or 3 (CPU).",
            likelihood=0.9,
        ))
    elif reg.framework == "jax" and reg.api_version == 0 and not legacy:
        findings.append(make(
            "api-version-mismatch",
            f"{where}: `{reg.text}` registers the typed FFI handler `{entry.symbol}` ({entry.where}) as legacy "
            "(api_version=0): called with api 4 it is not found, with api 1-3 it crashes",
            fix="Register typed FFI handlers with api_version=1 (the default) and call them with api_version 4.",
            likelihood=0.9,
        ))
    elif reg.framework == "torch_xla" and not legacy:
        findings.append(make(
            "api-version-mismatch",
            f"{where}: `{reg.text}` registers the typed FFI handler `{entry.symbol}` ({entry.where}); torch_xla can only "
            "call legacy (api 1-3) targets",
            fix="Give torch_xla a status-returning legacy entry point (`xlacc new --framework torch-xla` writes one).",
            likelihood=0.9,
        ))
    gpu_entry = entry.signature.gpu and (entry.signature is not TYPED_FFI or entry.source.endswith((".cu", ".cuh")))
    if reg.framework == "jax" and reg.platform in ("cpu", "Host") and gpu_entry:
        default = " (platform defaults to \"cpu\")" if not reg.platform_given else ""
        findings.append(make(
            "platform-name",
            f"{where}: `{reg.text}` registers `{entry.symbol}`, a GPU entry point ({entry.where}), for the CPU{default}",
            fix="Register GPU entry points with platform=\"CUDA\" (or \"gpu\").",
            likelihood=0.8,
        ))
    elif reg.framework == "jax" and reg.platform in ("gpu", "CUDA") and not entry.signature.gpu:
        findings.append(make(
            "platform-name",
            f"{where}: `{reg.text}` registers `{entry.symbol}`, a CPU entry point ({entry.where}), for the GPU",
            fix="Register XLA:CPU entry points with platform=\"cpu\".",
            likelihood=0.8,
        ))
    return findings


def _missing_symbols(program: Program, facts: PyFacts, known: set[str]) -> list[Finding]:
    if not program.entries:  # no kernel with an entry point was examined: nothing to compare with
        return []
    findings = []
    for symbol, line in facts.symbol_refs.items():
        if symbol in known or symbol.startswith("_"):
            continue
        closest = difflib.get_close_matches(symbol, sorted(known), n=3, cutoff=0.6)
        hint = f"; closest: {', '.join(closest)}" if closest else ""
        findings.append(make(
            "symbol-missing",
            f"{_where(facts, line)} looks up `{symbol}` in a ctypes library, but no function or handler of that name is "
            f"defined in the kernel sources examined{hint}",
            likelihood=0.5,
            severity="warning",
        ))
    return findings


def cross_findings(program: Program, c_functions: set[str]) -> list[Finding]:
    findings = []
    known = c_functions | {e.symbol for e in program.entries}
    for facts in program.facts:
        for call in facts.calls:
            findings.extend(_call_mismatches(program, facts, call))
        for reg in facts.registrations:
            findings.extend(_registration_mismatches(program, facts, reg))
        findings.extend(_missing_symbols(program, facts, known))
    return findings


# -- all together -------------------------------------------------------------------------------


@dataclass
class SourceReport:
    """Findings per group (file), the cross-file findings, and a one-line summary per group."""

    by_group: dict[str, list[Finding]]
    summaries: dict[str, str]
    cross: list[Finding]


PLURALS = {"launch": "launches"}


def _summary(parts: dict[str, int]) -> str:
    return ", ".join(f"{n} {what if n == 1 else PLURALS.get(what, what + 's')}" for what, n in parts.items() if n)


def analyze(files: list[SourceFile]) -> SourceReport:
    by_group: dict[str, list[Finding]] = {f.group: [] for f in files}
    counts: dict[str, dict[str, int]] = {f.group: {} for f in files}

    def count(group: str, what: str, n: int) -> None:
        counts[group][what] = counts[group].get(what, 0) + n

    c_files = [f for f in files if f.kind == "c"]
    sources = [cxx.parse(f.group, f.text, f.line_offset) for f in c_files]
    entries = entry_points(sources)
    hidden_build = next((f.group for f in files if f.kind == "sh" and HIDDEN_VISIBILITY_FLAG.search(f.text)), None)
    for group, findings in kernel_findings(sources, entries, hidden_build).items():
        by_group[group].extend(findings)
    for source in sources:
        count(source.name, "entry point", sum(1 for e in entries if e.origin is source))
        count(source.name, "launch", sum(len(f.launches) for f in source.functions))

    facts = []
    for file in files:
        if file.kind == "py":
            read = python_facts.read(file.group, _pad(file))
            facts.append(read)
            by_group[file.group].extend(python_findings(read))
            count(file.group, "registration", len(read.registrations))
            count(file.group, "custom call", len(read.calls))
            if read.syntax_error:
                count(file.group, "unparsed Python block", 1)
        if file.kind in ("py", "sh"):
            by_group[file.group].extend(ld_preload_findings(file))
    program = Program(entries, facts)
    c_functions = {f.short_name for s in sources for f in s.functions}
    return SourceReport(by_group, {g: _summary(c) for g, c in counts.items()}, cross_findings(program, c_functions))


def _pad(file: SourceFile) -> str:
    """Python text shifted down so that ast's line numbers are the document's."""
    return "\n" * file.line_offset + file.text
