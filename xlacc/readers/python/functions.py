"""A module's own functions: their parameters and the names they read (a project's reference
``example_inputs(size, ...)`` that never reads ``size``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlacc.readers.python.tree import (
    Parsed,
    descendants,
    field,
    identifier,
    line,
    named,
)

if TYPE_CHECKING:
    from tree_sitter import Node

STORES = frozenset({"assignment", "augmented_assignment", "for_statement", "for_in_clause", "named_expression"})


@dataclass(frozen=True)
class PyFunction:
    name: str
    line: int
    params: tuple[str, ...]  # positional parameters, in order (not *args, **kwargs or keyword-only)
    reads: frozenset[str]  # names the function reads (its defaults and decorators included)


def module_functions(parsed: Parsed) -> list[PyFunction]:
    """The functions defined at the top of a module (decorated or not), in the order of the text."""
    if parsed.root is None:
        return []
    found = []
    for statement in named(parsed.root):
        definition = field(statement, "definition") if statement.type == "decorated_definition" else statement
        if definition is not None and definition.type == "function_definition" and not _is_async(definition):
            found.append(_function(statement, definition))
    return found


def _is_async(definition: Node) -> bool:
    return any(c.type == "async" for c in definition.children)


def _function(statement: Node, definition: Node) -> PyFunction:
    parameters = field(definition, "parameters")
    params = []
    for parameter in named(parameters) if parameters is not None else []:
        if parameter.type in ("keyword_separator", "list_splat_pattern", "dictionary_splat_pattern"):
            break  # what follows is keyword-only
        target = field(parameter, "name") if parameter.type in ("default_parameter", "typed_default_parameter") else parameter
        if target is not None and target.type == "typed_parameter":
            target = next(iter(named(target)), None)
        name = identifier(target)
        if name:
            params.append(name)
    reads = {identifier(n) or "" for n in descendants(statement) if n.type == "identifier" and _is_read(n, definition)}
    return PyFunction(identifier(field(definition, "name")) or "", line(definition), tuple(params), frozenset(reads))


def _is_read(name: Node, definition: Node) -> bool:
    parent = name.parent
    if parent is None or parent.id == definition.id:
        return False  # the function's own name
    if parent.type in ("default_parameter", "typed_default_parameter"):
        return field(parent, "name") != name  # a default value is read
    if parent.type == "typed_parameter":
        return named(parent)[0] != name  # an annotation is read
    if parent.type in ("parameters", "lambda_parameters"):
        return False
    if parent.type == "keyword_argument" and field(parent, "name") == name:
        return False
    if parent.type == "attribute" and field(parent, "attribute") == name:
        return False
    if parent.type in STORES and field(parent, "left" if parent.type != "named_expression" else "name") == name:
        return parent.type == "augmented_assignment"
    return True
