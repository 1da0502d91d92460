"""Read what a shared library exports, hides and needs.

``read_shared_object`` reads the ELF header, ``.dynamic`` and ``.dynsym`` (xlacc.readers.elf_tables;
about a millisecond); ``.symtab`` is read only when a symbol is not exported
(:meth:`SharedObject.local_definitions`).
"""

from __future__ import annotations

import difflib
import functools
import mmap
import os
import platform
import re
import shutil
import struct
import subprocess
import sysconfig
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from xlacc.ground.errors import XlaccError
from xlacc.ground.toolchain import probe
from xlacc.readers.elf_tables import (
    DF_1_PIE,
    DT_FLAGS_1,
    ELF_MAGIC,
    PT_DYNAMIC,
    SHN_UNDEF,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_SYMTAB,
    ElfTables,
    RawSymbol,
    TableError,
)

ELF_KINDS = ("not-found", "invalid", "truncated", "wrong-machine")
EXPORTED_BINDS = frozenset({"GLOBAL", "WEAK"})
EXPORTED_VISIBILITIES = frozenset({"DEFAULT", "PROTECTED"})
ELF_TYPES = {1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}
# The dynamic entries whose value names something, by d_tag.
DYNAMIC_NAME_TAGS = {1: "DT_NEEDED", 14: "DT_SONAME", 15: "DT_RPATH", 29: "DT_RUNPATH"}
SEARCH_PATH_TAGS = ("DT_RPATH", "DT_RUNPATH")  # colon-separated lists of directories
# What pyelftools raises on a damaged file besides its own errors (a bad offset seeks nowhere, a
# bad index overflows, a string table that is not one fails an assert).
CORRUPT_ELF_ERRORS = (struct.error, ValueError, IndexError, KeyError, OverflowError, OSError, AssertionError)

# Every dynamic symbol is kept (about 250 bytes each): the largest libraries of this field hold
# tens of thousands (libtorch_cpu.so: 78,000), so more than this is a damaged or hostile file.
MAX_DYNAMIC_SYMBOLS = 1_000_000
# Mangled names passed to c++filt per name asked for: a short name (`at`) is inside 100,000s of
# the symbols of a large C++ library.
MAX_DEMANGLED = 1000
# Short names by e_machine (EM_X86_64, EM_AARCH64, ...); pyelftools' description ("Advanced
# Micro Devices X86-64") is the fallback for machines not listed here.
MACHINE_NAMES = {
    62: "x86-64",
    183: "AArch64",
    3: "x86",
    40: "ARM",
    21: "PowerPC64",
    243: "RISC-V",
    22: "S/390",
}
# platform.machine() values and common spellings -> the names above.
MACHINE_ALIASES = {
    "x86_64": "x86-64",
    "amd64": "x86-64",
    "x64": "x86-64",
    "aarch64": "AArch64",
    "arm64": "AArch64",
    "i386": "x86",
    "i686": "x86",
    "armv7l": "ARM",
    "ppc64le": "PowerPC64",
    "ppc64": "PowerPC64",
    "riscv64": "RISC-V",
    "s390x": "S/390",
}
# Debian-style multiarch directories, for hosts whose sysconfig does not name one.
MULTIARCH_TRIPLETS = {
    "x86-64": "x86_64-linux-gnu",
    "AArch64": "aarch64-linux-gnu",
    "PowerPC64": "powerpc64le-linux-gnu",
    "x86": "i386-linux-gnu",
    "ARM": "arm-linux-gnueabihf",
    "RISC-V": "riscv64-linux-gnu",
    "S/390": "s390x-linux-gnu",
}
STANDARD_LIBRARY_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")
LDCONFIG_CANDIDATES = ("/sbin/ldconfig", "/usr/sbin/ldconfig", "/sbin/ldconfig.real")
LDCONFIG_OUTPUT_BYTES = 32_000_000  # `ldconfig -p` lists every library of the system: a few MB at most


class ElfError(XlaccError):
    """A library that cannot be inspected; ``kind`` is one of :data:`ELF_KINDS`."""

    def __init__(self, kind: str, message: str):
        if kind not in ELF_KINDS:
            raise ValueError(f"unknown ElfError kind {kind!r}; expected one of {ELF_KINDS}")
        super().__init__(message)
        self.kind = kind


