"""One Python file read into :class:`PyFacts`: every call, attribute, import and function visited
once, in the order of the text."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xlacc.readers.python.calls import HLO_BUILDERS, Calls, is_hlo_builder
from xlacc.readers.python.facts import PyFacts
from xlacc.readers.python.guards import Guards
from xlacc.readers.python.libraries import LIBRARY_LOADERS, Libraries
from xlacc.readers.python.processes import Processes
from xlacc.readers.python.registrations import (
    LEGACY_REGISTRATIONS,
    REMOVED_JAX_MODULE,
    Registrations,
)
from xlacc.readers.python.scopes import import_base, imported_names
from xlacc.readers.python.tree import field, identifier, line, parse
from xlacc.readers.python.values import Values, last_name

if TYPE_CHECKING:
    from tree_sitter import Node

# Quick test before parsing: a file with none of these words holds nothing this module reports.
RELEVANT = re.compile(
    r"xla|XLA|ffi|ctypes|CDLL|cdll|custom_call|CustomCall|multiprocessing|fork|ProcessPool|capsule|LD_PRELOAD|struct|"
    r"hlo_helpers|mlir"
)


def relevant(source: str) -> bool:
    """Can the file hold anything :func:`read` reports? (A quick test before parsing.)"""
    return RELEVANT.search(source) is not None


def read(name: str, source: str) -> PyFacts:
    parsed = parse(source)
    if parsed.root is None:
        facts = PyFacts(name)
        facts.syntax_error = parsed.problem
        return facts
    try:
        return _Reader(name, Values(parsed)).read()
    except RecursionError:
        facts = PyFacts(name)
        facts.syntax_error = "nested too deeply to read"
        return facts


class _Reader:
    def __init__(self, name: str, module: Values):
        self.facts = PyFacts(name)
        self.module = module
        guards = Guards(module)
        self.libraries = Libraries(module, self.facts)
        self.calls = Calls(module, self.facts, guards)
        self.registrations = Registrations(module, self.facts, self.libraries, guards)
        self.processes = Processes(module, self.facts)
        self.handlers = {
            "_xla_custom_call": self.calls.torch_xla_call,
            "stablehlo_custom_call": self.calls.torch_xla_call,
            "ffi_call": self.calls.jax_call,
            "_xla_register_custom_call_target": self.registrations.torch_xla_registration,
            "register_ffi_target": self.registrations.jax_registration,
            "register_custom_call_target": self.registrations.jax_registration,
            "register_cpu_custom_call_target": self.registrations.jax_registration,
            "_xla_gpu_custom_call": self.calls.gpu_custom_call,
        }

    def read(self) -> PyFacts:
        nodes = self.module.nodes
        for node in sorted(nodes["call"], key=lambda n: n.start_byte):
            self.visit_call(node)
        for node in nodes["attribute"]:
            self.visit_attribute(node)
        for node in nodes["subscript"]:  # lib["NAME"]
            self._symbol(node)
        imports = nodes["import_statement"] + nodes["import_from_statement"] + nodes["future_import_statement"]
        for node in sorted(imports, key=lambda n: n.start_byte):
            self.visit_import(node)
        for node in nodes["function_definition"]:
            self.processes.visit_function(node)
        self.calls.attach_attributes()
        self.processes.visit_registered_impls()
        self.facts.legacy_jax_api.sort()
        return self.facts

    def visit_call(self, call: Node) -> None:
        dotted = self.module.dotted(field(call, "function"))
        name = last_name(dotted)
        handler = self.handlers.get(name)
        if handler is None and name in HLO_BUILDERS and is_hlo_builder(dotted or ""):
            handler = self.calls.hlo_builder_call
        if handler is not None:
            handler(call, name, dotted or name)
        if name in LIBRARY_LOADERS or (dotted or "").startswith("ctypes.cdll."):
            self.libraries.library_load(call)
        self._symbol(call)
        self.processes.visit_call(call, dotted or "")

    def visit_attribute(self, node: Node) -> None:
        attribute = identifier(field(node, "attribute"))
        if attribute in LEGACY_REGISTRATIONS and (self.module.dotted(node) or "").startswith(REMOVED_JAX_MODULE):
            self.registrations.legacy_jax(node)
        self._symbol(node)

    def _symbol(self, node: Node) -> None:
        symbol = self.libraries.library_symbol(node)
        if symbol:
            self.facts.symbol_refs.setdefault(symbol, line(node))

    def visit_import(self, node: Node) -> None:
        names = [name for name, _ in imported_names(node)]
        if node.type == "import_statement":
            self.facts.imports.extend(names)
            modules = names
        else:
            base, has_module = import_base(node)
            if not base:
                return
            self.facts.imports.append(base)
            self.facts.imports.extend(f"{base}{'.' if has_module else ''}{name}" for name in names)
            modules = [f"{base}.{name}" for name in names]
        if any(module.startswith(REMOVED_JAX_MODULE) for module in modules):
            self.registrations.legacy_jax(node)
