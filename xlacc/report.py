"""The one place that prints: checks and findings as rich text or JSON, and the exit code.

Every command returns a :class:`Report`; ``cli.py`` hands it to :func:`emit`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_NEEDS_GPU = 3  # run-smoke: what could run passed, execution needs a GPU


@dataclass(frozen=True)
class Finding:
    """One diagnosis: a stable code, what was seen, and how to fix it."""

    code: str
    severity: Severity
    title: str
    evidence: str
    fix: str
    # Higher is more likely; used to rank several causes of one symptom.
    likelihood: float = 0.5

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "likelihood"}


@dataclass(frozen=True)
class Check:
    """One line of a command's result. ``ok`` is None when the check was skipped."""

    name: str
    ok: bool | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    title: str
    checks: list[Check] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Overrides the exit code derived from checks and findings (e.g. EXIT_NEEDS_GPU).
    exit_code: int | None = None

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    @property
    def failed(self) -> bool:
        return any(c.ok is False for c in self.checks) or any(
            f.severity == "error" for f in self.findings
        )

    def code(self) -> int:
        if self.exit_code is not None:
            return self.exit_code
        return EXIT_PROBLEM if self.failed else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "checks": [c.to_json() for c in self.checks],
            "findings": [f.to_json() for f in rank(self.findings)],
        }
        out.update(self.data)
        out["exit_code"] = self.code()
        return out


def rank(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then most likely; drop exact repeats."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for f in findings:
        key = (f.code, f.evidence)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return sorted(unique, key=lambda f: (SEVERITY_ORDER[f.severity], -f.likelihood))


def use_color() -> bool:
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, no_color=not use_color(), highlight=False, soft_wrap=True)


MARKS = {True: ("✓", "green"), False: ("✗", "red"), None: ("-", "yellow")}
SEVERITY_STYLE = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}


def render_text(report: Report) -> None:
    from rich.markup import escape

    out = console()
    if report.title:
        out.print(f"[bold]{escape(report.title)}[/bold]")
    for c in report.checks:
        mark, style = MARKS[c.ok]
        detail = f"  [dim]{escape(c.detail)}[/dim]" if c.detail else ""
        out.print(f"[{style}]{mark}[/{style}] {escape(c.name)}{detail}")
    findings = rank(report.findings)
    if findings:
        out.print()
    for f in findings:
        mark, style = SEVERITY_STYLE[f.severity]
        out.print(f"[{style}]{mark} {f.code}[/{style}]: {escape(f.title)}")
        for label, text in (("evidence", f.evidence), ("fix", f.fix)):
            if text:
                lines = text.splitlines() or [""]
                out.print(f"    [dim]{label}:[/dim] {escape(lines[0])}")
                for line in lines[1:]:
                    out.print(f"      {escape(line)}")
    for note in report.notes:
        out.print(escape(note))


def emit(report: Report, as_json: bool) -> int:
    """Print the report and return its exit code."""
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2, default=str) + "\n")
    else:
        render_text(report)
    return report.code()


def error_line(message: str) -> None:
    """The one line a usage error or a user-fixable problem gets (no traceback)."""
    from rich.markup import escape

    lines = str(message).strip().splitlines() or ["unknown error"]
    err = console(stderr=True)
    err.print(f"[red]error:[/red] {escape(lines[0])}")
    for extra in lines[1:]:
        err.print(extra, markup=False)
