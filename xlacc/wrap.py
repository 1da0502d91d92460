"""`xlacc new NAME --from kernel.cu`: wrap a kernel the user already has, left unchanged.

The kernel's source is read with the C++/CUDA parser doctor uses (``xlacc.parsers.cxx``). One
function is wrapped: a ``__global__`` kernel, launched from the generated launch function, or a
host function (a launcher taking a ``cudaStream_t``, or a CPU function), called from it. Its
parameters become the op's signature:

- ``const T*`` an input, ``T*`` an output (each shaped like the first input unless
  ``--output NAME:like=INPUT``), T from the pointee type or, for ``template <typename T>``, the
  op's element type;
- an integer: what ``--size NAME=INPUT.size|INPUT.shape[K]|N`` says, an attribute when
  ``--attr NAME:TYPE=DEFAULT`` names it, else, when named like an element count (``n``, ``size``,
  ``numel``...), the first input's element count; any other integer is asked about;
- a floating-point scalar an attribute (``--attr NAME:TYPE=DEFAULT`` gives its default);
- a ``cudaStream_t`` the call's stream;
- a struct passed by value: each field by the same rules, filled in before the launch.

What cannot be told from the source is asked for with one of those flags, in a one-line error.
The spec records where the kernel came from (``[from]``), so ``xlacc update`` reads it again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from xlacc import paths
from xlacc.errors import UsageError

# The C types of kernel parameters, and the xlacc dtype each holds.
C_DTYPES = {
    "float": "f32", "double": "f64", "half": "f16", "__half": "f16", "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16",
    "int": "i32", "int32_t": "i32", "std::int32_t": "i32", "int64_t": "i64", "std::int64_t": "i64", "long long": "i64", "long": "i64",
}  # fmt: skip
INTEGER_TYPES = frozenset(
    {"int", "unsigned", "unsigned int", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t", "long", "long long",
     "unsigned long", "std::size_t", "std::int32_t", "std::int64_t", "std::uint32_t", "std::uint64_t"}
)  # fmt: skip
WIDE_INTEGERS = frozenset({"int64_t", "uint64_t", "size_t", "long", "long long", "unsigned long", "std::size_t", "std::int64_t", "std::uint64_t"})
FLOAT_TYPES = {"float": "f32", "double": "f64"}
STREAM_TYPES = frozenset({"cudaStream_t", "CUstream", "cudaStream_t&"})
# An integer parameter with one of these names is the number of elements of the first input.
ELEMENT_COUNT = re.compile(r"^(n|size|numel|count|len|length|elements|num_elements|total|total_size|N)$")
SIZE_EXPRESSION = re.compile(r"^(?:(?P<tensor>[A-Za-z_]\w*)\.(?:(?P<size>size|numel)|shape\[(?P<dim>-?\d)\])|(?P<literal>\d{1,12}))$")
THREADS = 256
MAX_KERNEL_BYTES = 2_000_000  # parsing takes about 0.5 s and 100 MB a megabyte


@dataclass(frozen=True)
class Argument:
    """One argument of the wrapped call: how the launch function computes it."""

    name: str  # the parameter's name
    kind: str  # input | output | size | attr | stream | struct
    c_type: str  # the parameter's base type as written (T for the op's element type)
    expression: str  # the C++ expression passed
    dtype: str = ""  # tensors and attrs
    value: str = ""  # a size's value before the cast to the parameter's type
    fields: tuple[Argument, ...] = ()  # a struct's fields, filled before the call


@dataclass
class Wrapped:
    """What the generated launch function does, and the op's signature, from the kernel's source."""

    function: str
    is_kernel: bool  # __global__: launched with <<<...>>>; else called
    template: bool  # instantiated with the op's element type T
    returns_error: bool  # a host function returning cudaError_t
    arguments: list[Argument] = field(default_factory=list)

    def tensors(self, kind: str) -> list[Argument]:
        return [a for a in self._flat() if a.kind == kind]

    def attrs(self) -> list[Argument]:
        return [a for a in self._flat() if a.kind == "attr"]

    def _flat(self) -> list[Argument]:
        return [f for a in self.arguments for f in (a.fields if a.kind == "struct" else (a,))]

    @property
    def element_count(self) -> str:
        """What the grid covers: the first size argument, else the first output's element count."""
        size = next((a.value for a in self._flat() if a.kind == "size"), None)
        return size or f"{self.tensors('output')[0].name}.numel()"


