"""The ``xlacc.toml`` model: one file per project describes one custom call.

Everything xlacc derives (symbol names, api_version numbers, platform strings) is derived here,
once, so templates, build, smoke and doctor can never disagree about them.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from xlacc.errors import SpecError, UsageError

SPEC_FILE = "xlacc.toml"

DTYPES = ("f16", "bf16", "f32", "f64", "i32", "i64")
ATTR_TYPES = ("f32", "f64", "i32", "i64")
PLATFORMS = ("cuda", "cpu")
APIS = ("ffi", "legacy")
FRAMEWORKS = ("jax", "torch-xla")

# C++ types, FFI DataType names, NumPy and torch dtype names for each spec dtype.
DTYPE_INFO: dict[str, dict[str, str]] = {
    "f16": {"c": "__half", "cpu_c": "_Float16", "ffi": "F16", "numpy": "float16", "torch": "float16", "bytes": "2"},
    "bf16": {"c": "__nv_bfloat16", "cpu_c": "__bf16", "ffi": "BF16", "numpy": "bfloat16", "torch": "bfloat16", "bytes": "2"},
    "f32": {"c": "float", "cpu_c": "float", "ffi": "F32", "numpy": "float32", "torch": "float32", "bytes": "4"},
    "f64": {"c": "double", "cpu_c": "double", "ffi": "F64", "numpy": "float64", "torch": "float64", "bytes": "8"},
    "i32": {"c": "int32_t", "cpu_c": "int32_t", "ffi": "S32", "numpy": "int32", "torch": "int32", "bytes": "4"},
    "i64": {"c": "int64_t", "cpu_c": "int64_t", "ffi": "S64", "numpy": "int64", "torch": "int64", "bytes": "8"},
}
ATTR_C_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t"}

# HLO CustomCallApiVersion values (the 7th argument of torch_xla's _xla_custom_call, and
# jax.ffi.ffi_call's custom_call_api_version).
HLO_API_STATUS_RETURNING = 2
HLO_API_STATUS_RETURNING_UNIFIED = 3
HLO_API_TYPED_FFI = 4
# jax.ffi.register_ffi_target's own scale: 0 = legacy registry, 1 = typed FFI registry.
JAX_REGISTER_LEGACY = 0
JAX_REGISTER_FFI = 1

# Reserved words of C, C++ and Python: a name that is one of them cannot become a symbol or a
# Python function. Listed by hand because no standard library module knows the C/C++ ones.
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
# Names the generated code itself uses: an operand or attribute named like one would shadow it.
GENERATED_NAMES = frozenset(
    """
    T stream ins outs status op_dtype config result elements blocks launched xlacc ffi std
    xp np jnp jax torch torch_xla ctypes os Path math rng size dtype operands attrs parts name
    results call outputs library register last_error backend_config reference example_inputs
    """.split()
)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TARGET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,126}$")
ARCH = re.compile(r"^sm_(\d{2,3})a?$")


def check_identifier(name: str, what: str = "name") -> str:
    """Return ``name`` if it can be a C/C++ symbol and a Python identifier; raise otherwise.

    Names go into generated C++ and Python source, so this is the guard against injection.
    """
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise UsageError(
            f"invalid {what} {name!r}: use a C identifier (letters, digits, '_', not starting with a digit, at most 63 characters)"
        )
    if name.startswith("__") or re.match(r"^_[A-Z]", name):
        raise UsageError(f"invalid {what} {name!r}: names starting with '__' or '_' and a capital are reserved in C and C++")
    if name in C_CPP_KEYWORDS or keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise UsageError(f"invalid {what} {name!r}: it is a C, C++ or Python keyword")
    return name


def check_member_name(name: str, what: str) -> str:
    """An operand, result or attribute name: an identifier the generated code does not use itself."""
    check_identifier(name, what)
    if name in GENERATED_NAMES:
        raise UsageError(f"invalid {what} {name!r}: the generated code uses that name itself; pick another")
    return name


def check_target(target: str) -> str:
    if not isinstance(target, str) or not TARGET_NAME.match(target):
        raise UsageError(
            f"invalid target {target!r}: use letters, digits, '_' and '.', starting with a letter or '_'"
        )
    return target


def parse_archs(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``"auto"`` -> ``()``; ``"sm_80,sm_90"`` or a list -> validated ``("sm_80", "sm_90")``."""
    if value == "auto" or value == ["auto"]:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    archs = []
    for item in items:
        arch = str(item).strip()
        if arch.startswith("compute_"):
            arch = "sm_" + arch[len("compute_"):]
        if not ARCH.match(arch):
            raise UsageError(f"invalid GPU arch {item!r}: use sm_XY such as sm_80 or sm_90a, or 'auto'")
        archs.append(arch)
    return tuple(archs)


