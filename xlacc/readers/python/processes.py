"""Processes and torch.library: where a file initialises a device, forks, sets a start method, and
XLA implementations (``@impl(lib, "op", "XLA")``) that return a constant XLA folds away."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from xlacc.readers.python.tree import (
    FUNCTIONS,
    SCOPES,
    field,
    identifier,
    line,
    named,
    strip,
)
from xlacc.readers.python.values import MAX_DEPTH, Values, last_name

if TYPE_CHECKING:
    from tree_sitter import Node

    from xlacc.readers.python.facts import PyFacts

CONSTANT_TENSOR_FACTORIES = frozenset(
    ["zeros_like", "ones_like", "empty_like", "full_like", "zeros", "ones", "empty", "full", "new_zeros", "new_ones", "new_empty", "new_full"]
)
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
START_METHOD_CALLS = frozenset({"multiprocessing.set_start_method", "multiprocessing.get_context"})


class Processes:
    def __init__(self, module: Values, facts: PyFacts):
        self.module = module
        self.facts = facts

    def visit_call(self, call: Node, dotted: str) -> None:
        where = (line(call), self.module.text(call), self.module.scope_name(call))
        arguments = self.module.arguments(call)
        if dotted in START_METHOD_CALLS or last_name(dotted) in ("set_start_method", "get_context"):
            method = self.module.constant(arguments.argument(0, "method"))
            if method in ("spawn", "forkserver"):
                self.facts.spawn_configured = True
            elif method == "fork":
                self.facts.forks.append(where)
            return
        # A pool given its own context (mp_context=...) starts children however that context says.
        if dotted in FORK_CALLS and "mp_context" not in arguments.names:
            self.facts.forks.append(where)
        elif self._initialises_gpu(call, dotted):
            self.facts.gpu_inits.append(where)

    def _initialises_gpu(self, call: Node, dotted: str) -> bool:
        if dotted in GPU_INIT_HARMLESS:
            return False
        if dotted in GPU_INIT_CALLS or dotted.startswith(GPU_INIT_PREFIXES):
            return True
        function = field(call, "function")
        method = identifier(field(function, "attribute")) if function.type == "attribute" else None
        if method == "cuda" and not dotted.startswith("torch."):
            return True
        arguments = self.module.arguments(call)
        device = arguments.keyword("device")
        if method == "to" and arguments.positional:
            device = device or arguments.positional[0]
        value = self.module.constant(device)
        return isinstance(value, str) and value.startswith("cuda")

    # -- torch.library implementations ----------------------------------------------------------
    def registers_xla(self, call: Node) -> bool:
        name = last_name(self.module.dotted(field(call, "function")))
        if name not in ("impl", "register_kernel"):
            return False
        values = [self.module.constant(a) for a in self.module.arguments(call).values]
        if name == "impl":
            return "XLA" in values
        return "xla" in values

    def visit_function(self, node: Node) -> None:
        parent = self.module.parent(node)
        if parent is None or parent.type != "decorated_definition":
            return
        decorators = [strip(next(iter(named(d)), None)) for d in named(parent) if d.type == "decorator"]
        if any(d is not None and d.type == "call" and self.registers_xla(d) for d in decorators):
            self._check_constant_impl(node)

    def visit_registered_impls(self) -> None:
        """``lib.impl("op", fn, "XLA")`` registers ``fn`` without a decorator."""
        functions = self.module.functions
        for node in self.module.nodes["call"]:
            parent = self.module.parent(node)
            if (parent is None or parent.type != "decorator") and self.registers_xla(node):
                for argument in self.module.arguments(node).positional:
                    name = identifier(argument)
                    if name in functions:
                        self._check_constant_impl(functions[name][0])

    def _check_constant_impl(self, function: Node) -> None:
        if function.type != "function_definition":
            return
        returns = [n for n in own_nodes(function) if n.type == "return_statement" and named(n)]
        if returns and all(self._constant_tensor(named(r)[0], function) for r in returns):
            name = identifier(field(function, "name")) or ""
            at = line(returns[0])
            if (at, name) not in {(l, f) for l, f, _ in self.facts.constant_impls}:
                self.facts.constant_impls.append((at, name, self.module.text(named(returns[0])[0])))

    def _constant_tensor(self, node: Node, function: Node, depth: int = 0) -> bool:
        node = strip(node)
        if node.type in ("tuple", "expression_list"):
            return all(self._constant_tensor(e, function, depth) for e in named(node))
        if node.type == "call":
            return last_name(self.module.dotted(field(node, "function"))) in CONSTANT_TENSOR_FACTORIES
        name = identifier(node)
        if name and depth < MAX_DEPTH:
            own = list(own_nodes(function))
            assigned = [field(n, "right") for n in own if n.type == "assignment" and identifier(field(n, "left")) == name and field(n, "right") is not None]
            filled = any(self._fills(n, name) for n in own)
            return bool(assigned) and not filled and all(self._constant_tensor(v, function, depth + 1) for v in assigned)
        return False

    def _fills(self, node: Node, name: str) -> bool:
        """Is ``name`` passed to a call, or written through a subscript (``out[...] = ...``)?"""
        if node.type == "call":
            return any(identifier(a) == name for a in self.module.arguments(node).values)
        if node.type in ("assignment", "augmented_assignment"):
            target = strip(field(node, "left"))
            return target is not None and target.type == "subscript" and identifier(field(target, "value")) == name
        return False


def own_nodes(function: Node) -> Iterator[Node]:
    """Nodes of a function body, not descending into nested functions or classes."""
    stack = list(named(function))
    while stack:
        node = stack.pop()
        if node.type in SCOPES or node.type in FUNCTIONS:
            continue
        yield node
        stack.extend(named(node))
