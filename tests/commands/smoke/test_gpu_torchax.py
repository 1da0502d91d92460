"""On a GPU: every template x api runs from a torch program under torchax, and torch_xla's programs
(lowered on a CPU machine, benchmarks/data/torch_xla_programs.json) run through jaxlib's XLA:GPU.

Marked `gpu`: skipped where no GPU is visible (CI). Needs torch, torchax and jax with CUDA; the
figures are in benchmarks/RESULTS.md. Reproduce with `python -m pytest -m gpu tests/test_gpu_torchax.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from locations import REPO_DIR

from xlacc.commands.new.project import available_templates

pytestmark = pytest.mark.gpu

REPO = REPO_DIR
CUDA_TEMPLATES = sorted(name for name, meta in available_templates().items() if "cuda" in meta.get("platforms", ["cuda"]))
CASES = [(template, api) for template in CUDA_TEMPLATES for api in ("ffi", "legacy")]
PROGRAMS = REPO / "benchmarks" / "data" / "torch_xla_programs.json"


def xlacc(*args, cwd: Path, timeout: float = 900):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "xlacc", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("torchax_gpu")


@pytest.fixture(scope="module")
def built(root) -> dict[tuple[str, str], Path]:
    """Every template x api as a cuda project with every framework, built in parallel (nvcc is
    slow); the legacy ones are the projects benchmarks/torch_xla_programs.py lowered."""

    def make(case):
        template, api = case
        name = f"{template.replace('-', '_')}_{api}"
        out = xlacc("new", name, "--template", template, "--platform", "cuda", "--api", api, "--framework", "jax,torchax,torch-xla", cwd=root)
        assert out.returncode == 0, out.stderr
        build = xlacc("build", name, cwd=root)
        assert build.returncode == 0, build.stdout + build.stderr
        return case, root / name

    with ThreadPoolExecutor(len(CASES)) as pool:
        return dict(pool.map(make, CASES))


@pytest.mark.parametrize("template,api", CASES)
def test_template_runs_from_torch_under_torchax_on_the_gpu(built, template, api):
    smoke = xlacc("run-smoke", "--framework", "torchax", "--json", cwd=built[(template, api)])
    report = json.loads(smoke.stdout)
    failed = [c for c in report["checks"] if c["ok"] is not True]
    assert smoke.returncode == 0 and not failed, json.dumps(report, indent=1)
    numerics = [c for c in report["checks"] if c["name"].startswith("numerics")]
    device = str(report["devices"]["torchax"]).lower()
    assert numerics and ("cuda" in device or "gpu" in device), report["devices"]


def test_torch_xla_programs_run_through_jaxlib_on_the_gpu(built, root, tmp_path):
    out = Path(os.environ.get("XLACC_TORCH_XLA_GPU_REPORT") or tmp_path / "torch_xla_programs_gpu.json")
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "torch_xla_programs.py"), "run", "--programs", str(PROGRAMS), "--workdir", str(root), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads(out.read_text())
    templates = {r["template"] for r in report["results"]}
    assert templates == set(CUDA_TEMPLATES) and all(r["ok"] for r in report["results"])
    assert "torch_xla's runtime not used" in report["executed_by"]
