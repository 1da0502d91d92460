"""C, C++ and CUDA source as facts: functions and their parameters, kernels and their launches,
structs, macros, and XLA's macros that define, register and wrap entry points.

    source = parse("kernel.cu", text)
    for function in source.kernels():                 # the __global__ functions
        function.name, function.template_params, [(p.name, p.type, p.pointer_depth) for p in function.params]
    for function in source.host_functions():          # everything else with a body
        function.extern_c, function.visibility, function.body_lines, function.launches
    for struct in source.structs:                     # a kernel's parameter struct, a backend_config layout
        struct.name, [(f.name, f.type) for f in struct.fields], struct.size()

The syntax tree comes from tree-sitter with the tree-sitter-cuda grammar: it reads ``<<<...>>>``
launches, ``extern "C"``, attributes, templates and CUDA qualifiers, needs no header, compiler or
CUDA toolkit, and keeps going past code it cannot parse (about 1 ms a file). libclang was not used:
it needs the CUDA headers and a matching toolkit to read a .cu file at all, and is a large native
dependency. The text is read directly only where a tree cannot say it: ``#define`` bodies (a
project's own macro around ``XLA_FFI_DEFINE_HANDLER_SYMBOL`` is expanded, then parsed like the
file; one invoked inside a function, such as a status check that throws or a switch over dtypes
around the body, is expanded and its throws, calls and launches are the function's: see
:mod:`xlacc.readers.cxx_macros`) and object-like macros that stand for an attribute (``#define EXPORT
__attribute__((visibility("default")))``), which are blanked before parsing so that the tree sees
``void f(...)`` rather than an unknown type ``EXPORT``.

Lines are 1-based and count from the start of the text plus ``line_offset`` (a block of a document).
Nothing here raises on bad input: deep nesting, NUL bytes or broken syntax give fewer facts.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from dataclasses import dataclass, field

from xlacc.readers.cxx_macros import (  # the macro facts a CxxSource holds are read there; re-exported here
    HANDLER_MACROS,  # noqa: F401
    IDENTIFIER,
    MAX_EXPANSION_CHARS,
    MAX_EXPANSIONS,
    MAX_MACRO_DEPTH,
    REGISTRATION_MACROS,  # noqa: F401
    XLA_MACROS,
    MacroDefinition,
    MacroUse,
    closing,
    expand_fully,
    invocation_pattern,
    invocations,
    macro_definitions,
    macro_uses,
    split_arguments,
    strings_blanked,
)

# The text a file's body macros may expand to, all told: this many times the file, or this many characters.
EXPANSION_BUDGET_FACTOR = 4
MIN_EXPANSION_BUDGET = 200_000
XLA_MACRO_NAME = re.compile(r"\bXLA_(?:FFI_DEFINE_HANDLER|FFI_REGISTER_HANDLER|REGISTER_CUSTOM_CALL|CPU_REGISTER_CUSTOM_CALL)")
CUDA_QUALIFIERS = ("__global__", "__host__", "__device__")
# Object-like macros named like this stand for an export attribute in every project seen
# (TORCH_API, RI_KERNELS_API, DLL_EXPORT, ...) even when their #define is in a header not read.
EXPORT_MACRO = re.compile(rb"\b(?:[A-Z][A-Z0-9_]*_(?:API|EXPORTS?|PUBLIC|VISIBLE|DLL)|EXPORT|DLLEXPORT|DLL_EXPORT)\b")
ATTRIBUTE_BODY = re.compile(r"^\s*(?:__attribute__\s*\(\(.*\)\)|__declspec\s*\(.*\)|\[\[.*\]\]|)\s*$", re.S)
# Nodes that can hold a declaration: the walk over a tree descends only into these.
CONTAINERS = frozenset(
    "translation_unit linkage_specification declaration_list namespace_definition template_declaration "
    "preproc_if preproc_ifdef preproc_else preproc_elif preproc_elifdef ERROR class_specifier struct_specifier "
    "union_specifier field_declaration_list type_definition declaration alias_declaration function_definition "
    "preproc_def preproc_function_def preproc_include preproc_call".split()
)
QUERY = (
    "(comment) @comment (string_literal) @string (raw_string_literal) @string (char_literal) @string "
    "(system_lib_string) @string (call_expression) @call (throw_statement) @throw (try_statement) @try "
    "(lambda_expression) @lambda"
)
# Byte sizes and alignments of the C types a parameter struct is made of (LP64, as on Linux x86-64
# and AArch64). Anything else makes Struct.size() unknown.
C_TYPE_SIZES = {
    **dict.fromkeys(("char", "signed char", "unsigned char", "bool", "int8_t", "uint8_t", "std::int8_t", "std::uint8_t"), 1),
    **dict.fromkeys(("short", "unsigned short", "int16_t", "uint16_t", "__half", "half", "__nv_bfloat16", "std::int16_t", "std::uint16_t"), 2),
    **dict.fromkeys(("int", "unsigned", "unsigned int", "int32_t", "uint32_t", "float", "std::int32_t", "std::uint32_t"), 4),
    **dict.fromkeys(
        ("long", "unsigned long", "long long", "unsigned long long", "int64_t", "uint64_t", "size_t", "std::size_t",
         "std::int64_t", "std::uint64_t", "double", "ptrdiff_t", "intptr_t", "uintptr_t", "ssize_t"),
        8,
    ),
}
POINTER_SIZE = 8


@dataclass(frozen=True)
class LaunchApi:
    """Where a launch API's arguments are: the kernel, each of grid, block, shared bytes and stream
    (an index, or several joined, as cuLaunchKernel's gridDimX, Y, Z), and the first kernel argument
    passed one by one (None when they come as an array). ``config_struct``: the index of a launch
    config whose fields (``fields``: grid, block, shared bytes, stream) hold the configuration."""

    kernel: int
    config: tuple[tuple[int, ...], ...] = ()
    args: int | None = None
    config_struct: int | None = None
    fields: tuple[str, ...] = ()


# Launch APIs by name: the CUDA runtime's and driver's, HIP's, and xlacc's own (xlacc/kernel.h).
# Arguments an API defaults (cudaLaunchKernel's shared bytes and stream) may be left out.
LAUNCH_APIS = {
    "xlacc::launch": LaunchApi(0, ((1,), (2,), (3,), (4,)), args=5),
    "hipLaunchKernelGGL": LaunchApi(0, ((1,), (2,), (3,), (4,)), args=5),
    "cudaLaunchKernel": LaunchApi(0, ((1,), (2,), (4,), (5,))),
    "cudaLaunchCooperativeKernel": LaunchApi(0, ((1,), (2,), (4,), (5,))),
    "hipLaunchKernel": LaunchApi(0, ((1,), (2,), (4,), (5,))),
    "cuLaunchKernel": LaunchApi(0, ((1, 2, 3), (4, 5, 6), (7,), (8,))),
    "cuLaunchCooperativeKernel": LaunchApi(0, ((1, 2, 3), (4, 5, 6), (7,), (8,))),
    "cudaLaunchKernelEx": LaunchApi(1, args=2, config_struct=0, fields=("gridDim", "blockDim", "dynamicSmemBytes", "stream")),
    "cuLaunchKernelEx": LaunchApi(1, config_struct=0, fields=("gridDimX", "blockDimX", "sharedMemBytes", "hStream")),
}
# Where a call's returned value is dropped: the parent of a call made as a statement of its own.
DISCARDED_BY = frozenset({"expression_statement", "cast_expression", "comma_expression"})


# -- what a source holds --------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A function parameter or a struct field."""

    name: str  # "" when unnamed
    type: str  # normalised: no const/volatile/restrict/struct, `*` and `&` attached: "float*", "void**"
    base_type: str  # the named type under the pointers: "float", "std::size_t", "ffi::Buffer<ffi::F32>"
    pointer_depth: int  # `float*` 1, `void**` 2, an array parameter counts as a pointer
    const_pointee: bool  # the data at the end of the pointers is const (`const float*`, `float const*`)
    reference: bool
    text: str  # as written, on one line
    array_size: str | None = None  # a field's `[N]`

    @property
    def is_pointer(self) -> bool:
        return self.pointer_depth > 0

    @property
    def is_scalar(self) -> bool:
        return self.pointer_depth == 0 and not self.reference

    @property
    def unscoped_type(self) -> str:
        """``std::size_t`` -> ``size_t``; ``ffi::Buffer<ffi::F32>`` -> ``Buffer<ffi::F32>``."""
        head, bracket, rest = self.base_type.partition("<")
        return head.rsplit("::", 1)[-1] + bracket + rest


@dataclass(frozen=True)
class Launch:
    """``kernel<<<grid, block, shared_bytes, stream>>>(args)``, or a call to a launch API:
    ``xlacc::launch(kernel, grid, block, shared_bytes, stream, args...)``, ``cudaLaunchKernel(kernel,
    grid, block, args, shared_bytes, stream)``, ``cudaLaunchKernelEx(&config, kernel, args...)``..."""

    kernel: str  # as written, without template arguments: "ns::k2"
    template_args: tuple[str, ...]
    config: tuple[str, ...]  # grid, block[, shared bytes[, stream]]
    args: tuple[str, ...]  # () when an API takes them as an array (`void** args`)
    line: int
    start: int  # byte offsets in the text
    end: int
    text: str
    api: str = ""  # the launch API called ("cudaLaunchKernel", "xlacc::launch"); "" for <<<...>>>
    result_kept: bool = False  # the API's returned error is assigned, returned, tested or passed on
    stream_known: bool = True  # False: a launch through a config struct whose stream is set out of sight

    @property
    def stream(self) -> str | None:
        """The stream expression; None when the launch names none (the legacy default stream)."""
        return self.config[3] if len(self.config) >= 4 else None

    @property
    def short_kernel(self) -> str:
        return self.kernel.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class CallSite:
    name: str  # the called function's name, unscoped (`std::memcpy` -> `memcpy`); `.f` for a method
    qualified: str
    args: tuple[str, ...]
    line: int
    start: int
    text: str
    in_try: bool = False  # inside a try block of the calling function


@dataclass(frozen=True)
class Throw:
    line: int
    text: str
    via: str | None = None  # the project macro whose expansion throws (`CHECK_STATUS`)


@dataclass
class Function:
    name: str  # as written: "Impl", "ns::Foo::bar"
    return_type: str
    params: tuple[Param, ...]
    cuda: frozenset[str]  # __global__ / __host__ / __device__
    template_params: tuple[str, ...]  # as written: "typename T", "int N"
    extern_c: bool
    static: bool
    anonymous_namespace: bool
    member: bool  # defined inside a class or struct body
    visibility: str | None  # "default" / "hidden" when declared (an attribute or a macro standing for one)
    head: str  # the declaration before the name: return type, attributes, macros
    line: int  # of the name
    body_lines: tuple[int, int]  # first and last line of the body
    body_range: tuple[int, int]  # byte offsets of the body, braces included
    body: str  # the body's text, braces included, comments blanked
    launches: tuple[Launch, ...] = ()
    calls: tuple[CallSite, ...] = ()
    throws: tuple[Throw, ...] = ()  # throw statements outside any try block of this function
    lambda_handler: bool = False  # `XLA_FFI_Handler* name = +[](XLA_FFI_CallFrame*) {...}`
    from_macro: str | None = None  # the project macro whose expansion defines it
    source: str = ""  # the file (or block) it is defined in

    def at(self, line: int) -> str:
        """``file:line`` of a line of this function."""
        return f"{self.source}:{line}"

    @property
    def short_name(self) -> str:
        return self.name.rsplit("::", 1)[-1]

    @property
    def is_kernel(self) -> bool:
        return "__global__" in self.cuda

    @property
    def internal(self) -> bool:
        """Not visible outside its file: ``static`` or in an anonymous namespace."""
        return self.static or self.anonymous_namespace

    @property
    def body_line(self) -> int:
        return self.body_lines[0]

    def calls_to(self, name: str) -> list[CallSite]:
        return [c for c in self.calls if c.name == name]

    def line_at(self, offset: int) -> int:
        """The line of a character offset into :attr:`body`."""
        return self.body_line + self.body.count("\n", 0, offset)


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Param, ...]
    line: int
    packed: bool = False

    def layout(self) -> list[tuple[int, int]] | None:
        """(offset, bytes) of each field with natural alignment (LP64); None when a field's type is
        not a plain C type."""
        offset, found = 0, []
        for member in self.fields:
            size = POINTER_SIZE if member.is_pointer else C_TYPE_SIZES.get(member.base_type)
            count = _array_count(member.array_size)
            if size is None or member.reference or count is None:
                return None
            align = 1 if self.packed else size
            offset = -(-offset // align) * align
            found.append((offset, size * count))
            offset += size * count
        return found

    def size(self) -> int | None:
        """sizeof(), trailing padding included; None when a field's type is not a plain C type."""
        layout = self.layout()
        if not layout:
            return None
        end = layout[-1][0] + layout[-1][1]
        widest = 1 if self.packed else max(
            POINTER_SIZE if m.is_pointer else C_TYPE_SIZES[m.base_type] for m in self.fields
        )
        return -(-end // widest) * widest


@dataclass(frozen=True)
class Capsule:
    """A function pointer wrapped into a PyCapsule in C++: it reaches XLA without an exported symbol."""

    function: str  # the wrapped name
    key: str | None  # `dict["name"] = EncapsulateFunction(fn)`: the name Python registers it under
    line: int
    text: str
    source: str = ""  # the file that makes it


@dataclass
class CxxSource:
    name: str
    text: str
    line_offset: int = 0
    functions: list[Function] = field(default_factory=list)
    structs: list[Struct] = field(default_factory=list)
    macros: dict[str, MacroDefinition] = field(default_factory=dict)
    xla_macros: list[MacroUse] = field(default_factory=list)
    capsules: list[Capsule] = field(default_factory=list)
    type_aliases: dict[str, str] = field(default_factory=dict)  # `using S = cudaStream_t;` -> {"S": "cudaStream_t"}
    declared_extern_c: set[str] = field(default_factory=set)  # prototypes inside extern "C"
    expanded: dict[str, Function | None] = field(default_factory=dict)  # a body macro's expansion, read once
    expanded_chars: int = 0  # all the text body macros expanded to
    errors: int = 0  # syntax-error regions tree-sitter skipped

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.short_name == name), None)

    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.is_kernel]

    def host_functions(self) -> list[Function]:
        return [f for f in self.functions if not f.cuda or f.cuda == {"__host__"}]

    def struct(self, name: str) -> Struct | None:
        short = name.rsplit("::", 1)[-1]
        return next((s for s in self.structs if s.name == short), None)

    @property
    def int_macros(self) -> dict[str, str]:
        """``#define N 1024`` -> {"N": "1024"}."""
        found = {}
        for macro in self.macros.values():
            match = re.fullmatch(r"\(?\s*(\d+)[uUlL]*\s*\)?", macro.body.strip()) if macro.params is None else None
            if match:
                found[macro.name] = match.group(1)
        return found


