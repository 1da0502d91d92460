"""What XLA calls: the deprecated legacy signature, exceptions leaving an entry point, its symbol's
exposure, and how it reads its backend_config. A finding shared by several entry points is told once,
with every place."""

from __future__ import annotations

import re

from xlacc.commands.doctor.program import EntryPoint, Program
from xlacc.commands.doctor.rules.reach import reachable
from xlacc.commands.doctor.rules import symbols
from xlacc.commands.doctor.rules.registration import INSIDE_XLA, and_other_entries
from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import cxx


def exception_escapes(program: Program) -> dict[str, list[Finding]]:
    """Entry points a C++ exception can leave through XLA's C frames (std::terminate): one finding
    per thing thrown (a helper's throw, a project macro's), naming every entry point that reaches it."""
    throwing: dict[tuple[str | None, str], list[tuple[EntryPoint, cxx.Function, cxx.Throw]]] = {}
    for entry in program.entries:
        for function in reachable(entry, program, skip_guarded=True):
            if function.throws:
                throw = function.throws[0]
                throwing.setdefault((throw.via, throw.text), []).append((entry, function, throw))
                break
    found: dict[str, list[Finding]] = {}
    for reaching in throwing.values():
        entry, function, throw = reaching[0]
        site = function.at(throw.line)
        shared = all(f.at(t.line) == site for _, f, t in reaching)
        runs = "they run" if shared and len(reaching) > 1 else "it runs"
        via = "" if function.short_name == entry.symbol else f" in {function.short_name}, which {runs},"
        also = [f"{e.symbol} ({e.where}{'' if f.at(t.line) == site else f', in {f.short_name} at {f.at(t.line)}'})"
                for e, f, t in reaching[1:]]
        found.setdefault(entry.source, []).append(make(
            "exception-escapes",
            f"{entry.symbol} ({entry.where}){and_other_entries(len(reaching) - 1)} can throw:{via} "
            f"{_throw_shown(throw, site)}" + (f"\nalso: {', '.join(also)}" if also else ""),
            likelihood=0.6,
        ))
    return found


# Calls that end the process, unscoped or in std.
PROCESS_ENDS = frozenset({"abort", "exit", "_Exit", "quick_exit", "terminate"})


def process_ends(program: Program) -> dict[str, list[Finding]]:
    """Entry points that can call abort(), exit() or std::terminate(): one finding per place,
    naming every entry point that reaches it."""
    ending: dict[str, list[tuple[EntryPoint, cxx.Function, cxx.CallSite]]] = {}
    for entry in program.entries:
        for function in reachable(entry, program):
            call = next((c for c in function.calls if _ends_process(c)), None)
            if call is not None:
                ending.setdefault(function.at(call.line), []).append((entry, function, call))
    found: dict[str, list[Finding]] = {}
    for site, reaching in ending.items():
        entry, function, call = reaching[0]
        via = "" if function.short_name == entry.symbol else f" in {function.short_name}, which it runs,"
        shown = " ".join(call.text.split())[:100]
        found.setdefault(entry.source, []).append(make(
            "handler-exits",
            f"{entry.symbol} ({entry.where}){and_other_entries(len(reaching) - 1)} can end the process:{via} `{shown}` "
            f"at {site}, where it could return an error that XLA and Python report.",
            likelihood=0.5,
        ))
    return found


def _ends_process(call: cxx.CallSite) -> bool:
    return call.name in PROCESS_ENDS and call.qualified.lstrip(":") in (call.name, f"std::{call.name}")


def _throw_shown(throw: cxx.Throw, where: str, limit: int = 120) -> str:
    """The throw and where it is: a project macro's, with what it expands to."""
    text = throw.text if len(throw.text) <= limit else throw.text[: limit - 3].rstrip() + "..."
    if throw.via:
        return f"`{throw.via}(...)` ({where}) expands to `{text}`, which is not inside a try block"
    return f"`{text}` ({where}) is not inside a try block"


