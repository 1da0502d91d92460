"""Shared test configuration: GPU tests run only where a GPU is visible; the longest files start
first, spread so that the workers end together; under xdist, a line per finished file names it."""

from __future__ import annotations

import compileall
import os
import shutil
import signal
import subprocess
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import xlacc
from xlacc.commands.build import cache as build_cache
from xlacc.ground import toolchain


def _gpu_visible() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def pytest_collection_modifyitems(config, items):
    _longest_files_first(items, workers=getattr(config.option, "numprocesses", None) or 3)
    if _gpu_visible():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; none is visible here (CI has none: GPU results are in benchmarks/RESULTS.md)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# Seconds each file takes on three workers sharing two cores (`--durations=0`, summed by file,
# 2026-11-23); files not named take under 10 s.
FILE_SECONDS = {
    "test_run_smoke.py": 155, "test_templates.py": 154, "test_harness_torch_xla.py": 124, "test_harness_torchax.py": 82,
    "test_doctor_hostile.py": 44, "test_wrap.py": 39, "test_builder.py": 37, "test_hostile.py": 28,
    "test_paged_kv_write.py": 24, "test_project.py": 20, "test_paged_attention.py": 18,
    "test_engine.py": 16, "test_api.py": 15, "test_update.py": 13, "test_ragged_paged_attention.py": 35,
}  # fmt: skip


def _longest_files_first(items: list, workers: int) -> None:
    """xdist (--dist loadfile --no-loadscope-reorder) hands out whole files in queue order: one to
    each worker, a second to each, then one to whichever frees first. Longest first, with the second
    round reversed (the longest of the first round is paired with the shortest of the second), so
    that no long file starts near the end and the workers end together."""

    def file_of(item) -> str:
        return item.nodeid.split("::")[0].rsplit("/", 1)[-1]

    files = sorted(dict.fromkeys(file_of(item) for item in items), key=lambda name: -FILE_SECONDS.get(name, 0))
    order = files[:workers] + files[workers : 2 * workers][::-1] + files[2 * workers :]
    items.sort(key=lambda item: order.index(file_of(item)))


def pytest_configure(config):
    _share_built_libraries(config)
    _compile_xlacc_bytecode(config)
    # A suite started in the background of a script (`pytest &`) inherits SIGINT ignored, and so
    # would every xlacc it starts: the tests that press Ctrl-C need it delivered, as in a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    distributed = config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no"
    if distributed and not hasattr(config, "workerinput") and config.get_verbosity() <= 0:
        config.pluginmanager.register(FileProgress(config), "xlacc-file-progress")


def _compile_xlacc_bytecode(config) -> None:
    """xlacc's bytecode, written once as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as on
    the development and CI machines), an editable install would otherwise compile xlacc's modules
    again in each of the suite's hundreds of xlacc processes (0.1-0.2 s each)."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(Path(xlacc.__file__).parent, quiet=2)


def _share_built_libraries(config) -> None:
    """One $XLACC_CACHE_DIR for the whole run (xdist's workers inherit it from the controller): the
    many tests that build the same generated project compile it once. test_builder, which is about
    compiling, turns it off."""
    if hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="xlacc-test-builds-")
    os.environ[build_cache.SHARED_CACHE_ENV] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


class FileProgress:
    """Under xdist the dots arrive from several files at once and name none: between them, a line
    per finished file with its counts and how far the run is."""

    def __init__(self, config):
        self.config = config
        self.pending: Counter = Counter()
        self.counts: defaultdict = defaultdict(Counter)
        self.total = self.done = 0

    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.total:  # every worker collects the same tests
            self.total = len(ids)
            self.pending.update(nodeid.split("::")[0] for nodeid in ids)

    def pytest_runtest_logreport(self, report):
        path = report.nodeid.split("::")[0]
        if report.failed:
            self.counts[path]["failed" if report.when == "call" else "error"] += 1
        elif report.skipped:
            self.counts[path]["skipped"] += 1
        elif report.when == "call":
            self.counts[path]["passed"] += 1
        if report.when != "teardown":
            return
        self.done += 1
        self.pending[path] -= 1
        if self.pending[path] == 0:
            summary = ", ".join(f"{n} {what}" for what, n in sorted(self.counts[path].items()))
            percent = 100 * self.done // max(self.total, 1)
            terminal = self.config.pluginmanager.get_plugin("terminalreporter")
            if terminal._tw.width_of_current_line:  # after a row of dots
                terminal.write("\n")
            terminal.write_line(f"{path} {summary} [{percent:3d}%]", red="failed" in self.counts[path] or "error" in self.counts[path])


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
