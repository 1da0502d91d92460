"""One thing doctor examined (a file, a library, the environment's nvcc...) and what it found there.

The engine turns each Section into one check line: ✓ when no error finding survives the
``--check`` filter, ✗ when one does or the section itself failed, - when it was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xlacc.ground.report import Check, Finding


@dataclass
class Section:
    name: str
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    skipped: bool = False
    # A failure that no finding explains (a command that exited 1 with no known error text).
    failed: bool = False

    def filtered(self, only: set[str]) -> list[Finding]:
        return [f for f in self.findings if not only or f.code in only]

    def check(self, only: set[str]) -> Check:
        if self.skipped:
            return Check(self.name, None, self.detail)
        findings = self.filtered(only)
        errors = any(f.severity == "error" for f in findings)
        failed = self.failed and not only
        return Check(self.name, not (errors or failed), self._detail(findings))

    def _detail(self, findings: list[Finding]) -> str:
        counts = {severity: sum(1 for f in findings if f.severity == severity) for severity in ("error", "warning")}
        summary = ", ".join(f"{n} {severity}{'s' if n > 1 else ''}" for severity, n in counts.items() if n)
        return "; ".join(part for part in (self.detail, summary) if part)
