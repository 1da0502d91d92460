"""What `xlacc new --from` reads a wrapped function as: each argument of the call and how the launch
code computes it, the op's signature, and the size expressions the flags and xlacc.toml give
(shared by the reader of pointer kernels, :mod:`.wrap`, and of PyTorch launchers, :mod:`.torch_launcher`)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from xlacc.ground.errors import UsageError

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
SIZE_EXPRESSION = re.compile(
    r"^(?:(?P<tensor>[A-Za-z_]\w*)\.(?:(?P<size>size|numel)|shape\[(?P<dim>-?\d)\])|(?P<literal>\d{1,12})"
    r"|'(?P<text>[\w.:+-]{0,64})'|(?P<word>[A-Za-z_][\w+-]{0,63}))$"
)  # the last two: a fixed text for a launcher's `const std::string&` parameter ('fp8_e4m3', or auto)
THREADS = 256
# The shape of an example input whose dims a --size reads: (rows, 128), (rows, 4, 128)...
EXAMPLE_LAST_DIM, EXAMPLE_MIDDLE_DIM = 128, 4
MAX_KERNEL_BYTES = 2_000_000  # parsing takes about 0.5 s and 100 MB a megabyte


@dataclass(frozen=True)
class Asking:
    """How an error names what the user gives: `xlacc new`'s flags, or, for `xlacc update`, xlacc.toml."""

    source: str
    kernel: str
    size: str
    size_value: str
    place_integer: str


FLAGS = Asking(
    source="--from {path}",
    kernel="--kernel {name}",
    size="--size {name}",
    size_value="--size {name}={expression}",
    place_integer="pass --size {name}=INPUT.size (or INPUT.shape[K], or a number), or --attr {name}:{dtype}=VALUE",
)
SPEC = Asking(
    source="{path} ([from] file in xlacc.toml)",
    kernel='[from] kernel = "{name}" in xlacc.toml',
    size="[from] sizes.{name} in xlacc.toml",
    size_value='[from] sizes.{name} = "{expression}" in xlacc.toml',
    place_integer='add {name} = "INPUT.size" (or "INPUT.shape[K]", or "N") to [from] sizes in xlacc.toml, '
    'or an [[attrs]] table with name = "{name}" and type = "{dtype}"',
)


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
    setup: str = ""  # a torch launcher's argument: the statement that makes it (a tensor view)


