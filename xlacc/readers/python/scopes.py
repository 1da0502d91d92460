"""One walk over a module's tree: parents, scopes, assignments, parameters, loop variables and imports.

Names are bound in their own scope (a function's local ``lib`` is not the module's ``lib``); a
class body is a scope its methods do not see. Comprehensions are not scopes here: their loop
variable is read as bound where the comprehension is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from xlacc.readers.python.tree import (
    SCOPES,
    Arguments,
    Parsed,
    field,
    identifier,
    named,
    strip,
)

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_DEPTH = 6  # how far a name is followed through names it is assigned
MAX_VALUES = 32
BINDING_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list"})
SEQUENCES = frozenset({"list", "tuple", "set", "expression_list"})
# Children of a function, lambda or class that belong to the enclosing scope (defaults, decorators,
# annotations, base classes): all but the body.
INNER_FIELD = "body"


class Module:
    def __init__(self, parsed: Parsed):
        self.parsed = parsed
        self.root: Node = parsed.root
        self.parents: dict[int, Node] = {}
        self.scope_of: dict[int, Node] = {}
        self.assignments: dict[tuple[int, str], list[Node]] = defaultdict(list)
        self.parameters: set[tuple[int, str]] = set()
        self.imports: dict[str, str] = {}
        self.nodes: dict[str, list[Node]] = defaultdict(list)
        self.functions: dict[str, list[Node]] = defaultdict(list)
        self.loops: list[tuple[Node, Node]] = []
        self._arguments: dict[int, Arguments] = {}
        self._walk()
        for loop, scope in self.loops:  # after the walk: the iterable may be a name bound later in the text
            for value in self.iterated(field(loop, "right")):
                self._bind(field(loop, "left"), value, scope)

    def _walk(self) -> None:
        stack: list[tuple[Node, Node]] = [(self.root, self.root)]
        parents, scope_of, nodes = self.parents, self.scope_of, self.nodes
        while stack:
            node, scope = stack.pop()
            scope_of[node.id] = scope
            kind = node.type
            nodes[kind].append(node)
            inner = node if kind in SCOPES else None
            if inner is not None:
                self._enter(node)
            self._record(node, kind, scope)
            for index, child in enumerate(node.named_children):
                if child.type == "comment":
                    continue
                parents[child.id] = node
                own = inner is not None and node.field_name_for_named_child(index) == INNER_FIELD
                stack.append((child, inner if own else scope))

    def _enter(self, node: Node) -> None:
        if node.type != "lambda":
            self.functions[identifier(field(node, "name")) or ""].append(node)
        if node.type == "class_definition":
            return
        parameters = field(node, "parameters")
        for parameter in named(parameters) if parameters is not None else []:
            name = identifier(parameter)
            if parameter.type in ("typed_parameter",):
                name = identifier(next(iter(named(parameter)), None))
            elif parameter.type in ("default_parameter", "typed_default_parameter"):
                name = identifier(field(parameter, "name"))
            if name:
                self.parameters.add((node.id, name))

    def _record(self, node: Node, kind: str, scope: Node) -> None:
        if kind == "assignment":
            value = field(node, "right")
            if value is None:
                return
            while value.type == "assignment":  # `a = b = 1`: the inner assignment binds b itself
                value = field(value, "right")
            target = field(node, "left")
            if field(node, "type") is None or identifier(target):
                self._bind(target, value, scope)
        elif kind == "named_expression":
            name = identifier(field(node, "name"))
            if name:
                self.assignments[(scope.id, name)].append(field(node, "value"))
        elif kind in ("for_statement", "for_in_clause"):
            self.loops.append((node, scope))
        elif kind == "import_statement":
            for module, alias in _imported(node):
                if alias:
                    self.imports[alias] = module
                else:
                    self.imports.setdefault(module.split(".")[0], module.split(".")[0])
        elif kind in ("import_from_statement", "future_import_statement"):
            base, has_module = import_base(node)
            for name, alias in _imported(node):
                self.imports[alias or name] = f"{base}.{name}" if has_module else f"{base}{name}"

    def _bind(self, target: Node | None, value: Node | None, scope: Node) -> None:
        target, value = strip(target), strip(value)
        if target is None or value is None:
            return
        if target.type == "identifier":
            self.assignments[(scope.id, identifier(target))].append(value)
            return
        targets = named(target)
        if target.type == "tuple_pattern" and len(targets) == 1 and not any(c.type == "," for c in target.children):
            self._bind(targets[0], value, scope)  # `(x) = 1` binds x
        elif target.type in BINDING_PATTERNS and value.type in SEQUENCES - {"set"}:
            values = named(value)
            if len(values) == len(targets):
                for sub_target, sub_value in zip(targets, values):
                    self._bind(sub_target, sub_value, scope)

    def iterated(self, node: Node | None) -> list[Node]:
        """The elements a ``for`` loop binds when it runs over a literal list, tuple or set (or a
        name holding one)."""
        for value in self.values(node) if node is not None else ():
            if value.type in SEQUENCES:
                return named(value)
        return []

    # -- names ------------------------------------------------------------------------------------
    def scope(self, node: Node) -> Node:
        return self.scope_of.get(node.id, self.root)

    def parent(self, node: Node) -> Node | None:
        return self.parents.get(node.id)

    def arguments(self, call: Node) -> Arguments:
        found = self._arguments.get(call.id)
        if found is None:
            found = self._arguments[call.id] = Arguments(call)
        return found

    def binding(self, name: Node) -> tuple[list[Node], bool]:
        """What ``name`` is assigned in the nearest scope that binds it, and whether that scope
        takes it as a parameter (then its values are unknown)."""
        text = identifier(name) or ""
        scope = self.scope(name)
        first = True
        while True:
            key = (scope.id, text)
            if key in self.parameters:
                return self.assignments.get(key, []), True
            if key in self.assignments and (first or scope.type != "class_definition"):
                return self.assignments[key], False
            if scope.id == self.root.id:
                return [], False
            first = False
            scope = self.scope(scope)

    def values(self, node: Node, depth: int = 0) -> list[Node]:
        """The node, or for a name every expression assigned to it (followed further)."""
        node = strip(node)
        if node.type == "identifier" and depth < MAX_DEPTH:
            assigned, parameter = self.binding(node)
            if assigned and not parameter:
                found = []
                for value in assigned[:MAX_VALUES]:
                    if value.id != node.id:
                        found.extend(self.values(value, depth + 1))
                return found
        if node.type == "conditional_expression" and depth < MAX_DEPTH:  # `"a" if cond else "b"` can be either
            parts = named(node)
            if len(parts) == 3:
                return self.values(parts[0], depth + 1) + self.values(parts[2], depth + 1)
        return [node]

    def single(self, node: Node) -> Node:
        """What a name holds when every assignment agrees on one expression; else the node."""
        values = self.values(node)
        return values[0] if len(values) == 1 else strip(node)

    def scope_name(self, node: Node) -> str:
        scope = self.scope(node)
        while scope.type in ("lambda", "class_definition"):
            scope = self.scope(scope)
        return identifier(field(scope, "name")) or "<module>" if scope.type == "function_definition" else "<module>"


def import_base(node: Node) -> tuple[str, bool]:
    """``from ..pkg import x`` -> ("..pkg", True); ``from . import x`` -> (".", False)."""
    if node.type == "future_import_statement":
        return "__future__", True
    module = field(node, "module_name")
    if module is None:
        return "", False
    if module.type == "relative_import":
        prefix = next((c for c in module.children if c.type == "import_prefix"), None)
        dots = prefix.text.decode() if prefix is not None else ""
        dotted = next((c for c in module.children if c.type == "dotted_name"), None)
        return dots + (dotted.text.decode() if dotted is not None else ""), dotted is not None
    return module.text.decode(), True


def _imported(node: Node) -> list[tuple[str, str | None]]:
    """(name, alias) of each name an import statement binds."""
    found = []
    for index, child in enumerate(node.children):
        if child.type == "wildcard_import":
            found.append(("*", None))
            continue
        if node.field_name_for_child(index) != "name":
            continue
        if child.type == "aliased_import":
            found.append((field(child, "name").text.decode(), identifier(field(child, "alias"))))
        else:
            found.append(("".join(child.text.decode().split()), None))
    return found


def imported_names(node: Node) -> list[tuple[str, str | None]]:
    return _imported(node)