class SymbolInfo(NamedTuple):  # a tuple: built once per symbol, thousands per .symtab
    name: str
    bind: str  # GLOBAL | WEAK | LOCAL
    visibility: str  # DEFAULT | HIDDEN | PROTECTED | INTERNAL
    kind: str  # FUNC | OBJECT | NOTYPE | ...
    defined: bool

    @property
    def exported(self) -> bool:
        return (
            self.defined
            and self.bind in EXPORTED_BINDS
            and self.visibility in EXPORTED_VISIBILITIES
        )


@dataclass
class SharedObject:
    path: Path
    machine: str
    elf_type: str  # DYN | EXEC | REL
    soname: str | None
    needed: list[str]
    rpath: list[str]
    runpath: list[str]
    exported: dict[str, SymbolInfo]
    undefined: set[str]

    def local_definitions(self, name: str) -> dict[str, SymbolInfo]:
        """The symbols defined in ``.symtab`` whose names hold ``name`` (itself, or a C++ name
        mangled around it), by name; {} for a stripped library. Each call reads the table again
        and keeps only these: a .symtab can hold half a million names."""
        return _read_symtab(self.path, name)


@dataclass(frozen=True)
class SymbolStatus:
    name: str
    status: str  # exported | mangled | hidden | missing
    symbol: SymbolInfo | None
    demangled: str | None = None
    closest: list[str] = field(default_factory=list)


# --- reading -------------------------------------------------------------------------------


def read_shared_object(path: str | Path, expected_machine: str | None = None) -> SharedObject:
    """Read a shared library's dynamic section and exported symbols.

    Raises :class:`ElfError` with a one-line message for a missing, non-ELF, non-shared,
    truncated or foreign-architecture file.
    """
    path = Path(path)
    expected = normalize_machine(expected_machine or platform.machine())
    with open_elf(path) as tables:
        elf_type = ELF_TYPES.get(tables.e_type, str(tables.e_type))
        dynamic = _read_dynamic(path, tables)
        _require_shared(path, elf_type, tables.is_executable() or bool(dynamic.flags_1 & DF_1_PIE))  # flags_1: a library without sections
        machine = machine_name(tables.e_machine)
        if machine != expected:
            raise ElfError("wrong-machine", f"{path}: built for {machine}, expected {expected}")
    exported = {s.name: s for s in dynamic.symbols if s.exported}
    return SharedObject(
        path=path,
        machine=machine,
        elf_type=elf_type,
        soname=next(iter(dynamic.names.get("DT_SONAME", [])), None),
        needed=dynamic.names.get("DT_NEEDED", []),
        rpath=dynamic.names.get("DT_RPATH", []),
        runpath=dynamic.names.get("DT_RUNPATH", []),
        exported=exported,
        undefined={s.name for s in dynamic.symbols if not s.defined},
    )


@contextmanager
def open_elf(path: str | Path) -> Iterator[ElfTables]:
    """The tables of a complete ELF file, over a read-only map of it that closes on exit.

    Raises ElfError: ``not-found``, ``invalid`` (not ELF, or its tables do not fit the file) or
    ``truncated`` (headers or loadable segments reach past the end of the file), also for a
    damaged table met while reading inside the ``with`` block.
    """
    path = Path(path)
    _require_elf_magic(path)
    with path.open("rb") as stream, _mapped(path, stream) as mapped:
        try:
            yield ElfTables(mapped)
        except TableError as exc:
            message = str(exc) if exc.truncated else f"corrupt ELF file ({exc})"
            raise ElfError("truncated" if exc.truncated else "invalid", f"{path}: {message}") from exc


def _mapped(path: Path, stream) -> mmap.mmap:
    try:
        return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # an empty special file, a file system without mmap
        raise ElfError("invalid", f"{path}: cannot read the file ({_one_line(exc)})") from exc


def normalize_machine(name: str) -> str:
    """``x86_64`` / ``amd64`` / ``x86-64`` -> ``x86-64``; ``aarch64`` / ``arm64`` -> ``AArch64``."""
    lowered = name.strip().lower()
    if lowered in MACHINE_ALIASES:
        return MACHINE_ALIASES[lowered]
    for canonical in MACHINE_NAMES.values():
        if canonical.lower() == lowered:
            return canonical
    return name.strip()


