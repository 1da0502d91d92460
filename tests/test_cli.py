"""The command line as a user meets it: help, version, exit codes, one-line errors, JSON, NO_COLOR."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from xlacc import __version__


def xlacc(*args, env=None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "xlacc", *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120)


def test_help_lists_the_four_commands_without_importing_frameworks():
    probe = (
        "import sys\n"
        "sys.argv = ['xlacc', '--help']\n"
        "from xlacc.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in ('jax', 'jaxlib', 'torch', 'torch_xla', 'numpy') if m in sys.modules)\n"
        "print('HEAVY', heavy, 'CODE', code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    for command in ("new", "build", "run-smoke", "doctor"):
        assert command in out.stdout
    assert "HEAVY [] CODE 0" in out.stdout


def test_import_xlacc_modules_imports_no_framework():
    probe = (
        "import sys, xlacc, xlacc.cli, xlacc.spec, xlacc.scaffold, xlacc.report\n"
        "print(sorted(m for m in ('jax', 'torch', 'torch_xla') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_version():
    out = xlacc("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"xlacc {__version__}"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["new", "bad-name"], "invalid name 'bad-name'"),
        (["new", "x", "--platform", "rocm"], "invalid platform"),
        (["new"], "Missing argument"),
        (["frobnicate"], "No such command"),
        (["new", "x", "--no-such-flag"], "No such option"),
        (["build", "/nonexistent/dir"], ""),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args, fragment, tmp_path):
    out = xlacc(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
    assert fragment in out.stderr


def test_new_json_and_no_color(tmp_path):
    out = xlacc("new", "op", "--platform", "cpu", "--json", cwd=tmp_path)
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert data["exit_code"] == 0 and "kernel.cc" in data["files"]
    assert all(c["ok"] for c in data["checks"])
    plain = xlacc("new", "op2", "--platform", "cpu", env={"NO_COLOR": "1", "TERM": "xterm-256color"}, cwd=tmp_path)
    assert "\x1b[" not in plain.stdout and "op2/kernel.cc" in plain.stdout


def test_refusing_to_overwrite_exits_2_and_keeps_files(tmp_path):
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "kernel.cc").write_text("mine")
    out = xlacc("new", "op", "--platform", "cpu", cwd=tmp_path)
    assert out.returncode == 2 and "--force" in out.stderr
    assert (tmp_path / "op" / "kernel.cc").read_text() == "mine"


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run-smoke", "--sizes", "abc"], "--sizes takes comma-separated whole numbers"),
        (["run-smoke"], "not an xlacc project"),
        (["new", "x", "--dir", "/proc/no/such"], "cannot write"),
    ],
)
def test_bad_values_are_one_line_errors_not_tracebacks(args, fragment, tmp_path):
    out = xlacc(*args, cwd=tmp_path)
    assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr
