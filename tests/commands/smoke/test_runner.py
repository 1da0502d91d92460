"""xlacc.commands.smoke.runner: a child that crashes, hangs or fails is reported, never raised."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

from process_support import wait_gone

from xlacc.commands.smoke import runner
from xlacc.commands.smoke.records import RecordWriter, read_records
from xlacc.commands.smoke.runner import (
    ChildResult,
    child_env,
    run_child,
    run_harness,
    signal_name,
)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def run_python(code: str, timeout: float = 30, records: Path | None = None) -> ChildResult:
    return run_child(python(code), timeout, env=child_env(), records_path=records)


def test_signal_kills_the_child_and_is_named():
    result = run_python("import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGSEGV)")
    assert result.returncode == -11
    assert result.signal_name == "SIGSEGV"
    assert result.crashed and not result.timed_out
    assert "before" in result.output
    assert result.describe() == "was killed by SIGSEGV"


def test_null_pointer_read_is_a_sigsegv():
    result = run_python("import ctypes; ctypes.string_at(0)")
    assert result.signal_name == "SIGSEGV"
    assert result.crashed


def test_abort_is_sigabrt():
    result = run_python("import os; os.abort()")
    assert result.signal_name == "SIGABRT"


def with_a_grandchild(pid_file: Path, then: str) -> str:
    """A child that starts a sleeping grandchild (its pid into ``pid_file``), says so, then runs ``then``."""
    return f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        {then}
    """


def test_hang_is_killed_with_its_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    result = run_python(with_a_grandchild(pid_file, "time.sleep(120)"), timeout=3)
    assert result.timed_out
    assert result.returncode is None
    assert not result.crashed
    assert time.monotonic() - started < 30
    assert "started" in result.output
    assert result.describe().startswith("timed out after")
    grandchild = int(pid_file.read_text())
    wait_gone(grandchild)


def test_a_grandchild_holding_the_output_open_does_not_hold_the_parent(tmp_path):
    """The child exits; something it started in the background keeps stdout open for a minute."""
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    result = run_python(with_a_grandchild(pid_file, "pass"), timeout=60)
    assert time.monotonic() - started < 30  # not the grandchild's minute
    assert result.returncode == 0 and not result.timed_out and "started" in result.output
    wait_gone(int(pid_file.read_text()))


def test_a_child_that_exits_is_collected_at_once(monkeypatch):
    """Its output ends as it exits: no grace period is waited (it was 2 s per child). The grace is
    made a minute here, so that waiting it cannot pass for a slow machine."""
    monkeypatch.setattr(runner, "EXIT_GRACE_SECONDS", 60.0)
    started = time.monotonic()
    result = run_python("print('done')")
    assert result.returncode == 0 and "done" in result.output
    assert time.monotonic() - started < 30


def test_nonzero_exit_keeps_code_and_both_streams():
    result = run_python("import sys; print('out line'); print('err line', file=sys.stderr); sys.exit(7)")
    assert result.returncode == 7
    assert result.signal_name is None
    assert not result.timed_out and not result.crashed
    assert "out line" in result.output and "err line" in result.output
    assert result.describe() == "exited with code 7"


def test_records_written_before_a_crash_survive(tmp_path):
    records = tmp_path / "records.jsonl"
    code = f"""
        import ctypes
        from xlacc.commands.smoke.records import RecordWriter
        writer = RecordWriter({str(records)!r})
        writer.step("registration")
        writer.check("registration", True, "registered")
        writer.step("numerics")
        print("not a record", flush=True)
        ctypes.string_at(0)
        writer.check("numerics", True, "never written")
    """
    result = run_python(code, records=records)
    assert result.signal_name == "SIGSEGV"
    checks = [r for r in result.records if r["type"] == "check"]
    assert checks == [{"type": "check", "name": "registration", "ok": True, "detail": "registered"}]
    assert result.last_step == "numerics"
    assert not result.finished


def test_a_line_cut_short_is_dropped(tmp_path):
    path = tmp_path / "records.jsonl"
    writer = RecordWriter(path)
    writer.check("lowering", False, "no custom call")
    writer.exit(1, "failed")
    writer.close()
    with open(path, "a") as f:
        f.write('{"type": "check", "name": "numer')
    records = read_records(path)
    assert [r["type"] for r in records] == ["check", "exit"]
    assert records[0]["ok"] is False
    assert read_records(tmp_path / "missing.jsonl") == []


def test_signal_name_of_return_codes():
    assert signal_name(-6) == "SIGABRT"
    assert signal_name(0) is None
    assert signal_name(3) is None
    assert signal_name(None) is None


def test_run_harness_finds_xlacc_from_any_directory(tmp_path):
    """The child imports this xlacc (PYTHONPATH), gets a records file, and its records come back."""
    result = run_harness("xlacc.commands.smoke.harness_jax", ["--project", str(tmp_path / "nowhere")], timeout=120, cwd=tmp_path)
    assert result.returncode == 1, result.output
    assert result.finished
    failed = [r for r in result.records if r["type"] == "check" and r["ok"] is False]
    assert failed and failed[0]["name"] == "project"
    assert "no xlacc.toml" in failed[0]["detail"]


def test_records_a_killed_run_left_behind_are_cleared_and_no_others(tmp_path, monkeypatch):
    import subprocess
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    left = tmp_path / f"xlacc-records-{gone.pid}-abc123.jsonl"
    ours = tmp_path / f"xlacc-records-{os.getpid()}-def456.jsonl"
    other = tmp_path / "xlacc-records-notes.jsonl"
    for path in (left, ours, other):
        path.write_text("{}\n")
    run_harness("json.tool", [], 30)
    assert not left.exists() and ours.exists() and other.exists()
