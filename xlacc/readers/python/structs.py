"""``struct.pack`` formats: how many bytes a packed backend_config holds, and where each value lies."""

from __future__ import annotations

import re
import struct

STRUCT_ITEM = re.compile(r"(\d*)([xcbB?hHiIlLqQnNefdspP])")


def struct_size(fmt: str) -> int | None:
    """``struct.calcsize`` of a format, None when it is not one."""
    try:
        return struct.calcsize(fmt)
    except (struct.error, TypeError):
        return None


def struct_layout(fmt: str) -> list[tuple[int, int]] | None:
    """(offset, bytes) of each value a ``struct.pack`` format packs (pad bytes left out)."""
    if struct_size(fmt) is None:
        return None
    order = fmt[0] if fmt and fmt[0] in "@=<>!" else ""
    body = fmt[len(order) :].replace(" ", "")
    found, prefix = [], order
    for match in STRUCT_ITEM.finditer(body):
        count, code = int(match.group(1) or 1), match.group(2)
        items = [(1, code)] if code in "sp" else [(1, code)] * count
        width = count if code in "sp" else None
        for _ in items:
            item = f"{width}{code}" if width else code
            end = struct.calcsize(prefix + item)
            size = struct.calcsize(order + item)
            if code != "x":
                found.append((end - size, size))
            prefix += item
    return found