# -- parsing ---------------------------------------------------------------------------------------


@functools.cache
def _language():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++
    import tree_sitter_cuda  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Language(tree_sitter_cuda.language())


@functools.cache
def _parser():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Parser(_language())


@functools.cache
def _query():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Query(_language(), QUERY)


def parse(name: str, text: str, line_offset: int = 0, macros: dict[str, MacroDefinition] | None = None) -> CxxSource:
    """The facts of one C, C++ or CUDA text (a file, or a block of a document).

    ``macros``: definitions from other files (a project's headers), used where this text has none.
    """
    raw = text.encode("utf-8", errors="replace")
    source = CxxSource(name=name, text=text, line_offset=line_offset)
    source.macros = {**(macros or {}), **macro_definitions(text, line_offset)}
    _read(source, raw, line_offset, depth=0, via=None)
    return source


def _read(source: CxxSource, raw: bytes, line_offset: int, depth: int, via: str | None, line: int | None = None) -> None:
    """Parse ``raw`` into ``source``; ``line`` pins every fact to one line (a macro's expansion)."""
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    prepared = _blank_attribute_macros(raw, source.macros)
    tree = _parser().parse(prepared)
    captures = tree_sitter.QueryCursor(_query()).captures(tree.root_node)
    code = _blanked(raw, captures.get("comment", ()))
    reader = _TreeReader(source, prepared, code, line_offset, line, via)
    reader.read(tree.root_node)
    reader.bodies(captures)
    source.functions.extend(reader.functions)
    skeleton = reader.skeleton()
    _body_macros(source, reader, code, skeleton)
    bodies = sorted(f.body_range for f in reader.functions)
    uses, expansions = macro_uses(source, code, skeleton, bodies, line, via)
    source.xla_macros.extend(uses)
    source.capsules.extend(dataclasses.replace(c, source=source.name) for c in _capsules(code, skeleton, line_offset, line))
    if depth < MAX_MACRO_DEPTH:
        for macro, text, at in expansions[:MAX_EXPANSIONS]:
            _read(source, text.encode("utf-8", errors="replace"), 0, depth + 1, via or macro, line=at)


