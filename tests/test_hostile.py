"""Hostile input, by class: nothing the user wrote is lost, nothing hangs, every answer is one line.

Classes: paths xlacc would write, numbers, output volume, names given on the command line, and
interrupted runs. Every case runs under a time bound (the issue's budget: 10 s for an answer), and
the output-volume cases under a memory bound. Each goes through `python -m xlacc` as a user would,
except where a bound is measured on the function that holds the data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from needs import needs_ffi_headers
from process_support import wait_gone

from xlacc.commands.new import project as scaffold
from xlacc.commands.smoke.runner import child_env, run_child
from xlacc.ground.process import HEAD_BYTES, MAX_LINE_CHARS, TAIL_BYTES

REPO = Path(__file__).resolve().parent.parent
ANSWER_SECONDS = 10  # the budget for any answer to a hostile input


def xlacc(*args: str, cwd: Path, timeout: float = ANSWER_SECONDS) -> subprocess.CompletedProcess:
    """`python -m xlacc ARGS`; fails the test when it takes more than ``timeout`` seconds of CPU
    (CPU time, so that a busy machine does not fail it; the wall time is bounded only as a hang)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    before = children_cpu_seconds()
    done = subprocess.run([sys.executable, "-m", "xlacc", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout * 6 + 30, check=False)
    spent = children_cpu_seconds() - before
    assert spent < timeout, f"xlacc {' '.join(args)} took {spent:.1f} s of CPU"
    return done


def children_cpu_seconds() -> float:
    """CPU time of this process's waited-for children (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def assert_usage_error(done: subprocess.CompletedProcess, fragment: str = "") -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and fragment in done.stderr, done.stderr


def tree(root: Path) -> dict[str, str]:
    """Every file and link under ``root`` with a digest of its content: what must not change."""
    state = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            state[str(path)] = "-> " + os.readlink(path)
        elif path.is_file():
            state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            state[str(path)] = "dir"
    return state


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A cpu project `demo` (never built: every refusal comes before the compiler) beside a user's file."""
    scaffold.create(scaffold.NewRequest(name="demo", platform="cpu", frameworks=["jax"], directory=tmp_path / "demo"))
    (tmp_path / "victim.txt").write_text("the user's own file\n")
    return tmp_path


def set_output(project: Path, value: str) -> None:
    spec = project / "xlacc.toml"
    spec.write_text(spec.read_text().replace("[build]\n", f"[build]\noutput = {json.dumps(value)}\n"))


# -- paths xlacc writes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output, fragment",
    [
        ("kernel.cc", "is one of the sources"),
        ("xlacc.toml", "is not a shared library"),
        ("demo/reference.py", "is not a shared library"),
        ("../victim.txt", "leads outside"),
        ("/tmp/xlacc-hostile-absolute.so", "leads outside"),
        ("build", "is a directory"),
        ("escape/libdemo.so", "leads outside"),  # escape -> .. (a symlink out of the project)
    ],
)
def test_spec_output_that_would_lose_a_file_is_a_usage_error(workspace, output, fragment):
    project = workspace / "demo"
    (project / "build").mkdir(exist_ok=True)
    (project / "escape").symlink_to("..")
    set_output(project, output)
    before = tree(workspace)
    done = xlacc("build", "demo", cwd=workspace)
    assert_usage_error(done, fragment)
    assert "[build.output]" in done.stderr
    assert tree(workspace) == before
    assert not Path("/tmp/xlacc-hostile-absolute.so").exists()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["build", "kernel.cc", "-o", "kernel.cc"], "is one of the sources"),
        (["build", "kernel.cc", "--library", "./kernel.cc"], "is one of the sources"),
        (["build", "kernel.cc", "-o", "xlacc.toml"], "is not a shared library"),
        (["build", ".", "-o", "../victim.txt"], "leads outside"),
        (["build", ".", "-o", "build"], "is a directory"),
    ],
)
def test_output_flag_that_would_lose_a_file_is_a_usage_error(workspace, args, fragment):
    (workspace / "demo" / "build").mkdir(exist_ok=True)
    before = tree(workspace)
    assert_usage_error(xlacc(*args, cwd=workspace / "demo"), fragment)
    assert tree(workspace) == before


def test_a_build_directory_that_is_a_file_is_a_usage_error(workspace):
    (workspace / "demo" / "build").write_text("not a directory")
    before = tree(workspace)
    assert_usage_error(xlacc("build", "demo", cwd=workspace), "is a file, not a directory")
    assert tree(workspace) == before


