"""run-smoke's checks printed as they finish, each with the time since the run began, and the
summary line a run ends with (``12 passed, 1 failed, 2 skipped in 13.7 s``).

A check reaches the screen either from the harness's records file, while the child still runs,
or when it is added to the report (the build, a framework not installed, a child that crashed);
the report later holds the harness's checks too, and those already shown are not shown again.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from typing import Any

from xlacc.ground.report import Check, Line, Report, layout, write_lines


class LiveChecks:
    """Prints checks as they come; :meth:`watch` makes a report's check list print what it is given."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._shown_early: deque[tuple[str, Any, str]] = deque()  # from records, not yet in the report
        self._lock = threading.Lock()  # the records thread and the main thread both print

    def watch(self, report: Report) -> None:
        """Print the report's title now and each check added to it from now on."""
        write_lines([[(report.title, "bold")]])
        report.checks = _PrintingList(self, report.checks)

    def from_records(self, prefix: str):
        """An ``on_record`` for :func:`xlacc.commands.smoke.runner.run_harness`: shows each check record."""

        def show(record: dict[str, Any]) -> None:
            if record.get("type") == "check":
                check = Check(prefix + str(record.get("name")), record.get("ok"), str(record.get("detail", "")))
                with self._lock:
                    self._shown_early.append(_key(check))
                    self._print(check)

        return show

    def added(self, check: Check) -> None:
        with self._lock:
            if self._shown_early and self._shown_early[0] == _key(check):
                self._shown_early.popleft()
                return
            self._print(check)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _print(self, check: Check) -> None:
        line: Line = layout(Report(title="", checks=[check]))[0]
        write_lines([line + [(f"  {self.elapsed():.1f} s", "dim")]])


class _PrintingList(list):
    """A report's checks: each one appended is shown (once) as it arrives."""

    def __init__(self, live: LiveChecks, checks: list[Check]):
        super().__init__(checks)
        self._live = live

    def append(self, check: Check) -> None:
        super().append(check)
        self._live.added(check)

    def extend(self, checks) -> None:
        for check in checks:
            self.append(check)

    def __iadd__(self, checks):
        self.extend(checks)
        return self


def _key(check: Check) -> tuple[str, Any, str]:
    return (check.name, check.ok, check.detail)


def summary(report: Report, seconds: float) -> str:
    """``12 passed, 1 failed, 2 skipped in 13.7 s``: every check counted by how it ended."""
    passed = sum(c.ok is True for c in report.checks)
    failed = sum(c.ok is False for c in report.checks)
    skipped = sum(c.ok is None for c in report.checks)
    counts = [f"{passed} passed"] + ([f"{failed} failed"] if failed else []) + ([f"{skipped} skipped"] if skipped else [])
    return f"{', '.join(counts)} in {seconds:.1f} s"


def finish(live: LiveChecks, report: Report) -> int:
    """What the checks shown so far leave to say: the findings, the notes and the summary line;
    the report's exit code."""
    report.notes.append(summary(report, live.elapsed()))
    write_lines(layout(dataclasses.replace(report, title="", checks=[])))
    return report.code()
