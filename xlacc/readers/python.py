"""What a Python file registers, calls, loads and forks, read with ``ast`` (never imported or run).

    facts = read("ops.py", text)
    facts.registrations   # jax.ffi.register_ffi_target / torch_xla's _xla_register_custom_call_target ...
    facts.calls           # jax.ffi.ffi_call, mlir.custom_call, hlo_helpers.custom_call, _xla_custom_call ...
    facts.libraries       # ctypes.CDLL("./build/libop.so") and the like

Names are followed through assignments, imports and ``for`` loops in their own scope (a function's
local ``lib`` is not the module's ``lib``), so ``API_VERSION = STATUS_RETURNING``, ``new_capsule =
ctypes.pythonapi.PyCapsule_New`` and ``for platform in ["GPU", "cuda"]`` resolve to what they
stand for. A name the file computes (``platform + "_kepler_f32"``) becomes a pattern
(``.*_kepler_f32``) that matches the targets it can name. The tree is walked once.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import struct
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterator

MAX_DEPTH = 6
MAX_TEXT = 160
MAX_VALUES = 32
CONSTANT_TENSOR_FACTORIES = frozenset(
    "zeros_like ones_like empty_like full_like zeros ones empty full new_zeros new_ones new_empty new_full".split()
)
LIBRARY_LOADERS = ("CDLL", "PyDLL", "LoadLibrary", "load_library")
# Calls that create a CUDA (or XLA device) context in the calling process.
GPU_INIT_PREFIXES = ("torch.cuda.", "jax.numpy.", "jax.random.", "torch_xla.core.xla_model.xla_device")
GPU_INIT_CALLS = frozenset({"jax.devices", "jax.local_devices", "jax.device_put", "torch_xla.device", "jax.default_backend"})
GPU_INIT_HARMLESS = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
FORK_CALLS = frozenset(
    {
        "os.fork",
        "multiprocessing.Process",
        "multiprocessing.Pool",
        "multiprocessing.pool.Pool",
        "concurrent.futures.ProcessPoolExecutor",
    }
)
# The public module that held register_custom_call_target (jax._src.lib.xla_client is jax's own).
REMOVED_JAX_MODULE = "jax.lib.xla_client"
START_METHOD_CALLS = frozenset({"multiprocessing.set_start_method", "multiprocessing.get_context"})
# HLO-building helpers and the api_version each uses when none is passed.
HLO_BUILDERS = {
    "custom_call": 2,  # jax.interpreters.mlir.custom_call, jaxlib.hlo_helpers.custom_call
    "CustomCall": 1,  # jaxlib.xla_client.ops.CustomCall (API_VERSION_ORIGINAL)
    "CustomCallWithLayout": 1,
    "CustomCallOp": None,  # stablehlo.CustomCallOp: api_version is an attribute, read when constant
}
HLO_BUILDER_MODULES = ("mlir", "hlo_helpers", "xla_client", "ops", "stablehlo", "hlo", "xops")
API_VERSION_NAMES = {
    "API_VERSION_ORIGINAL": 1,
    "API_VERSION_STATUS_RETURNING": 2,
    "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
    "API_VERSION_TYPED_FFI": 4,
}
# Element types as numpy, jax.numpy and torch spell them.
DTYPE_NAMES = {
    **{name: name for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "bool")},
    "float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64", "short": "int16",
}
# numpy's and jax.numpy's constructors that take the element type positionally, and where.
ARRAY_DTYPE_POSITION = {"zeros": 1, "ones": 1, "empty": 1, "full": 2, "zeros_like": 1, "ones_like": 1, "empty_like": 1,
                        "full_like": 2, "array": 1, "asarray": 1}
# Quick test before parsing: a file with none of these words holds nothing this module reports.
RELEVANT = re.compile(
    r"xla|XLA|ffi|ctypes|CDLL|cdll|custom_call|CustomCall|multiprocessing|fork|ProcessPool|capsule|LD_PRELOAD|struct|"
    r"hlo_helpers|mlir"
)


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

    @property
    def platform(self) -> str | None:
        return self.platforms[0] if len(self.platforms) == 1 else None


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

    def matches(self, name: str) -> bool:
        if self.target is not None:
            return self.target == name
        return self.target_pattern is not None and re.fullmatch(self.target_pattern, name) is not None


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
    constant_impls: list[tuple[int, str, str]] = field(default_factory=list)  # line, function, returned
    # (line, code, scope): the scope is the enclosing function's name, or "<module>".
    gpu_inits: list[tuple[int, str, str]] = field(default_factory=list)
    forks: list[tuple[int, str, str]] = field(default_factory=list)
    spawn_configured: bool = False
    syntax_error: str | None = None
    imports: list[str] = field(default_factory=list)  # modules as written: "pkg.mod", ".gpu_ops", "..util"


class Module:
    """One walk over a module: parents, scopes, assignments, loop variables and imports."""

    def __init__(self, tree: ast.Module, source: str):
        self.source = source
        self.tree = tree
        self._lines: list[str] | None = None
        self.parents: dict[ast.AST, ast.AST] = {}
        self.scope_of: dict[ast.AST, ast.AST] = {}
        self.assignments: dict[tuple[int, str], list[ast.expr]] = defaultdict(list)
        self.parameters: set[tuple[int, str]] = set()
        self.imports: dict[str, str] = {}
        self.nodes: dict[type, list[ast.AST]] = defaultdict(list)
        self.functions: dict[str, list[ast.AST]] = defaultdict(list)
        self.loops: list[tuple[ast.AST, ast.AST]] = []
        self._walk()
        for loop, scope in self.loops:  # after the walk: the iterable may be a name bound later in the text
            for value in self._iterated(loop.iter):
                self._bind(loop.target, value, scope)

    def _walk(self) -> None:
        stack: list[tuple[ast.AST, ast.AST]] = [(self.tree, self.tree)]
        parents, AST = self.parents, ast.AST
        while stack:
            node, scope = stack.pop()
            self.scope_of[node] = scope
            self.nodes[type(node)].append(node)
            inner = scope
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                inner = node
                if not isinstance(node, ast.Lambda):
                    self.functions[node.name].append(node)
                if not isinstance(node, ast.ClassDef):
                    for arg in node.args.args + node.args.posonlyargs + node.args.kwonlyargs:
                        self.parameters.add((id(node), arg.arg))
            self._record(node, scope)
            decorators = getattr(node, "decorator_list", None)
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    for child in value:
                        if isinstance(child, AST):
                            parents[child] = node
                            # Decorators and defaults belong to the enclosing scope.
                            stack.append((child, scope if value is decorators else inner))
                elif isinstance(value, AST):
                    parents[value] = node
                    stack.append((value, inner))

    def _record(self, node: ast.AST, scope: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value, scope)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None and isinstance(node.target, ast.Name):
            self.assignments[(id(scope), node.target.id)].append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.loops.append((node, scope))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                else:
                    self.imports.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if node.module else f"{base}{alias.name}"

    def _iterated(self, node: ast.expr) -> list[ast.expr]:
        """The elements a ``for`` loop binds when it runs over a literal list, tuple or set (or a
        name holding one)."""
        for value in self.values(node):
            if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
                return list(value.elts)
        return []

    def _bind(self, target: ast.AST, value: ast.expr, scope: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.assignments[(id(scope), target.id)].append(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for sub_target, sub_value in zip(target.elts, value.elts):
                self._bind(sub_target, sub_value, scope)

    # -- names ------------------------------------------------------------------------------------
    def text(self, node: ast.AST) -> str:
        """The node as code, without comments, on one line, shortened."""
        text = self._segment(node)
        if text is None or "#" in text:  # a comment inside, or no position: write the node out
            try:
                text = ast.unparse(node)
            except (ValueError, TypeError, AttributeError, RecursionError):
                text = text or ""
        text = " ".join(text.split())
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."

    def _segment(self, node: ast.AST) -> str | None:
        """The node's text as the file spells it (columns are UTF-8 byte offsets)."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
            start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return None
        if self._lines is None:
            self._lines = self.source.splitlines()
        if last is None or end is None or not 0 <= first <= last < len(self._lines):
            return None
        if last - first > MAX_TEXT // 20:
            last, end = first + MAX_TEXT // 20, None
        lines = self._lines[first : last + 1]
        if not all(line.isascii() for line in lines):
            encoded = [line.encode() for line in lines]
            if len(encoded) == 1:
                return encoded[0][start:end].decode(errors="replace")
            return b"\n".join([encoded[0][start:], *encoded[1:-1], encoded[-1][:end]]).decode(errors="replace")
        if len(lines) == 1:
            return lines[0][start:end]
        return "\n".join([lines[0][start:], *lines[1:-1], lines[-1][:end]])

    def binding(self, name: ast.Name) -> tuple[list[ast.expr], bool]:
        """What ``name`` is assigned in the nearest scope that binds it, and whether that scope
        takes it as a parameter (then its values are unknown)."""
        scope = self.scope_of.get(name, self.tree)
        first = True
        while True:
            key = (id(scope), name.id)
            if key in self.parameters:
                return self.assignments.get(key, []), True
            if key in self.assignments and (first or not isinstance(scope, ast.ClassDef)):
                return self.assignments[key], False
            if scope is self.tree:
                return [], False
            first = False
            scope = self.scope_of.get(scope, self.tree)

    def values(self, node: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
        """The node, or for a name every expression assigned to it (followed further)."""
        if isinstance(node, ast.Name) and depth < MAX_DEPTH:
            assigned, parameter = self.binding(node)
            if assigned and not parameter:
                for value in assigned[:MAX_VALUES]:
                    if value is not node:
                        yield from self.values(value, depth + 1)
                return
        if isinstance(node, ast.IfExp) and depth < MAX_DEPTH:  # `"a" if cond else "b"` can be either
            yield from self.values(node.body, depth + 1)
            yield from self.values(node.orelse, depth + 1)
            return
        yield node

    def single(self, node: ast.expr) -> ast.expr:
        """What a name holds when every assignment agrees on one expression; else the node."""
        values = list(self.values(node))
        return values[0] if len(values) == 1 else node

    def constants(self, node: ast.expr | None) -> list[Any] | None:
        """Every constant value the node can have; None when one of them is not a constant."""
        if node is None:
            return None
        found = []
        for value in self.values(node):
            constant = self._constant(value)
            if constant is _UNKNOWN:
                return None
            if constant not in found:
                found.append(constant)
        return found

    def constant(self, node: ast.expr | None) -> Any:
        values = self.constants(node)
        return values[0] if values and len(values) == 1 else None

    def _constant(self, value: ast.expr) -> Any:
        if isinstance(value, ast.Constant):
            return value.value
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant):
            if isinstance(value.operand.value, (int, float)):
                return -value.operand.value
        if isinstance(value, ast.Attribute) and value.attr in API_VERSION_NAMES:
            return API_VERSION_NAMES[value.attr]
        return _UNKNOWN

    def pattern(self, node: ast.expr | None, depth: int = 0) -> str | None:
        """A regex for the strings ``node`` can be: constants literally, anything else ``.*``."""
        if node is None or depth > MAX_DEPTH:
            return None
        values = self.constants(node)
        if values and all(isinstance(v, (str, bytes)) for v in values):
            return "|".join(re.escape(v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for v in values)
        several = list(self.values(node))
        if len(several) > 1:  # a name assigned in several branches: any of them
            parts = [self.pattern(v, depth + 1) for v in several]
            return "|".join(f"(?:{p})" for p in parts) if all(parts) else None
        value = several[0] if several else node
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = self.pattern(value.left, depth + 1) or ".*", self.pattern(value.right, depth + 1) or ".*"
            return f"(?:{left})(?:{right})" if (left, right) != (".*", ".*") else None
        if isinstance(value, ast.JoinedStr):
            parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".*" for v in value.values]
            return "".join(parts) if any(p != ".*" for p in parts) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("encode", "decode"):
            return self.pattern(value.func.value, depth + 1)
        return None

    def dotted(self, node: ast.expr, depth: int = 0) -> str | None:
        """``jnp.zeros`` -> ``jax.numpy.zeros``; a name bound to an attribute is followed."""
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value, depth)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            value = self.single(node)
            if value is not node and isinstance(value, (ast.Attribute, ast.Name)) and depth < MAX_DEPTH:
                return self.dotted(value, depth + 1)
            return node.id
        if isinstance(node, ast.Call) and depth < MAX_DEPTH:
            inner = self.dotted(node.func, depth + 1)
            return f"{inner}()" if inner else None
        return None

    def scope_name(self, node: ast.AST) -> str:
        scope = self.scope_of.get(node, self.tree)
        while isinstance(scope, (ast.Lambda, ast.ClassDef)):
            scope = self.scope_of.get(scope, self.tree)
        return scope.name if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<module>"