def read(path: Path, function: str | None, sizes: dict[str, str], attrs: set[str] = frozenset()) -> Wrapped:
    """Read ``path`` and describe how to wrap ``function`` (the only kernel when None)."""
    from xlacc.parsers import cxx

    try:
        text = paths.read_user_file(path, MAX_KERNEL_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--from {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except UsageError as exc:
        raise UsageError(f"--from {exc}") from None
    source = cxx.parse(path.name, text)
    chosen = _choose(source, path, function)
    if any(not re.match(r"^(typename|class)\s+\w+$", p) for p in chosen.template_params) or len(chosen.template_params) > 1:
        raise UsageError(
            f"--from {path}: {chosen.short_name} has template parameters {', '.join(chosen.template_params)}; "
            "xlacc instantiates one type parameter with the op's element type: wrap an instantiation in a function of yours and name it with --kernel"
        )
    element_type = chosen.template_params[0].split()[-1] if chosen.template_params else None
    mapper = _Mapper(path, chosen.short_name, source, sizes, element_type, attrs)
    arguments = [mapper.argument(p) for p in chosen.params]
    if not any(a.kind == "output" for a in (f for a in arguments for f in (a.fields or (a,)))):
        raise UsageError(f"--from {path}: {chosen.short_name} has no non-const pointer parameter, so no output: its results must go somewhere")
    unused = sorted(set(sizes) - mapper.used_sizes)
    if unused:
        raise UsageError(f"--size {unused[0]}: {chosen.short_name} has no integer parameter of that name")
    tensors = {a.name for a in (f for a in arguments for f in (a.fields or (a,))) if a.kind in ("input", "output")}
    for name, expression in sizes.items():
        referenced = SIZE_EXPRESSION.match(expression).group("tensor")
        if referenced is not None and referenced not in tensors:
            raise UsageError(f"--size {name}={expression}: {referenced!r} is not a tensor of {chosen.short_name} ({', '.join(sorted(tensors))})")
    return Wrapped(
        function=chosen.short_name,
        is_kernel=chosen.is_kernel,
        template=element_type is not None,
        returns_error=chosen.return_type.replace("const ", "").strip() in ("cudaError_t", "cudaError"),
        arguments=arguments,
    )


def _choose(source, path: Path, function: str | None):
    candidates = source.kernels() or [f for f in source.host_functions() if any(p.is_pointer for p in f.params)]
    if function is not None:
        found = source.function(function)
        if found is None:
            known = ", ".join(f.short_name for f in candidates) or "none"
            raise UsageError(f"--kernel {function}: no function of that name in {path} (functions it could wrap: {known})")
        return found
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise UsageError(f"--from {path}: no __global__ kernel and no function taking pointers to wrap")
    names = ", ".join(f.short_name for f in candidates)
    raise UsageError(f"--from {path}: it defines {len(candidates)} functions it could wrap ({names}); pick one with --kernel NAME")


class _Mapper:
    """Turns a parameter (or a struct field) into an argument of the call."""

    def __init__(self, path: Path, function: str, source, sizes: dict[str, str], element_type: str | None, attrs: set[str]):
        self.path, self.function, self.source = path, function, source
        self.sizes, self.element_type, self.attrs = sizes, element_type, attrs
        self.used_sizes: set[str] = set()
        self.first_input: str | None = None

    def fail(self, name: str, message: str) -> UsageError:
        return UsageError(f"--from {self.path}: {self.function}'s parameter `{name}` {message}")

    def argument(self, param, owner: str = "") -> Argument:
        name = param.name or "unnamed"
        if not param.name:
            raise self.fail(name, "has no name; name it in the kernel's declaration")
        base = param.base_type
        if param.is_pointer:
            return self.tensor(param, name, base)
        if base in STREAM_TYPES:
            return Argument(name, "stream", base, "stream")
        struct = self.source.struct(base)
        if struct is not None and not owner:
            fields = tuple(self.argument(f, owner=name) for f in struct.fields)
            return Argument(name, "struct", base, name, fields=fields)
        if base in INTEGER_TYPES:
            return self.integer(name, base)
        if base == self.element_type:  # a scalar of the op's element type: an f32 attribute, converted
            return Argument(name, "attr", base, f"xlacc::from_acc<T>(static_cast<xlacc::acc_t<T>>({name}))", "f32")
        if base in FLOAT_TYPES:
            return Argument(name, "attr", base, f"static_cast<{base}>({name})", FLOAT_TYPES[base])
        raise self.fail(name, f"has type `{param.type}`, which xlacc cannot pass: wrap the kernel in a function of yours that takes tensors and numbers")

    def tensor(self, param, name: str, base: str) -> Argument:
        if param.pointer_depth != 1:
            raise self.fail(name, f"is `{param.type}`: only flat buffers (one level of pointer) map to tensors")
        if base == self.element_type:
            dtype, c_type = "T", "T"
        elif base in C_DTYPES:
            dtype, c_type = C_DTYPES[base], base
        else:
            raise self.fail(name, f"points to `{base}`; xlacc knows buffers of {', '.join(sorted(C_DTYPES))} or the template's type")
        kind = "input" if param.const_pointee else "output"
        if kind == "input" and self.first_input is None:
            self.first_input = name
        cast = "const " if kind == "input" else ""
        element = "T" if dtype == "T" else base
        return Argument(name, kind, c_type, f"{name}.data<{cast}{element}>()" if cast else f"{name}.data<{element}>()", dtype)

    def integer(self, name: str, base: str) -> Argument:
        if name in self.sizes:
            self.used_sizes.add(name)
            return self.size(name, base, size_expression(self.sizes[name], name))
        if name in self.attrs:
            return Argument(name, "attr", base, f"static_cast<{base}>({name})", "i64" if base in WIDE_INTEGERS else "i32")
        if ELEMENT_COUNT.match(name) and self.first_input is not None:
            return self.size(name, base, f"{self.first_input}.numel()")
        raise self.fail(
            name,
            f"is an integer xlacc cannot place: pass --size {name}=INPUT.size (or INPUT.shape[K], or a number), "
            f"or --attr {name}:{'i64' if base in WIDE_INTEGERS else 'i32'}=VALUE",
        )

    def size(self, name: str, base: str, value: str) -> Argument:
        return Argument(name, "size", base, f"static_cast<{base}>({value})", value=value)


def size_expression(text: str, name: str) -> str:
    """``x.size`` / ``x.numel`` -> ``x.numel()``; ``x.shape[1]`` -> ``x.dim(1)``; ``128`` -> ``128``."""
    match = SIZE_EXPRESSION.match(text.strip())
    if not match:
        raise UsageError(f"--size {name}={text}: use INPUT.size, INPUT.shape[K] or a whole number")
    if match.group("literal"):
        return match.group("literal")
    tensor = match.group("tensor")
    return f"{tensor}.numel()" if match.group("size") else f"{tensor}.dim({match.group('dim')})"


def parse_sizes(values: list[str]) -> dict[str, str]:
    sizes = {}
    for value in values:
        name, eq, expression = value.partition("=")
        if not eq or not re.match(r"^[A-Za-z_]\w*$", name.strip()):
            raise UsageError(f"--size {value!r}: use NAME=INPUT.size, NAME=INPUT.shape[K] or NAME=N")
        size_expression(expression, name.strip())  # validates
        sizes[name.strip()] = expression.strip()
    return sizes
