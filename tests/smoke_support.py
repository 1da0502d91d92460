"""Helpers shared by the run-smoke tests (no tests here): make a project with `xlacc new`'s code,
run `python -m xlacc run-smoke --json` on it in a subprocess, read the JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from locations import REPO_DIR

from xlacc.commands.new import project as scaffold
from xlacc.ground.report import EXIT_OK

REPO = REPO_DIR


# The suite builds through one $XLACC_CACHE_DIR (conftest.py): projects with the same name,
# template, api and dtypes compile once per run. A test that changes only Python files (or the spec's
# sharding) names its project after those (add_ffi, add_legacy, rms_norm_ffi, ...); one that changes
# C++ gets a name of its own, though a changed source would miss the shared copy anyway.
def new_project(root: Path, name: str, *, template: str = "add", api: str = "ffi", platform: str = "cpu",
                frameworks: tuple[str, ...] = ("jax",), dtypes: tuple[str, ...] = (), arch: str = "sm_90") -> Path:
    directory = root / name
    report = scaffold.create(
        scaffold.NewRequest(name=name, template=template, platform=platform, api=api, frameworks=list(frameworks),
                            directory=directory, dtypes=list(dtypes))
    )
    assert report.code() == EXIT_OK, [c for c in report.checks if not c.ok]
    if platform == "cuda":
        one_arch(directory, arch)
    return directory


def one_arch(project: Path, arch: str = "sm_90") -> None:
    """Builds for one arch, SASS only: what these tests check needs no more, and nvcc takes half the time."""
    toml = project / "xlacc.toml"
    text = toml.read_text()
    assert 'archs = "auto"' in text and "ptx = true" in text, "the generated [build] table changed: update one_arch"
    toml.write_text(text.replace('archs = "auto"', f'archs = ["{arch}"]').replace("ptx = true", "ptx = false"))


def run_smoke(project: Path, *flags: str, timeout: float = 240) -> tuple[int, dict, str]:
    """``xlacc run-smoke PROJECT --json FLAGS``: exit code, the JSON object, stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-m", "xlacc", "run-smoke", str(project), "--json", *flags],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=project.parent,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    payload = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if payload:
        assert payload["exit_code"] == proc.returncode, (payload["exit_code"], proc.returncode)
    return proc.returncode, payload, proc.stderr


def checks(payload: dict) -> dict[str, dict]:
    return {c["name"]: c for c in payload["checks"]}


def numerics_checks(payload: dict) -> list[dict]:
    return [c for c in payload["checks"] if c["name"].startswith("numerics")]


def codes(payload: dict) -> list[str]:
    return [f["code"] for f in payload["diagnosis"]]


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + "\n\n# -- broken on purpose by the test --\n" + text.strip() + "\n")
