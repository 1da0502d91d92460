"""What a C, C++ or CUDA source holds, as :mod:`xlacc.readers.cxx` reads it: functions and their
parameters, launches, calls, throws, structs, capsules; the launch APIs it knows and C type sizes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlacc.readers.cxx_macros import (
    MacroDefinition,
    MacroUse,
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
    once: bool = False  # inside the callable a `std::call_once` of the calling function runs: once per process


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


def _array_count(size: str | None) -> int | None:
    if size is None:
        return 1
    return int(size) if size.isdigit() else None