def test_new_force_over_a_users_directory_changes_nothing(workspace):
    project = workspace / "demo"
    (project / "reference.py").write_text("# the user's reference\n")
    (project / "kernel.cc").unlink()
    (project / "kernel.cc").mkdir()
    (project / "kernel.cc" / "notes.txt").write_text("the user's notes\n")
    before = tree(workspace)
    assert_usage_error(xlacc("new", "demo", "--platform", "cpu", "--force", cwd=workspace), "is a directory")
    assert tree(workspace) == before


def test_new_files_get_the_mode_the_umask_allows(tmp_path):
    """Generated files were once written 0600 whatever the umask."""
    old = os.umask(0o022)
    try:
        done = xlacc("new", "shared", "--platform", "cpu", cwd=tmp_path)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "shared").rglob("*") if p.is_file()}
    assert set(modes.values()) == {0o644}, modes


# -- numbers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--rtol", "nan"], "--rtol takes a finite number"),
        (["--atol", "nan"], "--atol takes a finite number"),
        (["--rtol", "inf"], "--rtol takes a finite number"),
        (["--atol", "1e999"], "--atol takes a finite number"),
        (["--atol", "-1e-3"], "--atol takes a finite number"),
        (["--timeout", "nan"], "--timeout takes a finite number"),
        (["--timeout", "inf"], "--timeout takes a finite number"),
        (["--timeout", "-5"], "--timeout takes a finite number"),
        (["--timeout", "0"], "--timeout takes a finite number"),
        (["--timeout", "soon"], "soon"),
        (["--sizes", "abc"], "--sizes takes comma-separated whole numbers"),
        (["--sizes", "1.5"], "--sizes takes comma-separated whole numbers"),
        (["--sizes", "1e3"], "--sizes takes comma-separated whole numbers"),
        (["--sizes", "0"], "--sizes takes element counts from 1"),
        (["--sizes", "-3"], "--sizes takes element counts from 1"),
        (["--sizes", "99999999999999999999"], "--sizes takes element counts from 1"),
        (["--sizes", ""], "--sizes needs at least one"),
        (["--sizes", ",,"], "--sizes needs at least one"),
        (["--seed", "-1"], "--seed takes a whole number"),
        (["--seed", "x"], "x"),
        (["--devices", "100000"], "--devices takes 1 to 64"),  # once minutes and gigabytes of host devices
        (["--devices", "0"], "--devices takes 1 to 64"),
    ],
)
def test_numbers_must_be_finite_and_in_range(workspace, args, fragment):
    """`--rtol nan` once turned a reference off by 1000 into a passing check, exit 0."""
    before = tree(workspace)
    assert_usage_error(xlacc("run-smoke", "demo", *args, cwd=workspace), fragment)
    assert tree(workspace) == before  # refused before anything was built


@pytest.mark.parametrize(
    "attr, fragment",
    [
        ("eps:i32=99999999999", "does not fit in i32"),
        ("eps:i64=-9223372036854775809", "does not fit in i64"),
        ("eps:f32=1e39", "does not fit in f32"),
        ("eps:f32=\uff15", "must be a f32 number"),  # a fullwidth 5: Python's float() takes it
        ("flag:bool=true", "type 'bool'; use one of"),
    ],
)
def test_attribute_defaults_fit_their_type(tmp_path, attr, fragment):
    """An i32 default of 99999999999 was accepted, then overflowed when the op was lowered."""
    assert_usage_error(xlacc("new", "op", "--template", "blank", "--platform", "cpu", "--attr", attr, cwd=tmp_path), fragment)
    assert list(tmp_path.iterdir()) == []


# -- files xlacc reads -------------------------------------------------------------------------------------
# A named pipe without a writer blocks whoever opens it; /dev/zero never ends (a build once read it to
# 24 GB). A file xlacc reads must be a regular file.


def pipe_and_endless_file(folder: Path, suffix: str) -> list[str]:
    os.mkfifo(folder / f"pipe{suffix}")
    (folder / f"endless{suffix}").symlink_to("/dev/zero")
    return [f"pipe{suffix}", f"endless{suffix}"]


def test_a_source_that_is_a_pipe_or_a_device_is_refused(tmp_path):
    for name in pipe_and_endless_file(tmp_path, ".cc"):
        assert_usage_error(xlacc("build", name, cwd=tmp_path), "not a regular file")
        assert_usage_error(xlacc("new", "op", "--from", name, cwd=tmp_path), "not a regular file")


