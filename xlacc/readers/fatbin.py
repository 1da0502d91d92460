"""Which GPU architectures a library's embedded CUDA code (its fatbin) can run on.

The fatbin format is undocumented and no Python library reads its headers, so this module
parses them by hand. Layout, checked against nvcc 13.0 output and ``cuobjdump --list-elf`` /
``--list-ptx`` (CUDA 13.5):

* ELF section ``.nv_fatbin`` (``__nv_relfatbin`` in ``-rdc`` object files) holds containers
  one after another, possibly separated by zero padding.
* container header ``<IHHQ``: magic 0xBA55ED50, version 1, header size (16), payload size;
  the payload is a run of entries.
* entry header ``<HHIQ``: kind (1 = PTX, 2 = ELF cubin, 8 = LTO IR), version 0x0101,
  header size (64 to 120), payload size; the next entry starts after header + payload.
  At +28 the SM number as u32 (80, 90, 100, ...), at +40 the flags as u64:
  0x100000 marks an arch-specific build (sm_90a, compute_100a), 0x200000 a family-specific
  one (sm_100f); 0x8000 a compressed payload, which does not change the header.
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from xlacc.readers.elf import ElfError, open_elf
from xlacc.readers.elf_tables import SHT_NOBITS

FATBIN_MAGIC = 0xBA55ED50
CONTAINER_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQ")
ENTRY_ARCH = struct.Struct("<I")
ENTRY_ARCH_OFFSET = 28
ENTRY_FLAGS = struct.Struct("<Q")
ENTRY_FLAGS_OFFSET = 40
MIN_ENTRY_HEADER = ENTRY_FLAGS_OFFSET + ENTRY_FLAGS.size
ARCH_SPECIFIC_FLAG = 0x100000
FAMILY_SPECIFIC_FLAG = 0x200000
# Entry kinds that a GPU can load; LTO IR (8) needs nvJitLink at link time and is skipped.
ENTRY_KINDS = {1: "ptx", 2: "sass"}
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")


@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # sass | ptx
    arch: int  # 80, 90, 100, ...
    arch_specific: bool = False  # sm_90a, sm_100a: runs on exactly that arch
    family_specific: bool = False  # sm_100f: runs within the major family

    @property
    def suffix(self) -> str:
        return "a" if self.arch_specific else "f" if self.family_specific else ""

    @property
    def label(self) -> str:
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.arch}{self.suffix}"

    def runs_on(self, arch: int) -> bool:
        """Can a device of SM ``arch`` load this entry (as SASS, or by JIT for PTX)?"""
        if self.arch_specific:
            return arch == self.arch
        same_major = arch // 10 == self.arch // 10 and arch >= self.arch
        if self.kind == "sass" or self.family_specific:
            return same_major
        return arch >= self.arch


@dataclass(frozen=True)
class Coverage:
    ok: bool
    how: str | None  # sass | ptx-jit | None
    reason: str


# --- parsing -------------------------------------------------------------------------------


def parse_fatbin(data: bytes | bytearray | memoryview | mmap.mmap) -> list[FatbinEntry]:
    """Entries of every container in ``data`` (a fatbin section's bytes), in file order.

    Raises ValueError when a header is corrupt or runs past the end of ``data``.
    """
    # Views are released even on error, so that a caller's mmap can close.
    with memoryview(data) as raw, raw.cast("B") as view:
        entries: list[FatbinEntry] = []
        offset = _skip_padding(view, 0)
        while offset < len(view):
            payload_start, payload_end = _container_bounds(view, offset)
            entries.extend(_container_entries(view, payload_start, payload_end))
            offset = _skip_padding(view, payload_end)
        return entries


def _skip_padding(view: memoryview, offset: int) -> int:
    while offset < len(view) and view[offset] == 0:
        offset += 1
    return offset


def _container_bounds(view: memoryview, offset: int) -> tuple[int, int]:
    if offset + CONTAINER_HEADER.size > len(view):
        raise ValueError(f"fatbin container header at offset {offset} is cut short")
    magic, _version, header_size, payload_size = CONTAINER_HEADER.unpack_from(view, offset)
    if magic != FATBIN_MAGIC:
        raise ValueError(
            f"no fatbin magic at offset {offset} (found {magic:#010x}, expected {FATBIN_MAGIC:#x})"
        )
    if header_size < CONTAINER_HEADER.size:
        raise ValueError(f"fatbin container at offset {offset} has header size {header_size}")
    end = offset + header_size + payload_size
    if end > len(view):
        raise ValueError(
            f"fatbin container at offset {offset} claims {payload_size} bytes, "
            f"only {len(view) - offset - header_size} present"
        )
    return offset + header_size, end


def _container_entries(view: memoryview, offset: int, end: int) -> list[FatbinEntry]:
    entries = []
    while offset < end:
        if offset + MIN_ENTRY_HEADER > end:
            raise ValueError(f"fatbin entry header at offset {offset} is cut short")
        kind, _version, header_size, payload_size = ENTRY_HEADER.unpack_from(view, offset)
        next_offset = offset + header_size + payload_size
        if header_size < MIN_ENTRY_HEADER or next_offset > end:
            raise ValueError(
                f"fatbin entry at offset {offset} has header size {header_size} and "
                f"payload {payload_size}, beyond its container (ends at {end})"
            )
        if kind in ENTRY_KINDS:
            entries.append(_entry(view, offset, ENTRY_KINDS[kind]))
        offset = next_offset
    return entries


def _entry(view: memoryview, offset: int, kind: str) -> FatbinEntry:
    (arch,) = ENTRY_ARCH.unpack_from(view, offset + ENTRY_ARCH_OFFSET)
    (flags,) = ENTRY_FLAGS.unpack_from(view, offset + ENTRY_FLAGS_OFFSET)
    return FatbinEntry(
        kind=kind,
        arch=arch,
        arch_specific=bool(flags & ARCH_SPECIFIC_FLAG),
        family_specific=bool(flags & FAMILY_SPECIFIC_FLAG),
    )


class FatbinError(ElfError, ValueError):
    """A fatbin section whose headers do not add up (an ElfError of kind ``invalid``)."""

    def __init__(self, message: str):
        super().__init__("invalid", message)


def read_fatbin(path: str | Path) -> list[FatbinEntry]:
    """GPU code embedded in an ELF file; [] for a host-only library.

    Raises ElfError (``not-found``, ``invalid``, ``truncated``); a corrupt fatbin raises
    :class:`FatbinError`, which is also a ValueError.
    """
    path = Path(path)
    if _is_raw_fatbin(path):  # the output of `nvcc -fatbin`
        return _parse_or_raise(path, "fatbin", path.read_bytes())
    with open_elf(path) as elf:
        section = next((s for name in FATBIN_SECTIONS if (s := elf.section(name)) is not None), None)
        if section is None or section.type == SHT_NOBITS or section.size == 0:
            return []
        start, size = section.offset, section.size
        if start + size > elf.size:
            raise ElfError(
                "truncated",
                f"{path}: section {section.name} ends at {start + size}, the file at {elf.size}",
            )
        # Over the file's map: only the headers are read, not the (often large) cubins between them.
        with memoryview(elf.data) as whole, whole[start : start + size] as window:
            return _parse_or_raise(path, section.name, window)


def _parse_or_raise(path: Path, where: str, data) -> list[FatbinEntry]:
    try:
        return parse_fatbin(data)
    except ValueError as exc:
        raise FatbinError(f"{path}: corrupt {where}: {exc}") from exc


def _is_raw_fatbin(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as stream:
        head = stream.read(4)
    return len(head) == 4 and struct.unpack("<I", head)[0] == FATBIN_MAGIC


# --- compatibility -------------------------------------------------------------------------


ARCH_PATTERNS = (
    re.compile(r"^(?:sm_|compute_|lto_)?(?P<arch>\d{2,3})[af]?$"),
    re.compile(r"^(?P<major>\d{1,2})\.(?P<minor>\d)$"),
)


def parse_arch(arch: str | int) -> int:
    """``sm_90`` / ``sm_90a`` / ``compute_90`` / ``"90"`` / ``90`` / ``9.0`` -> 90; else ValueError."""
    if isinstance(arch, bool):
        raise ValueError(f"not a GPU architecture: {arch!r}")
    if isinstance(arch, int):
        text = str(arch)
    elif isinstance(arch, str):
        text = arch.strip().lower()
    else:
        raise ValueError(f"not a GPU architecture: {arch!r}")
    for pattern in ARCH_PATTERNS:
        match = pattern.match(text)
        if match is None:
            continue
        groups = match.groupdict()
        value = int(groups["arch"]) if "arch" in groups else int(groups["major"]) * 10 + int(
            groups["minor"]
        )
        if value >= 10:
            return value
    raise ValueError(
        f"not a GPU architecture: {arch!r} (expected e.g. sm_90, sm_90a, 90 or 9.0)"
    )


def runs_on(entries: list[FatbinEntry], arch: str | int) -> Coverage:
    """Can a device of ``arch`` run this code: from SASS (preferred), by PTX JIT, or not at all?"""
    target = parse_arch(arch)
    sass = [e for e in entries if e.kind == "sass" and e.runs_on(target)]
    if sass:
        # The exact arch first, else the newest compatible one (what the driver picks).
        best = max(sass, key=lambda e: (e.arch == target, e.arch, e.arch_specific))
        if best.arch == target:
            return Coverage(True, "sass", f"SASS for sm_{target}" + _suffix_note(best))
        return Coverage(
            True, "sass", f"SASS {best.label} runs on sm_{target} (binary compatible)"
        )
    ptx = [e for e in entries if e.kind == "ptx" and e.runs_on(target)]
    if ptx:
        best = max(ptx, key=lambda e: (e.arch, e.arch_specific))
        return Coverage(
            True,
            "ptx-jit",
            f"PTX {best.label} is JIT-compiled for sm_{target} (slow first call)",
        )
    if not entries:
        return Coverage(False, None, "no GPU code in the library")
    has = _labels(entries)
    if any(e.arch_specific for e in entries):
        has += "; 'a' code runs only on its exact arch"
    return Coverage(
        False, None, f"no SASS for sm_{target} and no PTX <= compute_{target} (has: {has})"
    )


def _suffix_note(entry: FatbinEntry) -> str:
    return f" ({entry.label})" if entry.suffix else ""


def _labels(entries: list[FatbinEntry]) -> str:
    return ", ".join(e.label for e in _unique_sorted(entries))


def _unique_sorted(entries: list[FatbinEntry]) -> list[FatbinEntry]:
    return sorted(set(entries), key=lambda e: (e.kind != "sass", e.arch, e.suffix))


def describe(entries: list[FatbinEntry]) -> str:
    """``sm_80, sm_90 (SASS); compute_90 (PTX)``, or ``no GPU code``."""
    parts = []
    for kind, title in (("sass", "SASS"), ("ptx", "PTX")):
        labels = [e.label for e in _unique_sorted(entries) if e.kind == kind]
        if labels:
            parts.append(f"{', '.join(labels)} ({title})")
    return "; ".join(parts) or "no GPU code"
