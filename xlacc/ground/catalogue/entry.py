"""One catalogue entry: a finding code, its group and severity, and the words every command uses for it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from xlacc.ground.report import Severity

GROUPS = {
    "environment": "Environment",
    "build": "Build",
    "registration": "Registration and call",
    "library": "Shared object",
    "source": "Source",
    "runtime": "Runtime",
    "project": "Project and build",
    "transforms": "Sharding, vmap and grad",
}
DEFAULT_LIKELIHOOD = 0.5
RULES = "xlacc.commands.doctor.rules."  # where most codes are detected: one rule module each


@dataclass(frozen=True)
class CatalogueEntry:
    code: str
    group: str
    severity: Severity
    title: str
    explanation: str
    fix: str
    example: str  # one line: a text or snippet that triggers it
    # The one module that makes this finding (build and the harnesses call its functions); a code
    # only printed error texts show lives in the table of those texts, rules.error_text.
    home: str = field(kw_only=True)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
