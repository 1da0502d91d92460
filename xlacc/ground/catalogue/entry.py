"""One catalogue entry: a finding code, its group and severity, and the words every command uses for it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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



@dataclass(frozen=True)
class CatalogueEntry:
    code: str
    group: str
    severity: Severity
    title: str
    explanation: str
    fix: str
    example: str  # one line: a text or snippet that triggers it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
