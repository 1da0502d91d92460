"""The program doctor reads: kernels, the entry points XLA can call, and the Python that registers
and calls them, each file parsed once.

An entry point is a function XLA calls. Its C signature says which api_version it takes (legacy
``(stream, buffers, opaque, opaque_len[, status])`` and the XLA:CPU shapes, or a typed FFI handler
made by ``XLA_FFI_DEFINE_HANDLER[_SYMBOL]`` written out or inside a project's own macro, an
``XLA_FFI_Handler*`` lambda, or ``XLA_FFI_Error* f(XLA_FFI_CallFrame*)``). It reaches a registry by
an exported symbol that Python looks up, a PyCapsule made in C++ (pybind11/nanobind
``capsule``, an ``EncapsulateFunction`` helper), or one of XLA's static registration macros.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from xlacc.commands.doctor.inputs import SourceFile
from xlacc.readers import cxx
from xlacc.readers import python as pyparse

# Stream parameter types: the CUDA runtime's and driver's, HIP's, jaxlib's alias, and a void* that
# legacy entry points often take instead (XLA passes the stream as an opaque pointer).
STREAM_TYPES = frozenset({"cudaStream_t", "CUstream", "hipStream_t", "gpuStream_t", "CUstream_st*", "cudaStream_t*"})
SIZE_TYPES = frozenset({"size_t", "unsigned long", "uint64_t", "unsigned long long", "int64_t", "long"})
STATUS_TYPE = re.compile(r"^XlaCustomCallStatus_?$")
GPU_SUFFIXES = (".cu", ".cuh")
# Quick test before parsing a C/C++ file eagerly: without one of these it defines no entry point,
# launch or registration (headers holding only structs or macros are parsed when asked for).
C_RELEVANT = re.compile(r"<<<|XLA_|CustomCall|void\s*\*\s*\*|Stream|apsule|ncapsulate|opaque|__global__|CallFrame")
HAS_BODY = re.compile(r"\)\s*(?:const\s*)?(?:noexcept\s*)?\{")  # a function definition, roughly
GPU_WORDS = re.compile(r"cudaStream_t|hipStream_t|gpuStream_t|CUstream|PlatformStream|<<<|__global__")
PYTHON_MODULE = re.compile(r"\b(?:PYBIND11_MODULE|NB_MODULE)\s*\(\s*(\w+)")
# A handler XLA runs once per executable, on the host, before any stream work.
SETUP_STAGE = re.compile(r"Bind\s*<[^>]*(?:Prepare|Initiali[sz]e|Instantiate)|BindInstantiate")


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
BY_KIND = {s.kind: s for s in SIGNATURES}
TYPED_FFI = BY_KIND["typed-ffi"]


@dataclass(frozen=True)
class EntryPoint:
    symbol: str  # the exported name, the handler's name, or the function's
    signature: Signature
    source: str  # the file
    line: int
    function: cxx.Function | None  # the entry function itself (None for a handler macro)
    body: cxx.Function | None  # what runs when XLA calls it (a typed handler's implementation)
    exported: bool  # extern "C", or XLA_FFI_DEFINE_HANDLER_SYMBOL
    internal: bool  # static or in an anonymous namespace
    visible: bool  # declared visibility("default") (or through an export macro)
    traits: str
    binding: str
    by_macro: str | None  # the XLA_FFI_DEFINE_HANDLER* (or project macro) that made it
    capsule_keys: tuple[str, ...] = ()  # names a C++ registrations dict gives it
    captured: bool = False  # wrapped into a PyCapsule in C++
    capsule_sources: tuple[str, ...] = ()  # the files whose capsules wrap it
    registered: tuple[str, ...] = ()  # targets XLA's static registration macros give it
    origin: cxx.CxxSource | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def cmd_buffer(self) -> bool:
        return "kCmdBufferCompatible" in self.traits

    @property
    def typed(self) -> bool:
        return self.signature is TYPED_FFI

    gpu_hint: bool | None = None  # a typed handler: does what it runs take a stream (None: cannot tell)

    @property
    def gpu(self) -> bool | None:
        """Runs on the GPU: True, False, or None when the source does not say (a typed handler whose
        binding is made elsewhere)."""
        return self.signature.gpu if not self.typed else self.gpu_hint

    @property
    def names(self) -> set[str]:
        """Every name a registration or a call can know it by."""
        return {self.symbol, *self.capsule_keys, *self.registered}


class Program:
    """Parsed sources and the entry points they define; C/C++ headers are parsed when asked for."""

    def __init__(self, files: list[SourceFile]):
        self.files = files
        c_files = [f for f in files if f.kind == "c"]
        macros: dict[str, cxx.MacroDefinition] = {}
        for file in c_files:
            if "#" in file.text and "define" in file.text:
                macros.update(cxx.macro_definitions(file.text, file.line_offset))
        self.macros = macros
        self.sources = [cxx.parse(f.group, f.text, f.line_offset, macros) for f in c_files if C_RELEVANT.search(f.text)]
        self._unparsed = [f for f in c_files if not C_RELEVANT.search(f.text)]
        self.facts = [pyparse.read(f.group, _pad(f)) for f in files if f.kind == "py" and pyparse.relevant(f.text)]
        self.modules = {m.group(1): s for s in self.sources for m in PYTHON_MODULE.finditer(s.text)}

    @cached_property
    def entries(self) -> list[EntryPoint]:
        return entry_points(self.sources)

    @cached_property
    def has_capsules(self) -> bool:
        """Does the C++ wrap entry points into capsules or Python modules (pybind11, nanobind)?"""
        return bool(self.modules) or any(s.capsules for s in self.sources)

    @cached_property
    def functions(self) -> dict[str, cxx.Function]:
        """Every function with a body, by name: the sources' and those of the helper files a call can
        reach (a file without an entry point, launch or registration is read for them only now)."""
        found = {f.short_name: f for s in self.helper_sources for f in s.functions}
        found.update({f.short_name: f for s in self.sources for f in s.functions})
        return found

    @cached_property
    def functions_by_file(self) -> dict[str, dict[str, cxx.Function]]:
        """The functions with a body of each file, by name."""
        found: dict[str, dict[str, cxx.Function]] = {}
        for source in [*self.helper_sources, *self.sources]:
            for function in source.functions:
                found.setdefault(function.source or source.name, {})[function.short_name] = function
        return found

    def function_named(self, name: str, near: str = "") -> cxx.Function | None:
        """The function of that name, the one defined in file `near` first: files built into separate
        libraries may each define their own (two `PotrsMgImpl`s, one per library), and a call means
        its own file's."""
        local = self.functions_by_file.get(near, {}).get(name)
        return local if local is not None else self.functions.get(name)

    @cached_property
    def helper_sources(self) -> list[cxx.CxxSource]:
        return [cxx.parse(f.group, f.text, f.line_offset, self.macros) for f in self._unparsed if HAS_BODY.search(f.text)]

    @cached_property
    def kernels(self) -> dict[str, cxx.Function]:
        return {f.short_name: f for s in self.sources for f in s.functions if f.is_kernel}

    def struct(self, name: str) -> cxx.Struct | None:
        """A struct by name, from the parsed sources or a header holding its definition."""
        for source in self.sources:
            found = source.struct(name)
            if found is not None:
                return found
        short = name.rsplit("::", 1)[-1]
        pattern = re.compile(rf"\b(?:struct|class)\s+(?:alignas\s*\([^)]*\)\s*)?{re.escape(short)}\b")
        for file in self._unparsed:
            if pattern.search(file.text):
                found = cxx.parse(file.group, file.text, file.line_offset, self.macros).struct(short)
                if found is not None:
                    return found
        return None