def machine_name(e_machine: int) -> str:
    """A short name for an e_machine; pyelftools' description for one not in MACHINE_NAMES."""
    if e_machine in MACHINE_NAMES:
        return MACHINE_NAMES[e_machine]
    from elftools.elf.descriptions import describe_e_machine  # lazy: pyelftools takes 50 ms to import; most reads need only the struct-read tables
    from elftools.elf.enums import ENUM_E_MACHINE  # lazy: pyelftools takes 50 ms to import; most reads need only the struct-read tables

    name = next((n for n, number in ENUM_E_MACHINE.items() if number == e_machine), None)
    return describe_e_machine(name) if name else f"machine {e_machine}"


def _require_elf_magic(path: Path) -> None:
    if not path.exists():
        raise ElfError("not-found", f"{path}: no such file")
    if not path.is_file():
        raise ElfError("invalid", f"{path}: not a file")
    with path.open("rb") as stream:
        head = stream.read(len(ELF_MAGIC))
    if not head:
        raise ElfError("invalid", f"{path}: empty file, not an ELF file")
    if head != ELF_MAGIC:
        if ELF_MAGIC.startswith(head):
            raise ElfError("truncated", f"{path}: ELF file cut short ({len(head)} bytes)")
        raise ElfError("invalid", f"{path}: not an ELF file (starts with {head!r})")


NOT_SHARED_DESCRIPTIONS = {
    "REL": "an object file (ET_REL)",
    "EXEC": "an executable (ET_EXEC)",
    "DYN": "a position-independent executable (it has a program interpreter or DF_1_PIE)",
    "CORE": "a core dump (ET_CORE)",
}


def _require_shared(path: Path, elf_type: str, executable: bool) -> None:
    if elf_type == "DYN" and not executable:
        return
    what = NOT_SHARED_DESCRIPTIONS.get(elf_type, f"ELF type {elf_type}")
    raise ElfError("invalid", f"{path}: {what}, not a shared library")


@dataclass
class _Dynamic:
    """What the dynamic section says: names by tag (DT_NEEDED, ...), DT_FLAGS_1, and .dynsym."""

    names: dict[str, list[str]] = field(default_factory=dict)
    flags_1: int = 0
    symbols: list[SymbolInfo] = field(default_factory=list)

    def add(self, tag: str, value: str) -> None:
        values = value.split(":") if tag in SEARCH_PATH_TAGS else [value]
        self.names.setdefault(tag, []).extend(v for v in values if v)