def _body_macros(source: CxxSource, reader: _TreeReader, code: bytes, skeleton: bytes) -> None:
    """Project macros invoked inside function bodies, expanded: the calls, launches and throws of
    their expansions (a status check that throws, a switch over dtypes around the body) belong to
    the function at the invocation's line. Each distinct expansion is parsed once per file, and a
    file expands at most :data:`EXPANSION_BUDGET_FACTOR` times its own size (time stays linear)."""
    macros = {n: m for n, m in source.macros.items() if m.params is not None and n not in XLA_MACROS and len(m.body) <= MAX_EXPANSION_CHARS}
    pattern = invocation_pattern(macros)
    if pattern is None:
        return
    budget = max(MIN_EXPANSION_BUDGET, EXPANSION_BUDGET_FACTOR * len(code))
    for function in reader.functions:
        added = _Added(function)
        for invocation in invocations(skeleton, code, pattern, *function.body_range)[:MAX_EXPANSIONS]:
            text = expand_fully(invocation, macros)
            source.expanded_chars += len(text or "")
            if source.expanded_chars > budget:
                break
            if text is not None and text not in source.expanded:
                source.expanded[text] = _expansion_facts(text)
            facts = source.expanded.get(text) if text is not None else None
            if facts is not None:
                added.add(facts, invocation, reader)
            if text is not None and XLA_MACRO_NAME.search(text):  # a handler defined by a macro inside a function
                raw = text.encode("utf-8", errors="replace")
                uses, _ = macro_uses(source, raw, strings_blanked(raw), [], reader.line_of_offset(invocation.start), invocation.name)
                source.xla_macros.extend(uses)
        added.finish()
        if source.expanded_chars > budget:
            return


