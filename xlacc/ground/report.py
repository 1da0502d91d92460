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
EXIT_INTERNAL = 70  # a bug in xlacc itself (EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it


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

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` prints, as Python objects."""
        out: dict[str, Any] = {
            "checks": [c.to_json() for c in self.checks],
            "findings": [f.to_json() for f in rank(self.findings)],
        }
        out.update(self.data)
        out["exit_code"] = self.code()
        return out

    def to_json(self) -> str:
        """What ``--json`` prints: one JSON object."""
        return json.dumps(self.to_dict(), indent=2, default=str)


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


def use_color(stream=None) -> bool:
    return "NO_COLOR" not in os.environ and (stream or sys.stdout).isatty()


def console(stderr: bool = False):
    from rich.console import Console  # lazy: rich takes 34 ms to import; a --json run never needs it

    return Console(stderr=stderr, no_color=not use_color(sys.stderr if stderr else None), highlight=False, soft_wrap=True)


MARKS = {True: ("✓", "green"), False: ("✗", "red"), None: ("-", "yellow")}
SEVERITY_STYLE = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}

# A rendered line: (text, style) pieces; the style is a rich style name, "" for none.
Line = list[tuple[str, str]]


def layout(report: Report) -> list[Line]:
    """The report as lines of styled pieces: the one layout behind colour and plain output."""
    lines: list[Line] = [[(report.title, "bold")]] if report.title else []
    for c in report.checks:
        mark, style = MARKS[c.ok]
        lines.append([(mark, style), (f" {c.name}", "")] + ([(f"  {c.detail}", "dim")] if c.detail else []))
    findings = rank(report.findings)
    if findings:
        lines.append([])
    for f in findings:
        mark, style = SEVERITY_STYLE[f.severity]
        lines.append([(f"{mark} {f.code}", style), (f": {f.title}", "")])
        for label, text in (("evidence", f.evidence), ("fix", f.fix)):
            if text:
                first, *rest = text.splitlines() or [""]
                lines.append([("    ", ""), (f"{label}:", "dim"), (f" {first}", "")])
                lines += [[(f"      {line}", "")] for line in rest]
    lines += [[(note, "")] for note in report.notes]
    return lines


ASCII_MARKS = {"✓": "ok", "✗": "FAIL"}  # where the console cannot print the marks (both came out as "?")


def write_lines(lines: list[Line], stderr: bool = False) -> None:
    """Colour through rich on a terminal; plain text otherwise (and without importing rich)."""
    stream = sys.stderr if stderr else sys.stdout
    if not _can_print(stream, "".join(ASCII_MARKS)):
        lines = [_with_ascii_mark(line) for line in lines]
    if not use_color(stream):
        stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))
        stream.flush()
        return
    from rich.text import Text  # lazy: rich takes 34 ms to import; a --json run never needs it

    out = console(stderr=stderr)
    for line in lines:
        out.print(Text.assemble(*line))


def _can_print(stream, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _with_ascii_mark(line: Line) -> Line:
    if not line or line[0][0][:1] not in ASCII_MARKS:
        return line
    (text, style), *rest = line
    return [(ASCII_MARKS[text[0]] + text[1:], style), *rest]


def render_text(report: Report) -> None:
    write_lines(layout(report))


def emit(report: Report, as_json: bool) -> int:
    """Print the report and return its exit code."""
    if as_json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        render_text(report)
    return report.code()


def error_line(message: str) -> None:
    """The one line a usage error or a user-fixable problem gets (no traceback)."""
    first, *rest = str(message).strip().splitlines() or ["unknown error"]
    write_lines([[("error:", "red"), (f" {first}", "")], *[[(line, "")] for line in rest]], stderr=True)