def _read_dynamic(path: Path, tables: ElfTables) -> _Dynamic:
    section = tables.section_of_type(SHT_DYNAMIC)
    if section is None and any(s.type == PT_DYNAMIC for s in tables.segments):
        return _read_dynamic_segment(path)
    dynamic = _Dynamic()
    if section is not None:
        strings = tables.strings(tables.linked(section))
        for tag, value in tables.dynamic_entries(section):
            if tag == DT_FLAGS_1:
                dynamic.flags_1 = value
            elif tag in DYNAMIC_NAME_TAGS:
                dynamic.add(DYNAMIC_NAME_TAGS[tag], strings.text(value))
    dynsym = tables.section_of_type(SHT_DYNSYM)
    if dynsym is not None:
        _require_readable_count(path, dynsym.size // tables.layout.symbol.size)
        dynamic.symbols = [_symbol_info(symbol) for symbol in tables.symbols(dynsym)]
    return dynamic


def _require_readable_count(path: Path, symbols: int) -> None:
    if symbols > MAX_DYNAMIC_SYMBOLS:
        raise ElfError("invalid", f"{path}: {symbols:,} dynamic symbols, more than the {MAX_DYNAMIC_SYMBOLS:,} xlacc reads")


def _read_dynamic_segment(path: Path) -> _Dynamic:
    """A library without section headers (sstrip'ed): only the PT_DYNAMIC segment's hash tables
    tell how many symbols it holds, which pyelftools works out."""
    from elftools.common.exceptions import ELFError  # lazy: pyelftools takes 50 ms to import; most reads need only the struct-read tables
    from elftools.construct import ConstructError  # lazy: pyelftools takes 50 ms to import; most reads need only the struct-read tables
    from elftools.elf.elffile import ELFFile  # lazy: pyelftools takes 50 ms to import; most reads need only the struct-read tables

    dynamic = _Dynamic()
    with path.open("rb") as stream:
        try:
            segment = next(s for s in ELFFile(stream).iter_segments() if s["p_type"] == "PT_DYNAMIC")
            for tag in segment.iter_tags():
                name = tag.entry.d_tag
                if name == "DT_FLAGS_1":
                    dynamic.flags_1 = tag.entry.d_val
                elif name in SEGMENT_TAG_ATTRIBUTES:
                    dynamic.add(name, getattr(tag, SEGMENT_TAG_ATTRIBUTES[name]))
            _require_readable_count(path, segment.num_symbols())
            dynamic.symbols = [_segment_symbol_info(s) for s in segment.iter_symbols() if s.name]
        except (ELFError, ConstructError, *CORRUPT_ELF_ERRORS) as exc:
            raise ElfError("invalid", f"{path}: corrupt ELF file ({_one_line(exc)})") from exc
    return dynamic


# pyelftools' attribute holding each tag's name.
SEGMENT_TAG_ATTRIBUTES = {"DT_NEEDED": "needed", "DT_SONAME": "soname", "DT_RPATH": "rpath", "DT_RUNPATH": "runpath"}


def _segment_symbol_info(symbol) -> SymbolInfo:
    return SymbolInfo(
        name=symbol.name,
        bind=str(symbol["st_info"]["bind"]).removeprefix("STB_"),
        visibility=str(symbol["st_other"]["visibility"]).removeprefix("STV_"),
        kind=str(symbol["st_info"]["type"]).removeprefix("STT_"),
        defined=symbol["st_shndx"] != "SHN_UNDEF",
    )


BINDS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
VISIBILITIES = ("DEFAULT", "INTERNAL", "HIDDEN", "PROTECTED")
SYMBOL_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS", 10: "GNU_IFUNC"}


def _symbol_info(symbol: RawSymbol) -> SymbolInfo:
    return SymbolInfo(
        name=symbol.name,
        bind=BINDS.get(symbol.info >> 4, str(symbol.info >> 4)),
        visibility=VISIBILITIES[symbol.other & 3],
        kind=SYMBOL_TYPES.get(symbol.info & 0xF, str(symbol.info & 0xF)),
        defined=symbol.section != SHN_UNDEF,
    )


def _read_symtab(path: Path, name: str) -> dict[str, SymbolInfo]:
    encoded = _encoded(name)
    try:
        with open_elf(path) as tables:
            symtab = tables.section_of_type(SHT_SYMTAB)
            found = tables.symbols(symtab, name.encode()) if symtab else ()
            kept = [s for s in found if s.section != SHN_UNDEF and (s.name == name or _mangled_with(s.name, encoded))]
    except ElfError:
        return {}
    return {symbol.name: _symbol_info(symbol) for symbol in kept}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# --- symbols -------------------------------------------------------------------------------


def find_symbol(so: SharedObject, name: str) -> SymbolStatus:
    """Is ``name`` exported, exported only under a C++-mangled name, hidden, or missing?"""
    if name in so.exported:
        return SymbolStatus(name, "exported", so.exported[name])
    mangled = _find_mangled(name, so.exported)
    if mangled is not None:
        symbol, demangled = mangled
        return SymbolStatus(name, "mangled", symbol, demangled=demangled)
    hidden = _find_hidden(so, name)
    if hidden is not None:
        symbol, demangled = hidden
        return SymbolStatus(name, "hidden", symbol, demangled=demangled)
    closest = difflib.get_close_matches(name, list(so.exported), n=3, cutoff=0.6)
    return SymbolStatus(name, "missing", None, closest=closest)


def _find_hidden(so: SharedObject, name: str) -> tuple[SymbolInfo, str | None] | None:
    """A definition in ``.symtab`` that the dynamic linker cannot see (LOCAL or HIDDEN)."""
    defined = so.local_definitions(name)
    if name in defined:
        return defined[name], None
    return _find_mangled(name, defined)


def _find_mangled(
    name: str, symbols: dict[str, SymbolInfo]
) -> tuple[SymbolInfo, str | None] | None:
    """A C++-mangled symbol whose function name is ``name``, and its demangled signature."""
    encoded = _encoded(name)
    likely_first = sorted((n for n in symbols if _mangled_with(n, encoded)), key=lambda n: (not _function_shaped(n, encoded), n))
    candidates = likely_first[:MAX_DEMANGLED]
    if not candidates:
        return None
    demangled = demangle(candidates)
    for mangled in candidates:
        text = demangled.get(mangled, mangled)
        if text != mangled and function_name(text) == name:
            return symbols[mangled], text
    if all(demangled.get(m, m) == m for m in candidates):  # no demangler on this machine
        for mangled in candidates:
            if _function_shaped(mangled, encoded):
                return symbols[mangled], None
    return None


def _encoded(name: str) -> str:
    """Itanium mangling writes each source name as <length><name>."""
    return f"{len(name)}{name}"


def _mangled_with(symbol: str, encoded: str) -> bool:
    return symbol.startswith("_Z") and encoded in symbol


def _function_shaped(mangled: str, encoded: str) -> bool:
    """The name is the function's own (``_Z3foo...``, or last in a nested name ``_ZN2ns3fooE...``),
    not one of its scopes or parameter types."""
    return mangled.startswith(f"_Z{encoded}") or f"{encoded}E" in mangled


def function_name(demangled: str) -> str:
    """``void ns::Foo<int>(float*, int)`` -> ``Foo``: the name before '(', unscoped, untemplated."""
    depth = 0
    end = len(demangled)
    for index, char in enumerate(demangled):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            end = index
            break
    qualified = _strip_template_arguments(demangled[:end].strip())
    return qualified.rsplit("::", 1)[-1].rsplit(" ", 1)[-1]


def _strip_template_arguments(text: str) -> str:
    if not text.endswith(">"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(text[index], 0)
        if depth == 0:
            return text[:index]
    return text


@functools.cache
def _cxxfilt() -> str | None:
    return shutil.which("c++filt")


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Demangle C++ names with one ``c++filt`` call; names come back unchanged without it."""
    names = list(dict.fromkeys(names))
    unchanged = {n: n for n in names}
    tool = _cxxfilt()
    if not names or tool is None or any("\n" in n for n in names):
        return unchanged
    try:
        result = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return unchanged
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != len(names):
        return unchanged
    return dict(zip(names, lines))


# --- dependencies --------------------------------------------------------------------------


def missing_dependencies(so: SharedObject) -> list[str]:
    """DT_NEEDED entries the dynamic loader would not find, in DT_NEEDED order."""
    directories = _search_directories(so)
    cached = _ldconfig_names()
    return [
        needed
        for needed in so.needed
        if not _library_found(needed, directories, cached)
    ]


def _library_found(needed: str, directories: list[str], cached: frozenset[str]) -> bool:
    if "/" in needed:  # the loader opens such a name as a path
        return os.path.exists(needed)
    if needed in cached:
        return True
    return any(os.path.exists(os.path.join(d, needed)) for d in directories)


def _search_directories(so: SharedObject) -> list[str]:
    origin = str(so.path.resolve().parent)
    runpath = [_expand_origin(d, origin) for d in so.runpath]
    # The loader ignores DT_RPATH when DT_RUNPATH is present.
    rpath = [] if so.runpath else [_expand_origin(d, origin) for d in so.rpath]
    ld_library_path = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    return list(dict.fromkeys(rpath + ld_library_path + runpath + _standard_directories()))


def _expand_origin(directory: str, origin: str) -> str:
    return re.sub(r"\$(ORIGIN|\{ORIGIN\})", lambda _: origin, directory)


@functools.cache
def _standard_directories() -> list[str]:
    triplets = {
        sysconfig.get_config_var("MULTIARCH") or "",
        MULTIARCH_TRIPLETS.get(normalize_machine(platform.machine()), ""),
    } - {""}
    multiarch = [f"{base}/{t}" for t in sorted(triplets) for base in ("/lib", "/usr/lib")]
    return list(STANDARD_LIBRARY_DIRS) + multiarch


@functools.cache
def _ldconfig_names() -> frozenset[str]:
    """Library names in the loader cache (``ldconfig -p``), read once per process."""
    tool = shutil.which("ldconfig") or next(
        (c for c in LDCONFIG_CANDIDATES if os.access(c, os.X_OK)), None
    )
    if tool is None:
        return frozenset()

    answer = probe([tool, "-p"], limit=LDCONFIG_OUTPUT_BYTES)  # one that hangs or fails lists nothing
    return frozenset(_parse_ldconfig(answer.output)) if answer.problem is None else frozenset()


def _parse_ldconfig(output: str) -> Iterable[str]:
    # Lines look like: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
    host_abi = {"x86-64": "x86-64", "AArch64": "AArch64"}.get(normalize_machine(platform.machine()))
    for line in output.splitlines():
        match = re.match(r"\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)", line)
        if match is None:
            continue
        name, flags, _target = match.groups()
        if host_abi is None or host_abi in flags:
            yield name