def _expansion_facts(text: str) -> Function | None:
    """The calls, launches and throws of a macro's expansion, read as the body of a function."""
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    raw = b"void xlacc_expansion() {\n" + text.encode("utf-8", errors="replace") + b"\n}\n"
    tree = _parser().parse(raw)
    captures = tree_sitter.QueryCursor(_query()).captures(tree.root_node)
    reader = _TreeReader(CxxSource(name="", text=""), raw, _blanked(raw, captures.get("comment", ())), 0, None, None)
    reader.read(tree.root_node)
    reader.bodies(captures)
    return next((f for f in reader.functions if f.name == "xlacc_expansion"), None)


class _Added:
    """What the expansions in one function add to it, pinned to each invocation's line and place
    (what the tree already saw in an invocation's arguments is not added twice)."""

    def __init__(self, function: Function):
        self.function = function
        self.calls: list[CallSite] = []
        self.launches: list[Launch] = []
        self.throws: list[Throw] = []
        self.seen_calls = {(c.name, c.line) for c in function.calls}
        self.seen_launches = {(l.kernel, l.line) for l in function.launches}

    def add(self, facts: Function, invocation, reader: _TreeReader) -> None:
        line = reader.line_of_offset(invocation.start)
        guarded = reader.guarded_at(invocation.start)
        offset0 = facts.body_range[0]

        def place(offset: int) -> int:
            return invocation.start + min(max(offset - offset0, 0), invocation.end - invocation.start - 1)

        for call in facts.calls:
            if (call.name, line) not in self.seen_calls:
                self.seen_calls.add((call.name, line))
                self.calls.append(dataclasses.replace(call, line=line, start=place(call.start), in_try=call.in_try or guarded))
        for launch in facts.launches:
            if (launch.kernel, line) not in self.seen_launches:
                self.seen_launches.add((launch.kernel, line))
                self.launches.append(dataclasses.replace(launch, line=line, start=place(launch.start), end=place(launch.end)))
        if not guarded:
            self.throws += [Throw(line, t.text, via=invocation.name) for t in facts.throws]

    def finish(self) -> None:
        self.function.calls += tuple(self.calls)
        self.function.launches += tuple(self.launches)
        self.function.throws += tuple(self.throws)


def _attribute_macros(macros: dict[str, MacroDefinition]) -> set[str]:
    return {m.name for m in macros.values() if m.params is None and ATTRIBUTE_BODY.match(m.body)}