def _pad(file: SourceFile) -> str:
    """Python text shifted down so that ast's line numbers are the document's."""
    return "\n" * file.line_offset + file.text


# -- entry points ---------------------------------------------------------------------------------


def _param_class(param: cxx.Param, source: cxx.CxxSource) -> set[str]:
    """What a parameter can be in an entry-point signature."""
    classes = set()
    resolved = source.type_aliases.get(param.type, param.type)
    plain = resolved.rsplit("::", 1)[-1]
    if plain in STREAM_TYPES or (param.type == "void*" and "out" not in param.name):
        classes.add("stream")
    if param.type == "void*":
        classes.add("out")
    if param.base_type == "void" and param.pointer_depth == 2:
        classes.add("buffers")
    if param.base_type == "char" and param.pointer_depth == 1:
        classes.add("opaque")
    if param.pointer_depth == 0 and param.unscoped_type in SIZE_TYPES:
        classes.add("size")
    if param.pointer_depth == 1 and STATUS_TYPE.match(param.unscoped_type):
        classes.add("status")
    if param.pointer_depth == 1 and param.unscoped_type == "XLA_FFI_CallFrame":
        classes.add("call_frame")
    return classes


def signature_of(function: cxx.Function, source: cxx.CxxSource) -> Signature | None:
    classes = [_param_class(p, source) for p in function.params]
    returns_void = function.return_type.split()[-1:] == ["void"]  # every legacy type does (jaxlib wraps absl::Status helpers)
    matching = [
        s for s in SIGNATURES
        if len(s.params) == len(classes) and all(want in have for want, have in zip(s.params, classes))
        and (returns_void or s.kind == "typed-ffi")
    ]
    if len(matching) > 1:  # `void* first` fits a GPU stream and a CPU output: the name or the file decides
        first = function.params[0].name.lower()
        gpu = "stream" in first or (source.name.endswith(GPU_SUFFIXES) and "out" not in first)
        matching = [s for s in matching if s.gpu == gpu] or matching
    return matching[0] if matching else None