def test_a_header_or_a_project_file_that_is_a_device_is_refused(workspace):
    project = workspace / "demo"
    (project / "endless.h").symlink_to("/dev/zero")
    kernel = project / "kernel.cc"
    kernel.write_text('#include "endless.h"\n' + kernel.read_text())
    assert_usage_error(xlacc("build", "demo", cwd=workspace), "a character device, not a regular file")
    kernel.unlink()
    kernel.symlink_to("/dev/zero")
    assert_usage_error(xlacc("update", "demo", cwd=workspace), "a character device, not a regular file")
    (project / "xlacc.toml").unlink()
    os.mkfifo(project / "xlacc.toml")
    assert_usage_error(xlacc("build", "demo", cwd=workspace), "a named pipe, not a regular file")


def test_a_kernel_to_wrap_is_read_up_to_a_size(tmp_path):
    """A 67 MB one-line kernel once took 6 GB and more than 20 s to parse."""
    (tmp_path / "big.cc").write_text("// " + "x" * 3_000_000 + "\n")
    assert_usage_error(xlacc("new", "op", "--from", "big.cc", cwd=tmp_path), "more than the 2 MB")


# -- what xlacc.toml may say ---------------------------------------------------------------------------------


def edit_spec(project: Path, old: str, new: str) -> None:
    spec = project / "xlacc.toml"
    text = spec.read_text()
    assert old in text, old
    spec.write_text(text.replace(old, new, 1))


def test_a_recorded_file_outside_the_project_is_never_touched(workspace):
    """A [files] key of the record naming a file outside the project once had `xlacc update` delete it."""
    victim = workspace / "victim.txt"
    digest = hashlib.sha256(victim.read_bytes()).hexdigest()[:16]
    record = workspace / "demo" / ".xlacc" / "record.toml"
    kept = record.read_text()
    for key in (str(victim), "../victim.txt"):
        record.write_text(kept.replace("[files]\n", f'[files]\n"{key}" = "sha256:{digest}"\n'))
        assert_usage_error(xlacc("update", "demo", cwd=workspace), "record.toml: [files]")
        assert victim.read_text() == "the user's own file\n"
    record.write_text(kept)


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        # The module part of a reference once went into `from .MODULE import ...` unchecked.
        ('api = "ffi"', 'api = "ffi"\nreference = "demo/reference import reference as _r; import os; from .reference.py:reference"', "op.reference"),
        ('api = "ffi"', 'api = "ffi"\nreference = "demo/reference.py:import"', "op.reference"),
        ('api = "ffi"', 'api = "ffi"\nreference = "demo/ref-x.py:reference"', "op.reference"),
        ('kernel = "kernel.cc"', 'kernel = "kernel.cc\\n#include <evil>"', "build.kernel"),
        ('kernel = "kernel.cc"', 'kernel = "../../outside/victim.cc"', "build.kernel"),
        ('kernel = "kernel.cc"', 'kernel = "xlacc.toml"', "build.kernel"),
        ('kernel = "kernel.cc"', 'kernel = "demo/_entry_points.cc"', "build.kernel"),
        ('flags = []', 'flags = ["-O2\\u0000"]', "build.flags"),
        ('defines = []', 'defines = ["A=1\\u0000"]', "build.defines"),
        ('include_dirs = []', 'include_dirs = ["inc\\u0000"]', "build.include_dirs"),
    ],
)
def test_spec_values_that_would_break_the_generated_code_are_refused(workspace, old, new, fragment):
    edit_spec(workspace / "demo", old, new)
    before = tree(workspace)
    for command in ("update", "build"):
        assert_usage_error(xlacc(command, "demo", cwd=workspace), fragment)
    assert tree(workspace) == before


def test_a_folder_xlacc_toml_cannot_name_is_refused_for_wrapping(tmp_path):
    folder = tmp_path / 'q"d'
    folder.mkdir()
    (folder / "k.cc").write_text("void k(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = x[i]; }\n")
    assert_usage_error(xlacc("new", "op", "--from", 'q"d/k.cc', cwd=tmp_path), "quotes, backslashes or control characters")


