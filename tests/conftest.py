"""Shared test configuration: GPU tests run only where a GPU is visible."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from xlacc import toolchain


def _gpu_visible() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def pytest_collection_modifyitems(config, items):
    if _gpu_visible():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; none is visible here (CI has none: GPU results are in benchmarks/RESULTS.md)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def bare_env(monkeypatch, tmp_path):
    """No compiler anywhere: an empty PATH, no CUDA variables, no toolkit root, no pip nvcc."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for var in ("CUDACXX", "CUDA_HOME", "CUDA_PATH", "CXX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(toolchain, "DEFAULT_CUDA_HOMES", ())
    monkeypatch.setattr(toolchain, "_pathfinder_binary", lambda name: None)
    return empty
