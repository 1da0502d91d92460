"""The ``xlacc.toml`` model: one file per project describes one custom call.

Everything xlacc derives (symbol names, api_version numbers, platform strings, file names) is
derived here, once, so templates, build, smoke and doctor can never disagree about them. This is
also the one validator of names, dtypes and choices: ``xlacc new`` builds its spec through
:func:`from_dict` like a file read from disk.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import keyword
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from xlacc import paths
from xlacc import sharding as sharding_rules
from xlacc.errors import SpecError, UsageError

SPEC_FILE = "xlacc.toml"
RECORD_DIR = ".xlacc"  # a project's record of what xlacc wrote (xlacc.generated)

DTYPES = ("f16", "bf16", "f32", "f64", "i32", "i64")
ATTR_TYPES = ("f32", "f64", "i32", "i64")
# The values an attribute's type holds (a default outside its range would overflow in the bindings).
ATTR_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "f32": (-3.4028235e38, 3.4028235e38)}  # FLT_MAX, rounded up
PLATFORMS = ("cuda", "cpu")
APIS = ("ffi", "legacy")
FRAMEWORKS = ("jax", "torchax", "torch-xla")
# What `xlacc new` writes when --framework is not given: JAX, and both PyTorch routes (torchax runs
# the op on XLA:GPU; torch_xla lowers it, and run-smoke runs what it emits through jaxlib).
DEFAULT_FRAMEWORKS = ("jax", "torchax", "torch-xla")
# [backward] kind: "kernel" runs NAME_backward_launch<T>() from the kernel file; "reference"
# differentiates the reference (xp=jax.numpy) and needs no kernel.
BACKWARD_KINDS = ("kernel", "reference")
GRAD_PREFIX = "grad_"  # the cotangent of `out` is `grad_out`, the gradient of `x` is `grad_x`

# Per spec dtype: the C++ type in a kernel (xlacc/kernel.h), the xlacc::DType and FFI DataType
# names, the NumPy and torch dtype names, and the element size. Templates render from this table.
DTYPE_INFO: dict[str, dict[str, str]] = {
    "f16": {"c": "xlacc::f16_t", "enum": "F16", "ffi": "F16", "numpy": "float16", "torch": "float16", "bytes": "2"},
    "bf16": {"c": "xlacc::bf16_t", "enum": "BF16", "ffi": "BF16", "numpy": "bfloat16", "torch": "bfloat16", "bytes": "2"},
    "f32": {"c": "float", "enum": "F32", "ffi": "F32", "numpy": "float32", "torch": "float32", "bytes": "4"},
    "f64": {"c": "double", "enum": "F64", "ffi": "F64", "numpy": "float64", "torch": "float64", "bytes": "8"},
    "i32": {"c": "int32_t", "enum": "S32", "ffi": "S32", "numpy": "int32", "torch": "int32", "bytes": "4"},
    "i64": {"c": "int64_t", "enum": "S64", "ffi": "S64", "numpy": "int64", "torch": "int64", "bytes": "8"},
}
ATTR_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t"}
# (rtol, atol) by dtype: the generated tests and `xlacc run-smoke` compare with this one table.
# An element passes when |out - ref| <= atol + rtol * |ref|, the reference computed in float64:
# half types are loose (about 5 and 2.5 ulps), float32 allows the rounding of a reduction, float64
# only the order of operations, integers nothing.
TOLERANCES: dict[str, tuple[float, float]] = {
    "f16": (5e-3, 1e-3),
    "bf16": (2e-2, 1e-2),
    "f32": (1e-5, 1e-6),
    "f64": (1e-12, 1e-14),
    "i32": (0.0, 0.0),
    "i64": (0.0, 0.0),
}

# HLO CustomCallApiVersion values (the 7th argument of torch_xla's _xla_custom_call, and
# jax.ffi.ffi_call's custom_call_api_version).
HLO_API_STATUS_RETURNING = 2
HLO_API_STATUS_RETURNING_UNIFIED = 3
HLO_API_TYPED_FFI = 4
# jax.ffi.register_ffi_target's own scale: 0 = legacy registry, 1 = typed FFI registry.
JAX_REGISTER_LEGACY = 0
JAX_REGISTER_FFI = 1

# Reserved words of C and C++: a name that is one of them cannot become a symbol. Listed by hand
# because no standard library module knows them (Python's come from `keyword`).
C_CPP_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register reinterpret_cast requires restrict
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
    _Static_assert _Thread_local main
    """.split()
)
# The op's name becomes a Python package: it must not hide a module the project imports.
IMPORTED_PACKAGES = frozenset(
    "jax jaxlib torch torch_xla torchax numpy ml_dtypes xlacc pytest hatchling typing_extensions".split()
)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TARGET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,126}$")
ARCH = re.compile(r"^sm_(\d{2,3})a?$")
MAX_SPEC_BYTES = 1_000_000
MAX_KERNEL_BYTES = 64_000_000  # a kernel file read for its launch functions
DISABLED_CODE = re.compile(r"^[ \t]*#[ \t]*if[ \t]+0\b.*?^[ \t]*#[ \t]*endif\b", re.MULTILINE | re.DOTALL)
MAX_DIM = 2**31 - 1  # a dim the kernels index with int
FLAG = re.compile(r"^[^\s\x00-\x1f\x7f]+$")  # one compiler argument; the command runs without a shell
# Flags that change what the compiler writes, or where: xlacc names the output and verifies a library.
OUTPUT_FLAGS = frozenset({"-E", "-S", "-c", "-M", "-MM", "-fsyntax-only", "--preprocess", "--compile", "-ptx", "-cubin", "-fatbin"})
OUTPUT_FLAG_PREFIXES = ("-o", "--output", "-Wl,-o", "-Wl,--output", "-odir")
# A file named in the spec: generated C++ includes it (#include "PATH") and xlacc.toml is rewritten
# with it, so no quotes, backslashes or control characters.
PATH_TEXT = re.compile(r'^[^"\\\x00-\x1f\x7f]+$')
KERNEL_SUFFIXES = {"cuda": (".cu",), "cpu": (".cc", ".cpp", ".cxx")}
SOURCE_SUFFIX = {platform: suffixes[0] for platform, suffixes in KERNEL_SUFFIXES.items()}  # what xlacc names its files
PLATFORM_OF_SUFFIX = {suffix: platform for platform, suffixes in KERNEL_SUFFIXES.items() for suffix in suffixes}
SAVED_SHAPE = re.compile(r"^(?P<like>[A-Za-z_]\w*)(?:\[:(?P<stop>-[1-9]\d*)\])?$")  # x, or x[:-1]