def test_two_forced_news_in_one_second_keep_both_edits(tmp_path):
    project = tmp_path / "ex"
    project.mkdir()
    for version in ("VERSION_A", "VERSION_B"):
        (project / "kernel.cc").write_text(version)
        assert xlacc("new", "ex", "--platform", "cpu", "--force", cwd=tmp_path).returncode == 0
    kept = sorted(p.read_text() for p in (project / ".xlacc" / "backup").glob("*/kernel.cc"))
    assert kept == ["VERSION_A", "VERSION_B"]


# -- output volume ---------------------------------------------------------------------------------------


def measured(code: str, timeout: float) -> dict:
    """Run ``code`` (which sets ``result``) in a fresh interpreter; its peak memory growth and CPU
    time (its own and its children's)."""
    probe = textwrap.dedent(
        """
        import json, resource, sys, time
        from xlacc.commands.smoke.runner import child_env, run_child
        def cpu():
            return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = cpu()
        {code}
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        print(json.dumps({{"mb": grown, "seconds": cpu() - started, "output": result.output[-300:],
                          "chars": len(result.output), "returncode": result.returncode}}))
        """
    ).format(code=textwrap.indent(textwrap.dedent(code), "").strip())
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=timeout + 60, env=child_env(), check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_child_printing_300_mb_costs_xlacc_little_memory():
    """300 MB printed by a kernel once made xlacc hold 937 MB."""
    printer = "import sys; line = ('x' * 99 + '\\n') * 10000; [sys.stdout.write(line) for _ in range(300)]; print('the end')"
    stats = measured(f"result = run_child([sys.executable, '-c', {printer!r}], 120, env=child_env())", timeout=60)
    assert stats["returncode"] == 0 and stats["output"].endswith("the end\n")
    assert stats["mb"] < 100, stats
    assert stats["seconds"] < 60, stats
    assert stats["chars"] < HEAD_BYTES + TAIL_BYTES + 200


def test_kept_output_has_the_head_the_tail_and_short_lines():
    code = (
        "import sys; print('FIRST LINE'); sys.stdout.write('y' * 3_000_000 + '\\n'); "
        "sys.stdout.write(('z' * 50 + '\\n') * 200_000); print('LAST LINE', flush=True); import os; os.abort()"
    )
    started = time.process_time() + children_cpu_seconds()
    result = run_child([sys.executable, "-c", code], 60, env=child_env())
    assert time.process_time() + children_cpu_seconds() - started < ANSWER_SECONDS
    assert result.signal_name == "SIGABRT"
    assert result.output.startswith("FIRST LINE\n") and "LAST LINE" in result.output[-200:]
    assert "bytes of output left out" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= MAX_LINE_CHARS + 40


# -- names given on the command line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["new", "x; rm -rf ~", "--platform", "cpu"], "invalid name"),
        (["new", "", "--platform", "cpu"], "invalid name"),
        (["new", "a" * 300, "--platform", "cpu"], "invalid name"),
        (["new", "naïve", "--platform", "cpu"], "invalid name"),
        (["new", "class", "--platform", "cpu"], "keyword"),
        (["new", "__op", "--platform", "cpu"], "reserved"),
        (["new", "op", "--template", "../../etc"], "unknown template"),
        (["new", "op", "--platform", "cpu", "--target", 'x"); system("id'], "invalid target"),
        (["build", "demo", "--platform", "rocm"], "--platform 'rocm' is not allowed"),
        (["build", "demo", "--platform", "cuda"], "does not match the project"),
        (["build", "demo", "--arch", "sm_80;rm"], "invalid GPU arch"),
        (["build", "demo", "--", "--force"], "takes nothing after --"),
        (["run-smoke", "demo", "--framework", "tensorflow"], "unknown framework"),
        (["run-smoke", "demo", "--framework", "torch-xla"], "is not generated for torch-xla"),
        (["frobnicate"], "No such command"),
        (["doctor", "--symbol", ""], "--symbol takes the name of an entry point"),
        (["new", "x", "--platform", "cpu", "--framework", ","], "--framework names nothing"),  # once jax alone
        (["new", "x", "--platform", "cpu", "--dtype", ""], "--dtype names nothing"),
        (["doctor", "--arch", ""], "--arch"),
    ],
)
def test_names_that_cannot_be_used_are_one_line_errors(workspace, args, fragment):
    before = tree(workspace)
    assert_usage_error(xlacc(*args, cwd=workspace), fragment)
    assert tree(workspace) == before


# -- interrupted runs ----------------------------------------------------------------------------------------


