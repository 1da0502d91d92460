"""What an expression can be worth without running it: constants, the strings a name is assigned
(in every branch), dotted names through imports, and a regex for a string built at run time.

A computed name becomes a pattern: ``platform + "_kepler_f32"`` -> ``.*_kepler_f32``,
``f"op_{dtype}"`` -> ``op_.*`` (or ``op_(?:f32|f64)`` when ``dtype`` runs over a literal list),
``"op_{}".format(t)`` and ``"op_%s" % t`` alike. Whatever cannot be followed is ``.*``.
"""

from __future__ import annotations

import ast
import re
import string
from typing import TYPE_CHECKING, Any

from xlacc.readers.python.scopes import MAX_DEPTH, Module
from xlacc.readers.python.tree import (
    UNKNOWN,
    field,
    identifier,
    literal,
    named,
    string_prefix,
    strip,
)

if TYPE_CHECKING:
    from tree_sitter import Node

WILD = ".*"
API_VERSION_NAMES = {
    "API_VERSION_ORIGINAL": 1,
    "API_VERSION_STATUS_RETURNING": 2,
    "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
    "API_VERSION_TYPED_FFI": 4,
}
PERCENT_FIELD = re.compile(r"%(?:\((?P<key>\w+)\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlL]?(?P<code>[diouxXeEfFgGcrsa%])")


def is_formatted(node: Node) -> bool:
    """An f-string (or adjacent literals one of which is)."""
    parts = named(node) if node.type == "concatenated_string" else [node]
    return node.type in ("string", "concatenated_string") and any(p.type == "string" and "f" in string_prefix(p) for p in parts)


def is_template(node: Node) -> bool:
    return node.type == "string" and "t" in string_prefix(node)