_UNKNOWN = object()


def last_name(dotted: str | None) -> str:
    return (dotted or "").rsplit(".", 1)[-1]


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _spread(call: ast.Call) -> bool:
    """Does the call pass ``*args`` or ``**kwargs``? (Then an argument it does not spell may be
    in them.)"""
    return any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)


class _Reader:
    def __init__(self, name: str, module: Module):
        self.facts = PyFacts(name)
        self.module = module
        self.ffi_call_names: dict[tuple[int, str], int] = {}  # a name bound to an ffi_call(...) -> index in calls

    # -- ctypes ---------------------------------------------------------------------------------
    def is_library(self, node: ast.expr) -> bool:
        for value in self.module.values(node):
            if isinstance(value, ast.Call) and last_name(self.module.dotted(value.func)) in LIBRARY_LOADERS:
                return True
            dotted = self.module.dotted(value) or ""
            if dotted.startswith("ctypes.cdll.") or dotted.startswith("ctypes.CDLL"):
                return True
        return False

    def library_symbol(self, node: ast.expr) -> str | None:
        """``lib.NAME`` / ``getattr(lib, "NAME")`` / ``lib["NAME"]`` on a ctypes library."""
        if isinstance(node, ast.Attribute) and node.attr not in ("restype", "argtypes", "_handle", "_name") and self.is_library(node.value):
            return node.attr
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
            if self.is_library(node.args[0]):
                value = self.module.constant(node.args[1])
                return value if isinstance(value, str) else None
        if isinstance(node, ast.Subscript) and self.is_library(node.value):
            value = self.module.constant(node.slice)
            return value if isinstance(value, str) else None
        return None

    def symbols_in(self, node: ast.expr) -> frozenset[str]:
        found: set[str] = set()
        stack, seen = [node], set()
        while stack:
            current = stack.pop()
            if id(current) in seen or len(seen) > 200:
                continue
            seen.add(id(current))
            symbol = self.library_symbol(current)
            if symbol:
                found.add(symbol)
            if isinstance(current, ast.Name):
                stack.extend(self.module.values(current))
            stack.extend(c for c in ast.iter_child_nodes(current) if isinstance(c, ast.expr))
        return frozenset(found)

    def capsule_kind(self, node: ast.expr, depth: int = 0) -> str:
        value = self.module.single(node)
        if isinstance(value, ast.Constant):
            return "int-address" if isinstance(value.value, int) else "unknown"
        if isinstance(value, ast.Attribute):
            if value.attr == "value":
                return "int-address"
            return "ctypes-function" if self.library_symbol(value) else "unknown"
        if isinstance(value, ast.Call):
            callee = self.module.dotted(value.func) or ""
            if "capsule" in callee.lower():
                return "capsule"
            if self.library_symbol(value):
                return "ctypes-function"
            if callee in ("int", "ctypes.addressof"):
                return "int-address"
            if last_name(callee) == "cast":
                return "ctypes-pointer"
        if isinstance(value, ast.Name) and value is not node and depth < MAX_DEPTH:
            return self.capsule_kind(value, depth + 1)
        return "unknown"

    # -- the walk -------------------------------------------------------------------------------
    def read(self) -> PyFacts:
        nodes = self.module.nodes
        for node in sorted(nodes[ast.Call], key=_position):
            self.visit_call(node)
        for node in nodes[ast.Attribute]:
            self.visit_attribute(node)
        for node in nodes[ast.Import] + nodes[ast.ImportFrom]:
            self.visit_import(node)
        for node in nodes[ast.FunctionDef] + nodes[ast.AsyncFunctionDef]:
            self.visit_function(node)
        self.attach_attributes()
        self.visit_registered_impls()
        self.facts.legacy_jax_api.sort()
        return self.facts

    def visit_call(self, call: ast.Call) -> None:
        dotted = self.module.dotted(call.func)
        name = last_name(dotted)
        handler = {
            "_xla_custom_call": self.torch_xla_call,
            "stablehlo_custom_call": self.torch_xla_call,
            "ffi_call": self.jax_call,
            "_xla_register_custom_call_target": self.torch_xla_registration,
            "register_ffi_target": self.jax_registration,
            "register_custom_call_target": self.jax_registration,
            "register_cpu_custom_call_target": self.jax_registration,
            "_xla_gpu_custom_call": self.gpu_custom_call,
        }.get(name)
        if handler is None and name in HLO_BUILDERS and self._is_hlo_builder(dotted or ""):
            handler = self.hlo_builder_call
        if handler is not None:
            handler(call, name, dotted or name)
        if name in LIBRARY_LOADERS or (dotted or "").startswith("ctypes.cdll."):
            self.library_load(call)
        symbol = self.library_symbol(call)
        if symbol:
            self.facts.symbol_refs.setdefault(symbol, call.lineno)
        self.visit_process_call(call, dotted or "")

    def _is_hlo_builder(self, dotted: str) -> bool:
        """``mlir.custom_call``, ``hlo_helpers.custom_call``, ``xla_client.ops.CustomCall``... and a
        bare ``custom_call`` imported from one of them; not a project's own ``custom_call``."""
        module = dotted.rsplit(".", 1)[0] if "." in dotted else ""
        if not module or dotted.startswith("."):
            return False
        return any(part in HLO_BUILDER_MODULES for part in module.split("."))

    def library_load(self, call: ast.Call) -> None:
        path = self.module.constant(call.args[0]) if call.args else None
        self.facts.libraries.append(LibraryLoad(path if isinstance(path, str) else None, call.lineno, self.module.text(call)))

    def visit_attribute(self, node: ast.Attribute) -> None:
        dotted = self.module.dotted(node) or ""
        if dotted.startswith(REMOVED_JAX_MODULE) and node.attr in ("register_custom_call_target", "register_cpu_custom_call_target"):
            self._legacy_jax((node.lineno, self.module.text(node)))
        symbol = self.library_symbol(node)
        if symbol:
            self.facts.symbol_refs.setdefault(symbol, node.lineno)

    def _legacy_jax(self, use: tuple[int, str]) -> None:
        if all(line != use[0] for line, _ in self.facts.legacy_jax_api):
            self.facts.legacy_jax_api.append(use)

    def visit_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            self.facts.imports.extend(alias.name for alias in node.names)
        else:
            base = "." * node.level + (node.module or "")
            self.facts.imports.append(base)
            self.facts.imports.extend(f"{base}{'.' if node.module else ''}{alias.name}" for alias in node.names)
        modules = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [f"{node.module}.{alias.name}" for alias in node.names]
        )
        for module in modules:
            if module.startswith(REMOVED_JAX_MODULE):
                self._legacy_jax((node.lineno, self.module.text(node)))

    def gpu_custom_call(self, call: ast.Call, name: str, dotted: str) -> None:
        """torch_xla's ``_xla_gpu_custom_call`` runs a Triton kernel by design: its payload is
        torch_xla.experimental.triton's serialized kernel call."""
        triton = any("triton" in (self.module.dotted(n) or self.module.text(n)).lower() for n in self._payload_sources(call))
        self.facts.gpu_custom_call.append((call.lineno, self.module.text(call), triton))

    def _payload_sources(self, call: ast.Call) -> list[ast.expr]:
        found = []
        for arg in list(call.args) + [k.value for k in call.keywords]:
            for value in self.module.values(arg):
                found.append(value)
                if isinstance(value, ast.Call):
                    found.append(value.func)
        return found

    def torch_xla_call(self, call: ast.Call, name: str, dotted: str) -> None:
        if any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in call.args):
            return  # `_xla_custom_call(...)`: arguments elided in a note, nothing to check
        wrapper = name == "stablehlo_custom_call"
        api_node = _argument(call, 6, "api_version")
        api_source = "given" if api_node is not None else ("default" if wrapper else "missing")
        api = self.module.constant(api_node) if api_node is not None else (0 if wrapper else None)
        if (api_node is not None and not isinstance(api, int)) or (api_node is None and _spread(call)):
            api, api_source = None, "unknown"
        self._add_call(
            call,
            "torch_xla",
            name,
            target_node=_argument(call, 1, "call_target"),
            api=api,
            api_source=api_source,
            config_node=_argument(call, 5, "backend_config"),
            operands=self._operand_list(_argument(call, 0, "inputs")),
            dtype_problem=self._dtype_problem(_argument(call, 3, "output_dtypes")),
        )

    def _add_call(
        self,
        call: ast.Call,
        framework: str,
        name: str,
        target_node: ast.expr | None,
        api: Any,
        api_source: str,
        config_node: ast.expr | None,
        operands: list[ast.expr] | None,
        attrs: tuple[str, ...] = (),
        legacy_config: bool = False,
        dtype_problem: str | None = None,
    ) -> None:
        """Record one call of a custom-call target, whatever API spells it."""
        self.facts.calls.append(
            PyCall(
                framework=framework,
                function=name,
                target=self._string(target_node),
                target_pattern=self.module.pattern(target_node),
                api=api if isinstance(api, int) else None,
                api_source=api_source,
                positional=len(call.args),
                attrs=attrs,
                legacy_config=legacy_config,
                backend_config=self._string(config_node),
                backend_config_kind=self._config_kind(config_node),
                dtype_problem=dtype_problem,
                line=call.lineno,
                text=self.module.text(call),
                operands=tuple(self.module.text(o) for o in operands) if operands is not None else None,
                operand_dtypes=tuple(self.dtype_of(o) for o in operands or ()),
                opaque_format=self._packed_format(config_node),
            )
        )

    def jax_call(self, call: ast.Call, name: str, dotted: str) -> None:
        api_node = _keyword(call, "custom_call_api_version")
        api = self.module.constant(api_node) if api_node is not None else 4
        legacy_node = _keyword(call, "legacy_backend_config")
        parent = self.module.parents.get(call)
        attrs: tuple[str, ...] = ()
        operands = None
        if isinstance(parent, ast.Call) and parent.func is call:
            attrs = tuple(k.arg for k in parent.keywords if k.arg)
            operands = list(parent.args)
        unknown = (api_node is None and _spread(call)) or not isinstance(api, int)
        self._add_call(
            call,
            "jax",
            name,
            target_node=_argument(call, 0, "target_name"),
            api=None if unknown else api,
            api_source="unknown" if unknown else ("default" if api_node is None else "given"),
            config_node=legacy_node,
            operands=operands,
            attrs=attrs,
            legacy_config=legacy_node is not None and not (isinstance(legacy_node, ast.Constant) and legacy_node.value is None),
        )
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            scope = self.module.scope_of.get(call, self.module.tree)
            self.ffi_call_names[(id(scope), parent.targets[0].id)] = len(self.facts.calls) - 1

    def hlo_builder_call(self, call: ast.Call, name: str, dotted: str) -> None:
        """``mlir.custom_call(target, ..., api_version=2)`` and the older XLA builder calls."""
        target_node = _argument(call, 1 if name in ("CustomCall", "CustomCallWithLayout") else 0, "call_target_name")
        api_node = _keyword(call, "api_version")
        default = HLO_BUILDERS[name]
        api = self.module.constant(api_node) if api_node is not None else default
        config_node = _keyword(call, "backend_config") or _keyword(call, "opaque")
        operands_node = _keyword(call, "operands") or (_argument(call, 2, "operands") if name.startswith("CustomCall") else None)
        spread = api_node is None and _spread(call)
        self._add_call(
            call,
            "jax",
            name,
            target_node=target_node,
            api=None if spread else api,
            api_source="given" if api_node is not None else ("default" if default is not None and not spread else "unknown"),
            config_node=config_node,
            operands=self._operand_list(operands_node),
        )

    def _operand_list(self, node: ast.expr | None) -> list[ast.expr] | None:
        if node is None:
            return None
        value = self.module.single(node)
        if isinstance(value, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in value.elts):
            return list(value.elts)
        return None

    def attach_attributes(self) -> None:
        """``call = jax.ffi.ffi_call(...)`` then ``call(x, n=3)``: n is an attribute of that call."""
        for node in self.module.nodes[ast.Call]:
            if not isinstance(node.func, ast.Name):
                continue
            scope = self.module.scope_of.get(node, self.module.tree)
            index = self.ffi_call_names.get((id(scope), node.func.id))
            if index is None:
                index = self.ffi_call_names.get((id(self.module.tree), node.func.id))
            if index is None:
                continue
            call = self.facts.calls[index]
            keywords = tuple(k.arg for k in node.keywords if k.arg)
            operands = call.operands if call.operands is not None else tuple(self.module.text(a) for a in node.args)
            dtypes = call.operand_dtypes or tuple(self.dtype_of(a) for a in node.args)
            self.facts.calls[index] = dataclasses.replace(
                call, attrs=tuple(dict.fromkeys(call.attrs + keywords)), operands=operands, operand_dtypes=dtypes
            )

    def torch_xla_registration(self, call: ast.Call, name: str, dotted: str) -> None:
        capsule = _argument(call, 1, "fn") or ast.Constant(None)
        platform_node = _argument(call, 2, "platform")
        target_node = _argument(call, 0, "name")
        self.facts.registrations.append(
            PyRegistration(
                framework="torch_xla",
                function=name,
                target=self._string(target_node),
                target_pattern=self.module.pattern(target_node),
                from_module=self._registrations_module(target_node) or self._root_module(capsule),
                keys_are_names=self._registrations_module(target_node) is not None,
                platforms=self._strings(platform_node),
                platform_given=platform_node is not None,
                api_version=None,
                api_given=False,
                capsule=self.capsule_kind(capsule),
                capsule_text=self.module.text(capsule),
                symbols=self.symbols_in(capsule),
                line=call.lineno,
                text=self.module.text(call),
            )
        )

    def project_wrapper(self, dotted: str, name: str) -> bool:
        """A project's own function named like jax's (``from ..jax_compat import
        register_custom_call_target``, or defined in this file): its defaults are its own."""
        return dotted.startswith(".") or (dotted == name and name in self.module.functions)

    def jax_registration(self, call: ast.Call, name: str, dotted: str) -> None:
        if name in ("register_custom_call_target", "register_cpu_custom_call_target") and dotted.startswith(REMOVED_JAX_MODULE):
            self._legacy_jax((call.lineno, self.module.text(call)))
        capsule = _argument(call, 1, "fn") or ast.Constant(None)
        platform_node = _argument(call, 2, "platform")
        api_node = _argument(call, 3, "api_version")
        wrapper = self.project_wrapper(dotted, name)
        default = None if wrapper else (1 if name == "register_ffi_target" else 0)
        api = self.module.constant(api_node) if api_node is not None else default
        target_node = _argument(call, 0, "name")
        default_platform = "cpu"
        self.facts.registrations.append(
            PyRegistration(
                framework="jax",
                function=name,
                target=self._string(target_node),
                target_pattern=self.module.pattern(target_node),
                from_module=self._registrations_module(target_node) or self._root_module(capsule),
                keys_are_names=self._registrations_module(target_node) is not None,
                platforms=self._strings(platform_node) if platform_node is not None else (() if wrapper else (default_platform,)),
                platform_given=platform_node is not None or name == "register_cpu_custom_call_target",
                api_version=api if isinstance(api, int) else None,
                api_given=api_node is not None,
                capsule=self.capsule_kind(capsule),
                capsule_text=self.module.text(capsule),
                symbols=self.symbols_in(capsule),
                line=call.lineno,
                text=self.module.text(call),
            )
        )

    def _registrations_module(self, node: ast.expr | None) -> str | None:
        """``for name, fn in gpu_ops.registrations().items()``: the names come from ``gpu_ops``
        (the loop around the registration that binds the name)."""
        if not isinstance(node, ast.Name):
            return None
        loop = self.module.parents.get(node)
        while loop is not None:
            if isinstance(loop, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(loop, ast.For) and node.id in {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}:
                break
            loop = self.module.parents.get(loop)
        if loop is not None:
            root = loop.iter
            while isinstance(root, (ast.Call, ast.Attribute)):
                root = root.func if isinstance(root, ast.Call) else root.value
            return last_name(self.module.dotted(root)) if isinstance(root, ast.Name) else None
        return None

    def _root_module(self, node: ast.expr) -> str | None:
        """``gpu_ops.ffi_targets[name]`` -> ``gpu_ops``: the module a capsule comes from, when it is one."""
        root = node
        while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if not isinstance(root, ast.Name) or root is node:
            return None
        dotted = self.module.dotted(root) or ""
        return last_name(dotted) if root.id in self.module.imports else None

    def _string(self, node: ast.expr | None) -> str | None:
        value = self.module.constant(node)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value if isinstance(value, str) else None

    def _strings(self, node: ast.expr | None) -> tuple[str, ...]:
        values = self.module.constants(node) or []
        return tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values if isinstance(v, (str, bytes)))

    def _config_kind(self, node: ast.expr | None) -> str:
        if node is None:
            return "none"
        value = self.module.single(node)
        if isinstance(value, ast.Constant):
            return "constant" if isinstance(value.value, (str, bytes)) else "other"
        if isinstance(value, ast.JoinedStr):
            return "fstring"
        if isinstance(value, ast.Call):
            callee = self.module.dotted(value.func) or ""
            if callee == "str":
                return "str-call"
            if callee.endswith("json.dumps") or callee == "dumps":
                return "json"
            if last_name(callee) == "pack" and "struct" in callee:
                return "struct-pack"
        return "other"

    def _packed_format(self, node: ast.expr | None) -> str | None:
        """``struct.pack("<qf", n, eps)`` passed (directly or by name) as the opaque string."""
        if node is None:
            return None
        value = self.module.single(node)
        if isinstance(value, ast.Call) and last_name(self.module.dotted(value.func)) == "pack" and value.args:
            fmt = self.module.constant(value.args[0])
            return fmt if isinstance(fmt, str) else None
        return None

    def _dtype_problem(self, node: ast.expr | None) -> str | None:
        """The first output dtype written as a string (``str(x.dtype)``, ``"float32"``, an f-string)."""
        if node is None:
            return None
        value = self.module.single(node)
        elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value.elt] if isinstance(value, ast.ListComp) else []
        for element in elements:
            element = self.module.single(element)
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                return self.module.text(element)
            if isinstance(element, ast.JoinedStr):
                return self.module.text(element)
            if isinstance(element, ast.Call):
                callee = self.module.dotted(element.func) or ""
                if callee == "str" or callee.endswith(".__str__"):
                    return self.module.text(element)
        return None

    def dtype_of(self, node: ast.expr, depth: int = 0) -> str | None:
        """The element type an expression has where the file says so: ``x.astype(jnp.int32)``,
        ``jnp.arange(n, dtype=jnp.int32)``, ``t.to(torch.int32)``, ``t.int()``, ``np.int32(3)``."""
        if depth > MAX_DEPTH:
            return None
        for value in self.module.values(node):
            if not isinstance(value, ast.Call):
                continue
            func = value.func
            dtype_node = _keyword(value, "dtype")
            if dtype_node is None and isinstance(func, ast.Attribute) and func.attr in ("astype", "to", "view") and value.args:
                dtype_node = value.args[0]
            if dtype_node is None and isinstance(func, ast.Attribute) and func.attr in ARRAY_DTYPE_POSITION:
                module = self.module.dotted(func.value) or ""
                if module in ("numpy", "jax.numpy"):
                    dtype_node = _argument(value, ARRAY_DTYPE_POSITION[func.attr], "dtype")
            if dtype_node is not None:
                named = _dtype_name(self.module.dotted(dtype_node) or self.module.constant(dtype_node))
                if named:
                    return named
            if isinstance(func, ast.Attribute) and func.attr in ("int", "long", "float", "double", "half") and not value.args:
                return DTYPE_NAMES[func.attr]
            named = _dtype_name(self.module.dotted(func))
            if named:
                return named
        return None

    # -- torch.library implementations ----------------------------------------------------------
    def _registers_xla(self, call: ast.Call) -> bool:
        name = last_name(self.module.dotted(call.func))
        if name not in ("impl", "register_kernel"):
            return False
        values = [self.module.constant(a) for a in call.args] + [self.module.constant(k.value) for k in call.keywords]
        if name == "impl":
            return "XLA" in values or any(isinstance(v, (tuple, list)) and "XLA" in v for v in values)
        return any(v == "xla" or (isinstance(v, (tuple, list)) and "xla" in v) for v in values)

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if any(isinstance(d, ast.Call) and self._registers_xla(d) for d in node.decorator_list):
            self._check_constant_impl(node)

    def visit_registered_impls(self) -> None:
        """``lib.impl("op", fn, "XLA")`` registers ``fn`` without a decorator."""
        functions = self.module.functions
        for node in self.module.nodes[ast.Call]:
            if self._registers_xla(node) and not self._is_decorator(node):
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in functions:
                        self._check_constant_impl(functions[arg.id][0])

    def _is_decorator(self, call: ast.Call) -> bool:
        parent = self.module.parents.get(call)
        return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and call in parent.decorator_list

    def _check_constant_impl(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        returns = [n for n in _own_nodes(function) if isinstance(n, ast.Return) and n.value is not None]
        if returns and all(self._constant_tensor(r.value, function) for r in returns):
            if (returns[0].lineno, function.name) not in {(l, f) for l, f, _ in self.facts.constant_impls}:
                self.facts.constant_impls.append((returns[0].lineno, function.name, self.module.text(returns[0].value)))

    def _constant_tensor(self, node: ast.expr, function: ast.AST, depth: int = 0) -> bool:
        if isinstance(node, ast.Tuple):
            return all(self._constant_tensor(e, function, depth) for e in node.elts)
        if isinstance(node, ast.Call):
            return last_name(self.module.dotted(node.func)) in CONSTANT_TENSOR_FACTORIES
        if isinstance(node, ast.Name) and depth < MAX_DEPTH:
            own = list(_own_nodes(function))
            assigned = [
                n.value for n in own if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)
            ]
            filled = any(
                isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == node.id for a in n.args + [k.value for k in n.keywords])
                or isinstance(n, (ast.AugAssign, ast.Assign)) and any(
                    isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == node.id
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                )
                for n in own
            )
            return bool(assigned) and not filled and all(self._constant_tensor(v, function, depth + 1) for v in assigned)
        return False

    # -- processes ------------------------------------------------------------------------------
    def visit_process_call(self, call: ast.Call, dotted: str) -> None:
        where = (call.lineno, self.module.text(call), self.module.scope_name(call))
        if dotted in START_METHOD_CALLS or last_name(dotted) in ("set_start_method", "get_context"):
            method = self.module.constant(_argument(call, 0, "method"))
            if method in ("spawn", "forkserver"):
                self.facts.spawn_configured = True
            elif method == "fork":
                self.facts.forks.append(where)
            return
        # A pool given its own context (mp_context=...) starts children however that context says.
        if dotted in FORK_CALLS and not any(k.arg == "mp_context" for k in call.keywords):
            self.facts.forks.append(where)
        elif self._initialises_gpu(call, dotted):
            self.facts.gpu_inits.append(where)

    def _initialises_gpu(self, call: ast.Call, dotted: str) -> bool:
        if dotted in GPU_INIT_HARMLESS:
            return False
        if dotted in GPU_INIT_CALLS or dotted.startswith(GPU_INIT_PREFIXES):
            return True
        if isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and not dotted.startswith("torch."):
            return True
        device = _keyword(call, "device")
        if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args:
            device = device or call.args[0]
        value = self.module.constant(device)
        return isinstance(value, str) and value.startswith("cuda")