@dataclass
class Wrapped:
    """What the generated launch function does, and the op's signature, from the kernel's source."""

    function: str
    callee: str  # how the launch code names it: with the namespaces it is defined in (``my::scale``)
    is_kernel: bool  # __global__: launched with <<<...>>>; else called
    template: bool  # instantiated with the op's element type T
    returns_error: bool  # a host function returning cudaError_t
    arguments: list[Argument] = field(default_factory=list)
    sizes: dict[str, str] = field(default_factory=dict)  # --size: parameter -> INPUT.size | INPUT.shape[K] | N
    torch: bool = False  # a PyTorch extension's launcher, called over xlacc's compatibility headers
    questions: list = field(default_factory=list)  # xlacc.commands.new.questions.Question: what was guessed
    likes: dict[str, str] = field(default_factory=dict)  # a torch launcher's output -> the input it is shaped like
    attr_defaults: dict[str, int] = field(default_factory=dict)  # an attribute's guessed default

    def tensors(self, kind: str) -> list[Argument]:
        """The inputs (a tensor written in place is one) or the outputs, in the parameters' order."""
        kinds = ("input", "inplace") if kind == "input" else (kind,)
        return [a for a in self._flat() if a.kind in kinds]

    def in_place(self) -> list[Argument]:
        """The tensors a torch launcher writes in place: each an input and a result aliasing it."""
        return [a for a in self._flat() if a.kind == "inplace"]

    def attrs(self) -> list[Argument]:
        return [a for a in self._flat() if a.kind == "attr"]

    def _flat(self) -> list[Argument]:
        return [f for a in self.arguments for f in (a.fields if a.kind == "struct" else (a,))]

    @property
    def element_count(self) -> str:
        """What the grid covers: the first size argument, else the first output's element count."""
        size = next((a.value for a in self._flat() if a.kind == "size"), None)
        return size or f"{self.tensors('output')[0].name}.numel()"

    def dims_read(self) -> dict[str, list[tuple[str, int]]]:
        """Tensor -> (parameter, K) for each ``--size PARAMETER=TENSOR.shape[K]``."""
        reads: dict[str, list[tuple[str, int]]] = {}
        for name, expression in self.sizes.items():
            match = SIZE_EXPRESSION.match(expression)
            if match and match.group("dim") is not None:
                reads.setdefault(match.group("tensor"), []).append((name, int(match.group("dim"))))
        return {tensor: sorted(dims, key=lambda read: (read[1] < 0, read[1])) for tensor, dims in reads.items()}

    def rank_checks(self) -> list[tuple[str, int, str]]:
        """(tensor, the fewest dims it may have, the size that reads the last of them), for the launch to
        check before the kernel reads a dim the tensor lacks (``dim(K)`` of a smaller tensor is 0)."""
        checks = []
        for tensor, reads in self.dims_read().items():
            name, dim = max(reads, key=lambda read: _rank_needed(read[1]))
            checks.append((tensor, _rank_needed(dim), f"{name} is {tensor}.shape[{dim}]"))
        return checks

    def example_shapes(self, spec) -> dict[str, tuple[str, str]]:
        """Input -> (its shape in reference.example_inputs as Python over `size`, a comment).

        An input whose dims the sizes read (or an output shaped like it does) gets as many dims as
        they need; every other input is shaped like the one with the most dims, so that the kernel
        finds as many elements in it as in the inputs xlacc can tell the shape of."""
        reads = self.dims_read()
        for output in spec.outputs:
            if output.like:
                reads.setdefault(output.like, []).extend(reads.get(output.name, []))
        inputs = [t.name for t in spec.inputs]
        ranks = {name: max((_rank_needed(dim) for _, dim in reads.get(name, [])), default=0) for name in inputs}
        lead = max(inputs, key=lambda name: ranks[name])
        shapes = {}
        for name in inputs:
            if ranks[name]:
                read = ", ".join(f"{size} = shape[{dim}]" for size, dim in reads[name])
                shapes[name] = (example_shape(ranks[name]), f"{name}: {read}")
            elif ranks[lead]:
                shapes[name] = (example_shape(ranks[lead]), f"{name}: shaped like {lead} (xlacc cannot tell its shape)")
            else:
                shapes[name] = (example_shape(1), name)
        return shapes


def _rank_needed(dim: int) -> int:
    """shape[K] exists for K + 1 dims or more; shape[-K] for K."""
    return dim + 1 if dim >= 0 else -dim


def example_shape(rank: int) -> str:
    """About `size` elements in `rank` dims, as Python: ``(size,)``, ``(max(1, size // 128), 128)``,
    ``(max(1, size // 512), 4, 128)``..."""
    if rank <= 1:
        return "(size,)"
    inner = [EXAMPLE_MIDDLE_DIM] * (rank - 2) + [EXAMPLE_LAST_DIM]
    return f"(max(1, size // {math.prod(inner)}), {', '.join(map(str, inner))})"


def size_expression(text: str, name: str, asking: Asking = FLAGS) -> str:
    """``x.size`` / ``x.numel`` -> ``x.numel()``; ``x.shape[1]`` -> ``x.dim(1)``; ``128`` -> ``128``;
    ``auto`` or ``'auto'`` -> ``"auto"`` (a C++ string literal)."""
    match = SIZE_EXPRESSION.match(text.strip())
    if not match:
        raise UsageError(f"{asking.size_value.format(name=name, expression=text)}: use INPUT.size, INPUT.shape[K], a whole number, or a text for a text parameter")
    if match.group("literal"):
        return match.group("literal")
    if match.group("text") is not None or match.group("word"):
        return json.dumps(match.group("text") if match.group("text") is not None else match.group("word"))
    tensor = match.group("tensor")
    return f"{tensor}.numel()" if match.group("size") else f"{tensor}.dim({match.group('dim')})"


def is_text(expression: str) -> bool:
    """A fixed text (``auto``, ``'fp8'``) rather than a size."""
    match = SIZE_EXPRESSION.match(expression.strip())
    return match is not None and (match.group("text") is not None or match.group("word") is not None)
