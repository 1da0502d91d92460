"""The build record: what a library was built against (FFI headers, their jaxlib, CUDA), as
``xlacc build`` compiles it into the ``.xlacc_build`` section, read back without loading the library.

The section holds short ``key=value`` lines after a first line naming the format; values are
versions (``0.10.2``, ``0.1``, ``13.0``) or ``none`` where the build used no such thing.
"""

from __future__ import annotations

import re
from pathlib import Path

from xlacc.readers import elf

SECTION = ".xlacc_build"
MAGIC = "xlacc-build-record 1"
MAX_RECORD_BYTES = 4096  # a record is a few lines; a larger section is not one of ours
KEYS = ("jaxlib", "ffi_api", "cuda", "platform")
NONE = "none"
SAFE_VALUE = re.compile(r"[^A-Za-z0-9._+-]")


def format_record(fields: dict[str, str]) -> str:
    """The record's text: the format line, then ``key=value`` for each of :data:`KEYS`."""
    lines = [MAGIC] + [f"{key}={clean_value(fields.get(key))}" for key in KEYS]
    return "\n".join(lines) + "\n"


def clean_value(value: str | None) -> str:
    """A value safe to put in a C string and read back on one line."""
    return SAFE_VALUE.sub("_", value)[:64] if value else NONE


def parse_record(data: bytes) -> dict[str, str] | None:
    """The fields of the first record in a section's bytes; None when it holds none."""
    text = data.split(b"\0", 1)[0].decode("ascii", errors="replace")
    lines = text.splitlines()
    if not lines or lines[0] != MAGIC:
        return None
    fields = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    return {key: fields.get(key, NONE) for key in KEYS}


def read_record(path: Path) -> dict[str, str] | None:
    """The library's build record; None when it has none (built by something other than xlacc
    build, or before records existed). Raises :class:`elf.ElfError` for a file that is no ELF."""
    with elf.open_elf(path) as tables:
        section = tables.section(SECTION)
        if section is None or section.size > MAX_RECORD_BYTES:
            return None
        return parse_record(bytes(tables.contents(section)))
