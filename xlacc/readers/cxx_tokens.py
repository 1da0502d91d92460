"""C and C++ text as tokens, without a parser: the code without comments and literals, and the
names it uses or declares. Regular expressions, because these passes run on every spec load and
``xlacc new`` where tree-sitter's start-up would cost more than the file takes to scan."""

from __future__ import annotations

import re

# C/C++ comments, string and character literals: their words are not identifiers.
CXX_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# An identifier not reached through a member or scope operator (those cannot be shadowed).
CXX_IDENTIFIER = re.compile(r"(?<![\w.>:])(?<!->)(?<!::)([A-Za-z_]\w*)")
# A bracket, or an identifier as CXX_IDENTIFIER finds one.
CXX_SCOPE_TOKEN = re.compile(r"(?P<open>[{(\[])|(?P<close>[})\]])|(?<![\w.>:])(?<!->)(?<!::)(?P<name>[A-Za-z_]\w*)")


def cxx_code(text: str) -> str:
    """C++ without comments, literals and #include lines, whose words are not identifiers (each
    line where it was)."""
    without_noise = CXX_NOISE.sub(lambda m: "\n" * m.group(0).count("\n") or " ", text)  # lines keep their numbers
    return re.sub(r"^[ \t]*#[ \t]*include[^\n]*", " ", without_noise, flags=re.MULTILINE)


def cxx_names_used(code: str) -> set[str]:
    """The unqualified names C++ code uses."""
    return {token["name"] for token in CXX_SCOPE_TOKEN.finditer(cxx_code(code)) if token["name"]}


def cxx_names_declared(code: str) -> set[str]:
    """The unqualified names C++ code uses outside function bodies and parameter lists: what it
    declares in its namespaces, and the types it names there."""
    found: set[str] = set()
    inside: list[bool] = []  # per open bracket: whether it is a namespace's, whose names count
    previous = ["", ""]
    for token in CXX_SCOPE_TOKEN.finditer(cxx_code(code)):
        if token["open"]:
            inside.append(token["open"] == "{" and "namespace" in previous)
        elif token["close"] and inside:
            inside.pop()
        elif token["name"] and all(inside):
            found.add(token["name"])
        previous = [previous[-1], token.group()]
    return found