def _takes_stream(function: cxx.Function, source: cxx.CxxSource) -> bool:
    return bool(function.launches) or any(
        source.type_aliases.get(p.type, p.type).rsplit("::", 1)[-1] in STREAM_TYPES for p in function.params
    )


def is_setup_stage(binding: str) -> bool:
    return SETUP_STAGE.search(binding) is not None


def _runs_on_gpu(binding: str, body: cxx.Function | None, source: cxx.CxxSource, functions: dict) -> bool | None:
    """A typed handler runs on the GPU when its binding takes a stream, or what it runs takes one
    (its implementation, or a function its body names, as `binding().To(impl)` does). Without
    either, a file that never names a GPU stream holds host handlers; otherwise it cannot tell."""
    if "PlatformStream" in binding or "Stream" in binding:
        return True
    if is_setup_stage(binding):
        return None  # a prepare, initialize or instantiate stage takes no stream on any platform
    if body is None:
        return None
    local = {f.short_name: f for f in source.functions}  # a CPU and a GPU file may share helper names
    named = [
        local.get(n) or functions[n]
        for n in set(re.findall(r"\b[A-Za-z_]\w*\b", body.body))
        if n in local or n in functions
    ]
    named = [f for f in named if f is not body]
    if _takes_stream(body, source) or any(_takes_stream(f, source) or "PlatformStream" in f.body for f in named):
        return True
    if not GPU_WORDS.search(source.text):
        return False
    return None


def _impl_name(text: str) -> str:
    """``ns::Impl<float>`` -> ``Impl``."""
    return text.split("<", 1)[0].strip().rsplit("::", 1)[-1]


def entry_points(sources: list[cxx.CxxSource]) -> list[EntryPoint]:
    functions = {f.short_name: f for s in sources for f in s.functions}
    captured: dict[str, list[cxx.Capsule]] = {}
    for source in sources:
        for capsule in source.capsules:
            captured.setdefault(_impl_name(capsule.function), []).append(capsule)
    registered: dict[str, list[str]] = {}
    for source in sources:
        for use in source.xla_macros:
            registration = registration_of(use)
            if registration is not None and registration.handler:
                registered.setdefault(_impl_name(registration.handler), []).append(registration.target)
    extern_c = {name for s in sources for name in s.declared_extern_c}
    callers = {call.name for s in sources for f in s.functions for call in f.calls}
    found: list[EntryPoint] = []
    seen: set[tuple[str, str]] = set()

    defined_in = {}
    for source in sources:
        for function in source.functions:
            defined_in.setdefault(function.short_name, set()).add(source.name)
        for use in source.xla_macros:
            if use.macro in cxx.HANDLER_MACROS and use.args:
                defined_in.setdefault(use.args[0], set()).add(source.name)

    def routes(name: str, where: str) -> dict:
        """The capsules that wrap this definition: made in its own file, or in a file that defines
        no function of that name itself (a CPU and a GPU module may both wrap their own `op`)."""
        capsules = [c for c in captured.get(name, []) if c.source == where or c.source not in defined_in.get(name, set())]
        return {
            "capsule_keys": tuple(dict.fromkeys(c.key for c in capsules if c.key)),
            "captured": bool(capsules),
            "capsule_sources": tuple(dict.fromkeys(c.source for c in capsules)),
            "registered": tuple(dict.fromkeys(registered.get(name, []))),
        }

    for source in sources:
        own = {f.short_name: f for f in source.functions}  # a handler's implementation in its own file first
        for use in source.xla_macros:
            if use.macro not in cxx.HANDLER_MACROS or len(use.args) < 3:
                continue
            name = use.args[0]
            impl_text = use.args[1]
            impl = _impl_name(impl_text)
            body = (own.get(impl) or functions.get(impl)) if not impl_text.lstrip().startswith("[") else None
            seen.add((source.name, name))
            found.append(EntryPoint(
                symbol=name, signature=TYPED_FFI, source=source.name, line=use.line, function=None, body=body,
                exported=use.macro == "XLA_FFI_DEFINE_HANDLER_SYMBOL", internal=False, visible=True,
                traits=" ".join(" ".join(use.args[3:]).split()), binding=use.args[2], by_macro=use.via or use.macro,
                origin=source, gpu_hint=_runs_on_gpu(use.args[2], body, source, functions), **routes(name, source.name),
            ))
        for function in source.functions:
            if function.member or function.is_kernel or (source.name, function.short_name) in seen:
                continue
            signature = TYPED_FFI if function.lambda_handler else signature_of(function, source)
            if signature is None or _helper(function, captured, registered, extern_c, callers):
                continue
            seen.add((source.name, function.short_name))
            found.append(EntryPoint(
                symbol=function.short_name, signature=signature, source=source.name, line=function.line,
                function=function, body=function, exported=function.extern_c or function.short_name in extern_c,
                internal=function.internal, visible=function.visibility == "default", traits="", binding="",
                by_macro=function.from_macro, origin=source,
                gpu_hint=_runs_on_gpu("", function, source, functions) if signature is TYPED_FFI else None,
                **routes(function.short_name, source.name),
            ))
    return found