class Values(Module):
    """A module's names and what they hold."""

    def constants(self, node: Node | None) -> list[Any] | None:
        """Every constant value the node can have; None when one of them is not a constant."""
        if node is None:
            return None
        found = []
        for value in self.values(node):
            constant = self._constant(value)
            if constant is UNKNOWN:
                return None
            if constant not in found:
                found.append(constant)
        return found

    def constant(self, node: Node | None) -> Any:
        values = self.constants(node)
        return values[0] if values and len(values) == 1 else None

    def _constant(self, value: Node) -> Any:
        kind = value.type
        if kind in ("string", "concatenated_string"):
            return literal(self.parsed, value)
        if kind in ("integer", "float"):
            return _number(value.text.decode())
        if kind in ("true", "false", "none"):
            return {"true": True, "false": False, "none": None}[kind]
        if kind == "ellipsis":
            return Ellipsis
        if kind == "unary_operator" and field(value, "operator").type == "-":
            operand = strip(field(value, "argument"))
            if operand is not None and operand.type in ("integer", "float"):
                number = _number(operand.text.decode())
                return -number if number is not UNKNOWN else UNKNOWN
        if kind == "attribute":
            attribute = identifier(field(value, "attribute"))
            if attribute in API_VERSION_NAMES:
                return API_VERSION_NAMES[attribute]
        return UNKNOWN

    def string(self, node: Node | None) -> str | None:
        value = self.constant(node)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return value if isinstance(value, str) else None

    def strings(self, node: Node | None) -> tuple[str, ...]:
        values = self.constants(node) or []
        return tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values if isinstance(v, (str, bytes)))

    # -- patterns ---------------------------------------------------------------------------------
    def pattern(self, node: Node | None, depth: int = 0) -> str | None:
        """A regex for the strings ``node`` can be: constants literally, anything else ``.*``."""
        if node is None or depth > MAX_DEPTH:
            return None
        values = self.constants(node)
        if values and all(isinstance(v, (str, bytes)) for v in values):
            return "|".join(re.escape(v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for v in values)
        several = self.values(node)
        if len(several) > 1:  # a name assigned in several branches: any of them
            parts = [self.pattern(v, depth + 1) for v in several]
            return "|".join(f"(?:{p})" for p in parts) if all(parts) else None
        value = several[0] if several else strip(node)
        return _solid(self._composed(value, depth))

    def _composed(self, value: Node, depth: int) -> list[str] | None:
        """The pieces of a string put together from parts (a piece is a regex, ``.*`` when unknown)."""
        kind = value.type
        if kind == "binary_operator":
            operator = field(value, "operator").type
            if operator == "+":
                return [self._piece(field(value, "left"), depth), self._piece(field(value, "right"), depth)]
            if operator == "%":
                template = self.string(field(value, "left"))
                return _percent_pieces(template, self._percent_arguments(field(value, "right"), depth)) if template is not None else None
        if kind in ("string", "concatenated_string") and is_formatted(value):
            return self._fstring_pieces(value, depth)
        if kind == "call":
            function = strip(field(value, "function"))
            method = identifier(field(function, "attribute")) if function.type == "attribute" else None
            if method in ("encode", "decode"):
                inner = self.pattern(field(function, "object"), depth + 1)
                return [inner] if inner else None
            if method == "format":
                template = self.string(field(function, "object"))
                return self._format_pieces(template, value, depth) if template is not None else None
        return None

    def _piece(self, node: Node | None, depth: int) -> str:
        """A part of a composed string: its pattern (ints as their digits), else ``.*``."""
        if node is None:
            return WILD
        values = self.constants(node)
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return "|".join(str(v) for v in values) if len(values) == 1 else "(?:" + "|".join(str(v) for v in values) + ")"
        inner = self.pattern(node, depth + 1)
        return f"(?:{inner})" if inner and "|" in inner else (inner or WILD)

    def _fstring_pieces(self, node: Node, depth: int) -> list[str]:
        pieces: list[str] = []
        for part in named(node) if node.type == "concatenated_string" else [node]:
            prefix = string_prefix(part)
            for child in named(part):
                if child.type == "string_content":
                    text = self.parsed.slice(child)
                    pieces.append(re.escape(_unescaped(text, "f" in prefix, "r" in prefix)))
                elif child.type == "interpolation":
                    plain = field(child, "type_conversion") is None and field(child, "format_specifier") is None
                    pieces.append(self._piece(field(child, "expression"), depth) if plain else WILD)
        return pieces

    def _format_pieces(self, template: str, call: Node, depth: int) -> list[str] | None:
        """``"op_{}_{name}".format(t, name=n)``: each field is what its argument can be."""
        arguments = self.arguments(call)
        pieces, automatic = [], 0
        try:
            fields = list(string.Formatter().parse(template))
        except ValueError:
            return None
        for text, name, spec, conversion in fields:
            pieces.append(re.escape(text))
            if name is None:
                continue
            argument: Node | None = None
            if name == "":
                argument, automatic = (arguments.positional[automatic] if automatic < len(arguments.positional) else None), automatic + 1
            elif name.isdigit():
                argument = arguments.positional[int(name)] if int(name) < len(arguments.positional) else None
            elif name.isidentifier():
                argument = arguments.keyword(name)
            plain = not spec and not conversion and not arguments.spread
            pieces.append(self._piece(argument, depth) if plain and argument is not None else WILD)
        return pieces

    def _percent_arguments(self, node: Node | None, depth: int) -> list[str] | None:
        """The pieces ``%`` substitutes in turn; None for a mapping or an unknown count."""
        node = strip(node)
        if node is None:
            return None
        if node.type == "tuple":
            return [self._piece(element, depth) for element in named(node)]
        if node.type in ("dictionary", "list_splat"):
            return None
        return [self._piece(node, depth)]

    # -- names ------------------------------------------------------------------------------------
    def dotted(self, node: Node | None, depth: int = 0) -> str | None:
        """``jnp.zeros`` -> ``jax.numpy.zeros``; a name bound to an attribute is followed."""
        node = strip(node)
        if node is None:
            return None
        if node.type == "attribute":
            base = self.dotted(field(node, "object"), depth)
            return f"{base}.{identifier(field(node, 'attribute'))}" if base else None
        if node.type == "identifier":
            name = identifier(node)
            if name in self.imports:
                return self.imports[name]
            value = self.single(node)
            if value.id != node.id and value.type in ("attribute", "identifier") and depth < MAX_DEPTH:
                return self.dotted(value, depth + 1)
            return name
        if node.type == "call" and depth < MAX_DEPTH:
            inner = self.dotted(field(node, "function"), depth + 1)
            return f"{inner}()" if inner else None
        return None

    def text(self, node: Node | None) -> str:
        return self.parsed.text_of(node)


def last_name(dotted: str | None) -> str:
    return (dotted or "").rsplit(".", 1)[-1]


def _solid(pieces: list[str] | None) -> str | None:
    """The pieces as one regex; None when nothing of it is known."""
    if not pieces or all(p == WILD for p in pieces):
        return None
    return "".join(f"(?:{p})" if "|" in p and not p.startswith("(?:") else p for p in pieces)


def _percent_pieces(template: str, values: list[str] | None) -> list[str]:
    pieces, position, used = [], 0, 0
    for match in PERCENT_FIELD.finditer(template):
        pieces.append(re.escape(template[position : match.start()]))
        position = match.end()
        if match.group("code") == "%":
            pieces.append("%")
            continue
        known = values is not None and match.group("key") is None and used < len(values) and match.group("code") in "sdir"
        pieces.append(values[used] if known else WILD)
        used += 1
    pieces.append(re.escape(template[position:]))
    return pieces


def _unescaped(text: str, formatted: bool, raw: bool) -> str:
    """A piece of an f-string's literal text as the string holds it (``{{`` is ``{``)."""
    if formatted:
        text = text.replace("{{", "{").replace("}}", "}")
    if raw or "\\" not in text:
        return text
    try:
        return ast.literal_eval('"""' + text.replace('"', '\\"') + '"""')
    except (ValueError, SyntaxError):
        return text


def _number(text: str) -> Any:
    try:
        if text[-1:] in "jJ":
            return complex(text)
        return int(text, 0) if not re.search(r"[.eE]", text) or text[:2].lower() == "0x" else float(text)
    except ValueError:
        return UNKNOWN
