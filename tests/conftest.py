"""Shared test configuration: GPU tests run only where a GPU is visible; the slowest files start
first, spread so that the three workers end together; under xdist, a line per finished file names it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections import Counter, defaultdict

import pytest

from xlacc import builder, toolchain


def _gpu_visible() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def pytest_collection_modifyitems(config, items):
    _slowest_files_first(items)
    if _gpu_visible():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU; none is visible here (CI has none: GPU results are in benchmarks/RESULTS.md)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The files that take longest (about 180, 165, 160 and 130 s on two busy cores; all the others
# together about 280 s), longest first.
SLOWEST_FILES = ("test_smoke_torch_xla.py", "test_smoke.py", "test_templates.py", "test_smoke_torchax.py")


def _slowest_files_first(items: list) -> None:
    """xdist hands out whole files in queue order (--no-loadscope-reorder): one to each of the three
    workers, then a second to each, then one to whichever frees first. The three slowest go first, one
    per worker; the fourth is the third worker's second (after two quick files), so that it follows
    the shortest of the three; the quick files fill the rest."""

    def file_of(item) -> str:
        return item.nodeid.split("::")[0].rsplit("/", 1)[-1]

    files = list(dict.fromkeys(file_of(item) for item in items))
    slow = [name for name in SLOWEST_FILES if name in files]
    quick = [name for name in files if name not in slow]
    order = slow[:3] + quick[:2] + slow[3:] + quick[2:]
    items.sort(key=lambda item: order.index(file_of(item)))


def pytest_configure(config):
    _share_built_libraries(config)
    # A suite started in the background of a script (`pytest &`) inherits SIGINT ignored, and so
    # would every xlacc it starts: the tests that press Ctrl-C need it delivered, as in a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    distributed = config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no"
    if distributed and not hasattr(config, "workerinput") and config.get_verbosity() <= 0:
        config.pluginmanager.register(FileProgress(config), "xlacc-file-progress")


def _share_built_libraries(config) -> None:
    """One $XLACC_CACHE_DIR for the whole run (xdist's workers inherit it from the controller): the
    many tests that build the same generated project compile it once. test_builder, which is about
    compiling, turns it off."""
    if hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="xlacc-test-builds-")
    os.environ[builder.SHARED_CACHE_ENV] = folder
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
