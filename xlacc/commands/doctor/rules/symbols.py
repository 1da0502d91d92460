"""An entry point's symbol: exported under the plain name XLA and ctypes look up, only under a
C++-mangled name, present but hidden, or missing.

The one home of symbol-missing, symbol-mangled and symbol-hidden: the library verifier (build,
run-smoke, doctor --so) hands it what it found in a library's symbol tables, doctor's source rules
what they read in the sources (entry_points) and the Python that looks names up (crossfile).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import elf

if TYPE_CHECKING:  # what doctor read in the sources; the library verifier reads none
    from xlacc.commands.doctor.program import EntryPoint
    from xlacc.readers.python import PyFacts


def in_library(library: Path, status: elf.SymbolStatus) -> Finding | None:
    """An entry point looked up in ``library`` (:func:`xlacc.readers.elf.find_symbol`): exported
    under its plain name, only C++-mangled, present but hidden, or missing."""
    name = status.name
    if status.status == "exported":
        return None
    if status.status == "mangled":
        signature = status.demangled or status.symbol.name
        parameters = signature[signature.find("(") :] if "(" in signature else "(...)"
        return make(
            "symbol-mangled",
            f"{library} exports `{name}` only as `{status.symbol.name}`" + (f", which demangles to `{status.demangled}`" if status.demangled else ""),
            title=f"entry point `{name}` exported only under a C++-mangled name",
            fix=f"Declare it `extern \"C\"` so it is exported as `{name}`: `extern \"C\" void {name}{parameters} {{ ... }}` "
            "(keep your return type; XLA_FFI_DEFINE_HANDLER_SYMBOL already is), then rebuild.",
            likelihood=0.9,
        )
    if status.status == "hidden":
        symbol = status.symbol
        shown = f" (as `{status.demangled}`)" if status.demangled else ""
        return make(
            "symbol-hidden",
            f"{library} defines `{name}`{shown} but not in its dynamic symbol table: "
            f"{symbol.bind.lower()} binding, {symbol.visibility.lower()} visibility",
            title=f"entry point `{name}` present but not exported",
            likelihood=0.9,
        )
    closest = f"; closest exported: {', '.join(status.closest)}" if status.closest else "; no similar exported name"
    return make("symbol-missing", f"{library} has no symbol `{name}`{closest}", title=f"entry point `{name}` not in the library", likelihood=0.9)


# -- in the sources -------------------------------------------------------------------------------


def in_source(entry: EntryPoint, lookup: str, hidden_build: str | None) -> Finding | None:
    """An entry point something looks up by name (``lookup`` says who, or is empty), read in its
    source: static or in an anonymous namespace, not ``extern "C"``, or hidden by the build."""
    severity = None
    if entry.internal:
        return make(
            "symbol-hidden",
            f"{entry.symbol} ({entry.where}) has an entry-point signature but is `static` or in an anonymous "
            f"namespace: it is not exported{lookup}",
            severity=severity,
            likelihood=0.6,
        )
    if not entry.exported:
        return make(
            "symbol-mangled",
            f"{entry.symbol} ({entry.where}), `{entry.signature.text}`, is not declared `extern \"C\"`: the library "
            f"exports it under a C++-mangled name, and a look-up of `{entry.symbol}` fails{lookup}",
            fix=f"Declare it `extern \"C\" void {entry.symbol}(...)` (or wrap it in `extern \"C\" {{ ... }}`).",
            severity=severity,
            likelihood=0.7,
        )
    if hidden_build and not entry.visible:
        return make(
            "symbol-hidden",
            f"{hidden_build} builds with -fvisibility=hidden, and {entry.symbol} ({entry.where}) is not marked "
            f"visibility(\"default\"){lookup}",
            severity=severity,
            likelihood=0.6,
        )
    return None


def missing_in_sources(facts: PyFacts, known: set[str]) -> list[Finding]:
    """A ctypes look-up of a name no source defines, next to one it misspells (a sibling folder not
    examined may define names that share nothing with the ones here)."""
    findings = []
    for symbol, line in facts.symbol_refs.items():
        if symbol in known or symbol.startswith("_"):
            continue
        closest = difflib.get_close_matches(symbol, sorted(known), n=3, cutoff=0.8)
        if closest:
            findings.append(make(
                "symbol-missing",
                f"{facts.name}:{line} looks up `{symbol}` in a ctypes library, but no function or handler of that name is "
                f"defined in the kernel sources examined; closest: {', '.join(closest)}",
                severity="warning",
                likelihood=0.5,
            ))
    return findings
