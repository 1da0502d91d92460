"""What a Python file registers, calls, loads and forks, read with ``ast`` (never imported or run).

Names are followed through simple assignments and imports, so ``API_VERSION = STATUS_RETURNING``
and ``new_capsule = ctypes.pythonapi.PyCapsule_New`` resolve to what they stand for.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

MAX_DEPTH = 6
MAX_TEXT = 160
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


@dataclass(frozen=True)
class PyRegistration:
    framework: str  # "jax" | "torch_xla"
    function: str
    target: str | None
    platform: str | None
    platform_given: bool
    api_version: int | None  # JAX's scale (0 legacy, 1 typed); None for torch_xla
    api_given: bool
    capsule: str  # capsule | int-address | ctypes-pointer | ctypes-function | unknown
    capsule_text: str
    symbols: frozenset[str]
    line: int
    text: str


@dataclass(frozen=True)
class PyCall:
    framework: str
    function: str  # _xla_custom_call | stablehlo_custom_call | ffi_call
    target: str | None
    api: int | None
    api_source: str  # given | default | missing | unknown
    positional: int
    attrs: tuple[str, ...]
    legacy_config: bool
    backend_config: str | None  # the string, when it is a constant
    backend_config_kind: str  # none | constant | json | str-call | fstring | other
    dtype_problem: str | None
    line: int
    text: str


@dataclass
class PyFacts:
    name: str
    registrations: list[PyRegistration] = field(default_factory=list)
    calls: list[PyCall] = field(default_factory=list)
    symbol_refs: dict[str, int] = field(default_factory=dict)  # ctypes lookups: name -> line
    gpu_custom_call: list[tuple[int, str]] = field(default_factory=list)
    legacy_jax_api: list[tuple[int, str]] = field(default_factory=list)
    constant_impls: list[tuple[int, str, str]] = field(default_factory=list)  # line, function, returned
    # (line, code, scope): the scope is the enclosing function's name, or "<module>".
    gpu_inits: list[tuple[int, str, str]] = field(default_factory=list)
    forks: list[tuple[int, str, str]] = field(default_factory=list)
    spawn_configured: bool = False
    syntax_error: str | None = None


class Resolver:
    """Assignments and imports of one module, to follow names to what they hold."""

    def __init__(self, tree: ast.AST, source: str):
        self.source = source
        self.assignments: dict[str, list[ast.expr]] = {}
        self.imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assignments.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.assignments.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        self.imports.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def text(self, node: ast.AST) -> str:
        """The node as code, without comments, on one line, shortened."""
        try:
            text = ast.unparse(node)
        except (ValueError, TypeError, AttributeError):
            text = ast.get_source_segment(self.source, node) or ""
        text = " ".join(text.split())
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."

    def values(self, node: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
        """The node, or for a name every expression assigned to it (followed further)."""
        if isinstance(node, ast.Name) and node.id in self.assignments and depth < MAX_DEPTH:
            for value in self.assignments[node.id]:
                if value is not node:
                    yield from self.values(value, depth + 1)
        else:
            yield node

    def single(self, node: ast.expr) -> ast.expr:
        """What a name holds when every assignment agrees on one expression shape; else the node."""
        values = list(self.values(node))
        return values[0] if len(values) == 1 else node

    def constant(self, node: ast.expr | None) -> Any:
        if node is None:
            return None
        found = set()
        for value in self.values(node):
            if isinstance(value, ast.Constant):
                found.add(value.value)
            elif (
                isinstance(value, ast.UnaryOp)
                and isinstance(value.op, ast.USub)
                and isinstance(value.operand, ast.Constant)
                and isinstance(value.operand.value, (int, float))
            ):
                found.add(-value.operand.value)
            else:
                return None
        return found.pop() if len(found) == 1 else None

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
        return None


def last_name(dotted: str | None) -> str:
    return (dotted or "").rsplit(".", 1)[-1]


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


class _Reader:
    def __init__(self, name: str, tree: ast.Module, source: str):
        self.facts = PyFacts(name)
        self.resolve = Resolver(tree, source)
        self.tree = tree
        self.parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        self.ffi_call_names: dict[str, int] = {}  # a name bound to an ffi_call(...) -> index in calls

    # -- ctypes ---------------------------------------------------------------------------------
    def is_library(self, node: ast.expr) -> bool:
        for value in self.resolve.values(node):
            if isinstance(value, ast.Call) and last_name(self.resolve.dotted(value.func)) in LIBRARY_LOADERS:
                return True
            dotted = self.resolve.dotted(value) or ""
            if dotted.startswith("ctypes.cdll.") or dotted.startswith("ctypes.CDLL"):
                return True
        return False

    def library_symbol(self, node: ast.expr) -> str | None:
        """``lib.NAME`` / ``getattr(lib, "NAME")`` / ``lib["NAME"]`` on a ctypes library."""
        if isinstance(node, ast.Attribute) and self.is_library(node.value):
            return node.attr
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
            if self.is_library(node.args[0]):
                value = self.resolve.constant(node.args[1])
                return value if isinstance(value, str) else None
        if isinstance(node, ast.Subscript) and self.is_library(node.value):
            value = self.resolve.constant(node.slice)
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
            for value in self.resolve.values(current) if isinstance(current, ast.Name) else ():
                stack.append(value)
            stack.extend(c for c in ast.iter_child_nodes(current) if isinstance(c, ast.expr))
        return frozenset(found)

    def capsule_kind(self, node: ast.expr, depth: int = 0) -> str:
        value = self.resolve.single(node)
        if isinstance(value, ast.Constant):
            return "int-address" if isinstance(value.value, int) else "unknown"
        if isinstance(value, ast.Attribute):
            if value.attr == "value":
                return "int-address"
            return "ctypes-function" if self.library_symbol(value) else "unknown"
        if isinstance(value, ast.Call):
            callee = self.resolve.dotted(value.func) or ""
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

    # -- calls ----------------------------------------------------------------------------------
    def read(self) -> PyFacts:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self.visit_call(node)
            elif isinstance(node, ast.Attribute):
                self.visit_attribute(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.visit_import(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit_function(node)
        self.attach_attributes()
        self.visit_registered_impls()
        return self.facts

    def visit_call(self, call: ast.Call) -> None:
        dotted = self.resolve.dotted(call.func)
        name = last_name(dotted)
        handler = {
            "_xla_custom_call": self.torch_xla_call,
            "stablehlo_custom_call": self.torch_xla_call,
            "ffi_call": self.jax_call,
            "_xla_register_custom_call_target": self.torch_xla_registration,
            "register_ffi_target": self.jax_registration,
            "register_custom_call_target": self.jax_registration,
        }.get(name)
        if handler is not None:
            handler(call, name, dotted or name)
        symbol = self.library_symbol(call)
        if symbol:
            self.facts.symbol_refs.setdefault(symbol, call.lineno)
        self.visit_process_call(call, dotted or "")

    def visit_attribute(self, node: ast.Attribute) -> None:
        if node.attr == "_xla_gpu_custom_call":
            self.facts.gpu_custom_call.append((node.lineno, self.resolve.text(node)))
        dotted = self.resolve.dotted(node) or ""
        if dotted.startswith(REMOVED_JAX_MODULE) and node.attr == "register_custom_call_target":
            self._legacy_jax((node.lineno, self.resolve.text(node)))
        symbol = self.library_symbol(node)
        if symbol:
            self.facts.symbol_refs.setdefault(symbol, node.lineno)

    def _legacy_jax(self, use: tuple[int, str]) -> None:
        if all(line != use[0] for line, _ in self.facts.legacy_jax_api):
            self.facts.legacy_jax_api.append(use)

    def visit_import(self, node: ast.Import | ast.ImportFrom) -> None:
        modules = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [f"{node.module}.{alias.name}" for alias in node.names]
        )
        for module in modules:
            if module.startswith(REMOVED_JAX_MODULE):
                self._legacy_jax((node.lineno, self.resolve.text(node)))

    def torch_xla_call(self, call: ast.Call, name: str, dotted: str) -> None:
        if any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in call.args):
            return  # `_xla_custom_call(...)`: arguments elided in a note, nothing to check
        wrapper = name == "stablehlo_custom_call"
        api_node = _argument(call, 6, "api_version")
        api_source = "given" if api_node is not None else ("default" if wrapper else "missing")
        api = self.resolve.constant(api_node) if api_node is not None else (0 if wrapper else None)
        if api_node is not None and not isinstance(api, int):
            api, api_source = None, "unknown"
        config_node = _argument(call, 5, "backend_config")
        self.facts.calls.append(
            PyCall(
                framework="torch_xla",
                function=name,
                target=self._string(_argument(call, 1, "call_target")),
                api=api,
                api_source=api_source,
                positional=len(call.args),
                attrs=(),
                legacy_config=False,
                backend_config=self._string(config_node),
                backend_config_kind=self._config_kind(config_node),
                dtype_problem=self._dtype_problem(_argument(call, 3, "output_dtypes")),
                line=call.lineno,
                text=self.resolve.text(call),
            )
        )

    def jax_call(self, call: ast.Call, name: str, dotted: str) -> None:
        api_node = next((k.value for k in call.keywords if k.arg == "custom_call_api_version"), None)
        api = self.resolve.constant(api_node) if api_node is not None else 4
        legacy_node = next((k.value for k in call.keywords if k.arg == "legacy_backend_config"), None)
        parent = self.parents.get(call)
        attrs: tuple[str, ...] = ()
        if isinstance(parent, ast.Call) and parent.func is call:
            attrs = tuple(k.arg for k in parent.keywords if k.arg)
        self.facts.calls.append(
            PyCall(
                framework="jax",
                function=name,
                target=self._string(_argument(call, 0, "target_name")),
                api=api if isinstance(api, int) else None,
                api_source="default" if api_node is None else ("given" if isinstance(api, int) else "unknown"),
                positional=len(call.args),
                attrs=attrs,
                legacy_config=legacy_node is not None and not (
                    isinstance(legacy_node, ast.Constant) and legacy_node.value is None
                ),
                backend_config=self._string(legacy_node),
                backend_config_kind=self._config_kind(legacy_node),
                dtype_problem=None,
                line=call.lineno,
                text=self.resolve.text(call),
            )
        )
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            self.ffi_call_names[parent.targets[0].id] = len(self.facts.calls) - 1

    def attach_attributes(self) -> None:
        """``call = jax.ffi.ffi_call(...)`` then ``call(x, n=3)``: n is an attribute of that call."""
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            index = self.ffi_call_names.get(node.func.id)
            keywords = tuple(k.arg for k in node.keywords if k.arg)
            if index is None or not keywords:
                continue
            call = self.facts.calls[index]
            self.facts.calls[index] = dataclasses.replace(call, attrs=tuple(dict.fromkeys(call.attrs + keywords)))

    def torch_xla_registration(self, call: ast.Call, name: str, dotted: str) -> None:
        capsule = _argument(call, 1, "fn") or ast.Constant(None)
        platform_node = _argument(call, 2, "platform")
        self.facts.registrations.append(
            PyRegistration(
                framework="torch_xla",
                function=name,
                target=self._string(_argument(call, 0, "name")),
                platform=self._string(platform_node),
                platform_given=platform_node is not None,
                api_version=None,
                api_given=False,
                capsule=self.capsule_kind(capsule),
                capsule_text=self.resolve.text(capsule),
                symbols=self.symbols_in(capsule),
                line=call.lineno,
                text=self.resolve.text(call),
            )
        )

    def jax_registration(self, call: ast.Call, name: str, dotted: str) -> None:
        if name == "register_custom_call_target" and dotted.startswith(REMOVED_JAX_MODULE):
            self._legacy_jax((call.lineno, self.resolve.text(call)))
            return
        capsule = _argument(call, 1, "fn") or ast.Constant(None)
        platform_node = _argument(call, 2, "platform")
        api_node = _argument(call, 3, "api_version")
        api = self.resolve.constant(api_node) if api_node is not None else (1 if name == "register_ffi_target" else 0)
        self.facts.registrations.append(
            PyRegistration(
                framework="jax",
                function=name,
                target=self._string(_argument(call, 0, "name")),
                platform=self._string(platform_node) if platform_node is not None else "cpu",
                platform_given=platform_node is not None,
                api_version=api if isinstance(api, int) else None,
                api_given=api_node is not None,
                capsule=self.capsule_kind(capsule),
                capsule_text=self.resolve.text(capsule),
                symbols=self.symbols_in(capsule),
                line=call.lineno,
                text=self.resolve.text(call),
            )
        )

    def _string(self, node: ast.expr | None) -> str | None:
        value = self.resolve.constant(node)
        return value if isinstance(value, str) else None

    def _config_kind(self, node: ast.expr | None) -> str:
        if node is None:
            return "none"
        value = self.resolve.single(node)
        if isinstance(value, ast.Constant):
            return "constant" if isinstance(value.value, str) else "other"
        if isinstance(value, ast.JoinedStr):
            return "fstring"
        if isinstance(value, ast.Call):
            callee = self.resolve.dotted(value.func) or ""
            if callee == "str":
                return "str-call"
            if callee.endswith("json.dumps") or callee == "dumps":
                return "json"
        return "other"

    def _dtype_problem(self, node: ast.expr | None) -> str | None:
        """The first output dtype written as a string (``str(x.dtype)``, ``"float32"``, an f-string)."""
        if node is None:
            return None
        value = self.resolve.single(node)
        elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value.elt] if isinstance(value, ast.ListComp) else []
        for element in elements:
            element = self.resolve.single(element)
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                return self.resolve.text(element)
            if isinstance(element, ast.JoinedStr):
                return self.resolve.text(element)
            if isinstance(element, ast.Call):
                callee = self.resolve.dotted(element.func) or ""
                if callee == "str" or callee.endswith(".__str__"):
                    return self.resolve.text(element)
        return None

    # -- torch.library implementations ----------------------------------------------------------
    def _registers_xla(self, call: ast.Call) -> bool:
        name = last_name(self.resolve.dotted(call.func))
        values = [self.resolve.constant(a) for a in call.args]
        values += [self.resolve.constant(k.value) for k in call.keywords]
        if name == "impl":
            return "XLA" in values or any(isinstance(v, (tuple, list)) and "XLA" in v for v in values)
        if name == "register_kernel":
            return any(v == "xla" or (isinstance(v, (tuple, list)) and "xla" in v) for v in values)
        return False

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if any(isinstance(d, ast.Call) and self._registers_xla(d) for d in node.decorator_list):
            self._check_constant_impl(node)

    def visit_registered_impls(self) -> None:
        """``lib.impl("op", fn, "XLA")`` registers ``fn`` without a decorator."""
        functions = {
            n.name: n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and self._registers_xla(node) and not self._is_decorator(node):
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in functions:
                        self._check_constant_impl(functions[arg.id])

    def _is_decorator(self, call: ast.Call) -> bool:
        parent = self.parents.get(call)
        return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and call in parent.decorator_list

    def _check_constant_impl(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        returns = [n for n in _own_nodes(function) if isinstance(n, ast.Return) and n.value is not None]
        if returns and all(self._constant_tensor(r.value, function) for r in returns):
            if (returns[0].lineno, function.name) not in {(l, f) for l, f, _ in self.facts.constant_impls}:
                self.facts.constant_impls.append((returns[0].lineno, function.name, self.resolve.text(returns[0].value)))

    def _constant_tensor(self, node: ast.expr, function: ast.AST, depth: int = 0) -> bool:
        if isinstance(node, ast.Tuple):
            return all(self._constant_tensor(e, function, depth) for e in node.elts)
        if isinstance(node, ast.Call):
            return last_name(self.resolve.dotted(node.func)) in CONSTANT_TENSOR_FACTORIES
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
    def _scope(self, node: ast.AST) -> str:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
        return "<module>"

    def visit_process_call(self, call: ast.Call, dotted: str) -> None:
        where = (call.lineno, self.resolve.text(call), self._scope(call))
        if dotted in START_METHOD_CALLS or last_name(dotted) in ("set_start_method", "get_context"):
            method = self.resolve.constant(_argument(call, 0, "method"))
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
        device = next((k.value for k in call.keywords if k.arg == "device"), None)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "to" and call.args:
            device = device or call.args[0]
        value = self.resolve.constant(device)
        return isinstance(value, str) and value.startswith("cuda")


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


# Notes elide parameters as `def f(q, k, ...):`, which is not Python; without it they parse.
ELIDED_PARAMETERS = re.compile(r",[ \t]*\.\.\.[ \t]*\)")


def read(name: str, source: str) -> PyFacts:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        repaired = ELIDED_PARAMETERS.sub(")", source)
        try:
            tree = ast.parse(repaired)
            source = repaired
        except SyntaxError:
            facts = PyFacts(name)
            facts.syntax_error = f"line {exc.lineno}: {exc.msg}"
            return facts
    return _Reader(name, tree, source).read()
