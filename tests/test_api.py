"""xlacc from Python: load() builds when stale and imports the op's package; the wheel carries it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys

import pytest
from locations import REPO_DIR

import xlacc
from xlacc import api
from xlacc.commands.new import project as scaffold

if importlib.util.find_spec("jax") is None:  # found, not imported: every xdist worker collects this file
    pytest.skip("the op runs through jax", allow_module_level=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("api") / "api_add"
    scaffold.create(scaffold.NewRequest(name="api_add", template="add", platform="cpu", frameworks=["jax"], directory=root))
    return root


def test_load_builds_and_returns_the_package_whose_op_runs(project):
    script = f"""
import numpy as np, xlacc
pkg = xlacc.load({str(project)!r})
assert pkg.LIBRARY.is_file() and pkg.__name__ == "api_add"
out = pkg.jax.api_add(np.arange(4, dtype=np.float32), np.ones(4, np.float32))
print(np.asarray(out).tolist())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[1.0, 2.0, 3.0, 4.0]"


def test_build_and_doctor_return_the_report_the_command_line_renders(project):
    report = xlacc.build(project)
    assert not report.failed and report.data["cached"] in (True, False)
    assert xlacc.build(project).data["cached"] is True
    diagnosis = xlacc.doctor(project)
    assert not diagnosis.failed and any(c.name == "project api_add" for c in diagnosis.checks)
    for module in ("xlacc.commands.build.builder", "xlacc.commands.doctor.engine"):  # the commands' modules take neither name
        importlib.import_module(module)
    assert callable(xlacc.build) and callable(xlacc.doctor)


def test_load_raises_with_the_compiler_errors(tmp_path):
    root = tmp_path / "broken"
    scaffold.create(scaffold.NewRequest(name="broken", template="add", platform="cpu", frameworks=["jax"], directory=root))
    (root / "kernel.cc").write_text((root / "kernel.cc").read_text() + "\nthis is not C++;\n")
    with pytest.raises(api.BuildError, match="compile-error") as info:
        xlacc.load(root)
    assert any(f.code == "compile-error" for f in info.value.report.findings)


def test_pip_install_builds_the_library_into_the_wheel(project, tmp_path):
    pytest.importorskip("hatchling", reason="building a project's wheel needs hatchling")
    target = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target), str(project)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "api_add" / "libapi_add.so").is_file()
    script = "import numpy as np, api_add.jax as ops; print(float(ops.api_add(np.ones(3, np.float32), np.ones(3, np.float32))[0]))"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "2.0", run.stderr[-3000:]


def _run_python(script: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_a_second_project_whose_op_has_the_same_name_is_refused_not_swapped(project, tmp_path):
    """load("one/adv") then load("two/adv") returned the first project's package, silently."""
    other = tmp_path / "elsewhere" / "api_add"
    scaffold.create(scaffold.NewRequest(name="api_add", template="add", platform="cpu", frameworks=["jax"], directory=other))
    script = f"""
import xlacc
from xlacc.api import LoadError
first = xlacc.load({str(project)!r})
try:
    xlacc.load({str(other)!r})
except LoadError as error:
    print("refused:", error)
else:
    print("loaded the second")
assert xlacc.load({str(project)!r}) is first
"""
    done = _run_python(script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"refused: api_add: this process already loaded the op 'api_add' from {project.resolve()};")


def test_a_kernel_edited_and_rebuilt_after_a_load_says_the_process_must_restart(tmp_path):
    """In a notebook: load, edit the kernel, load again. The library was rebuilt on disk but the
    old one stayed loaded, and the call returned the old results with no warning."""
    root = tmp_path / "edited"
    scaffold.create(scaffold.NewRequest(name="edited", template="add", platform="cpu", frameworks=["jax"], directory=root))
    script = f"""
import pathlib, xlacc
from xlacc.api import LoadError
root = pathlib.Path({str(root)!r})
first = xlacc.load(root)
assert xlacc.load(root) is first  # unchanged: the same package
kernel = root / "kernel.cc"
kernel.write_text(kernel.read_text() + "\\n// edited\\n")
try:
    xlacc.load(root)
except LoadError as error:
    print("refused:", error)
"""
    done = _run_python(script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "was rebuilt after this process loaded it" in done.stdout and "restart the Python process" in done.stdout


def test_building_after_jax_was_imported_forks_nothing_that_warns(project):
    """The Python API printed jax's `os.fork() was called ... deadlock` when it built after jax was imported."""
    script = f"import jax, xlacc; jax.numpy.ones(1).block_until_ready(); report = xlacc.build({str(project)!r}, force=True); assert not report.failed"
    done = _run_python(script)
    assert done.returncode == 0 and "os.fork()" not in done.stderr, done.stderr[-3000:]


def test_a_deleted_current_folder_gets_a_one_line_error_naming_what_to_do(project, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"""
import os, xlacc
from xlacc.ground.errors import XlaccError
os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})
for call in (lambda: xlacc.load("."), lambda: xlacc.build("api_add")):
    try:
        call()
    except XlaccError as error:
        print(error)
"""
    done = _run_python(script)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("the current folder no longer exists" in line and "absolute path" in line for line in lines)


def test_pip_install_of_a_broken_kernel_says_what_the_compiler_said_without_a_traceback(tmp_path):
    """The build hook raised a RuntimeError: pip printed a Python traceback through the hook and no compiler line."""
    pytest.importorskip("hatchling", reason="building a project's wheel needs hatchling")
    root = tmp_path / "pip_broken"
    scaffold.create(scaffold.NewRequest(name="pip_broken", template="add", platform="cpu", frameworks=["jax"], directory=root))
    (root / "kernel.cc").write_text((root / "kernel.cc").read_text() + "\nthis is not C++;\n")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--target", str(tmp_path / "site"), str(root)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO_DIR)},
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Traceback" not in said, said[-3000:]
    assert f"error: xlacc build {root} failed: compile: g++ failed:" in said, said[-3000:]
    assert "kernel.cc:" in said and "this is not C++" in said, said[-3000:]