@dataclass(frozen=True)
class Tensor:
    """An operand or a result. ``dtypes`` holds one dtype, or several when the op is generic over them."""

    name: str
    dtypes: tuple[str, ...]
    shape: tuple[int | str, ...] | None = None  # dims (ints or symbols); None: any shape
    like: str | None = None  # results only: same shape as this input

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
class Spec:
    name: str
    target: str
    template: str
    platform: str
    api: str
    frameworks: tuple[str, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    attrs: tuple[Attr, ...] = ()
    archs: tuple[str, ...] = ()  # () = auto
    ptx: bool = True  # also embed PTX of the highest arch, JIT-compiled on newer GPUs
    reference: str = "reference.py:reference"
    sources: tuple[str, ...] = ()
    output: str = ""
    root: Path = field(default=Path("."), compare=False)

    # -- derived names --------------------------------------------------------------------------
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
    def needs_ffi(self) -> bool:
        return "jax" in self.frameworks and self.api == "ffi"

    @property
    def needs_legacy(self) -> bool:
        return "torch-xla" in self.frameworks or ("jax" in self.frameworks and self.api == "legacy")

    @property
    def entry_points(self) -> tuple[str, ...]:
        names = []
        if self.needs_ffi:
            names.append(self.ffi_symbol)
        if self.needs_legacy:
            names += [self.legacy_symbol, self.last_error_symbol]
        return tuple(names)

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

    @property
    def kernel_file(self) -> str:
        return "kernel.cu" if self.platform == "cuda" else "kernel.cc"

    @property
    def source_paths(self) -> list[Path]:
        return [self.root / s for s in (self.sources or (self.kernel_file,))]

    @property
    def library(self) -> Path:
        return self.root / (self.output or f"build/lib{self.name}.so")

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


# -- loading ------------------------------------------------------------------------------------


def find_spec(path: Path) -> Path:
    """The ``xlacc.toml`` for a project directory or the file itself."""
    path = Path(path)
    candidate = path / SPEC_FILE if path.is_dir() else path
    if not candidate.is_file():
        raise UsageError(f"no {SPEC_FILE} in {path}: not an xlacc project (make one with 'xlacc new NAME')")
    return candidate


def load(path: Path) -> Spec:
    spec_path = find_spec(path)
    try:
        raw = tomllib.loads(spec_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(spec_path, "toml", f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {spec_path}: {exc.strerror}") from None
    return from_dict(raw, spec_path)


def from_dict(raw: dict[str, Any], spec_path: Path) -> Spec:
    reader = _Reader(spec_path)
    op = reader.table(raw, "op")
    name = reader.identifier(op, "op.name")
    frameworks = tuple(reader.choices(op, "op.frameworks", FRAMEWORKS, default=["jax"]))
    inputs = tuple(reader.tensor(t, f"inputs[{i}]", is_output=False) for i, t in enumerate(reader.array(raw, "inputs")))
    outputs = tuple(reader.tensor(t, f"outputs[{i}]", is_output=True) for i, t in enumerate(reader.array(raw, "outputs")))
    attrs = tuple(reader.attr(a, f"attrs[{i}]") for i, a in enumerate(raw.get("attrs", [])))
    build = raw.get("build", {})
    if not isinstance(build, dict):
        raise SpecError(spec_path, "build", "must be a table")
    spec = Spec(
        name=name,
        target=reader.target(op.get("target", name)),
        template=str(op.get("template", "blank")),
        platform=reader.choice(op, "op.platform", PLATFORMS, default="cuda"),
        api=reader.choice(op, "op.api", APIS, default="ffi"),
        frameworks=frameworks,
        inputs=inputs,
        outputs=outputs,
        attrs=attrs,
        archs=reader.archs(build.get("archs", "auto")),
        ptx=reader.boolean(build, "build.ptx", default=True),
        reference=str(op.get("reference", "reference.py:reference")),
        sources=tuple(str(s) for s in build.get("sources", ())),
        output=str(build.get("output", "")),
        root=spec_path.parent,
    )
    reader.cross_check(spec)
    return spec


class _Reader:
    """Reads one key at a time and raises a SpecError naming it."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(self.path, key, message)

    def table(self, raw: dict, key: str) -> dict:
        value = raw.get(key)
        if not isinstance(value, dict):
            raise self.fail(key, "missing table: add a [" + key + "] section")
        return value

    def array(self, raw: dict, key: str) -> list:
        value = raw.get(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, f"at least one [[{key}]] entry is required")
        return value

    def identifier(self, table: dict, key: str, member: bool = False) -> str:
        short = key.rsplit(".", 1)[-1]
        if short not in table:
            raise self.fail(key, "missing: a C identifier is required")
        try:
            return (check_member_name if member else check_identifier)(table[short], short)
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None

    def target(self, value: Any) -> str:
        try:
            return check_target(value)
        except UsageError as exc:
            raise self.fail("op.target", str(exc)) from None

    def choice(self, table: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if value not in allowed:
            raise self.fail(key, f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
        return value

    def choices(self, table: dict, key: str, allowed: tuple[str, ...], default: list[str]) -> list[str]:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(key, f"must be a non-empty list drawn from: {', '.join(allowed)}")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise self.fail(key, f"{bad[0]!r} is not allowed; use any of: {', '.join(allowed)}")
        return list(dict.fromkeys(value))

    def dtypes(self, value: Any, key: str) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or any(v not in DTYPES for v in items):
            raise self.fail(key, f"{value!r} is not allowed; use one of {', '.join(DTYPES)} (or a list of them)")
        return tuple(dict.fromkeys(items))

    def tensor(self, raw: Any, key: str, is_output: bool) -> Tensor:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name, dtype and shape")
        name = self.identifier(raw, f"{key}.name", member=True)
        dtypes = self.dtypes(raw.get("dtype"), f"{key}.dtype")
        shape = raw.get("shape")
        if isinstance(shape, str):
            if not is_output:
                raise self.fail(f"{key}.shape", "an input's shape is a list of dims (ints or symbols), or omitted")
            return Tensor(name, dtypes, None, like=shape)
        if shape is not None:
            if not isinstance(shape, list) or not all(
                (isinstance(d, int) and d >= 0) or (isinstance(d, str) and IDENTIFIER.match(d)) for d in shape
            ):
                raise self.fail(f"{key}.shape", "use a list of non-negative ints or symbol names, or an input's name")
            shape = tuple(shape)
        elif is_output:
            raise self.fail(f"{key}.shape", "missing: give an input's name (same shape) or a list of dims")
        return Tensor(name, dtypes, shape)

    def attr(self, raw: Any, key: str) -> Attr:
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a table with name and type")
        name = self.identifier(raw, f"{key}.name", member=True)
        attr_type = raw.get("type")
        if attr_type not in ATTR_TYPES:
            raise self.fail(f"{key}.type", f"{attr_type!r} is not allowed; use one of: {', '.join(ATTR_TYPES)}")
        default = raw.get("default")
        if default is not None and (isinstance(default, bool) or not isinstance(default, (int, float))):
            raise self.fail(f"{key}.default", "must be a number")
        if default is not None and attr_type.startswith("i") and not isinstance(default, int):
            raise self.fail(f"{key}.default", f"must be an integer for type {attr_type}")
        return Attr(name, attr_type, default)

    def boolean(self, table: dict, key: str, default: bool) -> bool:
        value = table.get(key.rsplit(".", 1)[-1], default)
        if not isinstance(value, bool):
            raise self.fail(key, f"{value!r} is not allowed; use true or false")
        return value

    def archs(self, value: Any) -> tuple[str, ...]:
        try:
            return parse_archs(value)
        except UsageError as exc:
            raise self.fail("build.archs", str(exc)) from None

    def cross_check(self, spec: Spec) -> None:
        names = [t.name for t in spec.inputs + spec.outputs] + [a.name for a in spec.attrs]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate:
            raise self.fail("inputs", f"the name {duplicate!r} is used twice; operands, results and attributes need distinct names")
        input_names = [t.name for t in spec.inputs]
        for i, out in enumerate(spec.outputs):
            if out.like is not None and out.like not in input_names:
                raise self.fail(f"outputs[{i}].shape", f"{out.like!r} is not an input; use one of: {', '.join(input_names)}")
        generic = {t.dtypes for t in spec.inputs + spec.outputs if t.generic}
        if len(generic) > 1:
            raise self.fail("inputs", "all dtype lists in one op must be the same list (the op is generic over one type)")
        if generic and not any(t.generic for t in spec.inputs):
            raise self.fail("outputs", "a result with a dtype list needs an input with the same list to take its type from")