def check_identifier(name: Any, what: str = "name") -> str:
    """Return ``name`` if it can be a C/C++ symbol and a Python identifier; raise otherwise.

    Names go into generated C++ and Python source, so this is the guard against injection.
    """
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise UsageError(
            f"invalid {what} {name!r}: use a C identifier (letters, digits, '_', not starting with a digit, at most 63 characters)"
        )
    if name.startswith("__") or re.match(r"^_[A-Z]", name):
        raise UsageError(f"invalid {what} {name!r}: names starting with '__' or '_' and a capital are reserved in C and C++")
    if name.endswith("_t"):
        raise UsageError(f"invalid {what} {name!r}: names ending in '_t' are reserved for C types (int64_t, size_t, ...)")
    if name in C_CPP_KEYWORDS or keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise UsageError(f"invalid {what} {name!r}: it is a C, C++ or Python keyword")
    return name


def check_op_name(name: Any) -> str:
    """The op's name: an identifier that can also name a Python package next to jax and torch, and
    that put into the generated modules' names (``NAME``, ``_NAME``...) overwrites none of theirs."""
    check_identifier(name, "name")
    if name in IMPORTED_PACKAGES or name in sys.stdlib_module_names:
        raise UsageError(f"invalid name {name!r}: the op's Python package would hide the module {name!r}; pick another name")
    from xlacc import names

    if name in names.op_names():
        raise UsageError(f"invalid name {name!r}: the generated package uses that name itself; pick another")
    return name


def check_member_name(name: Any, what: str) -> str:
    """An operand, result or attribute name: an identifier the generated code does not use itself."""
    check_identifier(name, what)
    from xlacc import names

    if name in names.generated_identifiers():
        raise UsageError(f"invalid {what} {name!r}: the generated code uses that name itself; pick another")
    if name in names.macros():
        raise UsageError(f"invalid {what} {name!r}: it is a macro of the C/C++ headers the generated code includes; pick another")
    return name


def flag_problem(flag: str) -> str | None:
    """Why ``flag`` cannot be one of the compiler arguments xlacc passes on; None if it can."""
    if not FLAG.match(flag):
        return "one argument per item, without spaces or control characters"
    if flag in OUTPUT_FLAGS or flag.startswith(OUTPUT_FLAG_PREFIXES):
        return "it changes what the compiler writes or where; xlacc names the library and verifies it"
    return None


def _python_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def check_target(target: Any) -> str:
    if not isinstance(target, str) or not TARGET_NAME.match(target):
        raise UsageError(f"invalid target {target!r}: use letters, digits, '_' and '.', starting with a letter or '_'")
    return target


def parse_archs(value: Any) -> tuple[str, ...]:
    """``"auto"`` -> ``()``; ``"sm_80,sm_90"`` or a list -> validated ``("sm_80", "sm_90")``."""
    if value == "auto" or value == ["auto"]:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UsageError(f"invalid GPU archs {value!r}: use \"auto\" or a list such as [\"sm_80\", \"sm_90\"]")
    archs = []
    for item in items:
        arch = str(item).strip()
        if arch.startswith("compute_"):
            arch = "sm_" + arch[len("compute_"):]
        if not ARCH.match(arch):
            raise UsageError(f"invalid GPU arch {item!r}: use sm_XY such as sm_80 or sm_90a, or 'auto'")
        archs.append(arch)
    if not archs:
        raise UsageError("no GPU arch given: use sm_XY such as sm_80 or sm_90a, or 'auto'")
    return tuple(archs)


def finite_number(value: Any, what: str, integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"invalid {what} {value!r}: must be a number")
    if integer and not isinstance(value, int):
        raise UsageError(f"invalid {what} {value!r}: must be a whole number")
    if not math.isfinite(value):
        raise UsageError(f"invalid {what} {value!r}: must be a finite number")
    return value


@dataclass(frozen=True)
class Tensor:
    """An operand or a result. ``dtypes`` holds one dtype, or several when the op is generic over them."""

    name: str
    dtypes: tuple[str, ...]
    shape: tuple[int | str, ...] | None = None  # dims (ints or symbols); None: any shape
    like: str | None = None  # results only: same shape as this input
    like_stop: int | None = None  # saved tensors only: the input's leading dims, like.shape[:like_stop]
    alias: str | None = None  # results only: written in place into this input's buffer
    scratch: bool = False  # results only: working memory XLA provides; the bindings never return it

    @property
    def dtype(self) -> str:
        return self.dtypes[0]

    @property
    def generic(self) -> bool:
        return len(self.dtypes) > 1


@dataclass(frozen=True)
class Attr:
    name: str
    type: str
    default: float | int | None = None

    @property
    def c_type(self) -> str:
        return ATTR_C_TYPES[self.type]


@dataclass(frozen=True)
class Build:
    """``[build]``: how the library is compiled."""

    kernel: str = ""  # the file holding NAME_launch<T>(); the generated entry points include it
    sources: tuple[str, ...] = ()  # further files compiled and linked with it
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # extra arguments for the compiler (nvcc, or the host compiler)
    archs: tuple[str, ...] = ()  # () = auto
    ptx: bool = True  # also embed PTX of the highest arch, JIT-compiled on newer GPUs
    output: str = ""  # default: NAME/libNAME.so


@dataclass(frozen=True)
class Origin:
    """``[from]``: the user's own kernel a project wraps (``xlacc new NAME --from FILE``), unchanged."""

    file: str  # relative to the project root
    function: str
    sizes: tuple[tuple[str, str], ...] = ()  # integer parameter -> INPUT.size | INPUT.shape[K] | N


