"""A project's own C/C++ macros as text: their definitions, where a text invokes them, and their
expansions (parameters, ``#p``, ``a ## b`` and ``__VA_ARGS__`` replaced).

The preprocessor is not run (it needs every include path and define of the build); a macro is
expanded from the definitions the project's files hold, which is what a handler made by a project
macro, a status check that throws, or a switch over dtypes that wraps a handler's body needs. The
work is bounded: :data:`MAX_DEPTH` levels of macros within macros, :data:`MAX_EXPANSION_CHARS` of
text per invocation, :data:`MAX_ARGUMENT_BYTES` per argument list.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

MACRO_DEFINITION = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)\n]*\))?((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
LITERAL = re.compile(r'("(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\')')
# XLA's own macros (xla/ffi/api/api.h, xla/service/custom_call_target_registry.h).
HANDLER_MACROS = ("XLA_FFI_DEFINE_HANDLER_SYMBOL", "XLA_FFI_DEFINE_HANDLER")
REGISTRATION_MACROS = (
    "XLA_FFI_REGISTER_HANDLER",
    "XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
    "XLA_REGISTER_CUSTOM_CALL_TARGET",
    "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM",
    "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET",
)
XLA_MACROS = HANDLER_MACROS + REGISTRATION_MACROS
# nvcc's `__CUDA_ARCH_FEAT_SM90_ALL`: defined only when compiling for the arch-specific target (sm_90a).
ARCH_FEATURE_MACRO = re.compile(rb"__CUDA_ARCH_FEAT_SM(\d+)_ALL")
MAX_DEPTH = 3
MAX_MACRO_DEPTH = MAX_DEPTH
MAX_EXPANSIONS = 400  # project macros expanded in one file
MAX_ARGUMENT_BYTES = 50_000
MAX_UNCLOSED = 50  # invocations without a closing parenthesis looked at, then the text is left
MAX_EXPANSION_CHARS = 20_000


@dataclass(frozen=True)
class MacroDefinition:
    name: str
    params: tuple[str, ...] | None  # None for an object-like macro
    body: str
    line: int


@dataclass(frozen=True)
class MacroUse:
    """An invocation of one of XLA's macros, written out or produced by a project macro."""

    macro: str
    args: tuple[str, ...]
    line: int
    text: str
    via: str | None = None  # the project macro it was written through


@dataclass(frozen=True)
class Invocation:
    """A function-like macro invoked in a text: its name, arguments and byte span (``NAME(...)``)."""

    name: str
    args: tuple[str, ...]
    start: int
    end: int  # just past the closing parenthesis


def macro_definitions(text: str, line_offset: int = 0) -> dict[str, MacroDefinition]:
    """Every ``#define`` of a text, by name (read with a regular expression: a tree has no macro bodies)."""
    raw = text.encode("utf-8", errors="replace")
    found = {}
    for match in MACRO_DEFINITION.finditer(raw):
        params = None
        if match.group(2):
            params = tuple(p.strip() for p in match.group(2)[1:-1].decode("utf-8", "replace").split(",") if p.strip())
        body = re.sub(r"\\\r?\n", " ", match.group(3).decode("utf-8", "replace"))
        body = re.sub(r"/\*.*?\*/|//.*", " ", body).strip()
        name = match.group(1).decode("ascii", "replace")
        found[name] = MacroDefinition(name, params, body, line_offset + raw.count(b"\n", 0, match.start()) + 1)
    return found


