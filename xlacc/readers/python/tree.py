"""Python text as a tree-sitter syntax tree, and small helpers over its nodes.

The tree comes from tree-sitter's Python grammar, not from the running interpreter's ``ast``: code
written for any Python 3 version (``type X = ...`` aliases, PEP 695 generics, ``match``, t-strings)
reads the same whatever Python runs xlacc, and a file the grammar cannot read gives the line of its
first error instead of an exception.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tree_sitter is imported when the first file is parsed
    from tree_sitter import Node

MAX_TEXT = 160
UNKNOWN = object()  # a value the reader cannot know without running the code
SEGMENT_BYTES = 8 * MAX_TEXT  # of a node's text read for MAX_TEXT characters on one line
# CPython's tokenizer refuses more nested brackets than this (MAXLEVEL, the same from 3.10 to 3.14).
MAX_BRACKETS = 200
# Deeper trees are refused as CPython's parser refuses them; no code written by hand comes near.
MAX_TREE_DEPTH = 3000
# Notes elide parameters as `def f(q, k, ...):`, which is not Python; without it they parse.
ELIDED_PARAMETERS = re.compile(r",[ \t]*\.\.\.[ \t]*\)")
SCOPES = frozenset({"function_definition", "class_definition", "lambda"})
FUNCTIONS = frozenset({"function_definition", "lambda"})
OPENERS = {"(": ")", "[": "]", "{": "}"}
# Tokens written without a space before or after them when a node is written out (see `unparse`).
NO_SPACE_BEFORE = frozenset({")", "]", "}", ",", ":", ".", ";"})
NO_SPACE_AFTER = frozenset({"(", "[", "{", ".", "@", "~"})


@functools.cache
def _language():
    import tree_sitter  # lazy: the grammar loads with the first Python file read, never at start-up
    import tree_sitter_python  # lazy: as above

    return tree_sitter.Language(tree_sitter_python.language())


@functools.cache
def _parser():
    import tree_sitter  # lazy: as above

    return tree_sitter.Parser(_language())


@dataclass
class Parsed:
    """A parsed text: ``root`` is None when it does not parse, and ``problem`` says why."""

    text: str
    raw: bytes
    root: Node | None
    problem: str | None = None

    def slice(self, node: Node) -> str:
        return self.raw[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def text_of(self, node: Node | None) -> str:
        """The node as code, without comments, on one line, shortened."""
        if node is None:
            return "None"
        end = min(node.end_byte, node.start_byte + SEGMENT_BYTES)
        segment = self.raw[node.start_byte : end]
        text = segment.decode("utf-8", "replace")
        if b"#" in segment and any(n.type == "comment" for n in descendants(node, end)):
            text = unparse(self, node)
        text = " ".join(text.split())
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def parse(source: str) -> Parsed:
    """The tree of ``source``, or the line of the first thing the grammar cannot read. Never raises."""
    raw = source.encode("utf-8", errors="replace")
    tree = _parser().parse(raw)
    if tree.root_node.has_error and not _interpreter_accepts(source):
        repaired = ELIDED_PARAMETERS.sub(")", source)
        if repaired != source:
            again = parse(repaired)
            if again.root is not None:
                return again
        return Parsed(source, raw, None, f"line {line(first_error(tree.root_node))}: invalid syntax")
    parsed = Parsed(source, raw, tree.root_node)
    too_deep = _too_deep(tree.root_node)
    if too_deep:
        parsed.root, parsed.problem = None, _nesting_problem(source, too_deep)
    return parsed


def _interpreter_accepts(source: str) -> bool:
    """A second opinion where the grammar finds an error: syntax newer than the grammar (``x[*a]``
    before tree-sitter-python knew it) is valid if the running Python compiles it, and its file is
    read from the tree as the grammar recovered it. Nothing is taken from ``ast`` but this yes or no."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def first_error(root: Node) -> Node:
    node = root
    while True:
        for child in node.children:
            if child.is_error or child.is_missing:
                return child
            if child.has_error:
                node = child
                break
        else:
            return node


def _too_deep(root: Node) -> Node | None:
    """The first node nested deeper than :data:`MAX_TREE_DEPTH`, found without recursion."""
    cursor = root.walk()
    depth = 0
    while True:
        if depth > MAX_TREE_DEPTH:
            return cursor.node
        if cursor.goto_first_child():
            depth += 1
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return None
            depth -= 1


def _nesting_problem(source: str, node: Node) -> str:
    """CPython's words for the nesting it refuses: too many brackets, or too deep for its parser."""
    depth = 0
    for index, char in enumerate(source):
        if char in OPENERS:
            depth += 1
            if depth > MAX_BRACKETS:
                return f"line {source.count(chr(10), 0, index) + 1}: too many nested parentheses"
        elif char in ")]}":
            depth -= 1
    return "nested too deeply for Python's parser"


# -- nodes ----------------------------------------------------------------------------------------


def line(node: Node) -> int:
    return node.start_point[0] + 1


def field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def named(node: Node) -> list[Node]:
    """The named children, comments left out."""
    return [c for c in node.named_children if c.type != "comment"]


def strip(node: Node | None) -> Node | None:
    """``(x)`` -> ``x``: brackets that only group (``ast`` keeps no trace of them either)."""
    while node is not None and node.type == "parenthesized_expression":
        inner = named(node)
        if len(inner) != 1:
            break
        node = inner[0]
    return node