@dataclass(frozen=True)
class Sharding:
    """``[sharding]``: how operands may be split over devices (see xlacc.sharding)."""

    rule: str  # Shardy notation, such as "... c, c -> ... c"
    whole: tuple[str, ...] = ()  # factors the kernel needs unsplit

    @property
    def parsed(self) -> sharding_rules.Rule:
        return sharding_rules.parse(self.rule)


@dataclass(frozen=True)
class Backward:
    """``[backward]``: how jax.grad and torch autograd differentiate the op."""

    kind: str  # one of BACKWARD_KINDS
    grads: tuple[str, ...]  # the inputs that get a gradient
    saved: tuple[Tensor, ...] = ()  # written by the forward as extra outputs, read by the backward


class _Operands:
    """What a call's bindings return and which outputs it writes in place (Call and Spec alike)."""

    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]

    @property
    def results(self) -> tuple[Tensor, ...]:
        """Every output but scratch, which the kernel alone uses."""
        return tuple(t for t in self.outputs if not t.scratch)

    @property
    def result_indices(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.outputs) if not t.scratch)

    @property
    def aliases(self) -> dict[int, int]:
        """Input index -> output index of each output written in place (jax's input_output_aliases)."""
        names = [t.name for t in self.inputs]
        return {names.index(t.alias): i for i, t in enumerate(self.outputs) if t.alias is not None}


@dataclass(frozen=True)
class Call(_Operands):
    """One custom-call target of the op's library: the op itself, or its backward kernel. Each has
    its own entry points, launch function (``{name}_launch<T>``) and sharding rule."""

    name: str  # NAME, or NAME_backward
    target: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]  # the forward's end with the tensors it saves for the backward
    attrs: tuple[Attr, ...]
    op_dtypes: tuple[str, ...]
    op_dtype_index: int
    rule: sharding_rules.Rule | None
    whole: tuple[str, ...] = ()

    @property
    def ffi_symbol(self) -> str:
        return f"xlacc_{self.name}_ffi"

    @property
    def legacy_symbol(self) -> str:
        return f"xlacc_{self.name}_legacy"

    @property
    def last_error_symbol(self) -> str:
        return f"xlacc_{self.name}_last_error"

    @property
    def launch(self) -> str:
        return f"{self.name}_launch"

    @property
    def launch_parameters(self) -> str:
        """What the entry points pass ``{name}_launch<T>``: the stream, every tensor, every attribute."""
        tensors = [f"const xlacc::Tensor& {t.name}" for t in self.inputs + self.outputs]
        return ", ".join(["xlacc::Stream stream", *tensors, *(f"{a.c_type} {a.name}" for a in self.attrs)])


@dataclass(frozen=True)
class Generated:
    """``[generated]``: what xlacc wrote, so that later runs tell the user's edits from its own."""

    xlacc: str
    template: str
    signature: str  # digest of the spec fields the generated code depends on
    files: dict[str, str] = field(default_factory=dict)  # project path -> sha256 of the text written


