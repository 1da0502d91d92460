"""ctypes: libraries a file loads, the symbols it looks up in them, what a registration's capsule
is made of, and Python functions made into C callbacks (``CFUNCTYPE``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlacc.readers.python.facts import LibraryLoad, PyCallback
from xlacc.readers.python.tree import field, identifier, line, named, strip
from xlacc.readers.python.values import MAX_DEPTH, Values, last_name

if TYPE_CHECKING:
    from tree_sitter import Node

    from xlacc.readers.python.facts import PyFacts

LIBRARY_LOADERS = ("CDLL", "PyDLL", "LoadLibrary", "load_library")
LIBRARY_ATTRIBUTES = ("restype", "argtypes", "_handle", "_name")
FUNCTION_TYPES = ("CFUNCTYPE", "PYFUNCTYPE", "WINFUNCTYPE")
MAX_SEEN = 200


class Libraries:
    def __init__(self, module: Values, facts: PyFacts):
        self.module = module
        self.facts = facts
        self._function_types: dict[int, tuple[int, Node] | None] = {}

    def is_library(self, node: Node) -> bool:
        for value in self.module.values(node):
            if value.type == "call" and last_name(self.module.dotted(field(value, "function"))) in LIBRARY_LOADERS:
                return True
            dotted = self.module.dotted(value) or ""
            if dotted.startswith(("ctypes.cdll.", "ctypes.CDLL")):
                return True
        return False

    def library_symbol(self, node: Node) -> str | None:
        """``lib.NAME`` / ``getattr(lib, "NAME")`` / ``lib["NAME"]`` on a ctypes library."""
        node = strip(node)
        kind = node.type
        if kind == "attribute":
            attribute = identifier(field(node, "attribute"))
            if attribute not in LIBRARY_ATTRIBUTES and self.is_library(field(node, "object")):
                return attribute
        elif kind == "call" and identifier(field(node, "function")) == "getattr":
            arguments = self.module.arguments(node).positional
            if len(arguments) >= 2 and self.is_library(arguments[0]):
                return self.module.string(arguments[1])
        elif kind == "subscript" and self.is_library(field(node, "value")):
            return self.module.string(field(node, "subscript"))
        return None

    def symbols_in(self, node: Node | None) -> frozenset[str]:
        found: set[str] = set()
        stack, seen = ([node] if node is not None else []), set()
        while stack:
            current = stack.pop()
            if current.id in seen or len(seen) > MAX_SEEN:
                continue
            seen.add(current.id)
            symbol = self.library_symbol(current)
            if symbol:
                found.add(symbol)
            if current.type == "identifier":
                stack.extend(self.module.values(current))
            stack.extend(c for c in named(current) if c.type != "keyword_argument")  # as `ast` walks: keywords are not expressions
        return frozenset(found)

    def capsule_kind(self, node: Node | None, depth: int = 0) -> str:
        if node is None:
            return "unknown"
        value = self.module.single(node)
        kind = value.type
        if kind in ("integer", "string", "concatenated_string", "true", "false", "none", "float"):
            return "int-address" if kind == "integer" else "unknown"
        if kind == "attribute":
            if identifier(field(value, "attribute")) == "value":
                return "int-address"
            return "ctypes-function" if self.library_symbol(value) else "unknown"
        if kind == "call":
            callee = self.module.dotted(field(value, "function")) or ""
            if "capsule" in callee.lower():
                return "capsule"
            if self.library_symbol(value):
                return "ctypes-function"
            if callee in ("int", "ctypes.addressof"):
                return "int-address"
            if last_name(callee) == "cast":
                return "ctypes-pointer"
        if kind == "identifier" and value.id != strip(node).id and depth < MAX_DEPTH:
            return self.capsule_kind(value, depth + 1)
        return "unknown"

    def library_load(self, call: Node) -> None:
        arguments = self.module.arguments(call).positional
        path = self.module.string(arguments[0]) if arguments else None
        self.facts.libraries.append(LibraryLoad(path, line(call), self.module.text(call)))

    # -- callbacks ----------------------------------------------------------------------------------
    def function_type(self, node: Node | None, depth: int = 0) -> tuple[int, Node] | None:
        """(arity, the CFUNCTYPE call) when ``node`` is (or names) a ctypes function type."""
        if node is None or depth > MAX_DEPTH:
            return None
        key = node.id
        if key not in self._function_types:
            self._function_types[key] = None  # a name assigned from itself ends here
            found = None
            for value in self.module.values(node):
                if value.type == "call" and last_name(self.module.dotted(field(value, "function"))) in FUNCTION_TYPES:
                    arguments = self.module.arguments(value)
                    if not arguments.spread and arguments.positional:
                        found = (len(arguments.positional) - 1, value)  # the first is the return type
                elif value.type in ("identifier", "attribute") and value.id != node.id:
                    found = self.function_type(value, depth + 1)
                if found:
                    break
            self._function_types[key] = found
        return self._function_types[key]

    def callback(self, node: Node | None, depth: int = 0) -> PyCallback | None:
        """The ctypes callback an expression holds: ``CB(fn)``, a function decorated with ``@CB``,
        or either passed through ``ctypes.cast``/``pycapsule``/``PyCapsule_New``."""
        if node is None or depth > MAX_DEPTH:
            return None
        for value in self.module.values(node):
            if value.type == "identifier":
                found = self._decorated(identifier(value) or "")
                if found:
                    return found
            if value.type == "attribute":  # ctypes.cast(fn, c_void_p).value
                found = self.callback(field(value, "object"), depth + 1)
                if found:
                    return found
            if value.type != "call":
                continue
            made = self.function_type(field(value, "function"))
            arguments = self.module.arguments(value).positional
            if made and arguments:
                return self._made(made, arguments[0])
            for argument in arguments:
                found = self.callback(argument, depth + 1)
                if found:
                    return found
        return None

    def _decorated(self, name: str) -> PyCallback | None:
        for function in self.module.functions.get(name, [])[:1]:
            parent = self.module.parent(function)
            if parent is None or parent.type != "decorated_definition":
                return None
            for decorator in (c for c in named(parent) if c.type == "decorator"):
                made = self.function_type(next(iter(named(decorator)), None))
                if made:
                    return self._made(made, function)
        return None

    def _made(self, made: tuple[int, Node], function: Node) -> PyCallback:
        arity, maker = made
        definition = function if function.type == "function_definition" else None
        if definition is None and identifier(function):
            definition = next(iter(self.module.functions.get(identifier(function) or "", [])), None)
        params: tuple[str, ...] = ()
        if definition is not None and definition.type == "function_definition":
            params = _parameter_names(definition)
        name = identifier(field(definition, "name")) if definition is not None else None
        found = PyCallback(name or self.module.text(function), arity, params, line(maker), self.module.text(maker))
        if found not in self.facts.callbacks:
            self.facts.callbacks.append(found)
        return found


def _parameter_names(function: Node) -> tuple[str, ...]:
    parameters = field(function, "parameters")
    names = []
    for parameter in named(parameters) if parameters is not None else []:
        target = field(parameter, "name") if parameter.type in ("default_parameter", "typed_default_parameter") else parameter
        if target is not None and target.type == "typed_parameter":
            target = next(iter(named(target)), None)
        name = identifier(target)
        if name:
            names.append(name)
    return tuple(names)