def interrupt(process: subprocess.Popen, when_exists: Path, timeout: float = 60, how: int = signal.SIGINT) -> tuple[int, str, float]:
    """Ctrl-C (SIGINT to xlacc), or ``how``, once ``when_exists`` appears; exit code, stderr, seconds to exit."""
    deadline = time.monotonic() + timeout
    while not when_exists.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert when_exists.exists(), process.communicate()[1]
    sent = time.monotonic()
    process.send_signal(how)
    _, stderr = process.communicate(timeout=30)
    return process.returncode, stderr, time.monotonic() - sent


def start(*args: str, cwd: Path, **extra_env: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **extra_env}
    return subprocess.Popen([sys.executable, "-m", "xlacc", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


@needs_ffi_headers
@pytest.mark.slow
@pytest.mark.parametrize("how, code, message", [(signal.SIGINT, 130, "error: interrupted\n"), (signal.SIGTERM, 143, "")])
def test_interrupted_run_smoke_leaves_no_child(workspace, how, code, message):
    """The harness's child runs in its own session: Ctrl-C (or kill) reaches xlacc only, and xlacc ends it."""
    project = workspace / "demo"
    pid_file = workspace / "harness.pid"
    reference = project / "demo" / "reference.py"
    reference.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n" + reference.read_text())
    process = start("run-smoke", "demo", "--framework", "jax", cwd=workspace)
    try:
        exit_code, stderr, seconds = interrupt(process, pid_file, timeout=120, how=how)
    finally:
        process.kill()
    assert exit_code == code and stderr == message, stderr
    assert seconds < 15  # not the child's own minutes: it was stopped
    wait_gone(int(pid_file.read_text()))


STALLING_COMPILER = """\
#!/bin/sh
if [ "$1" = "--version" ]; then echo "stalling c++ 1.0.0"; exit 0; fi
touch "$XLACC_TEST_STARTED"
exec sleep 60
"""


@needs_ffi_headers
def test_ctrl_c_during_a_build_exits_130_with_one_line(workspace):
    compiler = workspace / "stallcc"
    compiler.write_text(STALLING_COMPILER)
    compiler.chmod(0o755)
    started = workspace / "compiler-started"
    process = start("build", "demo", cwd=workspace, CXX=str(compiler), XLACC_TEST_STARTED=str(started))
    try:
        code, stderr, seconds = interrupt(process, started)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing of the group may be left
            os.killpg(process.pid, signal.SIGKILL)
    assert code == 130 and stderr == "error: interrupted\n", stderr
    assert seconds < 15  # not the child's own minutes: it was stopped
    assert not (workspace / "demo" / "build" / "libdemo.so").exists()


KILLED_AT_THE_THIRD_RENAME = """
import os, signal, sys
from xlacc import cli
rename = os.replace
renames = []
def killed_at_the_third(src, dst):
    renames.append(dst)
    if len(renames) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return rename(src, dst)
os.replace = killed_at_the_third
sys.argv = ["xlacc", *sys.argv[1:]]
cli.main()
"""


def leftovers(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob(".*") if p.name.endswith((".tmp", ".bak")))


@pytest.mark.parametrize("command", [["update", "demo"], ["new", "demo", "--platform", "cpu", "--force"]])
def test_what_a_killed_write_left_is_removed_by_the_next_run(workspace, command):
    """A SIGKILL between two renames once left hidden .tmp and .bak files in the project forever."""
    project = workspace / "demo"
    bindings = project / "demo" / "jax.py"
    bindings.write_text(bindings.read_text() + "# my jax edit\n")
    edit_spec(project, 'api = "ffi"', 'api = "legacy"')
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_THE_THIRD_RENAME, *command], cwd=workspace, env=env, capture_output=True, timeout=60, check=False)
    assert killed.returncode == -signal.SIGKILL and leftovers(project)
    done = xlacc(*command, cwd=workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftovers(project) == []
    assert any(b"# my jax edit\n" in p.read_bytes() for p in project.rglob("*") if p.is_file())  # merged, or backed up


@pytest.mark.parametrize("path", ["demo/jax.py", "kernel.cc", "demo/reference.py"])
def test_update_over_a_generated_file_that_is_now_a_directory_is_one_line(workspace, path):
    project = workspace / "demo"
    (project / path).unlink()
    (project / path).mkdir()
    before = tree(workspace)
    assert_usage_error(xlacc("update", "demo", cwd=workspace), "is a directory, not a file: xlacc update reads each file it wrote")
    assert tree(workspace) == before