@dataclass(frozen=True)
class Spec(_Operands):
    name: str
    target: str
    template: str
    platform: str
    api: str
    frameworks: tuple[str, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    attrs: tuple[Attr, ...] = ()
    build: Build = Build()
    reference: str = ""  # FILE:FUNCTION; default NAME/reference.py:reference
    origin: Origin | None = None
    sharding: Sharding | None = None
    backward: Backward | None = None
    generated: Generated | None = field(default=None, compare=False)
    root: Path = field(default=Path("."), compare=False)

    # -- derived names (the op's own target; spec.calls holds the backward's too) ----------------
    @property
    def ffi_symbol(self) -> str:
        return self.forward.ffi_symbol

    @property
    def legacy_symbol(self) -> str:
        return self.forward.legacy_symbol

    @property
    def last_error_symbol(self) -> str:
        return self.forward.last_error_symbol

    @property
    def uses_jax_module(self) -> bool:
        """NAME/jax.py is generated: JAX calls it, and torchax lowers the torch op to it."""
        return "jax" in self.frameworks or "torchax" in self.frameworks

    @property
    def uses_torch_module(self) -> bool:
        """NAME/torch.py is generated: the torch op for torchax and torch_xla."""
        return "torchax" in self.frameworks or "torch-xla" in self.frameworks

    @property
    def needs_ffi(self) -> bool:
        return self.uses_jax_module and self.api == "ffi"

    @property
    def needs_legacy(self) -> bool:
        return "torch-xla" in self.frameworks or (self.uses_jax_module and self.api == "legacy")

    @property
    def entry_points(self) -> tuple[str, ...]:
        names = []
        for call in self.calls:
            if self.needs_ffi:
                names.append(call.ffi_symbol)
            if self.needs_legacy:
                names += [call.legacy_symbol, call.last_error_symbol]
        return tuple(names)

    # -- the targets: the op, and its backward kernel ---------------------------------------------
    @property
    def saved(self) -> tuple[Tensor, ...]:
        return self.backward.saved if self.backward else ()

    @property
    def forward(self) -> Call:
        rule = self.sharding.parsed if self.sharding else None
        if rule is not None and self.saved:
            rule = sharding_rules.Rule(rule.operands, rule.results + tuple(self._saved_factors(rule)))
        return Call(self.name, self.target, self.inputs, self.outputs + self.saved, self.attrs, self.op_dtypes, self.op_dtype_index, rule,
                    self.sharding.whole if self.sharding else ())  # fmt: skip

    @property
    def backward_call(self) -> Call | None:
        """The backward kernel's target: the forward's inputs, the saved tensors and the outputs'
        cotangents in; the gradients of the inputs in ``[backward] grads`` out."""
        if self.backward is None or self.backward.kind != "kernel":
            return None
        cotangents = tuple(Tensor(GRAD_PREFIX + t.name, t.dtypes, t.shape, t.like) for t in self.outputs)
        grads = tuple(Tensor(GRAD_PREFIX + t.name, t.dtypes, t.shape, like=t.name) for t in self.grad_inputs)
        rule = None
        if self.sharding:
            forward = self.sharding.parsed
            operand_factors = dict(zip([t.name for t in self.inputs], forward.operands))
            rule = sharding_rules.Rule(
                forward.operands + tuple(self._saved_factors(forward)) + forward.results,
                tuple(operand_factors[t.name] for t in self.grad_inputs),
            )
        return Call(f"{self.name}_backward", f"{self.target}_backward", self.inputs + self.saved + cotangents, grads, self.attrs,
                    self.op_dtypes, self.op_dtype_index, rule, self.sharding.whole if self.sharding else ())  # fmt: skip

    @property
    def calls(self) -> tuple[Call, ...]:
        backward = self.backward_call
        return (self.forward,) + ((backward,) if backward else ())

    @property
    def grad_inputs(self) -> tuple[Tensor, ...]:
        names = self.backward.grads if self.backward else ()
        return tuple(t for t in self.inputs if t.name in names)

    def _saved_factors(self, rule: sharding_rules.Rule):
        by_input = dict(zip([t.name for t in self.inputs], rule.operands))
        return [sharding_rules.sliced(by_input[t.like], t.like_stop) for t in self.saved]

    @property
    def legacy_api_version(self) -> int:
        """HLO api_version of the legacy entry point: only 3 carries the opaque string on XLA:CPU."""
        return HLO_API_STATUS_RETURNING if self.platform == "cuda" else HLO_API_STATUS_RETURNING_UNIFIED

    @property
    def jax_api_version(self) -> int:
        return HLO_API_TYPED_FFI if self.api == "ffi" else self.legacy_api_version

    @property
    def jax_register_api_version(self) -> int:
        return JAX_REGISTER_FFI if self.api == "ffi" else JAX_REGISTER_LEGACY

    @property
    def jax_platform(self) -> str:
        return "CUDA" if self.platform == "cuda" else "cpu"

    # -- files ----------------------------------------------------------------------------------
    @property
    def suffix(self) -> str:
        return SOURCE_SUFFIX[self.platform]

    @property
    def kernel_file(self) -> str:
        """The user's file with NAME_launch<T>()."""
        return self.build.kernel or f"kernel{self.suffix}"

    @property
    def package(self) -> str:
        """The Python package of the op, relative to the project root."""
        return self.name

    @property
    def entry_file(self) -> str:
        """xlacc's file with the entry points XLA calls; it includes the kernel file."""
        return f"{self.package}/_entry_points{self.suffix}"

    @property
    def compiled_files(self) -> tuple[str, ...]:
        """What the compiler is given: the entry points (which include the kernel) and any further
        sources; a project without a kernel file brings its own entry points in ``sources``."""
        return ((self.entry_file,) if self.build.kernel else ()) + self.build.sources

    @property
    def source_paths(self) -> list[Path]:
        return [self.root / s for s in self.compiled_files]

    @property
    def code_files(self) -> tuple[str, ...]:
        """Every C++/CUDA file the library is built from that the spec names, relative to the project
        (a wrapped kernel may lie outside it); headers they include are not named."""
        kernel = (self.kernel_file,) if self.build.kernel else ()
        wrapped = (self.origin.file,) if self.origin else ()
        return tuple(dict.fromkeys(kernel + self.compiled_files + wrapped))

    def sources_newer_than_library(self) -> list[str]:
        """The code files edited after the library was built (none where it is not built)."""
        try:
            built = self.library.stat().st_mtime
        except OSError:
            return []
        return [name for name in self.code_files if (self.root / name).is_file() and (self.root / name).stat().st_mtime > built]

    @property
    def library(self) -> Path:
        return self.root / (self.build.output or f"{self.package}/lib{self.name}.so")

    @property
    def reference_file(self) -> str:
        return (self.reference or f"{self.package}/reference.py:reference").partition(":")[0]

    @property
    def reference_module(self) -> str | None:
        """The reference's module inside the op's package (None: it lives elsewhere)."""
        path = Path(self.reference_file)
        return path.stem if path.parent == Path(self.package) and path.suffix == ".py" else None

    @property
    def reference_function(self) -> str:
        return (self.reference or "x:reference").partition(":")[2] or "reference"

    @property
    def generic_dtypes(self) -> tuple[str, ...]:
        for t in self.inputs + self.outputs:
            if t.generic:
                return t.dtypes
        return ()

    @property
    def op_dtypes(self) -> tuple[str, ...]:
        """The element types the kernel is instantiated for (its template parameter T)."""
        return self.generic_dtypes or (self.inputs[0].dtype,)

    @property
    def op_dtype_index(self) -> int:
        """The input whose dtype picks T at call time."""
        return next((i for i, t in enumerate(self.inputs) if t.generic), 0)

    def input(self, name: str) -> Tensor:
        return next(t for t in self.inputs if t.name == name)

    @property
    def signature_digest(self) -> str:
        """A digest of everything the generated code is made from (not build settings)."""
        return "sha256:" + hashlib.sha256(json.dumps(self.signature_fields(), sort_keys=True).encode()).hexdigest()[:16]

    def signature_fields(self) -> dict[str, Any]:
        """Everything the generated code is made from, by key of the spec."""
        fields = {
            "name": self.name,
            "target": self.target,
            "template": self.template,
            "platform": self.platform,
            "api": self.api,
            "frameworks": self.frameworks,
            "inputs": [[t.name, t.dtypes, t.shape, t.like] for t in self.inputs],
            "outputs": [[t.name, t.dtypes, t.shape, t.like] + ([t.alias, t.scratch] if t.alias or t.scratch else []) for t in self.outputs],
            "attrs": [[a.name, a.type, a.default] for a in self.attrs],
            "kernel": self.kernel_file,
        }
        # Fields added later join only where set, so older projects keep their digest.
        if self.origin:
            fields["from"] = [self.origin.file, self.origin.function, self.origin.sizes]
        if self.sharding:
            fields["sharding"] = [self.sharding.rule, self.sharding.whole]
        if self.backward:
            saved = [[t.name, t.dtypes, t.like, t.like_stop] for t in self.backward.saved]
            fields["backward"] = [self.backward.kind, self.backward.grads, saved]
        return fields

    def signature_changes(self) -> list[str]:
        """What changed in the signature since xlacc generated the code (empty: nothing, or the
        project records no generation): each key that changed, against the spec xlacc generated
        from (kept in .xlacc/base), or the whole signature where that copy is gone."""
        if self.generated is None or self.generated.signature == self.signature_digest:
            return []
        base = self.generated_from()
        if base is None:
            return ["the op's signature (name, target, platform, api, frameworks, inputs, outputs, attrs, sharding, backward or kernel)"]
        before, now = base.signature_fields(), self.signature_fields()
        return [_field_change(key, before.get(key), now.get(key)) for key in dict.fromkeys([*before, *now]) if before.get(key) != now.get(key)]

    def launch_mismatches(self, kernel: str) -> list[str]:
        """Each launch function in the user's kernel text that the entry points call with other
        parameters than it takes (counted, as a kernel may leave some unnamed): only the user can
        change it to match. None for a wrapped kernel, whose launch code xlacc writes."""
        from xlacc.names import cxx_code

        if self.origin is not None:
            return []
        code = DISABLED_CODE.sub(" ", cxx_code(kernel))  # a signature in a comment or under #if 0 is none
        found = []
        for call in self.calls:
            wanted = call.launch_parameters
            declared = [m[1] for m in re.finditer(rf"\b{call.launch}\s*\(([^()]*)\)", code)]
            if declared and not any(_takes(parameters, len(wanted.split(","))) for parameters in declared):
                found.append(f"{call.launch}<T>() in {self.kernel_file} is called with ({wanted}) now: change it to match")
        return found

    def kernel_launch_mismatches(self) -> list[str]:
        """:meth:`launch_mismatches` of the kernel file as it is now (none where it cannot be read)."""
        try:
            kernel = paths.read_user_file(self.root / self.kernel_file, MAX_KERNEL_BYTES).decode("utf-8", "replace")
        except (OSError, UsageError):
            return []
        return self.launch_mismatches(kernel)

    def generated_from(self) -> Spec | None:
        """The spec as xlacc last generated code from it, where its copy still matches the record."""
        from xlacc.generated import BASE_DIR  # generated imports this module

        path = self.root / BASE_DIR / SPEC_FILE
        try:
            base = from_dict(read_toml(path), path)
        except (OSError, UsageError):
            return None
        return base if base.signature_digest == self.generated.signature else None


def _field_change(key: str, before: Any, now: Any) -> str:
    """``attrs: added alpha`` or ``platform: 'cuda' -> 'cpu'``."""
    if key in ("inputs", "outputs", "attrs"):
        old = {item[0]: item for item in before or []}
        new = {item[0]: item for item in now or []}
        parts = [f"added {name}" for name in new if name not in old] + [f"removed {name}" for name in old if name not in new]
        parts += [f"changed {name}" for name in new if name in old and old[name] != new[name]]
        return f"{key}: {', '.join(parts) or 'reordered'}"
    if before is None or now is None:
        return f"{key}: {'added' if before is None else 'removed'}"
    return f"{key}: {_short(before)} -> {_short(now)}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- loading ------------------------------------------------------------------------------------

# Every key each table may hold; anything else is a mistake worth naming (a misspelt key would
# otherwise be ignored silently).
KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "": ("op", "inputs", "outputs", "attrs", "build", "from", "sharding", "backward", "generated"),
    "op": ("name", "target", "template", "platform", "api", "frameworks", "reference"),
    "inputs": ("name", "dtype", "shape"),
    "outputs": ("name", "dtype", "shape", "alias", "scratch"),
    "attrs": ("name", "type", "default"),
    "build": ("kernel", "sources", "include_dirs", "defines", "flags", "archs", "ptx", "output"),
    "from": ("file", "kernel", "sizes"),
    "generated": ("xlacc", "template", "signature", "files"),
    "sharding": ("rule", "whole"),
    "backward": ("kind", "grads", "saved"),
    "backward.saved": ("name", "dtype", "shape"),
}


