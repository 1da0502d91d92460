"""`xlacc doctor -- COMMAND`: the program the command runs is read, and what the run showed is
ranked with what the code says."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from locations import ARTIFACTS_DIR, REPO_DIR
from needs import needs_jax

from xlacc.commands.doctor import command
from xlacc.commands.doctor.rules import run as runtime
from xlacc.ground.catalogue import make

ROOT = REPO_DIR
RUNS = ARTIFACTS_DIR / "doctor" / "runs"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["python", "run.py", "--n", "3"], "run.py"),
        (["python3", "-u", "-W", "ignore", "run.py"], "run.py"),
        (["python", "-m", "pkg.tool"], "pkg/tool.py"),
        (["python", "-m", "pytest", "-q", "test_x.py::test_a"], "test_x.py"),
        (["pytest", "test_x.py"], "test_x.py"),
        (["env", "A=1", "python", "run.py"], "run.py"),
        (["bash", "run.sh"], "run.py"),
        (["./run.sh"], "run.py"),
        (["sh", "-e", "empty.sh"], None),
        (["python", "-c", "print(1)"], None),
    ],
)
def test_the_script_a_command_runs(tmp_path, argv, expected):
    for name in ("run.py", "test_x.py", "pkg/tool.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\nset -e  # python nothing.py\ncd . && XLA_FLAGS=--xla_dump_to=/tmp python -u run.py --n 3 | tee out.log\n")
    (tmp_path / "empty.sh").write_text("echo hello\n")
    found = command.script_of(argv, tmp_path)
    assert (found.relative_to(tmp_path).as_posix() if found else None) == expected


def test_the_program_is_the_script_its_local_imports_and_the_sources_of_what_it_loads(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "__init__.py").write_text("from . import kernels_py\nfrom .gpu_ops import registrations\n")
    (tmp_path / "ops" / "kernels_py.py").write_text("import ctypes\nlib = ctypes.CDLL('./build/libk.so')\n")
    (tmp_path / "ops" / "gpu_ops.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "libk.so").write_bytes(b"\x7fELF")
    (tmp_path / "kernel.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "other_script.py").write_text("import jax\n")
    script = tmp_path / "run.py"
    script.write_text("import ops\nimport numpy\n")
    sources, libraries = command.program_files(script, tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in sources] == ["run.py", "ops/__init__.py", "ops/kernels_py.py", "kernel.cu"]
    assert sorted(p.name for p in libraries) == ["gpu_ops.cpython-311-x86_64-linux-gnu.so", "libk.so"]


def test_a_code_finding_that_explains_a_crash_goes_first():
    from xlacc.ground.report import rank

    crash = make("kernel-crash", "exit status -11 (SIGSEGV)", likelihood=0.9)
    size = make("hardcoded-size", "k.cc:6: `const int size = 3;`", likelihood=0.8)
    cause = make("api-version-mismatch", "run.py:9: registers a legacy function as typed FFI", likelihood=0.95)
    unrelated = make("legacy-api-deprecated", "run.py:11: api_version 1", likelihood=0.7)
    ranked = runtime.rank_with_code([crash], [size, cause, unrelated], -11)
    assert [f.code for f in rank(ranked)] == ["api-version-mismatch", "hardcoded-size", "kernel-crash", "legacy-api-deprecated"]
    assert "api-version-mismatch" in next(f for f in ranked if f.code == "kernel-crash").fix
    assert "the run was killed by SIGSEGV" in rank(ranked)[0].evidence


def test_a_message_the_output_shows_is_confirmed_by_the_code_and_its_other_causes_drop():
    from xlacc.ground.report import rank

    text = [make("target-not-registered", "No registered implementation", likelihood=0.6),
            make("platform-name", "maybe another platform", likelihood=0.35)]
    code = [make("platform-name", 'run.py:9: registers for "GPU"', likelihood=0.85), make("hardcoded-size", "k.cc", likelihood=0.8)]
    ranked = rank(runtime.rank_with_code(text, code, 1))
    assert ranked[0].code == "platform-name" and 'registers for "GPU"' in ranked[0].evidence
    assert [f.code for f in ranked].count("platform-name") == 1  # the text's guess gave way to the code's
    assert next(f for f in ranked if f.code == "target-not-registered").likelihood < 0.5


def test_wrong_results_without_a_message_are_explained_by_a_size_first():
    code = [make("api-version-mismatch", "call", likelihood=0.9), make("hardcoded-size", "k.cc", likelihood=0.8)]
    from xlacc.ground.report import rank

    assert rank(runtime.rank_with_code([], code, 1))[0].code == "hardcoded-size"
    assert all(f.likelihood < 0.97 for f in runtime.rank_with_code([], code, 0))  # a passing run confirms nothing


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    folder = tmp_path_factory.mktemp("runs")
    for path in RUNS.iterdir():
        shutil.copy(path, folder)
    subprocess.run([compiler, "-shared", "-fPIC", "kernel.cc", "-o", "libsimple_add.so"], cwd=folder, check=True, capture_output=True)
    return folder


def doctor_run(folder: Path, script: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "doctor", "--json", "--", sys.executable, script],
        cwd=folder, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


@needs_jax
def test_a_legacy_function_registered_as_typed_ffi_crashes_and_the_code_says_why(run_folder):
    report = doctor_run(run_folder, "run_typed.py")
    assert report["command"]["signal"] == "SIGSEGV"
    first = report["findings"][0]
    assert first["code"] == "api-version-mismatch" and "crashes during registration" in first["evidence"]
    assert "run_typed.py:11" in first["evidence"] or "run_typed.py:" in first["evidence"]
    codes = [f["code"] for f in report["findings"]]
    assert "kernel-crash" in codes and codes.index("kernel-crash") > 0


@needs_jax
def test_a_platform_jax_never_uses_is_named_first(run_folder):
    report = doctor_run(run_folder, "run_platform.py")
    first = report["findings"][0]
    assert first["code"] == "platform-name" and 'registers for "GPU"' in first["evidence"]


@needs_jax
def test_wrong_results_from_a_fixed_size_are_explained_by_the_kernel(run_folder):
    report = doctor_run(run_folder, "run_size.py")
    first = report["findings"][0]
    assert first["code"] == "hardcoded-size" and "`const int size = 3;`" in first["evidence"]
    assert "kernel.cc:" in first["evidence"]


def test_crash_causes_are_ruled_in_and_out_by_the_steps_that_passed():
    from xlacc.commands.doctor.rules.crash import crash_fix

    during_numerics = crash_fix(["registration", "lowering"], "numerics n=1")
    ruled_out = during_numerics.split("Ruled out")[1]
    assert "registered as typed FFI" in ruled_out and "a typed FFI handler registered as legacy" in ruled_out  # registration checked the kind
    assert during_numerics.splitlines()[1].startswith("1. out-of-bounds reads or writes")
    unchecked_registration = crash_fix([], "numerics n=1")  # a run nobody checked: both registry mix-ups remain
    assert unchecked_registration.splitlines()[1].startswith("1. a typed FFI handler registered as legacy")
    during_registration = crash_fix([], "registration")
    assert during_registration.splitlines()[1].startswith("1. a legacy function registered as typed FFI")
    assert "Tell them apart by the last step" in crash_fix()
    later_size = crash_fix(["registration", "lowering", "numerics n=1"], "numerics n=10007")  # a smaller size ran
    assert later_size.splitlines()[1].startswith("1. out-of-bounds reads or writes") and "out-of-bounds" not in later_size.split("Ruled out")[1]