def _blank_attribute_macros(raw: bytes, macros: dict[str, MacroDefinition]) -> bytes:
    """Object-like macros that stand for an attribute become spaces (offsets and lines unchanged)."""
    names = sorted(_attribute_macros(macros), key=len, reverse=True)
    patterns = [EXPORT_MACRO] + ([re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")] if names else [])
    for pattern in patterns:
        raw = pattern.sub(lambda m: b" " * len(m.group(0)), raw)
    return raw


def _blanked(raw: bytes, nodes) -> bytes:
    """``raw`` with the nodes' bytes turned to spaces (newlines kept: lines do not move)."""
    out = bytearray(raw)
    for node in nodes:
        out[node.start_byte : node.end_byte] = re.sub(rb"[^\n]", b" ", raw[node.start_byte : node.end_byte])
    return bytes(out)


def _one_line(data: bytes) -> str:
    return " ".join(data.decode("utf-8", "replace").split())


@dataclass(frozen=True)
class _Context:
    extern_c: bool = False
    anonymous: bool = False
    member: bool = False
    template_params: tuple[str, ...] = ()


class _TreeReader:
    """One pass over a syntax tree: declarations by walking, bodies by one tree-sitter query."""

    def __init__(self, source: CxxSource, prepared: bytes, raw: bytes, line_offset: int, line: int | None, via: str | None):
        self.source = source
        self.prepared = prepared
        self.raw = raw
        self.line_offset = line_offset
        self.pinned_line = line
        self.via = via
        self.functions: list[Function] = []
        self.blanks: list[tuple[int, int]] = []  # comments and strings
        self.strings: list[tuple[int, int]] = []
        self.preprocessor: list[tuple[int, int]] = []
        self.guarded_ranges: list[tuple[int, int]] = []  # try blocks and lambdas
        self.newlines: list[int] | None = None  # offsets of the text's line ends, read once when asked

    def line(self, node) -> int:
        return self.pinned_line if self.pinned_line is not None else self.line_offset + node.start_point.row + 1

    def text(self, node) -> str:
        return _one_line(self.raw[node.start_byte : node.end_byte])

    # -- declarations --
    def read(self, root) -> None:
        stack = [(root, _Context())]
        while stack:
            node, context = stack.pop()
            kind = node.type
            self.source.errors += kind == "ERROR"
            if kind == "function_definition":
                self.function(node, context)
                continue
            if kind in ("preproc_def", "preproc_function_def", "preproc_include", "preproc_call"):
                self.preprocessor.append((node.start_byte, node.end_byte))
                continue
            if kind == "declaration":
                self.declaration(node, context)
            elif kind in ("alias_declaration", "type_definition"):
                self.alias(node)
            if kind in ("struct_specifier", "class_specifier", "union_specifier"):
                self.struct(node)
                context = _Context(context.extern_c, context.anonymous, True, context.template_params)
            elif kind == "linkage_specification":
                value = node.child_by_field_name("value")
                context = _Context(bool(value is not None and b'"C"' in value.text), context.anonymous, context.member, context.template_params)
            elif kind == "namespace_definition":
                anonymous = node.child_by_field_name("name") is None
                context = _Context(context.extern_c, context.anonymous or anonymous, context.member, context.template_params)
            elif kind == "template_declaration":
                params = node.child_by_field_name("parameters")
                names = tuple(self.text(c) for c in params.named_children) if params is not None else ()
                context = _Context(context.extern_c, context.anonymous, context.member, names)
            stack.extend((child, context) for child in reversed(node.children) if child.type in CONTAINERS)

    def function(self, node, context: _Context) -> None:
        declarator = node.child_by_field_name("declarator")
        function_declarator = _find_function_declarator(declarator)
        body = node.child_by_field_name("body")
        if function_declarator is None or body is None:
            return
        name_node = function_declarator.child_by_field_name("declarator")
        if name_node is None:
            return
        name = _declarator_name(name_node)
        head = _one_line(self.raw[_head_start(self.raw, node.start_byte) : name_node.start_byte])
        params = function_declarator.child_by_field_name("parameters")
        self.add_function(
            name=name,
            return_type=self._return_type(node, declarator, function_declarator),
            params=self.params(params),
            cuda=frozenset(c.type for c in node.children if c.type in CUDA_QUALIFIERS),
            context=context,
            static=any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children),
            head=head,
            name_node=name_node,
            body=body,
        )

    def add_function(self, *, name, return_type, params, cuda, context, static, head, name_node, body, lambda_handler=False) -> None:
        self.functions.append(
            Function(
                name=name,
                return_type=return_type,
                params=params,
                cuda=cuda,
                template_params=context.template_params,
                extern_c=context.extern_c or 'extern "C"' in head,
                static=static,
                anonymous_namespace=context.anonymous,
                member=context.member,
                visibility=self._visibility(head),
                head=head,
                line=self.line(name_node),
                body_lines=(self.line(body), self.pinned_line or self.line_offset + body.end_point.row + 1),
                body_range=(body.start_byte, body.end_byte),
                body=self.raw[body.start_byte : body.end_byte].decode("utf-8", "replace"),
                lambda_handler=lambda_handler,
                from_macro=self.via,
                source=self.source.name,
            )
        )

    def _return_type(self, node, declarator, function_declarator) -> str:
        type_node = node.child_by_field_name("type")
        text = self.text(type_node) if type_node is not None else ""
        if declarator is not None and declarator is not function_declarator:
            text += "*" * _pointer_depth_to(declarator, function_declarator)
        return text

    def _visibility(self, head: str) -> str | None:
        compact = head.replace(" ", "")
        if 'visibility("hidden")' in compact:
            return "hidden"
        if 'visibility("default")' in compact or EXPORT_MACRO.search(head.encode()):
            return "default"
        for word in IDENTIFIER.findall(head):
            macro = self.source.macros.get(word)
            if macro is not None and 'visibility("default")' in macro.body.replace(" ", ""):
                return "default"
        return None

    def params(self, node) -> tuple[Param, ...]:
        if node is None:
            return ()
        found = []
        for child in node.named_children:
            if child.type in ("parameter_declaration", "optional_parameter_declaration"):
                found.append(self.declared(child, child.child_by_field_name("declarator")))
        return tuple(p for p in found if not (p.type == "void" and not p.name))

    def declared(self, node, declarator) -> Param:
        """A parameter or field: ``node`` holds the type and qualifiers, ``declarator`` the name and pointers."""
        type_node = node.child_by_field_name("type")
        base = self.text(type_node) if type_node is not None else ""
        const = any(c.type == "type_qualifier" and c.text == b"const" for c in node.children)
        depth, reference, array, name = 0, False, None, ""
        current = declarator
        while current is not None:
            kind = current.type
            if kind in ("pointer_declarator", "abstract_pointer_declarator"):
                depth += 1
            elif kind in ("reference_declarator", "abstract_reference_declarator"):
                reference = True
            elif kind in ("array_declarator", "abstract_array_declarator"):
                depth += 0 if node.type == "field_declaration" else 1
                size = current.child_by_field_name("size")
                array = self.text(size) if size is not None else array
            elif kind in ("identifier", "field_identifier"):
                name = self.text(current)
                break
            elif kind == "function_declarator":  # a function pointer parameter
                depth += 1
            nxt = current.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in current.named_children if c.type != "type_qualifier"), None)
            current = nxt
        base = re.sub(r"\b(?:const|volatile|struct|class|enum|__restrict__|__restrict|restrict)\b", " ", base)
        base = re.sub(r"\s*::\s*", "::", " ".join(base.split()))
        return Param(
            name=name,
            type=base + "*" * depth + ("&" if reference else ""),
            base_type=base,
            pointer_depth=depth,
            const_pointee=const,
            reference=reference,
            text=self.text(node),
            array_size=array,
        )

    def declaration(self, node, context: _Context) -> None:
        """Prototypes inside extern "C", and ``XLA_FFI_Handler* h = +[](XLA_FFI_CallFrame*) {...}``."""
        type_node = node.child_by_field_name("type")
        type_text = self.text(type_node) if type_node is not None else ""
        for declarator in node.children_by_field_name("declarator"):
            function_declarator = _find_function_declarator(declarator)
            if function_declarator is not None and context.extern_c:
                name_node = function_declarator.child_by_field_name("declarator")
                if name_node is not None:
                    self.source.declared_extern_c.add(_declarator_name(name_node).rsplit("::", 1)[-1])
            if type_text.endswith("XLA_FFI_Handler") and declarator.type == "init_declarator":
                self.lambda_handler(node, declarator, context)

    def lambda_handler(self, node, declarator, context: _Context) -> None:
        value = declarator.child_by_field_name("value")
        target = declarator.child_by_field_name("declarator")
        lambda_node = _first_of(value, "lambda_expression")
        if lambda_node is None or target is None:
            return
        body = lambda_node.child_by_field_name("body")
        lambda_declarator = lambda_node.child_by_field_name("declarator")
        params = lambda_declarator.child_by_field_name("parameters") if lambda_declarator is not None else None
        name_node = _first_of(target, "identifier") or target
        if body is None:
            return
        self.add_function(
            name=self.text(name_node),
            return_type="XLA_FFI_Error*",
            params=self.params(params),
            cuda=frozenset(),
            context=context,
            static=any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children),
            head=_one_line(self.raw[node.start_byte : name_node.start_byte]),
            name_node=name_node,
            body=body,
            lambda_handler=True,
        )

    def alias(self, node) -> None:
        if node.type == "alias_declaration":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("type")
            if name is not None and value is not None:
                self.source.type_aliases[self.text(name)] = self.text(value)
            return
        type_node = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            depth = _pointer_depth_to(declarator, None)
            name_node = _first_of(declarator, "type_identifier") or declarator
            if type_node is not None and type_node.type not in ("struct_specifier", "class_specifier"):
                self.source.type_aliases[self.text(name_node)] = self.text(type_node) + "*" * depth
            elif type_node is not None and type_node.child_by_field_name("name") is None:
                self.struct(type_node, name=self.text(name_node))

    def struct(self, node, name: str | None = None) -> None:
        body = node.child_by_field_name("body")
        name_node = node.child_by_field_name("name")
        name = name or (self.text(name_node) if name_node is not None else None)
        if body is None or not name:
            return
        fields = []
        for member in body.named_children:
            if member.type != "field_declaration":
                continue
            for declarator in member.children_by_field_name("declarator"):
                if _find_function_declarator(declarator) is None:
                    fields.append(self.declared(member, declarator))
        packed = b"packed" in node.text[: node.text.find(b"{")] if b"{" in node.text else False
        self.source.structs.append(Struct(name.rsplit("::", 1)[-1], tuple(fields), self.line(node), packed))

    # -- bodies --
    def bodies(self, captures: dict) -> None:
        """Launches, calls and throws, each given to the innermost function whose body holds it."""
        for kind in ("comment", "string"):
            self.blanks.extend((n.start_byte, n.end_byte) for n in captures.get(kind, ()))
        self.strings.extend((n.start_byte, n.end_byte) for n in captures.get("string", ()))
        if not self.functions:
            return
        ordered = sorted(range(len(self.functions)), key=lambda i: self.functions[i].body_range[0])
        starts = [self.functions[i].body_range[0] for i in ordered]

        def owner(offset: int) -> int | None:
            index = bisect.bisect_right(starts, offset) - 1
            while index >= 0:
                candidate = ordered[index]
                start, end = self.functions[candidate].body_range
                if start <= offset < end:
                    return candidate
                index -= 1
            return None

        guarded = [(n.child_by_field_name("body") or n) for n in captures.get("try", ())]
        lambdas = list(captures.get("lambda", ()))
        self.guarded_ranges = [(n.start_byte, n.end_byte) for n in guarded + lambdas]
        launches: dict[int, list[Launch]] = {}
        calls: dict[int, list[CallSite]] = {}
        throws: dict[int, list[Throw]] = {}
        for node in sorted(captures.get("call", ()), key=lambda n: n.start_byte):
            index = owner(node.start_byte)
            if index is None:
                continue
            syntax = _first_child(node, "kernel_call_syntax")
            if syntax is not None:
                launches.setdefault(index, []).append(self.launch(node, syntax))
            else:
                site = self.call(node, _within(node, guarded, after=self.functions[index].body_range[0]))
                if site is not None:
                    calls.setdefault(index, []).append(site)
                    launched = self.api_launch(node, site, self.functions[index])
                    if launched is not None:
                        launches.setdefault(index, []).append(launched)
        for node in sorted(captures.get("throw", ()), key=lambda n: n.start_byte):
            index = owner(node.start_byte)
            if index is None:
                continue
            inside = self.functions[index].body_range[0]
            if _within(node, guarded, after=inside) or _within(node, lambdas, after=inside):
                continue
            throws.setdefault(index, []).append(Throw(self.line(node), self.text(node)))
        for index, function in enumerate(self.functions):
            function.launches = tuple(launches.get(index, ()))
            function.calls = tuple(calls.get(index, ()))
            function.throws = tuple(throws.get(index, ()))

    def launch(self, node, syntax) -> Launch:
        callee = node.child_by_field_name("function")
        template_args: tuple[str, ...] = ()
        kernel = self.text(callee) if callee is not None else ""
        if callee is not None and callee.type == "template_function":
            name = callee.child_by_field_name("name")
            arguments = callee.child_by_field_name("arguments")
            kernel = self.text(name) if name is not None else kernel
            template_args = tuple(self.text(a) for a in arguments.named_children) if arguments is not None else ()
        arguments = node.child_by_field_name("arguments")
        return Launch(
            kernel=kernel,
            template_args=template_args,
            config=tuple(self.text(c) for c in syntax.named_children if c.type != "comment"),
            args=tuple(self.text(a) for a in arguments.named_children if a.type != "comment") if arguments is not None else (),
            line=self.line(node),
            start=node.start_byte,
            end=node.end_byte,
            text=self.text(node),
        )

    def api_launch(self, node, site: CallSite, function: Function) -> Launch | None:
        """A call to one of :data:`LAUNCH_APIS` as a launch; None for any other call."""
        api = LAUNCH_APIS.get(site.qualified.lstrip(":"))
        if api is None and site.name.startswith(("cu", "hip")):  # the C APIs, however they are qualified
            api = LAUNCH_APIS.get(site.name)
        if api is None or len(site.args) <= api.kernel:
            return None
        kernel, template_args = _launched_kernel(site.args[api.kernel])
        if api.config_struct is not None:
            config = _config_fields(site.args[api.config_struct], api.fields, function.body)
        else:
            config = tuple(", ".join(site.args[i] for i in group) for group in api.config if group[-1] < len(site.args))
        parent = node.parent
        return Launch(
            kernel=kernel,
            template_args=template_args,
            config=config,
            args=site.args[api.args :] if api.args is not None else (),
            line=site.line,
            start=node.start_byte,
            end=node.end_byte,
            text=site.text,
            api=site.qualified.lstrip(":"),
            result_kept=parent is not None and parent.type not in DISCARDED_BY,
            stream_known=api.config_struct is None or len(config) == 4,
        )

    def call(self, node, in_try: bool) -> CallSite | None:
        callee = node.child_by_field_name("function")
        if callee is None:
            return None
        if callee.type == "template_function":
            callee = callee.child_by_field_name("name") or callee
        if callee.type not in ("identifier", "qualified_identifier", "field_expression"):
            return None
        qualified = self.text(callee)
        if callee.type == "field_expression":
            member = callee.child_by_field_name("field")
            name = self.text(member) if member is not None else qualified
            qualified = "." + name
        else:
            name = qualified.rsplit("::", 1)[-1]
        name = name.split("<", 1)[0]
        arguments = node.child_by_field_name("arguments")
        return CallSite(
            name=name,
            qualified=qualified,
            args=tuple(self.text(a) for a in arguments.named_children if a.type != "comment") if arguments is not None else (),
            line=self.line(node),
            start=node.start_byte,
            text=self.text(node)[:300],
            in_try=in_try,
        )

    def line_of_offset(self, offset: int) -> int:
        if self.pinned_line is not None:
            return self.pinned_line
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer(rb"\n", self.raw)]
        return self.line_offset + bisect.bisect_left(self.newlines, offset) + 1

    def guarded_at(self, offset: int) -> bool:
        """Inside a try block or a lambda (whose throws are not the enclosing function's)."""
        return any(start <= offset < end for start, end in self.guarded_ranges)

    def skeleton(self) -> bytes:
        """The text with comments, strings and preprocessor directives blanked (lengths kept)."""
        out = bytearray(self.prepared)
        for start, end in self.blanks + self.preprocessor:
            out[start:end] = re.sub(rb"[^\n]", b" ", bytes(out[start:end]))
        return bytes(out)


