"""xlacc.ground.locks: one xlacc writes a project at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from locations import REPO_DIR

from xlacc.ground import locks

# `xlacc ARGS` whose writes start a second after it decided what to write: the window in which a
# second `xlacc new` into the same folder once found it empty too.
SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from xlacc.commands.new import record
    write_all = record.write_all
    def slow(*args, **kwargs):
        time.sleep(1)
        return write_all(*args, **kwargs)
    record.write_all = slow
    from xlacc import cli
    sys.argv = ["xlacc", *sys.argv[1:]]
    cli.main()
    """
)


def start(cwd: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR), "NO_COLOR": "1"}
    return subprocess.Popen([sys.executable, "-c", SLOW_WRITER, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_news_into_one_folder_at_once_do_not_both_succeed(tmp_path):
    both = [start(tmp_path, "new", "demo", "--platform", "cpu", "--template", template) for template in ("add", "rms-norm")]
    done = [(p.wait(timeout=120), *p.communicate()) for p in both]
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 2], done
    _, _, refused = next(d for d in done if d[0] == 2)
    assert "waiting for xlacc new (pid " in refused and "is not empty; nothing was written" in refused, refused
    assert refused.count("error:") == 1
    assert not list(tmp_path.glob(".*lock")) and not (tmp_path / "demo" / ".xlacc" / "lock").exists()


def test_an_update_waits_for_the_build_holding_the_project(tmp_path):
    from xlacc.commands.new import project as scaffold

    scaffold.create(scaffold.NewRequest(name="demo", platform="cpu", frameworks=["jax"], directory=tmp_path / "demo"))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from xlacc.ground import locks\n"
         "with locks.project_lock(sys.argv[1], 'build'):\n    print('held', flush=True); time.sleep(2)", str(tmp_path / "demo")],
        env={**os.environ, "PYTHONPATH": str(REPO_DIR)}, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout.readline() == "held\n"
    update = subprocess.run(
        [sys.executable, "-m", "xlacc", "update"], cwd=tmp_path / "demo", env={**os.environ, "PYTHONPATH": str(REPO_DIR), "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=120,
    )
    assert holder.wait(timeout=30) == 0  # the update could not finish before the build let go
    assert update.returncode == 0, update.stderr
    assert f"waiting for xlacc build (pid {holder.pid}), which is writing " in update.stderr


def test_the_lock_is_re_entrant_and_removed_after(tmp_path):
    with locks.project_lock(tmp_path / "p", "new"):
        (tmp_path / "p" / ".xlacc").mkdir(parents=True)
        with locks.project_lock(tmp_path / "p", "update"):  # now in the record, made meanwhile
            assert (tmp_path / "p" / ".xlacc" / "lock").read_text().split()[1] == "update"
        assert (tmp_path / ".p.xlacc-lock").read_text() == f"{os.getpid()} new\n"
    assert not (tmp_path / ".p.xlacc-lock").exists() and not (tmp_path / "p" / ".xlacc" / "lock").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_folder_where_no_lock_can_be_made_is_not_locked(tmp_path):
    tmp_path.chmod(0o555)
    try:
        with locks.project_lock(tmp_path / "p", "new"):
            assert not (tmp_path / ".p.xlacc-lock").exists()
    finally:
        tmp_path.chmod(0o755)