def descendants(node: Node, before: int | None = None) -> Iterator[Node]:
    """The node and every node under it, in the order of the text (those starting at ``before`` or
    later left out)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if before is not None and current.start_byte >= before:
            continue
        yield current
        stack.extend(reversed(current.children))


def identifier(node: Node | None) -> str | None:
    node = strip(node)
    return node.text.decode("utf-8", "replace") if node is not None and node.type == "identifier" else None


def name_of(node: Node) -> str:
    """A function's, class's or keyword's name, or the node's own text."""
    name = field(node, "name")
    target = name if name is not None else node
    return target.text.decode("utf-8", "replace")


# -- a call's arguments -----------------------------------------------------------------------------


class Arguments:
    """A call's positional arguments and keywords (``ast.Call``'s ``args`` and ``keywords``)."""

    def __init__(self, call: Node):
        self.positional: list[Node] = []
        self.keywords: list[tuple[str | None, Node]] = []  # None: `**kwargs`
        arguments = field(call, "arguments")
        if arguments is None:
            return
        if arguments.type == "generator_expression":
            self.positional.append(arguments)
            return
        for child in named(arguments):
            if child.type == "keyword_argument":
                self.keywords.append((name_of(child), field(child, "value")))
            elif child.type == "dictionary_splat":
                self.keywords.append((None, child))
            else:
                self.positional.append(child)

    def argument(self, index: int, keyword: str) -> Node | None:
        before = self.positional[: index + 1]
        if index < len(self.positional) and not any(a.type == "list_splat" for a in before):
            return self.positional[index]
        return self.keyword(keyword)

    def keyword(self, name: str) -> Node | None:
        return next((value for key, value in self.keywords if key == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.keywords if key)

    @property
    def values(self) -> list[Node]:
        return self.positional + [value for _, value in self.keywords]

    @property
    def spread(self) -> bool:
        """Does the call pass ``*args`` or ``**kwargs``? (Then an argument it does not spell may be in them.)"""
        return any(key is None for key, _ in self.keywords) or any(a.type == "list_splat" for a in self.positional)


# -- writing a node out -----------------------------------------------------------------------------


# -- string literals ----------------------------------------------------------------------------------


def literal(parsed: Parsed, node: Node) -> Any:
    """The value of a string literal (or adjacent ones), UNKNOWN for an f-string or t-string."""
    parts = named(node) if node.type == "concatenated_string" else [node]
    values = []
    for part in parts:
        if part.type != "string" or string_prefix(part) & {"f", "t"}:
            return UNKNOWN
        try:
            # Only the literal's own text is evaluated: its escapes mean the same in every Python 3.
            values.append(ast.literal_eval(parsed.slice(part)))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return UNKNOWN
    if not values or len({type(v) for v in values}) != 1:
        return UNKNOWN
    return values[0][:0].join(values)


def string_prefix(string_node: Node) -> set[str]:
    """A string literal's prefix letters, lower-cased: {"r", "f"} for ``rf"..."``."""
    start = string_node.children[0] if string_node.children else None
    text = start.text.decode("utf-8", "replace") if start is not None else ""
    return set(text.rstrip("'\"").lower())


def unparse(parsed: Parsed, node: Node) -> str:
    """The node written out token by token without its comments, spaced as ``ast.unparse`` spaces
    code (a constant string in its ``repr``, no space inside brackets, a trailing comma dropped)."""
    tokens: list[tuple[str, Node]] = []
    stack, written = [node], 0
    while stack and written <= SEGMENT_BYTES:  # enough for MAX_TEXT characters; the rest is cut anyway
        current = stack.pop()
        if current.type == "comment":
            continue
        if current.type in ("string", "concatenated_string") or not current.children:
            value = literal(parsed, current) if current.type in ("string", "concatenated_string") else None
            text = repr(value) if isinstance(value, (str, bytes)) else parsed.slice(current)
            tokens.append((" ".join(text.split()), current))
            written += len(tokens[-1][0]) + 1
            continue
        stack.extend(reversed(current.children))
    out: list[str] = []
    for index, (token, leaf) in enumerate(tokens):
        following = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        if token == "," and following in (")", "]", "}") and not _one_tuple(leaf):
            continue
        if out and not _joined(tokens[index - 1], token, leaf):
            out.append(" ")
        out.append(token)
    return "".join(out)


def _one_tuple(comma: Node) -> bool:
    parent = comma.parent
    return parent is not None and parent.type == "tuple" and len(named(parent)) == 1


def _joined(before: tuple[str, Node], token: str, leaf: Node) -> bool:
    """Is ``token`` written right after the token ``before``, with no space?"""
    previous, previous_leaf = before
    parent = leaf.parent.type if leaf.parent is not None else ""
    previous_parent = previous_leaf.parent.type if previous_leaf.parent is not None else ""
    if token in NO_SPACE_BEFORE or previous in NO_SPACE_AFTER:
        return True
    if token in ("(", "[") and parent in ("argument_list", "subscript", "generator_expression", "call"):
        return True
    if token == "=" or previous == "=":
        owner = parent if token == "=" else previous_parent
        return owner in ("keyword_argument", "default_parameter", "typed_default_parameter")
    if previous in ("-", "+", "~") and previous_parent == "unary_operator":
        return True
    return previous in ("*", "**") and previous_parent in ("list_splat", "dictionary_splat", "list_splat_pattern", "dictionary_splat_pattern")