def invocation_pattern(names) -> re.Pattern[bytes] | None:
    """``NAME(`` for any of ``names`` (longest first); None without names."""
    names = sorted(names, key=len, reverse=True)
    if not names:
        return None
    return re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\s*\(")


def invocations(skeleton: bytes, text: bytes, pattern: re.Pattern[bytes], start: int = 0, end: int | None = None) -> list[Invocation]:
    """The outermost invocations between ``start`` and ``end``: found in ``skeleton`` (comments and
    strings blanked, so none can match there) and read from ``text`` (arguments keep their strings).
    An invocation inside another's arguments is part of that one's expansion, not listed apart."""
    found: list[Invocation] = []
    position = start
    stop = len(skeleton) if end is None else end
    unclosed = 0
    while True:
        match = pattern.search(skeleton, position, stop)
        if match is None:
            return found
        close = closing(skeleton, match.end() - 1)
        if close is None or close >= stop:
            unclosed += 1
            if unclosed > MAX_UNCLOSED:  # each look for a closing parenthesis reads up to MAX_ARGUMENT_BYTES
                return found
            position = match.end()
            continue
        args = tuple(split_arguments(text[match.end() : close].decode("utf-8", "replace")))
        found.append(Invocation(match.group(1).decode(), args, match.start(), close + 1))
        position = close + 1


def closing(text: bytes, open_at: int) -> int | None:
    """Offset of the parenthesis closing the one at ``open_at``; None past a bound or unbalanced."""
    depth = 0
    end = min(len(text), open_at + MAX_ARGUMENT_BYTES)
    for index in range(open_at, end):
        char = text[index]
        if char == 40:  # (
            depth += 1
        elif char == 41:  # )
            depth -= 1
            if depth == 0:
                return index
    return None


def split_arguments(text: str) -> list[str]:
    """Split at commas outside (), [], {} and template <> brackets; each part on one line."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip() or parts:
        parts.append("".join(current))
    return [" ".join(p.split()) for p in parts]


def expand(macro: MacroDefinition, args: tuple[str, ...]) -> str:
    """A function-like macro's body with its parameters replaced (``#p`` and ``a ## b`` included)."""
    values = dict(zip(macro.params or (), args))
    if macro.params and macro.params[-1] == "...":
        values["__VA_ARGS__"] = ", ".join(args[len(macro.params) - 1 :])

    def stringize(match: re.Match) -> str:
        return '"' + values.get(match.group(1), match.group(1)).replace('"', '\\"') + '"'

    body = re.sub(r"(?<!#)#\s*([A-Za-z_]\w*)", lambda m: stringize(m) if m.group(1) in values else m.group(0), macro.body)
    # parameters are replaced outside string and character literals only, as the preprocessor does
    pieces = LITERAL.split(body)
    body = "".join(piece if index % 2 else IDENTIFIER.sub(lambda m: values.get(m.group(0), m.group(0)), piece)
                   for index, piece in enumerate(pieces))
    return re.sub(r"\s*##\s*", "", body)


def expand_fully(invocation: Invocation, macros: dict[str, MacroDefinition]) -> str | None:
    """An invocation expanded, and the project macros its expansion invokes expanded in turn
    (:data:`MAX_DEPTH` levels); None when it grows past :data:`MAX_EXPANSION_CHARS`."""
    text = expand(macros[invocation.name], invocation.args)
    pattern = invocation_pattern(macros)
    for _ in range(MAX_DEPTH):
        if len(text) > MAX_EXPANSION_CHARS:
            return None
        raw = text.encode("utf-8", errors="replace")
        inner = invocations(strings_blanked(raw), raw, pattern)
        if not inner:
            return text
        pieces, last = [], 0
        for found in inner:
            pieces += [raw[last : found.start].decode("utf-8", "replace"), expand(macros[found.name], found.args)]
            last = found.end
        text = "".join(pieces) + raw[last:].decode("utf-8", "replace")
    return text if len(text) <= MAX_EXPANSION_CHARS else None


def strings_blanked(raw: bytes) -> bytes:
    """String and character literals as spaces, so a macro's name inside one is not an invocation."""
    return re.sub(rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', lambda m: b" " * len(m.group(0)), raw)


def expandable_macros(macros: dict[str, MacroDefinition]) -> dict[str, MacroDefinition]:
    """Project macros worth expanding where they are invoked outside a function: those that reach
    one of XLA's macros (directly or through another project macro) and those that define code."""
    found = {m.name: m for m in macros.values() if m.params is not None and m.name not in XLA_MACROS and "{" in m.body}
    names = set(XLA_MACROS) | set(found)
    for _ in range(MAX_MACRO_DEPTH):
        added = False
        for macro in macros.values():
            if macro.params is not None and macro.name not in found and macro.name not in XLA_MACROS:
                if names & set(IDENTIFIER.findall(macro.body)):
                    found[macro.name] = macro
                    names.add(macro.name)
                    added = True
        if not added:
            break
    return found


def macro_uses(source, raw: bytes, skeleton: bytes, bodies: list[tuple[int, int]], line: int | None, via: str | None):
    """XLA macro invocations (with their arguments), and project macros expanded to text.

    Found in the skeleton (no comment, string or #define line can match) and cut from the text
    (arguments keep their strings). A project macro is expanded only outside function bodies."""
    project = expandable_macros(source.macros)
    names = list(XLA_MACROS) + sorted(project)
    pattern = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\s*\(")
    uses: list[MacroUse] = []
    expansions: list[tuple[str, str, int]] = []
    starts = [start for start, _ in bodies]
    newlines = [m.start() for m in re.finditer(rb"\n", raw)] if line is None else []
    unclosed = 0
    for match in pattern.finditer(skeleton):
        name = match.group(1).decode()
        close = closing(skeleton, match.end() - 1)
        if close is None:
            unclosed += 1
            if unclosed > MAX_UNCLOSED:  # each look for a closing parenthesis reads up to MAX_ARGUMENT_BYTES
                break
            continue
        args = tuple(split_arguments(raw[match.end() : close].decode("utf-8", "replace")))
        at = line if line is not None else source.line_offset + bisect.bisect_left(newlines, match.start()) + 1
        if name in project:
            index = bisect.bisect_right(starts, match.start()) - 1
            if index < 0 or not bodies[index][0] <= match.start() < bodies[index][1]:
                expansions.append((name, expand(project[name], args), at))
        else:
            uses.append(MacroUse(name, args, at, " ".join(raw[match.start() : close + 1].decode("utf-8", "replace").split())[:2000], via))
    return uses, expansions


def arch_specific_guards(text: bytes) -> set[int]:
    """The archs whose arch-specific target a source tests for (``#if __CUDA_ARCH_FEAT_SM90_ALL``:
    90), code only that target compiles."""
    return {int(m.group(1)) for m in ARCH_FEATURE_MACRO.finditer(text)}
