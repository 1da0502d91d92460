"""The op as xlacc reads it from ``xlacc.toml``: its tensors, attributes, build settings, sharding
and backward, and every name derived from them (symbols, api_version numbers, file names)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlacc.spec import sharding as sharding_rules
from xlacc.spec.abi import (
    ATTR_C_TYPES,
    GRAD_PREFIX,
    HLO_API_STATUS_RETURNING,
    HLO_API_STATUS_RETURNING_UNIFIED,
    HLO_API_TYPED_FFI,
    JAX_REGISTER_FFI,
    JAX_REGISTER_LEGACY,
    SOURCE_SUFFIX,
)


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
    arch_specific: bool = False  # auto archs: a GPU's arch-specific variant (sm_90a), for instructions only it has
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
    """``[sharding]``: how operands may be split over devices (see xlacc.spec.sharding)."""

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
    """The record (``.xlacc/record.toml``): what xlacc wrote, so that later runs tell the user's
    edits from its own."""

    xlacc: str
    template: str
    signature: str  # digest of the spec fields the generated code depends on
    files: dict[str, str] = field(default_factory=dict)  # project path -> sha256 of the text written
    legacy: bool = False  # read from xlacc.toml's [generated] table, where xlacc kept it before


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
