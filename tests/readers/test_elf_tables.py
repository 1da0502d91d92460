"""xlacc.readers.elf_tables against pyelftools on libraries built here and on the system's, and on damaged files."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection
from needs import GXX

from xlacc.readers.elf_tables import (
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_SYMTAB,
    ElfTables,
    StringTable,
    TableError,
)

SOURCE = r"""
extern "C" int exported_function(int x) { return x + 1; }
extern "C" int exported_value = 4;
__attribute__((visibility("hidden"))) int hidden_function(int x) { return x * 3; }
int mangled_function(float* x) { return x != nullptr; }
"""


def _run(*argv: str | Path) -> bool:
    return shutil.which(argv[0]) is not None and subprocess.run([str(a) for a in argv], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> dict[str, Path]:
    """A 64-bit library with a soname and runpath, the system's libstdc++, and a 32-bit x86
    library where this machine can make one (gcc -m32 and ld's elf_i386 emulation)."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("tables")
    (root / "lib.cc").write_text(SOURCE)
    found = {"built": root / "libbuilt.so"}
    assert _run(GXX, "-shared", "-fPIC", "-Wl,-soname,libbuilt.so.1", "-Wl,-rpath,$ORIGIN/a:/opt/b",
                root / "lib.cc", "-o", found["built"])
    libstdcxx = subprocess.run([GXX, "-print-file-name=libstdc++.so"], capture_output=True, text=True).stdout.strip()
    if Path(libstdcxx).is_file():
        found["libstdc++"] = Path(libstdcxx).resolve()
    if _run(GXX, "-m32", "-fPIC", "-c", root / "lib.cc", "-o", root / "lib32.o") and _run(
        "ld", "-m", "elf_i386", "-shared", "-soname", "lib32.so", root / "lib32.o", "-o", root / "lib32.so"
    ):
        found["32-bit"] = root / "lib32.so"
    return found


def _tables(path: Path) -> ElfTables:
    return ElfTables(path.read_bytes())


# The numbers this module looks for, as pyelftools names them.
SECTION_TYPES = {SHT_SYMTAB: "SHT_SYMTAB", SHT_DYNAMIC: "SHT_DYNAMIC", 8: "SHT_NOBITS", SHT_DYNSYM: "SHT_DYNSYM"}
SEGMENT_TYPES = {1: "PT_LOAD", 2: "PT_DYNAMIC"}
BINDS = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}


def _same_type(mine: int, theirs: str, names: dict[int, str]) -> bool:
    return names[mine] == theirs if mine in names else theirs not in names.values()


@pytest.mark.parametrize("which", ["built", "libstdc++", "32-bit"])
def test_tables_match_pyelftools(libraries, which):
    if which not in libraries:
        pytest.skip(f"no {which} library on this machine")
    path = libraries[which]
    tables = _tables(path)
    with path.open("rb") as stream:
        elf = ELFFile(stream)
        assert tables.elf_class == elf.elfclass // 32
        theirs = list(elf.iter_sections())
        assert [(s.name, s.offset, s.size, s.link) for s in tables.sections] == [
            (s.name, s["sh_offset"], s["sh_size"], s["sh_link"]) for s in theirs
        ]
        assert all(_same_type(m.type, t["sh_type"], SECTION_TYPES) for m, t in zip(tables.sections, theirs))
        segments = list(elf.iter_segments())
        assert [(s.offset, s.size) for s in tables.segments] == [(s["p_offset"], s["p_filesz"]) for s in segments]
        assert all(_same_type(m.type, t["p_type"], SEGMENT_TYPES) for m, t in zip(tables.segments, segments))

        dynamic = tables.section_of_type(SHT_DYNAMIC)
        strings = tables.strings(tables.linked(dynamic))
        needed = [strings.text(value) for tag, value in tables.dynamic_entries(dynamic) if tag == 1]
        their_dynamic = next(s for s in theirs if isinstance(s, DynamicSection))
        assert needed == [t.needed for t in their_dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]

        for kind, name in ((SHT_DYNSYM, ".dynsym"), (SHT_SYMTAB, ".symtab")):
            table = elf.get_section_by_name(name)
            if not isinstance(table, SymbolTableSection):
                assert tables.section_of_type(kind) is None
                continue
            mine = [(s.name, BINDS.get(s.info >> 4), s.section == 0) for s in tables.symbols(tables.section_of_type(kind))]
            expected = [
                (s.name, s["st_info"]["bind"] if s["st_info"]["bind"] in BINDS.values() else None, s["st_shndx"] == "SHN_UNDEF")
                for s in table.iter_symbols()
                if s.name
            ]
            assert mine == expected and mine, f"{name} of {path.name}"