def _dtype_name(value: Any) -> str | None:
    """``jnp.int32`` / ``torch.long`` / ``"int32"`` -> ``int32``; the builtins ``int`` and ``float`` say nothing."""
    if not isinstance(value, str):
        return None
    name = value.rsplit(".", 1)[-1]
    if "." not in value and name in ("float", "int"):
        return None
    return DTYPE_NAMES.get(name)


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


STRUCT_ITEM = re.compile(r"(\d*)([xcbB?hHiIlLqQnNefdspP])")


def struct_size(fmt: str) -> int | None:
    """``struct.calcsize`` of a format, None when it is not one."""
    try:
        return struct.calcsize(fmt)
    except (struct.error, TypeError):
        return None


def struct_layout(fmt: str) -> list[tuple[int, int]] | None:
    """(offset, bytes) of each value a ``struct.pack`` format packs (pad bytes left out)."""
    if struct_size(fmt) is None:
        return None
    order = fmt[0] if fmt and fmt[0] in "@=<>!" else ""
    body = fmt[len(order) :].replace(" ", "")
    found, prefix = [], order
    for match in STRUCT_ITEM.finditer(body):
        count, code = int(match.group(1) or 1), match.group(2)
        items = [(1, code)] if code in "sp" else [(1, code)] * count
        width = count if code in "sp" else None
        for _ in items:
            item = f"{width}{code}" if width else code
            end = struct.calcsize(prefix + item)
            size = struct.calcsize(order + item)
            if code != "x":
                found.append((end - size, size))
            prefix += item
    return found