def _head_start(raw: bytes, start: int) -> int:
    """Where a declaration really starts: macros blanked before parsing (``EXPORT void f()``) lie
    between the previous ``;``, ``{``, ``}`` or preprocessor line and the node the tree saw."""
    window = raw[max(0, start - 300) : start]
    cut = max(window.rfind(b";"), window.rfind(b"{"), window.rfind(b"}"))
    lines = window[cut + 1 :].split(b"\n")
    keep = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].lstrip().startswith((b"#", b"//")):
            break
        keep = index
    return start - len(b"\n".join(lines[keep:]))


def _launched_kernel(expression: str) -> tuple[str, tuple[str, ...]]:
    """``(const void*)ns::k<T, 4>`` (or ``reinterpret_cast<void*>(&k<T>)``) -> ("ns::k", ("T", "4"))."""
    text = re.sub(r"^\s*(?:\(\s*[\w:\s*]+\)\s*)+", "", expression)  # C-style casts
    cast = re.match(r"^\s*\w+_cast\s*<.*?>\s*\((.*)\)\s*$", text)
    text = (cast.group(1) if cast else text).strip().lstrip("&").strip()
    match = re.match(r"^([A-Za-z_][\w:]*)\s*(?:<(.*)>)?\s*$", text)
    if match is None:
        return text, ()
    return match.group(1), tuple(split_arguments(match.group(2))) if match.group(2) else ()


