"""xlacc.ground.process: a command in its own session, its output streamed to a sink, its group stopped.

run-smoke's children (test_runner.py) and doctor's commands (test_diagnosis_command.py,
test_diagnosis_hostile.py) test it through their callers; these tests pin what both rely on."""

from __future__ import annotations

import subprocess
import sys

from process_support import alive, pid_written, running

from xlacc.ground.process import run_in_session


class Chunks:
    def __init__(self):
        self.data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_every_byte_reaches_the_sink_in_order_and_the_exit_code_is_kept():
    sink = Chunks()
    code = "import sys\nfor i in range(20000): print(i)\nsys.stdout.flush(); sys.stderr.write('end\\n'); sys.exit(3)"
    ended = run_in_session(python(code), 60, sink, exit_grace=2.0)
    assert ended.returncode == 3
    lines = bytes(sink.data).decode().splitlines()
    assert lines[:-1] == [str(i) for i in range(20000)] and lines[-1] == "end"


TRAPS_SIGTERM = """
import pathlib, signal, sys, time
def leave(*_):
    pathlib.Path(sys.argv[1]).write_text("cleaned up")
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
print("ready", flush=True)
time.sleep(60)
"""


def test_a_timeout_gives_the_group_sigterm_first_only_with_a_grace(tmp_path):
    for grace, expected in ((2.0, True), (0.0, False)):
        marker = tmp_path / f"cleaned-{grace}"
        ended = run_in_session([*python(TRAPS_SIGTERM), str(marker)], 1.0, Chunks(), exit_grace=0.5, term_grace=grace)
        assert ended.returncode is None and 1.0 <= ended.seconds < 30  # not the command's 60 s
        assert marker.exists() is expected, grace


def test_descendants_that_left_the_group_are_stopped_with_it(tmp_path):
    """`setsid` (and a daemon's double fork) takes a process out of the command's group and session;
    it is still stopped when the command is done, however deep it was started."""
    pids = tmp_path / "pids"
    # the command ends only once both have written their pids (on a busy machine the inner shell
    # could otherwise be stopped before it wrote its own)
    wait_for_both = f"until [ $(cat {pids} 2>/dev/null | wc -l) -ge 2 ]; do sleep 0.05; done"
    command = f"setsid sleep 61 & echo $! >> {pids}; setsid sh -c 'sleep 62 & echo $! >> {pids}; sleep 63' & {wait_for_both}; echo done"
    ended = run_in_session(["sh", "-c", command], 30, Chunks(), exit_grace=0.5)
    assert ended.returncode == 0 and ended.seconds < 30  # not the sleeps' minute
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2 and not any(running(pid) for pid in started)


RUNS_A_COMMAND = """
import sys
from xlacc.ground.process import run_in_session
class Sink:
    def feed(self, chunk): pass
run_in_session(["sh", "-c", f"echo $$ > {sys.argv[1]}; exec sleep 60"], 60, Sink(), exit_grace=0.5)
"""


def test_the_command_dies_with_xlacc_even_from_sigkill(tmp_path):
    """A SIGKILL to xlacc (the OOM killer, a CI cancel) runs no cleanup: the kernel ends the command."""
    pid_file = tmp_path / "pid"
    xlacc = subprocess.Popen([*python(RUNS_A_COMMAND), str(pid_file)])
    pid_written(pid_file)
    xlacc.kill()
    xlacc.wait()
    assert not alive(pid_file, settle=10)


def test_with_other_threads_running_the_command_still_dies_with_xlacc(tmp_path):
    """A spinner thread rules out code between fork and exec: the signal is set by a trampoline."""
    pid_file = tmp_path / "pid"
    busy = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    xlacc = subprocess.Popen([*python(busy + RUNS_A_COMMAND), str(pid_file)])
    pid_written(pid_file)
    xlacc.kill()
    xlacc.wait()
    assert not alive(pid_file, settle=10)


def test_a_missing_program_is_still_file_not_found_with_threads_running():
    import threading

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        try:
            run_in_session(["no-such-program-xlacc"], 10, Chunks(), exit_grace=0.5)
        except FileNotFoundError:
            return
        raise AssertionError("no FileNotFoundError")
    finally:
        stop.set()
