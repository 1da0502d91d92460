"""HLO and StableHLO text: a module that holds no custom call means the op was folded away."""

from __future__ import annotations

import re

from xlacc.commands.doctor.rules import custom_call
from xlacc.ground.report import Finding

# At the start of a line, as HLO text and MLIR print them (not "HloModule dump enabled" in a log).
HLO_MODULES = (
    re.compile(r"^[ \t]*HloModule\s+([\w.\-]{1,256})(?:,|[ \t]*$)", re.M),
    re.compile(r"^[ \t]*ENTRY\s+%?([\w.\-]{1,256})\s*[(\{]", re.M),
    re.compile(r"^[ \t]*func\.func\s+(?:public\s+)?@(main)\b", re.M),
)
CUSTOM_CALL = re.compile(r"custom-call|custom_call")


def diagnose_hlo(text: str, where: str | None = None) -> list[Finding]:
    """HLO or StableHLO text in which no module holds a custom call: the op was folded away."""
    modules = next((found for pattern in HLO_MODULES if (found := pattern.findall(text))), [])
    if not modules:
        return []
    names = ", ".join(f"`{name}`" for name in dict.fromkeys(modules))
    prefix = f"{where}: " if where else ""
    found = custom_call.optimized_away(f"{prefix}HLO module {names} holds no custom-call", CUSTOM_CALL.findall(text), likelihood=0.5)
    return [found] if found else []
