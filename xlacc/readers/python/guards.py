"""Code that runs only where it can: inside ``try`` with an ``except AttributeError:`` (or
``ImportError``) fallback, in that fallback itself, under ``hasattr(...)``, or under a comparison
with jax's or jaxlib's version. A legacy call there is a design (old and new API side by side),
not an error."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xlacc.readers.python.tree import descendants, field, identifier, line, named
from xlacc.readers.python.values import Values

if TYPE_CHECKING:
    from tree_sitter import Node

# What an API that is gone raises, and the handlers wide enough to catch it.
CAUGHT = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
VERSION = re.compile(r"__version__|\bjax(?:lib)?\.(?:version|lib\.version)\b|\bjax(?:lib)?_version\b|\bversion\.parse\b", re.IGNORECASE)
CONDITIONALS = ("if_statement", "elif_clause", "conditional_expression")
MAX_TEXT = 80
MAX_CALLERS_DEPTH = 2  # a function called only from a guarded function called only under a guard


class Guards:
    def __init__(self, module: Values):
        self.module = module
        self._found: dict[int, str | None] = {}
        self._callers: dict[str, list[Node]] | None = None

    def around(self, node: Node, depth: int = 0) -> str | None:
        """The first guard around ``node``, in words: "`except AttributeError:` (line 12)". Code in
        a function is guarded where every call of that function in the file is."""
        child, parent = node, self.module.parent(node)
        while parent is not None:
            found = self._guard(parent, child)
            if found:
                return found
            if parent.type == "function_definition" and depth < MAX_CALLERS_DEPTH:
                return self._callers_guard(parent, depth)
            child, parent = parent, self.module.parent(parent)
        return None

    def _callers_guard(self, function: Node, depth: int) -> str | None:
        name = identifier(field(function, "name"))
        callers = self._calls_by_name().get(name or "", [])
        guards = [self.around(c, depth + 1) for c in callers]
        if not guards or not all(guards):
            return None
        return f"{guards[0]}, through `{name}()`"

    def _guard(self, node: Node, child: Node) -> str | None:
        kind = node.type
        if kind in ("except_clause", "except_group_clause"):
            caught = self._caught(node)
            return f"`{_except(caught)}` (line {line(node)})" if caught is not None else None
        if kind == "try_statement" and (body := field(node, "body")) is not None and body.id == child.id:
            handlers = [c for c in named(node) if c.type in ("except_clause", "except_group_clause")]
            caught = next((c for c in map(self._caught, handlers) if c is not None), None)
            return f"`try:` (line {line(node)}) with `{_except(caught)}`" if caught is not None else None
        if kind in CONDITIONALS:
            condition = field(node, "condition") if kind != "conditional_expression" else _middle(node)
            if condition is not None and condition.id != child.id:
                key = condition.id
                if key not in self._found:
                    self._found[key] = self._test(condition)
                return self._found[key]
        return None

    def _calls_by_name(self) -> dict[str, list[Node]]:
        if self._callers is None:
            self._callers = {}
            for call in self.module.nodes["call"]:
                name = identifier(field(call, "function"))
                if name:
                    self._callers.setdefault(name, []).append(call)
        return self._callers

    def _caught(self, handler: Node) -> str | None:
        """The exceptions a handler catches, when one of them is what a removed API raises ("" for a
        bare ``except:``); None when it catches none of them."""
        value = next((c for c in named(handler) if c.type != "block"), None)
        if value is None:
            return "" if any(c.type == ":" for c in handler.children) else None  # a bare `except:`
        if value.type == "as_pattern":
            value = next(iter(named(value)), value)
        names = [self.module.text(n).rsplit(".", 1)[-1] for n in _exception_names(value)]
        return ", ".join(names) if CAUGHT.intersection(names) else None

    def _test(self, condition: Node) -> str | None:
        """``hasattr(...)`` or a version comparison in a condition, in words."""
        shown = self.module.text(condition)
        shown = shown if len(shown) <= MAX_TEXT else shown[: MAX_TEXT - 3] + "..."
        for node in descendants(condition):
            if node.type == "call" and identifier(field(node, "function")) == "hasattr":
                return f"`if {shown}` (line {line(condition)})"
        if VERSION.search(self.module.text(condition)) or any(self._versioned(n) for n in descendants(condition) if n.type == "identifier"):
            return f"`if {shown}` (line {line(condition)})"
        return None

    def _versioned(self, name: Node) -> bool:
        """A name the file assigns from a version (``JAX_VERSION = tuple(map(int, jax.__version__...))``)."""
        return any(v.id != name.id and VERSION.search(self.module.text(v)) for v in self.module.values(name))


def _except(caught: str) -> str:
    return f"except {caught}:" if caught else "except:"


def _middle(node: Node) -> Node | None:
    parts = named(node)
    return parts[1] if len(parts) == 3 else None


def _exception_names(value: Node) -> list[Node]:
    if value.type in ("tuple", "parenthesized_expression", "expression_list"):
        return [n for part in named(value) for n in _exception_names(part)]
    return [value] if value.type in ("identifier", "attribute") else []