def symbol_exposure(entry: EntryPoint, program: Program, looked_up: set[str], hidden_build: str | None) -> Finding | None:
    """Is an entry point reachable by its name? Only a name something looks up must be exported: a
    capsule made in C++ or a static registration needs no symbol, and a function other code calls
    is a helper. It counts as looked up when Python looks it up, or when nothing else examined
    could reach it (no capsule, no bindings, no Python)."""
    if entry.by_macro == "XLA_FFI_DEFINE_HANDLER_SYMBOL" or entry.captured or entry.registered:
        return None
    if entry.origin is not None and INSIDE_XLA.search(entry.origin.text):
        return None  # built into jaxlib, torch_xla or XLA: registered there, never looked up by name
    if entry.function is None or entry.function.template_params:
        return None
    if any(c.name == entry.symbol for f in program.functions.values() if f is not entry.function for c in f.calls):
        return None
    if entry.symbol not in looked_up and (program.has_capsules or program.facts):
        return None
    lookup = " and Python looks it up by that name" if entry.symbol in looked_up else ""
    return symbols.in_source(entry, lookup, hidden_build)


# -- backend_config -------------------------------------------------------------------------------


def opaque_read(entry: EntryPoint, program: Program) -> tuple[str | None, bool, int] | None:
    """How a legacy entry point reads its backend_config as a struct: (struct name if known, whether
    the length is checked, line). None when it does not read one."""
    if entry.function is None or "opaque" not in entry.signature.params:
        return None
    kinds = entry.signature.params
    opaque = entry.function.params[kinds.index("opaque")].name
    length = entry.function.params[kinds.index("size")].name
    return _opaque_in(entry.function, opaque, length, program, depth=0)


def _opaque_in(function: cxx.Function, opaque: str, length: str, program: Program, depth: int):
    if not opaque:
        return None
    body = function.body
    name = re.escape(opaque)
    checked = bool(length) and re.search(rf"\b{re.escape(length)}\b", body) is not None
    cast = re.search(
        rf"(?:reinterpret_cast|static_cast|bit_cast)\s*<\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?\*\s*>\s*\(\s*{name}\s*\)"
        rf"|\(\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?\*\s*\)\s*{name}\b",
        body,
    )
    if cast and (cast.group(1) or cast.group(2)) not in ("char", "void", "uint8_t", "std::uint8_t", "unsigned"):
        return cast.group(1) or cast.group(2), checked, function.at(function.line_at(cast.start()))
    copy = re.search(rf"\bmemcpy\s*\(\s*&?\s*(\w+)\s*,\s*{name}\s*,", body)
    if copy:
        declared = re.search(rf"\b([\w:]+)\s+{re.escape(copy.group(1))}\s*[;={{(]", body)
        return (declared.group(1) if declared else None), checked, function.at(function.line_at(copy.start()))
    for call in function.calls:
        if opaque not in call.args:
            continue
        template = re.search(r"<\s*([\w:]+)\s*>\s*\(", call.text)
        callee = program.functions.get(call.name)
        passes_length = bool(length) and length in call.args
        if callee is not None and depth < 2:
            index = call.args.index(opaque)
            inner_length = callee.params[call.args.index(length)].name if passes_length and call.args.index(length) < len(callee.params) else ""
            if index < len(callee.params):
                found = _opaque_in(callee, callee.params[index].name, inner_length, program, depth + 1)
                if found is not None:
                    struct, inner_checked, line = found
                    return struct or (template.group(1) if template else None), inner_checked or checked, line
        elif template and ("Unpack" in call.name or "Descriptor" in call.name or "opaque" in call.name.lower()):
            return template.group(1), checked or passes_length, function.at(call.line)
    return None


def opaque_unchecked(entry: EntryPoint, program: Program) -> Finding | None:
    read = opaque_read(entry, program)
    if read is None or read[1]:
        return None
    struct, _, line = read
    what = f"as `{struct}`" if struct else "as a struct"
    return make(
        "opaque-unchecked",
        f"{entry.symbol} ({entry.where}) reads its backend_config {what} at {line} and never compares "
        "`opaque_len` with its size",
        likelihood=0.6,
    )