def _config_fields(config: str, fields: tuple[str, ...], body: str) -> tuple[str, ...]:
    """Grid, block, shared bytes and stream of a launch config struct (``&config``), from the
    assignments to its ``fields`` in the calling function (``config.stream = s;``, ``.stream = s``
    in an initialiser). Shorter where a field is not found there: the fields after it stay unknown."""
    name = re.escape(config.strip().lstrip("&").strip())
    found = []
    for field_name in fields:
        match = re.search(rf"\b{name}\s*(?:\.|->)\s*{field_name}\s*=\s*([^;]+);", body) or re.search(
            rf"(?<![\w\]\)])\.\s*{field_name}\s*=\s*([^,;}}]+)", body
        )
        if match is None:
            break
        found.append(" ".join(match.group(1).split()))
    return tuple(found)


def _find_function_declarator(node):
    """The function_declarator under pointer/reference declarators (``int* f(...)``)."""
    while node is not None:
        if node.type == "function_declarator":
            return node
        if node.type not in ("pointer_declarator", "reference_declarator", "parenthesized_declarator", "attributed_declarator"):
            return None
        node = node.child_by_field_name("declarator") or next(iter(node.named_children), None)
    return None


def _pointer_depth_to(node, stop) -> int:
    depth = 0
    while node is not None and node is not stop:
        if node.type in ("pointer_declarator", "abstract_pointer_declarator"):
            depth += 1
        elif node.type not in ("reference_declarator", "parenthesized_declarator", "attributed_declarator"):
            break
        node = node.child_by_field_name("declarator")
    return depth


