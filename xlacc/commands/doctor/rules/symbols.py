"""An entry point's symbol: exported under the plain name XLA and ctypes look up, only under a
C++-mangled name, present but hidden, or missing.

The one home of symbol-missing, symbol-mangled and symbol-hidden: the library verifier (build,
run-smoke, doctor --so) hands it what it found in a library's symbol tables.
"""

from __future__ import annotations

from pathlib import Path

from xlacc.ground.catalogue import make
from xlacc.ground.report import Finding
from xlacc.readers import elf


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
