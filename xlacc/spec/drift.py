"""How a project moved on from what xlacc generated: the signature fields that changed since, and
the user's launch functions that no longer match the entry points' calls."""

from __future__ import annotations

import re
from typing import Any

from xlacc.ground import paths
from xlacc.ground.errors import UsageError
from xlacc.readers.cxx_tokens import cxx_code
from xlacc.spec.checks import DISABLED_CODE, MAX_KERNEL_BYTES
from xlacc.spec.model import Spec
from xlacc.spec.reading import BASE_DIR, SPEC_FILE, _takes, from_dict, read_toml


def signature_changes(spec: Spec) -> list[str]:
    """What changed in the signature since xlacc generated the code (empty: nothing, or the
    project records no generation): each key that changed, against the spec xlacc generated
    from (kept in .xlacc/base), or the whole signature where that copy is gone."""
    if spec.generated is None or spec.generated.signature == spec.signature_digest:
        return []
    base = generated_from(spec)
    if base is None:
        return ["the op's signature (name, target, platform, api, frameworks, inputs, outputs, attrs, sharding, backward or kernel)"]
    before, now = base.signature_fields(), spec.signature_fields()
    return [_field_change(key, before.get(key), now.get(key)) for key in dict.fromkeys([*before, *now]) if before.get(key) != now.get(key)]

def launch_mismatches(spec: Spec, kernel: str) -> list[str]:
    """Each launch function in the user's kernel text that the entry points call with other
    parameters than it takes (counted, as a kernel may leave some unnamed): only the user can
    change it to match. None for a wrapped kernel, whose launch code xlacc writes."""
    if spec.origin is not None:
        return []
    code = DISABLED_CODE.sub(_lines_kept, cxx_code(kernel))  # a signature in a comment or under #if 0 is none
    kernel_file = paths.for_user(spec.root / spec.kernel_file)
    found = []
    for call in spec.calls:
        wanted = call.launch_parameters
        declared = list(re.finditer(rf"\b{call.launch}\s*\(([^()]*)\)", code))
        if declared and not any(_takes(m[1], len(wanted.split(","))) for m in declared):
            line = code.count("\n", 0, declared[0].start()) + 1
            takes = " ".join(declared[0][1].split())
            found.append(f"{kernel_file}:{line}: {call.launch}<T>() takes ({takes}) and is called with ({wanted}) now: change it to match")
    return found


def _lines_kept(match: re.Match) -> str:
    """Text left out, as the newlines it held: the lines after it keep their numbers."""
    return "\n" * match.group(0).count("\n") or " "

def kernel_launch_mismatches(spec: Spec) -> list[str]:
    """:func:`launch_mismatches` of the kernel file as it is now (none where it cannot be read)."""
    try:
        kernel = paths.read_user_file(spec.root / spec.kernel_file, MAX_KERNEL_BYTES).decode("utf-8", "replace")
    except (OSError, UsageError):
        return []
    return launch_mismatches(spec, kernel)

def generated_from(spec: Spec) -> Spec | None:
    """The spec as xlacc last generated code from it, where its copy still matches the record."""
    path = spec.root / BASE_DIR / SPEC_FILE
    try:
        base = from_dict(read_toml(path), path)
    except (OSError, UsageError):
        return None
    return base if base.signature_digest == spec.generated.signature else None


def _field_change(key: str, before: Any, now: Any) -> str:
    """``attrs: added alpha`` or ``platform: 'cuda' -> 'cpu'``."""
    if key in ("inputs", "outputs", "attrs"):
        old = {item[0]: item for item in before or []}
        new = {item[0]: item for item in now or []}
        parts = [f"added {name}" for name in new if name not in old] + [f"removed {name}" for name in old if name not in new]
        parts += [f"changed {name}" for name in new if name in old and old[name] != new[name]]
        return f"{key}: {', '.join(parts) or 'reordered'}"
    if before is None or now is None:
        return f"{key}: {'added' if before is None else 'removed'}"
    return f"{key}: {_short(before)} -> {_short(now)}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- loading ------------------------------------------------------------------------------------