def find_spec(path: Path) -> Path:
    """The ``xlacc.toml`` for a project directory or the file itself. Inside a project's own
    ``.xlacc/`` record, or below a project, the project is named rather than taken."""
    path = Path(path)
    candidate = path / SPEC_FILE if path.is_dir() else path
    absolute = candidate.absolute()
    refuse_inside_a_record(absolute.parent, path)
    if not candidate.exists() or candidate.is_dir():
        above = next((folder for folder in absolute.parent.parents if (folder / SPEC_FILE).is_file()), None)
        where = f"; the project above is {above}" if above is not None else " (make one with 'xlacc new NAME')"
        raise UsageError(f"no {SPEC_FILE} in {path}: not an xlacc project{where}")
    return candidate


def _takes(parameters: str, count: int) -> bool:
    """Whether a parameter list takes ``count`` arguments: as many, or more whose extras have defaults."""
    listed = [p for p in parameters.split(",") if p.strip()]
    return len(listed) == count or (len(listed) > count and all("=" in p for p in listed[count:]))


def refuse_inside_a_record(folder: Path, shown: Path | str) -> None:
    """A project's ``.xlacc/`` record is xlacc's: no command runs there, nor writes a project in it."""
    project = _project_whose_record_holds(Path(folder).absolute())
    if project is not None:
        raise UsageError(f"{shown} is inside {project}'s {RECORD_DIR}/ folder, xlacc's record of that project: run xlacc on {project}")


def _project_whose_record_holds(folder: Path) -> Path | None:
    """The project whose ``.xlacc/`` record ``folder`` is in (a ``.xlacc`` beside an xlacc.toml);
    None elsewhere, a folder merely named ``.xlacc`` included."""
    parts = folder.parts
    for index, part in enumerate(parts):
        if part == RECORD_DIR and (Path(*parts[:index]) / SPEC_FILE).is_file():
            return Path(*parts[:index])
    return None


