"""Helpers for tests that check which processes outlive what (no tests here)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest


def running(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def alive(pid_file: Path, settle: float = 2.0) -> bool:
    """Whether the process whose pid the file holds still runs ``settle`` seconds on (a SIGKILL
    takes a moment to land)."""
    pid = int(pid_file.read_text())
    give_up = time.monotonic() + settle
    while running(pid):
        if time.monotonic() > give_up:
            return True
        time.sleep(0.02)
    return False


def pid_written(pid_file: Path, timeout: float = 30.0) -> int:
    """The pid a command writes to ``pid_file`` once it has started."""
    deadline = time.monotonic() + timeout
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(pid_file.read_text())


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} outlived the child it belonged to")
