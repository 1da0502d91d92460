"""An ELF file's fixed-size tables, unpacked with struct: the header, program and section
headers, dynamic entries, string and symbol tables.

Written by hand, although pyelftools reads all of this, because of time: importing pyelftools
takes 35-50 ms and its parsing of a library's section headers 10-20 ms more, a quarter of the
0.25 s that `xlacc doctor --so` and a build's check of its library may take, while these tables
are a few fixed record layouts. pyelftools still reads what takes more than a table lookup: a
library without section headers, whose symbols only its dynamic segment's hash tables can count
(xlacc.readers.elf imports it for that case alone).

Every offset and size read from the file is checked against the file's length: a damaged file
raises :class:`TableError`, never reads past its end. String tables are read in place and symbol
tables a block of entries at a time, so a large library costs memory for what is kept of it, not
for its tables.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from pathlib import Path
from typing import Iterator, NamedTuple

ELF_MAGIC = b"\x7fELF"
ELF_TYPE_SHARED = 3  # ET_DYN: a shared object (or a position-independent executable)
ELFCLASS32, ELFCLASS64 = 1, 2
ELFDATA2LSB, ELFDATA2MSB = 1, 2
IDENT_SIZE = 16
SHT_SYMTAB, SHT_DYNAMIC, SHT_NOBITS, SHT_DYNSYM = 2, 6, 8, 11
PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
SHN_UNDEF, SHN_XINDEX = 0, 0xFFFF
DT_NULL = 0
DT_FLAGS_1, DF_1_PIE = 0x6FFFFFFB, 0x08000000
ENTRIES_PER_BLOCK = 1 << 16  # symbols unpacked at a time: a table is never copied whole


class TableError(ValueError):
    """A table that does not fit the file; ``truncated`` when the file ends too early for it."""

    def __init__(self, message: str, truncated: bool = False):
        super().__init__(message)
        self.truncated = truncated


class Layout(NamedTuple):
    """The struct formats of one ELF class and byte order (field order differs between classes)."""

    header: struct.Struct
    section: struct.Struct
    segment: struct.Struct
    segment_fields: tuple[int, int, int]  # indices of p_type, p_offset, p_filesz
    dynamic: struct.Struct
    symbol: struct.Struct
    symbol_fields: tuple[int, int, int, int]  # indices of st_name, st_info, st_other, st_shndx


def _layout(elf_class: int, order: str) -> Layout:
    if elf_class == ELFCLASS64:
        return Layout(
            header=struct.Struct(order + "HHIQQQIHHHHHH"),
            section=struct.Struct(order + "IIQQQQIIQQ"),
            segment=struct.Struct(order + "IIQQQQQQ"),
            segment_fields=(0, 2, 5),
            dynamic=struct.Struct(order + "qQ"),
            symbol=struct.Struct(order + "IBBHQQ"),
            symbol_fields=(0, 1, 2, 3),
        )
    return Layout(
        header=struct.Struct(order + "HHIIIIIHHHHHH"),
        section=struct.Struct(order + "IIIIIIIIII"),
        segment=struct.Struct(order + "IIIIIIII"),
        segment_fields=(0, 1, 4),
        dynamic=struct.Struct(order + "iI"),
        symbol=struct.Struct(order + "IIIBBH"),
        symbol_fields=(0, 3, 4, 5),
    )


class Section(NamedTuple):
    index: int
    name: str
    type: int
    offset: int
    size: int
    link: int


class Segment(NamedTuple):
    type: int
    offset: int
    size: int  # bytes in the file (p_filesz)


class RawSymbol(NamedTuple):
    name: str
    info: int  # binding << 4 | type
    other: int  # visibility in the low two bits
    section: int  # SHN_UNDEF for an undefined symbol


class ElfTables:
    """The tables of the ELF file in ``data`` (bytes or a read-only map of the file)."""

    def __init__(self, data: bytes | mmap.mmap):
        self.data = data
        self.size = len(data)
        if self.size < IDENT_SIZE or data[:4] != ELF_MAGIC:
            raise TableError(f"unreadable ELF header ({self.size} bytes)", truncated=self.size < IDENT_SIZE)
        elf_class, byte_order = data[4], data[5]
        if elf_class not in (ELFCLASS32, ELFCLASS64) or byte_order not in (ELFDATA2LSB, ELFDATA2MSB):
            raise TableError(f"unknown ELF class {elf_class} or data encoding {byte_order}")
        self.elf_class = elf_class
        self.layout = _layout(elf_class, "<" if byte_order == ELFDATA2LSB else ">")
        header = self._unpack(self.layout.header, IDENT_SIZE, "the ELF header")
        (self.e_type, self.e_machine, _version, _entry, phoff, shoff, _flags, _ehsize,
         phentsize, phnum, shentsize, shnum, shstrndx) = header
        self.segments = self._segments(phoff, phentsize, phnum)
        self._require_loadable()
        self.sections = self._sections(shoff, shentsize, shnum, shstrndx)

    # --- headers ---------------------------------------------------------------------------

    def _unpack(self, layout: struct.Struct, offset: int, what: str) -> tuple:
        if offset + layout.size > self.size:
            raise TableError(f"ELF file cut short ({self.size} bytes, {what} needs {offset + layout.size})", truncated=True)
        return layout.unpack_from(self.data, offset)

    def _table(self, layout: struct.Struct, offset: int, entry_size: int, count: int, what: str) -> list[tuple]:
        if count and entry_size < layout.size:
            raise TableError(f"{what}: entries of {entry_size} bytes, expected at least {layout.size}")
        end = offset + entry_size * count
        if end > self.size:
            raise TableError(f"ELF file cut short ({self.size} bytes, its {what} need {end})", truncated=True)
        return [layout.unpack_from(self.data, offset + i * entry_size) for i in range(count)]

    def _segments(self, offset: int, entry_size: int, count: int) -> list[Segment]:
        kind, start, size = self.layout.segment_fields
        rows = self._table(self.layout.segment, offset, entry_size, count if offset else 0, "program headers")
        return [Segment(row[kind], row[start], row[size]) for row in rows]

    def _sections(self, offset: int, entry_size: int, count: int, names_index: int) -> list[Section]:
        if not offset:
            return []
        first = self._table(self.layout.section, offset, entry_size, 1, "section headers")[0]
        # More than 0xff00 sections: the real count and names index live in section 0.
        count = count or first[5]
        names_index = first[6] if names_index == SHN_XINDEX else names_index
        rows = self._table(self.layout.section, offset, entry_size, count, "section headers")
        if not 0 <= names_index < len(rows):
            raise TableError(f"section names in section {names_index}, of {len(rows)}")
        names_start, names_size = rows[names_index][4], rows[names_index][5]
        self._require_inside(names_start, names_size, "the section names")
        names = StringTable(self.data, names_start, names_start + names_size, "the section names")
        return [
            Section(i, names.text(name), kind, start, size, link)
            for i, (name, kind, _flags, _address, start, size, link, *_rest) in enumerate(rows)
        ]

    def _require_loadable(self) -> None:
        end = max((s.offset + s.size for s in self.segments if s.type == PT_LOAD), default=0)
        if end > self.size:
            raise TableError(f"ELF file cut short ({self.size} bytes, its loadable segments need {end})", truncated=True)

    # --- contents --------------------------------------------------------------------------

    def _bytes(self, offset: int, size: int, what: str) -> bytes:
        self._require_inside(offset, size, what)
        return bytes(self.data[offset : offset + size])

    def _require_inside(self, offset: int, size: int, what: str) -> None:
        if offset + size > self.size:
            raise TableError(f"{what} end at {offset + size}, past the file's {self.size} bytes")

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def section_of_type(self, section_type: int) -> Section | None:
        return next((s for s in self.sections if s.type == section_type), None)

    def contents(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            return b""
        return self._bytes(section.offset, section.size, f"section {section.name}")

    def strings(self, section: Section) -> StringTable:
        """A string table, read in place: names are copied out one at a time."""
        if section.type == SHT_NOBITS:
            return StringTable(b"", 0, 0, section.name)
        self._require_inside(section.offset, section.size, f"section {section.name}")
        return StringTable(self.data, section.offset, section.offset + section.size, section.name)

    def linked(self, section: Section) -> Section:
        if not 0 < section.link < len(self.sections):
            raise TableError(f"section {section.name} links to section {section.link}, of {len(self.sections)}")
        return self.sections[section.link]

    def is_executable(self) -> bool:
        """A position-independent executable: ET_DYN like a shared library, with DF_1_PIE set, or
        (from older linkers, which do not set it) a program interpreter to start it."""
        if any(segment.type == PT_INTERP for segment in self.segments):
            return True
        dynamic = self.section_of_type(SHT_DYNAMIC)
        flags_1 = next((value for tag, value in self.dynamic_entries(dynamic) if tag == DT_FLAGS_1), 0) if dynamic else 0
        return bool(flags_1 & DF_1_PIE)

    def dynamic_entries(self, dynamic: Section) -> Iterator[tuple[int, int]]:
        """(d_tag, d_val) of each entry before DT_NULL."""
        layout = self.layout.dynamic
        data = self.contents(dynamic)
        for tag, value in layout.iter_unpack(data[: len(data) - len(data) % layout.size]):
            if tag == DT_NULL:
                return
            yield tag, value

    def symbols(self, table: Section, containing: bytes = b"") -> Iterator[RawSymbol]:
        """The named symbols of a SHT_SYMTAB / SHT_DYNSYM section, in one pass, a block of entries
        at a time; with ``containing``, only those whose names hold it, and no other name is
        decoded: a table whose strings lack it is not walked at all (a .symtab can hold half a
        million names, 80 MB)."""
        strings = self.strings(self.linked(table))
        if not strings.holds(containing):
            return
        name, info, other, shndx = self.layout.symbol_fields
        for row in self._entries(table, self.layout.symbol):
            raw = strings.at(row[name])
            if raw and containing in raw:
                yield RawSymbol(raw.decode("utf-8", "replace"), row[info], row[other], row[shndx])

    def _entries(self, table: Section, layout: struct.Struct) -> Iterator[tuple]:
        size = 0 if table.type == SHT_NOBITS else table.size - table.size % layout.size
        self._require_inside(table.offset, size, f"section {table.name}")
        step = layout.size * ENTRIES_PER_BLOCK
        for start in range(table.offset, table.offset + size, step):
            yield from layout.iter_unpack(self.data[start : min(start + step, table.offset + size)])


class StringTable(NamedTuple):
    """The NUL-terminated strings of ``data[start:end]``."""

    data: bytes | mmap.mmap
    start: int
    end: int
    name: str

    def at(self, offset: int) -> bytes:
        if offset and offset >= self.end - self.start:
            raise TableError(f"a string of {self.name} starts at {offset}, past its {self.end - self.start} bytes")
        position = self.start + offset
        stop = self.data.find(b"\0", position, self.end)
        return self.data[position : stop if stop >= 0 else self.end]

    def text(self, offset: int) -> str:
        return self.at(offset).decode("utf-8", "replace")

    def holds(self, needle: bytes) -> bool:
        return self.data.find(needle, self.start, self.end) >= 0


def is_shared_library(path: Path) -> bool:
    """An ELF shared object, not a position-independent executable (ET_DYN too): the only kind of
    existing file a build may replace. Read without blocking and only when a regular file: a
    named pipe there would wait forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        header = os.read(fd, 18)
        if len(header) < 18 or not header.startswith(ELF_MAGIC):
            return False
        byteorder = "little" if header[5] == 1 else "big"
        return int.from_bytes(header[16:18], byteorder) == ELF_TYPE_SHARED and not _is_executable(fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def _is_executable(fd: int) -> bool:
    try:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            return ElfTables(data).is_executable()
    except (TableError, ValueError):  # tables cut short: a library a crash left, as a build may
        return False
