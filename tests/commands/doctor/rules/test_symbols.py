"""An entry point in a library's symbol tables: exported, only mangled, hidden or missing."""

from __future__ import annotations

from pathlib import Path

from xlacc.commands.doctor.rules import symbols
from xlacc.readers.elf import SymbolInfo, SymbolStatus

LIBRARY = Path("/tmp/libadd.so")


def test_an_exported_entry_point_is_no_finding():
    assert symbols.in_library(LIBRARY, SymbolStatus("Add", "exported", SymbolInfo("Add", "GLOBAL", "DEFAULT", "FUNC", True))) is None


def test_a_mangled_export_says_how_to_export_the_plain_name():
    status = SymbolStatus("Add", "mangled", SymbolInfo("_Z3AddPv", "GLOBAL", "DEFAULT", "FUNC", True), demangled="Add(void*)")
    found = symbols.in_library(LIBRARY, status)
    assert found.code == "symbol-mangled"
    assert found.evidence == "/tmp/libadd.so exports `Add` only as `_Z3AddPv`, which demangles to `Add(void*)`"
    assert 'extern "C" void Add(void*)' in found.fix


def test_a_hidden_symbol_names_its_binding_and_visibility():
    status = SymbolStatus("Add", "hidden", SymbolInfo("Add", "GLOBAL", "HIDDEN", "FUNC", True))
    found = symbols.in_library(LIBRARY, status)
    assert found.code == "symbol-hidden" and "global binding, hidden visibility" in found.evidence


def test_a_missing_symbol_names_the_closest_exports():
    found = symbols.in_library(LIBRARY, SymbolStatus("Add", "missing", None, closest=["AddF32"]))
    assert found.code == "symbol-missing" and found.evidence == "/tmp/libadd.so has no symbol `Add`; closest exported: AddF32"
    assert "no similar exported name" in symbols.in_library(LIBRARY, SymbolStatus("Add", "missing", None)).evidence
