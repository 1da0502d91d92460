"""Registrations of a custom-call target: ``jax.ffi.register_ffi_target``, the old
``xla_client.register_custom_call_target`` and torch_xla's ``_xla_register_custom_call_target``:
the name (or the pattern of a computed one), every platform it can take, the api_version, and
what the capsule is made of (a compiled module's capsule, a ctypes symbol, a ctypes callback)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlacc.readers.python.facts import PyRegistration
from xlacc.readers.python.tree import (
    SCOPES,
    descendants,
    field,
    identifier,
    line,
    strip,
)
from xlacc.readers.python.values import Values, last_name

if TYPE_CHECKING:
    from tree_sitter import Node

    from xlacc.readers.python.facts import PyFacts
    from xlacc.readers.python.guards import Guards
    from xlacc.readers.python.libraries import Libraries

# The public module that held register_custom_call_target (jax._src.lib.xla_client is jax's own).
REMOVED_JAX_MODULE = "jax.lib.xla_client"
LEGACY_REGISTRATIONS = ("register_custom_call_target", "register_cpu_custom_call_target")
PROJECT_PREFIX = "."


class Registrations:
    def __init__(self, module: Values, facts: PyFacts, libraries: Libraries, guards: Guards):
        self.module = module
        self.facts = facts
        self.libraries = libraries
        self.guards = guards

    def legacy_jax(self, node: Node) -> None:
        """A use of the removed ``jax.lib.xla_client`` API (one per line), and the guard around it."""
        at = line(node)
        if all(known != at for known, _ in self.facts.legacy_jax_api):
            self.facts.legacy_jax_api.append((at, self.module.text(node)))
            guard = self.guards.around(node)
            if guard:
                self.facts.legacy_guards[at] = guard

    def torch_xla_registration(self, call: Node, name: str, dotted: str) -> None:
        arguments = self.module.arguments(call)
        capsule = arguments.argument(1, "fn")
        platform_node = arguments.argument(2, "platform")
        self._add(call, "torch_xla", name, arguments.argument(0, "name"), capsule,
                  platforms=self.module.strings(platform_node), platform_given=platform_node is not None,
                  api_version=None, api_given=False)

    def jax_registration(self, call: Node, name: str, dotted: str) -> None:
        if name in LEGACY_REGISTRATIONS and dotted.startswith(REMOVED_JAX_MODULE):
            self.legacy_jax(call)
        arguments = self.module.arguments(call)
        platform_node = arguments.argument(2, "platform")
        api_node = arguments.argument(3, "api_version")
        wrapper = self.project_wrapper(dotted, name)
        default = None if wrapper else (1 if name == "register_ffi_target" else 0)
        api = self.module.constant(api_node) if api_node is not None else default
        platforms = self.module.strings(platform_node) if platform_node is not None else (() if wrapper else ("cpu",))
        self._add(call, "jax", name, arguments.argument(0, "name"), arguments.argument(1, "fn"),
                  platforms=platforms, platform_given=platform_node is not None or name == "register_cpu_custom_call_target",
                  api_version=api if isinstance(api, int) else None, api_given=api_node is not None)

    def _add(self, call: Node, framework: str, name: str, target_node: Node | None, capsule: Node | None, **given) -> None:
        keys_from = self._registrations_module(target_node)
        self.facts.registrations.append(
            PyRegistration(
                framework=framework,
                function=name,
                target=self.module.string(target_node),
                target_pattern=self.module.pattern(target_node),
                from_module=keys_from or self._root_module(capsule),
                keys_are_names=keys_from is not None,
                capsule=self.libraries.capsule_kind(capsule),
                capsule_text=self.module.text(capsule),
                symbols=self.libraries.symbols_in(capsule),
                line=line(call),
                text=self.module.text(call),
                callback=self.libraries.callback(capsule),
                guard=self.guards.around(call),
                **given,
            )
        )

    def project_wrapper(self, dotted: str, name: str) -> bool:
        """A project's own function named like jax's (``from ..jax_compat import
        register_custom_call_target``, or defined in this file): its defaults are its own."""
        return dotted.startswith(PROJECT_PREFIX) or (dotted == name and name in self.module.functions)

    def _registrations_module(self, node: Node | None) -> str | None:
        """``for name, fn in gpu_ops.registrations().items()``: the names come from ``gpu_ops``
        (the loop around the registration that binds the name)."""
        name = identifier(node)
        if name is None:
            return None
        loop = self.module.parent(node)
        while loop is not None:
            if loop.type in SCOPES:
                return None
            if loop.type == "for_statement" and name in _bound_names(field(loop, "left")):
                break
            loop = self.module.parent(loop)
        if loop is None:
            return None
        root = strip(field(loop, "right"))
        while root is not None and root.type in ("call", "attribute"):
            root = strip(field(root, "function") if root.type == "call" else field(root, "object"))
        return last_name(self.module.dotted(root)) if root is not None and root.type == "identifier" else None

    def _root_module(self, node: Node | None) -> str | None:
        """``gpu_ops.ffi_targets[name]`` -> ``gpu_ops``: the module a capsule comes from, when it is one."""
        if node is None:
            return None
        start = root = strip(node)
        while root is not None and root.type in ("call", "attribute", "subscript"):
            inner = {"call": "function", "attribute": "object", "subscript": "value"}[root.type]
            root = strip(field(root, inner))
        if root is None or root.type != "identifier" or root.id == start.id:
            return None
        return last_name(self.module.dotted(root) or "") if identifier(root) in self.module.imports else None


def _bound_names(target: Node | None) -> set[str]:
    if target is None:
        return set()
    return {identifier(n) or "" for n in descendants(target) if n.type == "identifier"}
