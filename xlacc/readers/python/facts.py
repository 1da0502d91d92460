"""What a Python file registers, calls, loads and forks: the facts the reader gives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PyCallback:
    """A Python function made into a C function pointer by a ctypes function type
    (``ctypes.CFUNCTYPE(None, c_void_p, POINTER(c_void_p))``)."""

    name: str  # the wrapped function (or the callback's own name when the function is not seen)
    arity: int  # the parameters the C type declares
    params: tuple[str, ...]  # the Python function's parameter names, when it is in the file
    line: int  # where the type is made
    text: str  # the CFUNCTYPE(...) expression

    @property
    def stream(self) -> bool | None:
        """Does it take a stream first (a GPU signature)? None when its names do not say."""
        if not self.params:
            return None
        return "stream" in self.params[0].lower()


@dataclass(frozen=True)
class PyRegistration:
    framework: str  # "jax" | "torch_xla"
    function: str
    target: str | None
    target_pattern: str | None  # a regex for a computed name; None when unknown or constant
    from_module: str | None  # the C++ module its capsule comes from (`gpu_ops.registrations()`, `gpu_ops.targets[n]`)
    keys_are_names: bool  # `for name, fn in gpu_ops.registrations().items(): register(name, fn)`
    platforms: tuple[str, ...]  # every value the platform argument can take (a loop gives several)
    platform_given: bool
    api_version: int | None  # JAX's scale (0 legacy, 1 typed); None for torch_xla
    api_given: bool
    capsule: str  # capsule | int-address | ctypes-pointer | ctypes-function | unknown
    capsule_text: str
    symbols: frozenset[str]
    line: int
    text: str
    callback: PyCallback | None = None  # the ctypes callback its capsule wraps
    guard: str | None = None  # the fallback it sits in (see :mod:`guards`)

    @property
    def platform(self) -> str | None:
        return self.platforms[0] if len(self.platforms) == 1 else None

    def names(self, name: str) -> bool:
        return self.target == name if self.target is not None else bool(self.target_pattern and re.fullmatch(self.target_pattern, name))


@dataclass(frozen=True)
class PyCall:
    framework: str  # jax | torch_xla
    function: str  # _xla_custom_call | stablehlo_custom_call | ffi_call | custom_call | CustomCall ...
    target: str | None
    target_pattern: str | None
    api: int | None
    api_source: str  # given | default | missing | unknown
    positional: int
    attrs: tuple[str, ...]
    legacy_config: bool
    backend_config: str | None  # the string, when it is a constant
    backend_config_kind: str  # none | constant | json | str-call | fstring | struct-pack | other
    dtype_problem: str | None
    line: int
    text: str
    operands: tuple[str, ...] | None = None  # the operand expressions, when the call lists them
    operand_dtypes: tuple[str | None, ...] = ()  # each operand's element type where the file says it
    opaque_format: str | None = None  # struct.pack's format when backend_config/opaque is packed here
    triton: bool = False  # torch_xla's _xla_gpu_custom_call carrying a Triton kernel
    guard: str | None = None  # the fallback it sits in (see :mod:`guards`)

    def matches(self, name: str) -> bool:
        if self.target is not None:
            return self.target == name
        return self.target_pattern is not None and re.fullmatch(self.target_pattern, name) is not None

    def reaches(self, reg: PyRegistration) -> bool:
        """Can this call name what ``reg`` registers? Two computed names meet when a string one of
        them builds (its unknown parts left empty) is one the other can build."""
        if reg.target is not None:
            return self.matches(reg.target)
        if reg.target_pattern is None:
            return False
        if self.target is not None:
            return reg.names(self.target)
        if self.target_pattern is None:
            return False
        return reg.names(pattern_sample(self.target_pattern)) or self.matches(pattern_sample(reg.target_pattern))


@dataclass(frozen=True)
class LibraryLoad:
    path: str | None  # the constant path, when the file spells it
    line: int
    text: str


@dataclass
class PyFacts:
    name: str
    registrations: list[PyRegistration] = field(default_factory=list)
    calls: list[PyCall] = field(default_factory=list)
    symbol_refs: dict[str, int] = field(default_factory=dict)  # ctypes lookups: name -> line
    libraries: list[LibraryLoad] = field(default_factory=list)
    gpu_custom_call: list[tuple[int, str, bool]] = field(default_factory=list)  # line, text, carries a Triton kernel
    legacy_jax_api: list[tuple[int, str]] = field(default_factory=list)
    # line of a legacy_jax_api use -> the guard it sits in ("`except AttributeError:` (line 12)")
    legacy_guards: dict[int, str] = field(default_factory=dict)
    constant_impls: list[tuple[int, str, str]] = field(default_factory=list)  # line, function, returned
    # (line, code, scope): the scope is the enclosing function's name, or "<module>".
    gpu_inits: list[tuple[int, str, str]] = field(default_factory=list)
    forks: list[tuple[int, str, str]] = field(default_factory=list)
    spawn_configured: bool = False
    syntax_error: str | None = None
    imports: list[str] = field(default_factory=list)  # modules as written: "pkg.mod", ".gpu_ops", "..util"
    callbacks: list[PyCallback] = field(default_factory=list)


def pattern_sample(pattern: str) -> str:
    """One string a pattern of this reader matches: the first of each set of alternatives, ``.*``
    left empty, escapes undone. (Only the reader's own patterns are read: escaped literals, ``.*``,
    ``(?:...)`` groups and ``|``.)"""
    out: list[str] = []
    depth, skip_to = 0, None  # skip_to: the depth whose remaining alternatives are skipped
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if skip_to is None and index + 1 < len(pattern):
                out.append(pattern[index + 1])
            index += 2
            continue
        if pattern.startswith("(?:", index):
            depth += 1
            index += 3
            continue
        if char == ")":
            skip_to = None if skip_to == depth else skip_to
            depth -= 1
        elif char == "|":
            if depth == 0:
                break
            skip_to = depth if skip_to is None else skip_to
        elif pattern.startswith(".*", index):
            index += 1
        elif skip_to is None:
            out.append(char)
        index += 1
    return "".join(out)