def _declarator_name(node) -> str:
    text = node.text.decode("utf-8", "replace")
    return re.sub(r"\s+", "", text)


def _first_of(node, kind: str):
    """The first node of ``kind`` in a subtree (breadth first), or None."""
    if node is None:
        return None
    queue = [node]
    while queue:
        current = queue.pop(0)
        if current.type == kind:
            return current
        queue.extend(current.named_children)
    return None


def _first_child(node, kind: str):
    return next((c for c in node.children if c.type == kind), None)


def _within(node, containers, after: int) -> bool:
    """Is ``node`` inside one of ``containers`` that starts at or after byte ``after``?"""
    start = node.start_byte
    return any(after <= c.start_byte <= start < c.end_byte for c in containers)


def _array_count(size: str | None) -> int | None:
    if size is None:
        return 1
    return int(size) if size.isdigit() else None


# -- macros ----------------------------------------------------------------------------------------


def _capsules(raw: bytes, skeleton: bytes, line_offset: int, line: int | None) -> list[Capsule]:
    """``dict["name"] = EncapsulateFunction(fn)``, ``py::capsule(reinterpret_cast<void*>(fn), ...)``."""
    found = []
    for match in re.finditer(rb"\b(\w*(?:capsule|Capsule_New|Encapsulate)\w*)\s*(?:<[^;()<>]*>)?\s*\(", skeleton, re.I):
        close = closing(skeleton, match.end() - 1)
        if close is None:
            continue
        inner = raw[match.end() : close].decode("utf-8", "replace")
        first = split_arguments(inner)[0] if inner.strip() else ""
        while re.search(r"<[^<>]*>", first):  # `cpu_kepler<float>`, `reinterpret_cast<void*>(fn)`
            first = re.sub(r"<[^<>]*>", "", first)
        names = [n for n in IDENTIFIER.findall(first) if n not in CAST_WORDS]
        if not names:
            continue
        before = raw[max(0, match.start() - 200) : match.start()].decode("utf-8", "replace")
        key = re.search(r"\[\s*\"([^\"]+)\"\s*\]\s*=\s*(?:[\w:]+::)?$", before)
        if key is None:  # dict["name"] = py::dict(py::arg("execute") = Encapsulate(fn), ...): the stages of one target
            key = re.search(r"\[\s*\"([^\"]+)\"\s*\]\s*=\s*(?:[\w:]+::)?dict\s*\((?:[^;\[\]]*)$", before)
        at = line if line is not None else line_offset + raw.count(b"\n", 0, match.start()) + 1
        found.append(Capsule(names[-1], key.group(1) if key else None, at, _one_line(raw[match.start() : close + 1])[:300]))
    return found


CAST_WORDS = frozenset(
    "reinterpret_cast static_cast const_cast bit_cast void const char uint8_t uintptr_t intptr_t std absl "
    "xla ffi nb py pybind11 nanobind reinterpret_borrow".split()
)