def _helper(function: cxx.Function, captured: dict, registered: dict, extern_c: set[str], callers: set[str]) -> bool:
    """A function with an entry-point signature that is only a helper of one: a template, or one
    other code calls, that nothing exports, wraps or registers."""
    name = function.short_name
    if name in captured or name in registered or function.extern_c or name in extern_c:
        return False
    return bool(function.template_params) or name in callers


@dataclass(frozen=True)
class Registration:
    """One of XLA's static registration macros, read for its target, platform and handler."""

    macro: str
    target: str
    platform: str
    handler: str
    arity_problem: str | None
    line: int
    text: str


def _string_literal(text: str) -> str | None:
    match = re.fullmatch(r'\s*"([^"]*)"\s*', text)
    return match.group(1) if match else None


def registration_of(use: cxx.MacroUse) -> Registration | None:
    """``XLA_FFI_REGISTER_HANDLER(api, "name", "platform", handler[, traits])``,
    ``XLA_REGISTER_CUSTOM_CALL_TARGET(function, "platform")``,
    ``XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("name", function, "platform")`` (and the CPU ones)."""
    if use.macro not in cxx.REGISTRATION_MACROS:
        return None
    args = list(use.args)
    strings = [_string_literal(a) for a in args]
    problem = None
    if use.macro == "XLA_FFI_REGISTER_HANDLER":
        first = 0 if strings and strings[0] is not None else 1  # the XLA_FFI_Api* argument left out
        target = strings[first] if len(args) > first else None
        platform = strings[first + 1] if len(args) > first + 1 else None
        handler = args[first + 2] if len(args) > first + 2 else ""
        if first == 0 or len(args) < 4:
            problem = f"{use.macro} takes (XLA_FFI_GetApi(), \"name\", \"platform\", handler[, traits]); {len(args)} arguments given"
    elif use.macro.endswith("_WITH_SYM"):
        target, handler, platform = strings[0] if args else None, (args[1] if len(args) > 1 else ""), (strings[2] if len(args) > 2 else None)
        if len(args) != 3:
            problem = f"{use.macro} takes (\"name\", function, \"platform\"); {len(args)} arguments given"
    else:
        if len(args) == 3:  # written like the _WITH_SYM form: read it that way, and say so
            target, handler, platform = strings[0] or args[0], args[1], strings[2]
            problem = f"{use.macro} takes (function, \"platform\"); with a separate name use {use.macro}_WITH_SYM(\"name\", function, \"platform\")"
        else:
            handler = args[0] if args else ""
            target, platform = handler, (strings[1] if len(args) > 1 else None)
            if len(args) != 2:
                problem = f"{use.macro} takes (function, \"platform\"); {len(args)} arguments given"
    return Registration(use.macro, target or "", platform or "", handler, problem, use.line, use.text)
