"""run-smoke's checks as they finish: each shown once, with the time since the run began, and a
summary line at the end; on a terminal the first check comes before the harness is done."""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import time

import pytest
from locations import REPO_DIR

from xlacc.commands.smoke import live as live_checks
from xlacc.ground.report import Check, Report

CHECK_LINE = re.compile(r"^[✓✗-] .*  \d+\.\d s$")
SUMMARY_LINE = re.compile(r"^\d+ passed(, \d+ failed)?(, \d+ skipped)? in \d+\.\d s$")
FIRST_CHECK_CPU_SECONDS = 2.0  # the budget for the first check, in CPU time of run-smoke


def test_each_check_is_shown_once_with_its_time_whether_from_records_or_the_report(capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    live = live_checks.LiveChecks()
    report = Report(title="run-smoke op (jax, cpu)")
    live.watch(report)
    report.add(Check("build", True, "up to date"))
    show = live.from_records("jax: ")
    show({"type": "step", "name": "registration"})
    show({"type": "check", "name": "registration", "ok": True, "detail": "registered"})
    report.checks += [Check("jax: registration", True, "registered")]  # as absorb_records adds it later
    report.add(Check("jax: child process", False, "was killed by SIGSEGV"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "run-smoke op (jax, cpu)"
    assert [line.rsplit("  ", 1)[0] for line in lines[1:]] == ["✓ build  up to date", "✓ jax: registration  registered", "✗ jax: child process  was killed by SIGSEGV"]
    assert all(CHECK_LINE.match(line) for line in lines[1:]), lines
    assert len(report.checks) == 3


def test_the_summary_counts_how_each_check_ended():
    report = Report(title="", checks=[Check("a", True), Check("b", False), Check("c", None), Check("d", True)])
    assert live_checks.summary(report, 13.74) == "2 passed, 1 failed, 1 skipped in 13.7 s"
    assert live_checks.summary(Report(title="", checks=[Check("a", True)]), 1.0) == "1 passed in 1.0 s"


def _cpu_seconds(pid: int) -> float:
    """CPU time a live process has used so far (its own, not its children's)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="cpu projects build with g++, which is not on PATH")
def test_run_smoke_on_a_terminal_shows_its_first_check_soon_and_ends_with_a_summary(tmp_path):
    """run-smoke printed nothing for 8-14 s, then everything at once."""
    pytest.importorskip("jax", reason="run-smoke's JAX harness needs jax")
    from xlacc.commands.build import builder
    from xlacc.commands.new import project as scaffold
    from xlacc import spec

    project = tmp_path / "live_op"
    scaffold.create(scaffold.NewRequest(name="live_op", platform="cpu", frameworks=["jax"], directory=project))
    assert builder.build_spec(spec.load(project)).ok
    leader, follower = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR), "NO_COLOR": "1"}
    child = subprocess.Popen([sys.executable, "-m", "xlacc", "run-smoke", "--framework", "jax"], cwd=project, env=env, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    lines, arrived, first_check_cpu = [], [], None
    pending = b""
    deadline = time.monotonic() + 300  # a hang guard, not a measure
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the child is done
            break
        if not chunk:
            break
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            text = line.decode("utf-8", "replace").rstrip("\r")
            lines.append(text)
            arrived.append(time.monotonic())
            if first_check_cpu is None and CHECK_LINE.match(text):
                first_check_cpu = _cpu_seconds(child.pid)
    os.close(leader)
    assert child.wait(timeout=60) == 0, "\n".join(lines)
    check_lines = [i for i, line in enumerate(lines) if CHECK_LINE.match(line)]
    assert lines[0].startswith("run-smoke live_op") and lines[check_lines[0]].startswith("✓ build"), lines
    assert first_check_cpu is not None and first_check_cpu < FIRST_CHECK_CPU_SECONDS, first_check_cpu
    # Shown as it finished: the build's line came while the harness still had its checks to run.
    assert arrived[check_lines[-1]] - arrived[check_lines[0]] > 0.5, list(zip(arrived, lines))
    assert SUMMARY_LINE.match(lines[-1]) and lines[-1].startswith(f"{len(check_lines)} passed"), lines
