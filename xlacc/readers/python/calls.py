"""Calls of a custom-call target, whatever API spells them: ``jax.ffi.ffi_call``, the HLO builders
(``mlir.custom_call``, ``hlo_helpers.custom_call``, ``xla_client.ops.CustomCall``) and torch_xla's
``_xla_custom_call`` / ``stablehlo_custom_call``; their api_version (given, or the builder's own
default), operands and element types, and the backend_config they pass."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from xlacc.readers.python.facts import PyCall
from xlacc.readers.python.tree import field, identifier, line, named
from xlacc.readers.python.values import MAX_DEPTH, Values, is_formatted, last_name

if TYPE_CHECKING:
    from tree_sitter import Node

    from xlacc.readers.python.facts import PyFacts
    from xlacc.readers.python.guards import Guards

# HLO-building helpers and the api_version each uses when none is passed.
HLO_BUILDERS = {
    "custom_call": 2,  # jax.interpreters.mlir.custom_call, jaxlib.hlo_helpers.custom_call
    "CustomCall": 1,  # jaxlib.xla_client.ops.CustomCall (API_VERSION_ORIGINAL)
    "CustomCallWithLayout": 1,
    "CustomCallOp": None,  # stablehlo.CustomCallOp: api_version is an attribute, read when constant
}
HLO_BUILDER_MODULES = ("mlir", "hlo_helpers", "xla_client", "ops", "stablehlo", "hlo", "xops")
# Element types as numpy, jax.numpy and torch spell them.
DTYPE_NAMES = {
    **{name: name for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "bool")},
    "float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64", "short": "int16",
}
# numpy's and jax.numpy's constructors that take the element type positionally, and where.
ARRAY_DTYPE_POSITION = {"zeros": 1, "ones": 1, "empty": 1, "full": 2, "zeros_like": 1, "ones_like": 1, "empty_like": 1,
                        "full_like": 2, "array": 1, "asarray": 1}
SEQUENCES = ("list", "tuple")


def is_hlo_builder(dotted: str) -> bool:
    """``mlir.custom_call``, ``hlo_helpers.custom_call``, ``xla_client.ops.CustomCall``... and a
    bare ``custom_call`` imported from one of them; not a project's own ``custom_call``."""
    module = dotted.rsplit(".", 1)[0] if "." in dotted else ""
    if not module or dotted.startswith("."):
        return False
    return any(part in HLO_BUILDER_MODULES for part in module.split("."))


