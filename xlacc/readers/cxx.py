"""C, C++ and CUDA source as facts: functions and their parameters, kernels and their launches,
structs, macros, and XLA's macros that define, register and wrap entry points.

    source = parse("kernel.cu", text)
    for function in source.kernels():                 # the __global__ functions
        function.name, function.template_params, [(p.name, p.type, p.pointer_depth) for p in function.params]
    for function in source.host_functions():          # everything else with a body
        function.extern_c, function.visibility, function.body_lines, function.launches
    for struct in source.structs:                     # a kernel's parameter struct, a backend_config layout
        struct.name, [(f.name, f.type) for f in struct.fields], struct.size()

The syntax tree comes from tree-sitter with the tree-sitter-cuda grammar: it reads ``<<<...>>>``
launches, ``extern "C"``, attributes, templates and CUDA qualifiers, needs no header, compiler or
CUDA toolkit, and keeps going past code it cannot parse (about 1 ms a file). libclang was not used:
it needs the CUDA headers and a matching toolkit to read a .cu file at all, and is a large native
dependency. The text is read directly only where a tree cannot say it: ``#define`` bodies (a
project's own macro around ``XLA_FFI_DEFINE_HANDLER_SYMBOL`` is expanded, then parsed like the
file; one invoked inside a function, such as a status check that throws or a switch over dtypes
around the body, is expanded and its throws, calls and launches are the function's: see
:mod:`xlacc.readers.cxx_macros`) and object-like macros that stand for an attribute (``#define EXPORT
__attribute__((visibility("default")))``), which are blanked before parsing so that the tree sees
``void f(...)`` rather than an unknown type ``EXPORT``.

Lines are 1-based and count from the start of the text plus ``line_offset`` (a block of a document).
Nothing here raises on bad input: deep nesting, NUL bytes or broken syntax give fewer facts.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from xlacc.readers.cxx_facts import (  # the facts a source holds; re-exported here for the readers' users
    ATTRIBUTE_BODY,
    CONTAINERS,  # noqa: F401
    EXPANSION_BUDGET_FACTOR,
    EXPORT_MACRO,
    MIN_EXPANSION_BUDGET,
    QUERY,
    XLA_MACRO_NAME,
    CallSite,
    Capsule,
    CxxSource,
    Function,
    Launch,
    Param,  # noqa: F401
    Struct,  # noqa: F401
    Throw,
)
from xlacc.readers.cxx_macros import (  # the macro facts a CxxSource holds are read there; re-exported here
    HANDLER_MACROS,  # noqa: F401
    IDENTIFIER,
    MAX_EXPANSION_CHARS,
    MAX_EXPANSIONS,
    MAX_MACRO_DEPTH,
    REGISTRATION_MACROS,  # noqa: F401
    XLA_MACROS,
    MacroDefinition,
    MacroUse,  # noqa: F401
    closing,
    expand_fully,
    invocation_pattern,
    invocations,
    macro_definitions,
    macro_uses,
    split_arguments,
    strings_blanked,
)
from xlacc.readers.cxx_tree import TreeReader, one_line


@functools.cache
def _language():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++
    import tree_sitter_cuda  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Language(tree_sitter_cuda.language())


@functools.cache
def _parser():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Parser(_language())


@functools.cache
def _query():
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    return tree_sitter.Query(_language(), QUERY)


def parse(name: str, text: str, line_offset: int = 0, macros: dict[str, MacroDefinition] | None = None) -> CxxSource:
    """The facts of one C, C++ or CUDA text (a file, or a block of a document).

    ``macros``: definitions from other files (a project's headers), used where this text has none.
    """
    raw = text.encode("utf-8", errors="replace")
    source = CxxSource(name=name, text=text, line_offset=line_offset)
    source.macros = {**(macros or {}), **macro_definitions(text, line_offset)}
    _read(source, raw, line_offset, depth=0, via=None)
    return source


def _read(source: CxxSource, raw: bytes, line_offset: int, depth: int, via: str | None, line: int | None = None) -> None:
    """Parse ``raw`` into ``source``; ``line`` pins every fact to one line (a macro's expansion)."""
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    prepared = _blank_attribute_macros(raw, source.macros)
    tree = _parser().parse(prepared)
    captures = tree_sitter.QueryCursor(_query()).captures(tree.root_node)
    code = _blanked(raw, captures.get("comment", ()))
    reader = TreeReader(source, prepared, code, line_offset, line, via)
    reader.read(tree.root_node)
    reader.bodies(captures)
    source.functions.extend(reader.functions)
    skeleton = reader.skeleton()
    _body_macros(source, reader, code, skeleton)
    bodies = sorted(f.body_range for f in reader.functions)
    uses, expansions = macro_uses(source, code, skeleton, bodies, line, via)
    source.xla_macros.extend(uses)
    source.capsules.extend(dataclasses.replace(c, source=source.name) for c in _capsules(code, skeleton, line_offset, line))
    if depth < MAX_MACRO_DEPTH:
        for macro, text, at in expansions[:MAX_EXPANSIONS]:
            _read(source, text.encode("utf-8", errors="replace"), 0, depth + 1, via or macro, line=at)


def _body_macros(source: CxxSource, reader: TreeReader, code: bytes, skeleton: bytes) -> None:
    """Project macros invoked inside function bodies, expanded: the calls, launches and throws of
    their expansions (a status check that throws, a switch over dtypes around the body) belong to
    the function at the invocation's line. Each distinct expansion is parsed once per file, and a
    file expands at most :data:`EXPANSION_BUDGET_FACTOR` times its own size (time stays linear)."""
    macros = {n: m for n, m in source.macros.items() if m.params is not None and n not in XLA_MACROS and len(m.body) <= MAX_EXPANSION_CHARS}
    pattern = invocation_pattern(macros)
    if pattern is None:
        return
    budget = max(MIN_EXPANSION_BUDGET, EXPANSION_BUDGET_FACTOR * len(code))
    for function in reader.functions:
        added = _Added(function)
        for invocation in invocations(skeleton, code, pattern, *function.body_range)[:MAX_EXPANSIONS]:
            text = expand_fully(invocation, macros)
            source.expanded_chars += len(text or "")
            if source.expanded_chars > budget:
                break
            if text is not None and text not in source.expanded:
                source.expanded[text] = _expansion_facts(text)
            facts = source.expanded.get(text) if text is not None else None
            if facts is not None:
                added.add(facts, invocation, reader)
            if text is not None and XLA_MACRO_NAME.search(text):  # a handler defined by a macro inside a function
                raw = text.encode("utf-8", errors="replace")
                uses, _ = macro_uses(source, raw, strings_blanked(raw), [], reader.line_of_offset(invocation.start), invocation.name)
                source.xla_macros.extend(uses)
        added.finish()
        if source.expanded_chars > budget:
            return


def _expansion_facts(text: str) -> Function | None:
    """The calls, launches and throws of a macro's expansion, read as the body of a function. The
    `;` after the invocation is not part of it: one is added, or an expression macro
    (``#define CHECK(e) ::ns::check((e), __FILE__, __LINE__)``) reads as no statement at all."""
    import tree_sitter  # lazy: the grammar loads in 10 ms; a no-op build parses no C++

    raw = b"void xlacc_expansion() {\n" + text.encode("utf-8", errors="replace") + b"\n;\n}\n"
    tree = _parser().parse(raw)
    captures = tree_sitter.QueryCursor(_query()).captures(tree.root_node)
    reader = TreeReader(CxxSource(name="", text=""), raw, _blanked(raw, captures.get("comment", ())), 0, None, None)
    reader.read(tree.root_node)
    reader.bodies(captures)
    return next((f for f in reader.functions if f.name == "xlacc_expansion"), None)


class _Added:
    """What the expansions in one function add to it, pinned to each invocation's line and place
    (what the tree already saw in an invocation's arguments is not added twice)."""

    def __init__(self, function: Function):
        self.function = function
        self.calls: list[CallSite] = []
        self.launches: list[Launch] = []
        self.throws: list[Throw] = []
        self.seen_calls = {(c.name, c.line) for c in function.calls}
        self.seen_launches = {(l.kernel, l.line) for l in function.launches}

    def add(self, facts: Function, invocation, reader: TreeReader) -> None:
        line = reader.line_of_offset(invocation.start)
        guarded = reader.guarded_at(invocation.start)
        offset0 = facts.body_range[0]

        def place(offset: int) -> int:
            return invocation.start + min(max(offset - offset0, 0), invocation.end - invocation.start - 1)

        for call in facts.calls:
            if (call.name, line) not in self.seen_calls:
                self.seen_calls.add((call.name, line))
                self.calls.append(dataclasses.replace(call, line=line, start=place(call.start), in_try=call.in_try or guarded))
        for launch in facts.launches:
            if (launch.kernel, line) not in self.seen_launches:
                self.seen_launches.add((launch.kernel, line))
                self.launches.append(dataclasses.replace(launch, line=line, start=place(launch.start), end=place(launch.end)))
        if not guarded:
            self.throws += [Throw(line, t.text, via=invocation.name) for t in facts.throws]

    def finish(self) -> None:
        self.function.calls += tuple(self.calls)
        self.function.launches += tuple(self.launches)
        self.function.throws += tuple(self.throws)


def _attribute_macros(macros: dict[str, MacroDefinition]) -> set[str]:
    return {m.name for m in macros.values() if m.params is None and ATTRIBUTE_BODY.match(m.body)}


def _blank_attribute_macros(raw: bytes, macros: dict[str, MacroDefinition]) -> bytes:
    """Object-like macros that stand for an attribute become spaces (offsets and lines unchanged)."""
    names = sorted(_attribute_macros(macros), key=len, reverse=True)
    patterns = [EXPORT_MACRO] + ([re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")] if names else [])
    for pattern in patterns:
        raw = pattern.sub(lambda m: b" " * len(m.group(0)), raw)
    return raw


def _blanked(raw: bytes, nodes) -> bytes:
    """``raw`` with the nodes' bytes turned to spaces (newlines kept: lines do not move)."""
    out = bytearray(raw)
    for node in nodes:
        out[node.start_byte : node.end_byte] = re.sub(rb"[^\n]", b" ", raw[node.start_byte : node.end_byte])
    return bytes(out)


def _capsules(raw: bytes, skeleton: bytes, line_offset: int, line: int | None) -> list[Capsule]:
    """``dict["name"] = EncapsulateFunction(fn)``, ``py::capsule(reinterpret_cast<void*>(fn), ...)``."""
    found = []
    for match in re.finditer(rb"\b(\w*(?:capsule|Capsule_New|Encapsulate)\w*)\s*(?:<[^;()<>]*>)?\s*\(", skeleton, re.I):
        close = closing(skeleton, match.end() - 1)
        if close is None:
            continue
        inner = raw[match.end() : close].decode("utf-8", "replace")
        first = split_arguments(inner)[0] if inner.strip() else ""
        while re.search(r"<[^<>]*>", first):  # `cpu_kepler<float>`, `reinterpret_cast<void*>(fn)`
            first = re.sub(r"<[^<>]*>", "", first)
        names = [n for n in IDENTIFIER.findall(first) if n not in CAST_WORDS]
        if not names:
            continue
        before = raw[max(0, match.start() - 200) : match.start()].decode("utf-8", "replace")
        key = re.search(r"\[\s*\"([^\"]+)\"\s*\]\s*=\s*(?:[\w:]+::)?$", before)
        if key is None:  # dict["name"] = py::dict(py::arg("execute") = Encapsulate(fn), ...): the stages of one target
            key = re.search(r"\[\s*\"([^\"]+)\"\s*\]\s*=\s*(?:[\w:]+::)?dict\s*\((?:[^;\[\]]*)$", before)
        at = line if line is not None else line_offset + raw.count(b"\n", 0, match.start()) + 1
        found.append(Capsule(names[-1], key.group(1) if key else None, at, one_line(raw[match.start() : close + 1])[:300]))
    return found


CAST_WORDS = frozenset(
    "reinterpret_cast static_cast const_cast bit_cast void const char uint8_t uintptr_t intptr_t std absl "
    "xla ffi nb py pybind11 nanobind reinterpret_borrow".split()
)