# Notes elide parameters as `def f(q, k, ...):`, which is not Python; without it they parse.
ELIDED_PARAMETERS = re.compile(r",[ \t]*\.\.\.[ \t]*\)")


def parse(source: str) -> tuple[ast.Module | None, str, str | None]:
    """(tree, the text parsed, why it did not parse). Never raises: a file nested too deeply for
    the parser, or holding NUL bytes, is a reason, not an exception."""
    try:
        return ast.parse(source), source, None
    except SyntaxError as exc:
        repaired = ELIDED_PARAMETERS.sub(")", source)
        try:
            return ast.parse(repaired), repaired, None
        except SyntaxError:
            return None, source, f"line {exc.lineno}: {exc.msg}"
        except (RecursionError, MemoryError, ValueError):
            return None, source, f"line {exc.lineno}: {exc.msg}"
    except (RecursionError, MemoryError):
        return None, source, "nested too deeply for Python's parser"
    except ValueError as exc:  # NUL bytes
        return None, source, str(exc)


def relevant(source: str) -> bool:
    """Can the file hold anything :func:`read` reports? (A quick test before parsing.)"""
    return RELEVANT.search(source) is not None


def read(name: str, source: str) -> PyFacts:
    tree, parsed, problem = parse(source)
    if tree is None:
        facts = PyFacts(name)
        facts.syntax_error = problem
        return facts
    try:
        return _Reader(name, Module(tree, parsed)).read()
    except RecursionError:
        facts = PyFacts(name)
        facts.syntax_error = "nested too deeply to read"
        return facts
