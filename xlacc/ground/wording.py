"""Small pieces of the words every message uses: a count with its noun, and a long list cut short
(a message is one line; a spec may list 20,000 names)."""

from __future__ import annotations

from collections.abc import Iterable

LIST_SHOWN = 8  # items of a list a message shows before it says how many more there are


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``3 lines``, ``2 libraries`` (with ``plural="libraries"``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def shown_list(items: Iterable[object], limit: int = LIST_SHOWN) -> str:
    """``[a, b, c]``, or ``[a, b, ..., h] and 19,992 more`` past ``limit`` items; reads only what it shows."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(repr(item) if isinstance(item, str) else str(item))
        else:
            more += 1
    text = f"[{', '.join(shown)}]"
    return f"{text} and {more:,} more" if more else text


def first_repeated(items: Iterable[object]) -> object | None:
    """The first item seen a second time, in one pass (None when all are distinct)."""
    seen: set = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None