def read_toml(spec_path: Path) -> dict[str, Any]:
    try:
        text = paths.read_user_file(spec_path, MAX_SPEC_BYTES).decode("utf-8-sig")  # an editor's byte-order mark is no error
    except FileNotFoundError:
        raise UsageError(f"{spec_path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise SpecError(spec_path, "toml", f"not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(spec_path, "toml", f"not valid TOML: {exc}") from None


def load(path: Path) -> Spec:
    spec_path = find_spec(path)
    return from_dict(read_toml(spec_path), spec_path)


def from_dict(raw: dict[str, Any], spec_path: Path) -> Spec:
    reader = _Reader(spec_path)
    reader.known_keys(raw, "")
    op = reader.table(raw, "op", required=True)
    name = reader.get(op, "op.name", check_op_name)
    inputs = tuple(reader.tensor(t, f"inputs[{i}]", is_output=False) for i, t in enumerate(reader.array(raw, "inputs")))
    outputs = tuple(reader.tensor(t, f"outputs[{i}]", is_output=True) for i, t in enumerate(reader.array(raw, "outputs")))
    attrs = tuple(reader.attr(a, f"attrs[{i}]") for i, a in enumerate(reader.array(raw, "attrs", required=False)))
    reader.check_distinct_names(inputs, outputs, attrs)  # before [backward] and the rest name them
    spec = Spec(
        name=name,
        target=reader.get(op, "op.target", check_target, default=name),
        template=reader.string(op, "op.template", default="blank"),
        platform=reader.choice(op, "op.platform", PLATFORMS, default="cuda"),
        api=reader.choice(op, "op.api", APIS, default="ffi"),
        frameworks=reader.choices(op, "op.frameworks", FRAMEWORKS, default=["jax"]),
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        build=reader.build(reader.table(raw, "build")),
        reference=reader.path_string(op, "op.reference"),
        origin=reader.origin(reader.table(raw, "from")),
        sharding=reader.sharding(reader.table(raw, "sharding")),
        backward=reader.backward(reader.table(raw, "backward"), inputs) if "backward" in raw else None,
        generated=reader.generated(raw),
        root=spec_path.parent,
    )
    reader.cross_check(spec)
    return spec


class _Reader:
    """Reads one key at a time, checking its type, and raises a SpecError naming it."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(self.path, key, message)

    def known_keys(self, table: dict, kind: str, where: str | None = None) -> None:
        allowed = KNOWN_KEYS[kind]
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(allowed)}"
                place = where if where is not None else kind
                raise self.fail(f"{place}.{key}" if place else key, f"unknown key{hint}")

    def table(self, raw: dict, key: str, required: bool = False) -> dict:
        if key not in raw and not required:
            return {}
        value = raw.get(key)
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table: add a [{key}] section" if value is None else "must be a table")
        self.known_keys(value, key)
        return value

    def array(self, raw: dict, key: str, required: bool = True) -> list:
        value = raw.get(key, None if required else [])
        if not isinstance(value, list) or (required and not value):
            raise self.fail(key, f"at least one [[{key}]] entry is required" if required else f"must be [[{key}]] tables")
        return value

    def get(self, table: dict, key: str, check, default: Any = None) -> Any:
        short = key.rsplit(".", 1)[-1]
        if short not in table and default is None:
            raise self.fail(key, "missing")
        try:
            return check(table.get(short, default))
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None

    def string(self, table: dict, key: str, default: str) -> str:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if not isinstance(value, str):
            raise self.fail(key, f"{value!r} is not a string")
        return value

    def strings(self, table: dict, key: str) -> tuple[str, ...]:
        value = table.get(key.rsplit(".", 1)[-1], [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, f"{value!r} is not allowed; use a list of strings")
        return tuple(value)

    def path_string(self, table: dict, key: str, default: str = "") -> str:
        value = self.string(table, key, default)
        if value:
            self.check_path_text(value, key)
        return value

    def paths(self, table: dict, key: str) -> tuple[str, ...]:
        values = self.strings(table, key)
        for value in values:
            self.check_path_text(value, key)
        return values

    def check_path_text(self, value: str, key: str) -> None:
        if not PATH_TEXT.match(value):
            raise self.fail(key, f"{value!r}: a path without quotes, backslashes or control characters")

    def project_path(self, value: str, key: str) -> str:
        """A path inside the project, relative to it (what xlacc writes or generated code includes)."""
        self.check_path_text(value, key)
        parts = Path(value).parts
        if Path(value).is_absolute() or ".." in parts:
            raise self.fail(key, f"{value!r}: a path inside the project, relative to xlacc.toml")
        return value

    def choice(self, table: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if value not in allowed:
            raise self.fail(key, f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
        return value

    def choices(self, table: dict, key: str, allowed: tuple[str, ...], default: list[str]) -> tuple[str, ...]:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(key, f"must be a non-empty list drawn from: {', '.join(allowed)}")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise self.fail(key, f"{bad[0]!r} is not allowed; use any of: {', '.join(allowed)}")
        return self.once_each(value, key)

    def once_each(self, values: list[str] | tuple[str, ...], key: str) -> tuple[str, ...]:
        twice = next((v for v in values if values.count(v) > 1), None)
        if twice:
            raise self.fail(key, f"{twice!r} is listed twice")
        return tuple(values)

    def dtypes(self, value: Any, key: str) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or any(v not in DTYPES for v in items):
            raise self.fail(key, f"{value!r} is not allowed; use one of {', '.join(DTYPES)} (or a list of them)")
        return self.once_each(items, key)

    def tensor(self, raw: Any, key: str, is_output: bool) -> Tensor:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name, dtype and shape")
        self.known_keys(raw, "outputs" if is_output else "inputs", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "name"))
        dtypes = self.dtypes(raw.get("dtype"), f"{key}.dtype")
        if is_output and ("alias" in raw or "scratch" in raw):
            return self.special_result(raw, key, name, dtypes)
        shape = raw.get("shape")
        if isinstance(shape, str):
            if not is_output:
                raise self.fail(f"{key}.shape", "an input's shape is a list of dims (ints or symbols), or omitted")
            return Tensor(name, dtypes, None, like=shape)
        if shape is not None:
            if not isinstance(shape, list) or not all(
                (isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM) or (isinstance(d, str) and IDENTIFIER.match(d))
                for d in shape
            ):
                raise self.fail(f"{key}.shape", f"use a list of ints from 0 to {MAX_DIM} or symbol names, or an input's name")
            shape = tuple(shape)
        elif is_output:
            raise self.fail(f"{key}.shape", "missing: give an input's name (same shape) or a list of dims")
        return Tensor(name, dtypes, shape)

    def special_result(self, raw: dict, key: str, name: str, dtypes: tuple[str, ...]) -> Tensor:
        """A result written in place into an input (``alias = "INPUT"``, its shape that input's), or a
        scratch buffer (``scratch = true``) of a fixed shape that the bindings never return."""
        alias, scratch, shape = raw.get("alias"), self.boolean(raw, f"{key}.scratch", default=False), raw.get("shape")
        if alias is not None and scratch:
            raise self.fail(f"{key}.scratch", "a scratch result cannot also alias an input")
        if alias is not None:
            if not isinstance(alias, str) or not IDENTIFIER.match(alias):
                raise self.fail(f"{key}.alias", f"{alias!r} is not an input's name")
            if shape not in (None, alias):
                raise self.fail(f"{key}.shape", f"a result that aliases {alias!r} has its shape: omit shape or write shape = {alias!r}")
            return Tensor(name, dtypes, None, like=alias, alias=alias)
        if not scratch:
            return self.tensor({k: v for k, v in raw.items() if k != "scratch"}, key, is_output=True)
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d <= MAX_DIM for d in shape):
            raise self.fail(f"{key}.shape", f"a scratch result needs a fixed shape: a list of ints from 1 to {MAX_DIM}")
        return Tensor(name, dtypes, tuple(shape), scratch=True)

    def attr(self, raw: Any, key: str) -> Attr:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name and type")
        self.known_keys(raw, "attrs", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "attribute name"))
        attr_type = raw.get("type")
        if attr_type not in ATTR_TYPES:
            raise self.fail(f"{key}.type", f"{attr_type!r} is not allowed; use one of: {', '.join(ATTR_TYPES)}")
        default = raw.get("default")
        if default is not None:
            try:
                default = finite_number(default, "default", integer=attr_type.startswith("i"))
            except UsageError as exc:
                raise self.fail(f"{key}.default", str(exc)) from None
            low, high = ATTR_RANGES.get(attr_type, (-math.inf, math.inf))
            if not low <= default <= high:
                raise self.fail(f"{key}.default", f"{default!r} does not fit in {attr_type} ({low} to {high})")
        return Attr(name, attr_type, default)

    def boolean(self, table: dict, key: str, default: bool) -> bool:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} is not allowed; use true or false")
        return value

    def build(self, table: dict) -> Build:
        flags = self.strings(table, "build.flags")
        problem = next(((f, flag_problem(f)) for f in flags if flag_problem(f)), None)
        if problem is not None:
            raise self.fail("build.flags", f"{problem[0]!r}: {problem[1]}")
        defines = self.strings(table, "build.defines")
        bad = next((d for d in defines if not FLAG.match(d)), None)
        if bad is not None:
            raise self.fail("build.defines", f"{bad!r}: NAME or NAME=VALUE, without spaces or control characters")
        kernel = self.string(table, "build.kernel", default="")
        return Build(
            kernel=self.project_path(kernel, "build.kernel") if kernel else "",
            sources=self.once_each(self.paths(table, "build.sources"), "build.sources"),
            include_dirs=self.paths(table, "build.include_dirs"),
            defines=defines,
            flags=flags,
            archs=self.get(table, "build.archs", parse_archs, default="auto"),
            ptx=self.boolean(table, "build.ptx", default=True),
            output=self.path_string(table, "build.output"),
        )

    def origin(self, table: dict) -> Origin | None:
        if not table:
            return None
        sizes = table.get("sizes", {})
        if not isinstance(sizes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in sizes.items()):
            raise self.fail("from.sizes", "must be a table of parameter = \"INPUT.size\" | \"INPUT.shape[K]\" | \"N\"")
        return Origin(
            file=self.path_string(table, "from.file"),
            function=self.get(table, "from.kernel", lambda v: check_identifier(v, "kernel")),
            sizes=tuple(sorted(sizes.items())),
        )

    def sharding(self, table: dict) -> Sharding | None:
        if not table:
            return None
        rule = self.string(table, "sharding.rule", default="")
        try:
            text = sharding_rules.parse(rule).text  # normalised: names, "...", "(", ")", ",", "->" and single spaces
        except sharding_rules.RuleError as exc:
            raise self.fail("sharding.rule", str(exc)) from None
        return Sharding(text, self.strings(table, "sharding.whole"))

    def backward(self, table: dict, inputs: tuple[Tensor, ...]) -> Backward:
        kind = self.choice(table, "backward.kind", BACKWARD_KINDS, default="kernel")
        floating = [t.name for t in inputs if any(d.startswith(("f", "bf")) for d in t.dtypes)]
        grads = self.once_each(self.strings(table, "backward.grads"), "backward.grads") if "grads" in table else tuple(floating)
        bad = next((g for g in grads if g not in floating), None)
        if bad is not None:
            raise self.fail("backward.grads", f"{bad!r} is not a floating-point input; use some of: {', '.join(floating)}")
        saved = table.get("saved", [])
        if not isinstance(saved, list):
            raise self.fail("backward.saved", "must be [[backward.saved]] tables")
        if saved and kind != "kernel":
            raise self.fail("backward.saved", f"only a kernel backward reads saved tensors (kind = {kind!r})")
        return Backward(kind, grads, tuple(self.saved_tensor(t, f"backward.saved[{i}]") for i, t in enumerate(saved)))

    def saved_tensor(self, raw: Any, key: str) -> Tensor:
        """A tensor the forward writes for the backward: shaped like an input, or like its leading
        dims (``shape = "x[:-1]"``: one value per row)."""
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name, dtype and shape")
        self.known_keys(raw, "backward.saved", key)
        name = self.get(raw, f"{key}.name", lambda v: check_member_name(v, "name"))
        dtypes = self.dtypes(raw.get("dtype"), f"{key}.dtype")
        match = SAVED_SHAPE.match(raw.get("shape", "")) if isinstance(raw.get("shape"), str) else None
        if not match:
            raise self.fail(f"{key}.shape", "use an input's name (same shape), or NAME[:-N] for its leading dims")
        return Tensor(name, dtypes, None, like=match["like"], like_stop=int(match["stop"]) if match["stop"] else None)

    def generated(self, raw: dict) -> Generated | None:
        table = self.table(raw, "generated")
        if not table:
            return None
        files = table.get("files", {})
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise self.fail("generated.files", "must be a table of file -> hash (xlacc writes it; restore it from version control)")
        for path in files:
            self.project_path(path, "generated.files")
        return Generated(
            xlacc=self.string(table, "generated.xlacc", default=""),
            template=self.string(table, "generated.template", default=""),
            signature=self.string(table, "generated.signature", default=""),
            files=dict(files),
        )

    def check_distinct_names(self, inputs: tuple[Tensor, ...], outputs: tuple[Tensor, ...], attrs: tuple[Attr, ...]) -> None:
        tables = [("inputs", t.name) for t in inputs] + [("outputs", t.name) for t in outputs] + [("attrs", a.name) for a in attrs]
        names = [name for _, name in tables]
        duplicate = next(((table, name) for table, name in reversed(tables) if names.count(name) > 1), None)
        if duplicate:
            raise self.fail(duplicate[0], f"the name {duplicate[1]!r} is used twice; operands, results and attributes need distinct names")

    def cross_check(self, spec: Spec) -> None:
        names = [t.name for t in spec.inputs + spec.outputs] + [a.name for a in spec.attrs]
        input_names = [t.name for t in spec.inputs]
        for i, out in enumerate(spec.outputs):
            if out.like is not None and out.like not in input_names:
                where = "alias" if out.alias else "shape"
                raise self.fail(f"outputs[{i}].{where}", f"{out.like!r} is not an input; use one of: {', '.join(input_names)}")
        self.cross_check_results(spec)
        self.check_output_symbols(spec)
        generic = {t.dtypes for t in spec.inputs + spec.outputs if t.generic}
        if len(generic) > 1:
            raise self.fail("inputs", "all dtype lists in one op must be the same list (the op is generic over one type)")
        if generic and not any(t.generic for t in spec.inputs):
            raise self.fail("outputs", "a result with a dtype list needs an input with the same list to take its type from")
        self.check_reference(spec)
        self.check_kernel(spec)
        self.check_saved(spec, names)
        self.check_sharding(spec)  # before the backward: its target's rule is derived from this one
        self.check_backward(spec, names)

    def check_output_symbols(self, spec: Spec) -> None:
        """A symbol in a result's shape is sized by an input's dim of the same symbol."""
        known = {d for t in spec.inputs for d in (t.shape or ()) if isinstance(d, str)}
        for i, t in enumerate(spec.outputs):
            unknown = next((d for d in (t.shape or ()) if isinstance(d, str) and d not in known), None)
            if unknown is not None:
                raise self.fail(f"outputs[{i}].shape", f"{unknown!r} is no input's dim: name it in an input's shape, or give a number")

    def check_kernel(self, spec: Spec) -> None:
        if not spec.build.kernel:
            return
        suffixes = KERNEL_SUFFIXES[spec.platform]
        if not spec.build.kernel.endswith(suffixes):
            raise self.fail("build.kernel", f"{spec.build.kernel!r}: a {spec.platform} kernel is a {' or '.join(suffixes)} file")
        if spec.build.kernel == spec.entry_file:
            raise self.fail("build.kernel", f"{spec.build.kernel!r} is xlacc's file of entry points, which includes the kernel: name your kernel's file")

    def check_reference(self, spec: Spec) -> None:
        """FILE.py[:FUNCTION]; generated code imports a module of the package by its file's name."""
        if not spec.reference:
            return
        file, _, function = spec.reference.partition(":")
        if not file.endswith(".py") or (function and not _python_name(function)):
            raise self.fail("op.reference", f"{spec.reference!r}: use FILE.py:FUNCTION")
        path = Path(file)
        if path.parent == Path(spec.package) and not _python_name(path.stem):
            raise self.fail("op.reference", f"{spec.reference!r}: a module of the package {spec.package}/ is imported by name: its file name must be a Python identifier")

    def check_saved(self, spec: Spec, names: list[str]) -> None:
        for i, t in enumerate(spec.saved):
            if t.like not in [i.name for i in spec.inputs]:
                raise self.fail(f"backward.saved[{i}].shape", f"{t.like!r} is not an input")
            if t.name in names:
                raise self.fail(f"backward.saved[{i}].name", f"{t.name!r} is already an operand, result or attribute")

    def check_backward(self, spec: Spec, names: list[str]) -> None:
        if spec.backward and spec.backward.kind == "reference" and spec.reference_module is None:
            raise self.fail("backward.kind", f"\"reference\" differentiates the reference, which must be a module of the package {spec.package}/")
        if spec.backward_call:
            taken = set(names) | {t.name for t in spec.saved}
            clash = next((t.name for t in spec.backward_call.inputs + spec.backward_call.outputs if t.name.startswith(GRAD_PREFIX) and t.name in taken), None)
            if clash:
                raise self.fail("backward", f"the backward names a gradient {clash!r}, which is already an operand, result or attribute")

    def check_sharding(self, spec: Spec) -> None:
        if spec.sharding is None:
            return
        ranks = {t.name: (len(t.shape) if t.shape is not None else None) for t in spec.inputs + spec.results}
        for t in spec.outputs:
            if t.like:
                ranks[t.name] = ranks[t.like]
        try:
            # Scratch results are each device's own working memory: the rule covers what is returned.
            sharding_rules.check(spec.sharding.parsed, tuple(t.name for t in spec.inputs), tuple(t.name for t in spec.results), ranks, spec.sharding.whole)
            spec._saved_factors(spec.sharding.parsed)  # a saved tensor takes its input's leading factors
        except sharding_rules.RuleError as exc:
            raise self.fail("sharding.rule", str(exc)) from None

    def cross_check_results(self, spec: Spec) -> None:
        aliased: list[str] = []
        for i, out in enumerate(spec.outputs):
            if out.alias is None:
                continue
            if out.alias in aliased:
                raise self.fail(f"outputs[{i}].alias", f"{out.alias!r} is aliased by two results; each input can hold one")
            aliased.append(out.alias)
            if out.dtypes != spec.input(out.alias).dtypes:
                raise self.fail(f"outputs[{i}].dtype", f"a result written in place has its input's dtype: {list(spec.input(out.alias).dtypes)}")
        if not spec.results:
            raise self.fail("outputs", "every result is scratch: the op would return nothing and XLA would remove it")