class Calls:
    def __init__(self, module: Values, facts: PyFacts, guards: Guards):
        self.module = module
        self.facts = facts
        self.guards = guards
        self.ffi_call_names: dict[tuple[int, str], int] = {}  # a name bound to an ffi_call(...) -> index in calls

    def torch_xla_call(self, call: Node, name: str, dotted: str) -> None:
        arguments = self.module.arguments(call)
        if any(a.type == "ellipsis" for a in arguments.positional):
            return  # `_xla_custom_call(...)`: arguments elided in a note, nothing to check
        wrapper = name == "stablehlo_custom_call"
        api_node = arguments.argument(6, "api_version")
        api_source = "given" if api_node is not None else ("default" if wrapper else "missing")
        api = self.module.constant(api_node) if api_node is not None else (0 if wrapper else None)
        if (api_node is not None and not _is_int(api)) or (api_node is None and arguments.spread):
            api, api_source = None, "unknown"
        self._add(
            call,
            "torch_xla",
            name,
            target_node=arguments.argument(1, "call_target"),
            api=api,
            api_source=api_source,
            config_node=arguments.argument(5, "backend_config"),
            operands=self.operand_list(arguments.argument(0, "inputs")),
            dtype_problem=self.dtype_problem(arguments.argument(3, "output_dtypes")),
        )

    def jax_call(self, call: Node, name: str, dotted: str) -> None:
        arguments = self.module.arguments(call)
        api_node = arguments.keyword("custom_call_api_version")
        api = self.module.constant(api_node) if api_node is not None else 4
        legacy_node = arguments.keyword("legacy_backend_config")
        parent = self.module.parent(call)
        attrs: tuple[str, ...] = ()
        operands = None
        if parent is not None and parent.type == "call" and field(parent, "function").id == call.id:
            applied = self.module.arguments(parent)
            attrs, operands = applied.names, list(applied.positional)
        unknown = (api_node is None and arguments.spread) or not _is_int(api)
        self._add(
            call,
            "jax",
            name,
            target_node=arguments.argument(0, "target_name"),
            api=None if unknown else api,
            api_source="unknown" if unknown else ("default" if api_node is None else "given"),
            config_node=legacy_node,
            operands=operands,
            attrs=attrs,
            legacy_config=legacy_node is not None and legacy_node.type != "none",
        )
        bound = identifier(field(parent, "left")) if parent is not None and parent.type == "assignment" else None
        outer = self.module.parent(parent) if parent is not None else None
        if bound and field(parent, "type") is None and not (outer is not None and outer.type == "assignment"):
            self.ffi_call_names[(self.module.scope(call).id, bound)] = len(self.facts.calls) - 1

    def hlo_builder_call(self, call: Node, name: str, dotted: str) -> None:
        """``mlir.custom_call(target, ..., api_version=2)`` and the older XLA builder calls."""
        arguments = self.module.arguments(call)
        target_node = arguments.argument(1 if name in ("CustomCall", "CustomCallWithLayout") else 0, "call_target_name")
        api_node = arguments.keyword("api_version")
        default = HLO_BUILDERS[name]
        api = self.module.constant(api_node) if api_node is not None else default
        config_node = arguments.keyword("backend_config") or arguments.keyword("opaque")
        operands_node = arguments.keyword("operands") or (arguments.argument(2, "operands") if name.startswith("CustomCall") else None)
        spread = api_node is None and arguments.spread
        self._add(
            call,
            "jax",
            name,
            target_node=target_node,
            api=None if spread else api,
            api_source="given" if api_node is not None else ("default" if default is not None and not spread else "unknown"),
            config_node=config_node,
            operands=self.operand_list(operands_node),
        )

    def gpu_custom_call(self, call: Node, name: str, dotted: str) -> None:
        """torch_xla's ``_xla_gpu_custom_call`` runs a Triton kernel by design: its payload is
        torch_xla.experimental.triton's serialized kernel call."""
        sources = []
        for argument in self.module.arguments(call).values:
            for value in self.module.values(argument):
                sources.append(value)
                if value.type == "call":
                    sources.append(field(value, "function"))
        triton = any("triton" in (self.module.dotted(n) or self.module.text(n)).lower() for n in sources)
        self.facts.gpu_custom_call.append((line(call), self.module.text(call), triton))

    def _add(
        self,
        call: Node,
        framework: str,
        name: str,
        target_node: Node | None,
        api: Any,
        api_source: str,
        config_node: Node | None,
        operands: list[Node] | None,
        attrs: tuple[str, ...] = (),
        legacy_config: bool = False,
        dtype_problem: str | None = None,
    ) -> None:
        """Record one call of a custom-call target, whatever API spells it."""
        module = self.module
        self.facts.calls.append(
            PyCall(
                framework=framework,
                function=name,
                target=module.string(target_node),
                target_pattern=module.pattern(target_node),
                api=api if _is_int(api) else None,
                api_source=api_source,
                positional=len(module.arguments(call).positional),
                attrs=attrs,
                legacy_config=legacy_config,
                backend_config=module.string(config_node),
                backend_config_kind=self.config_kind(config_node),
                dtype_problem=dtype_problem,
                line=line(call),
                text=module.text(call),
                operands=tuple(module.text(o) for o in operands) if operands is not None else None,
                operand_dtypes=tuple(self.dtype_of(o) for o in operands or ()),
                opaque_format=self.packed_format(config_node),
                guard=self.guards.around(call),
            )
        )

    def operand_list(self, node: Node | None) -> list[Node] | None:
        if node is None:
            return None
        value = self.module.single(node)
        if value.type in SEQUENCES and not any(e.type == "list_splat" for e in named(value)):
            return named(value)
        return None

    def attach_attributes(self) -> None:
        """``call = jax.ffi.ffi_call(...)`` then ``call(x, n=3)``: n is an attribute of that call."""
        if not self.ffi_call_names:
            return
        for node in self.module.nodes["call"]:
            name = identifier(field(node, "function"))
            if name is None:
                continue
            index = self.ffi_call_names.get((self.module.scope(node).id, name))
            if index is None:
                index = self.ffi_call_names.get((self.module.root.id, name))
            if index is None:
                continue
            call = self.facts.calls[index]
            arguments = self.module.arguments(node)
            operands = call.operands if call.operands is not None else tuple(self.module.text(a) for a in arguments.positional)
            dtypes = call.operand_dtypes or tuple(self.dtype_of(a) for a in arguments.positional)
            self.facts.calls[index] = dataclasses.replace(
                call, attrs=tuple(dict.fromkeys(call.attrs + arguments.names)), operands=operands, operand_dtypes=dtypes
            )

    # -- what a call passes --------------------------------------------------------------------------
    def config_kind(self, node: Node | None) -> str:
        if node is None:
            return "none"
        value = self.module.single(node)
        if value.type in ("string", "concatenated_string"):
            return "fstring" if is_formatted(value) else ("constant" if self.module.constant(value) is not None else "other")
        if value.type == "call":
            callee = self.module.dotted(field(value, "function")) or ""
            if callee == "str":
                return "str-call"
            if callee.endswith("json.dumps") or callee == "dumps":
                return "json"
            if last_name(callee) == "pack" and "struct" in callee:
                return "struct-pack"
        return "other"

    def packed_format(self, node: Node | None) -> str | None:
        """``struct.pack("<qf", n, eps)`` passed (directly or by name) as the opaque string."""
        if node is None:
            return None
        value = self.module.single(node)
        if value.type == "call" and last_name(self.module.dotted(field(value, "function"))) == "pack":
            arguments = self.module.arguments(value).positional
            fmt = self.module.constant(arguments[0]) if arguments else None
            return fmt if isinstance(fmt, str) else None
        return None

    def dtype_problem(self, node: Node | None) -> str | None:
        """The first output dtype written as a string (``str(x.dtype)``, ``"float32"``, an f-string)."""
        if node is None:
            return None
        value = self.module.single(node)
        if value.type in SEQUENCES:
            elements = named(value)
        elif value.type == "list_comprehension":
            elements = [field(value, "body")]
        else:
            elements = []
        for element in elements:
            element = self.module.single(element)
            textual = element.type in ("string", "concatenated_string")
            if textual and (is_formatted(element) or isinstance(self.module.constant(element), str)):
                return self.module.text(element)
            if element.type == "call":
                callee = self.module.dotted(field(element, "function")) or ""
                if callee == "str" or callee.endswith(".__str__"):
                    return self.module.text(element)
        return None

    def dtype_of(self, node: Node, depth: int = 0) -> str | None:
        """The element type an expression has where the file says so: ``x.astype(jnp.int32)``,
        ``jnp.arange(n, dtype=jnp.int32)``, ``t.to(torch.int32)``, ``t.int()``, ``np.int32(3)``."""
        if depth > MAX_DEPTH:
            return None
        for value in self.module.values(node):
            if value.type != "call":
                continue
            function = field(value, "function")
            method = identifier(field(function, "attribute")) if function.type == "attribute" else None
            arguments = self.module.arguments(value)
            dtype_node = arguments.keyword("dtype")
            if dtype_node is None and method in ("astype", "to", "view") and arguments.positional:
                dtype_node = arguments.positional[0]
            array_module = method in ARRAY_DTYPE_POSITION and self.module.dotted(field(function, "object")) in ("numpy", "jax.numpy")
            if dtype_node is None and array_module:
                dtype_node = arguments.argument(ARRAY_DTYPE_POSITION[method], "dtype")
            if dtype_node is not None:
                found = dtype_name(self.module.dotted(dtype_node) or self.module.constant(dtype_node))
                if found:
                    return found
            if method in ("int", "long", "float", "double", "half") and not arguments.positional:
                return DTYPE_NAMES[method]
            found = dtype_name(self.module.dotted(function))
            if found:
                return found
        return None


def dtype_name(value: Any) -> str | None:
    """``jnp.int32`` / ``torch.long`` / ``"int32"`` -> ``int32``; the builtins ``int`` and ``float`` say nothing."""
    if not isinstance(value, str):
        return None
    name = value.rsplit(".", 1)[-1]
    if "." not in value and name in ("float", "int"):
        return None
    return DTYPE_NAMES.get(name)


def _is_int(value: Any) -> bool:
    return isinstance(value, int)