def test_a_64_bit_library_reads_its_runpath_and_soname(libraries):
    tables = _tables(libraries["built"])
    dynamic = tables.section_of_type(SHT_DYNAMIC)
    strings = tables.strings(tables.linked(dynamic))
    names = {tag: strings.text(value) for tag, value in tables.dynamic_entries(dynamic) if tag in (14, 29)}
    assert names == {14: "libbuilt.so.1", 29: "$ORIGIN/a:/opt/b"}


# --- damaged files ---------------------------------------------------------------------------


def _header(data: bytes) -> dict[str, int]:
    fields = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
    names = ("type machine version entry phoff shoff flags ehsize phentsize phnum shentsize shnum shstrndx").split()
    return dict(zip(names, fields))


def _error(data: bytes) -> TableError:
    with pytest.raises(TableError) as caught:
        ElfTables(data)
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("keep", [10, 40, 0.5, 0.97])
def test_a_file_cut_short_is_truncated(libraries, keep):
    data = libraries["built"].read_bytes()
    error = _error(data[: keep if isinstance(keep, int) else int(len(data) * keep)])
    assert error.truncated and ("cut short" in str(error) or "unreadable" in str(error))


def test_an_unknown_class_is_not_read(libraries):
    data = bytearray(libraries["built"].read_bytes())
    data[4] = 7
    error = _error(bytes(data))
    assert not error.truncated and "class 7" in str(error)


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("shentsize", 8, "entries of 8 bytes"),
        ("shstrndx", 0x7000, "section names in section"),
        ("shoff", 1 << 62, "cut short"),
        ("phoff", 1 << 40, "cut short"),
    ],
)
def test_headers_that_do_not_fit_the_file_are_errors(libraries, field, value, said):
    data = bytearray(libraries["built"].read_bytes())
    header = _header(data)
    header[field] = value
    struct.pack_into("<HHIQQQIHHHHHH", data, 16, *header.values())
    assert said in str(_error(bytes(data)))


def test_strings_are_read_inside_their_table_only():
    table = StringTable(b"xxabc\0def\0yy", 2, 10, ".dynstr")
    assert (table.text(0), table.text(4), table.text(5), table.at(3)) == ("abc", "def", "ef", b"")
    with pytest.raises(TableError, match="a string of .dynstr starts at 9, past its 8 bytes"):
        table.at(9)
    unterminated = StringTable(b"abcdef", 0, 3, ".strtab")
    assert unterminated.text(1) == "bc" and not unterminated.holds(b"de")
    assert StringTable(b"", 0, 0, ".strtab").text(0) == ""


def test_a_symbol_table_linked_to_no_section_is_an_error(libraries):
    path = libraries["built"]
    tables = _tables(path)
    dynsym = tables.section_of_type(SHT_DYNSYM)
    data = bytearray(path.read_bytes())
    header = _header(data)
    link_offset = header["shoff"] + dynsym.index * header["shentsize"] + 40  # sh_link of an Elf64_Shdr
    struct.pack_into("<I", data, link_offset, 999)
    broken = ElfTables(bytes(data))
    with pytest.raises(TableError, match="links to section 999"):
        list(broken.symbols(broken.section_of_type(SHT_DYNSYM)))


def test_symbols_containing_a_name_are_those_of_the_whole_table_that_hold_it(libraries):
    tables = _tables(libraries["built"])
    symtab = tables.section_of_type(SHT_SYMTAB)
    every = list(tables.symbols(symtab))
    assert list(tables.symbols(symtab, b"function")) == [s for s in every if "function" in s.name]
    assert {s.name for s in tables.symbols(symtab, b"function")} >= {"exported_function", "_Z16mangled_functionPf"}
    assert list(tables.symbols(symtab, b"no_such_name")) == []
