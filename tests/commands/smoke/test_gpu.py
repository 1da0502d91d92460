"""End to end on a GPU: every template x api through JAX, and the failures only a GPU shows.

Marked `gpu`: skipped where no GPU is visible (CI). The device runs and their figures are in
benchmarks/RESULTS.md; reproduce with `python -m pytest -m gpu tests/test_gpu.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from locations import REPO_DIR

from xlacc.commands.new.project import available_templates

pytestmark = pytest.mark.gpu

REPO = REPO_DIR
CUDA_TEMPLATES = [name for name, meta in available_templates().items() if "cuda" in meta.get("platforms", ["cuda"])]


def xlacc(*args, cwd: Path, timeout: float = 900):
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "xlacc", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def new_cuda_project(tmp_path: Path, name: str, template: str = "add", api: str = "ffi") -> Path:
    out = xlacc("new", name, "--template", template, "--platform", "cuda", "--api", api, "--framework", "jax", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return tmp_path / name


def codes(report: dict) -> set[str]:
    return {f["code"] for f in report.get("findings", [])}


@pytest.mark.parametrize("api", ["ffi", "legacy"])
@pytest.mark.parametrize("template", CUDA_TEMPLATES)
def test_template_passes_run_smoke_on_the_gpu(tmp_path, template, api):
    project = new_cuda_project(tmp_path, "op", template, api)
    build = xlacc("build", "--json", cwd=project)
    assert build.returncode == 0, build.stdout + build.stderr
    assert json.loads(build.stdout)["archs"], "auto arch picks the visible GPU"
    smoke = xlacc("run-smoke", "--json", cwd=project)
    report = json.loads(smoke.stdout)
    failed = [c for c in report["checks"] if c["ok"] is False]
    assert smoke.returncode == 0 and not failed, json.dumps(report, indent=1)
    assert any(c["name"].startswith("numerics") and c["ok"] for c in report["checks"])


def test_sm80_only_build_is_diagnosed_as_arch_mismatch(tmp_path):
    project = new_cuda_project(tmp_path, "old_arch")
    toml = project / "xlacc.toml"
    # SASS for sm_80 only: without PTX nothing on the library can run on a Hopper GPU.
    toml.write_text(toml.read_text().replace('archs = "auto"', 'archs = ["sm_80"]').replace("ptx = true", "ptx = false"))
    assert xlacc("build", cwd=project).returncode == 0  # it does hold sm_80, as asked

    doctor = xlacc("doctor", "--so", "old_arch/libold_arch.so", "--json", cwd=project)
    assert doctor.returncode == 1 and "arch-mismatch" in codes(json.loads(doctor.stdout)), doctor.stdout

    smoke = xlacc("run-smoke", "--json", cwd=project)
    report = json.loads(smoke.stdout)
    assert smoke.returncode == 1 and "arch-mismatch" in codes(report), smoke.stdout


def test_legacy_entry_registered_as_typed_ffi_crash_is_diagnosed(tmp_path):
    project = new_cuda_project(tmp_path, "mixed", api="legacy")
    ops = project / "mixed" / "jax.py"
    # The mistake: the legacy entry point registered in the typed FFI registry.
    ops.write_text(ops.read_text().replace("REGISTER_API_VERSION = 0", "REGISTER_API_VERSION = 1"))
    smoke = xlacc("run-smoke", "--json", cwd=project)
    report = json.loads(smoke.stdout)  # xlacc itself survives: its JSON is whole
    # XLA reads a typed handler's metadata at registration: the legacy function either crashes
    # there (SIGSEGV) or fails ("Fetching XLA FFI metadata failed"), depending on what it misreads.
    assert smoke.returncode == 1 and codes(report) & {"kernel-crash", "api-version-mismatch"}, smoke.stdout


def visible_gpus() -> int:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


@pytest.mark.parametrize("template", ["add", "rms-norm", "paged-attention"])
def test_sharded_vmapped_and_differentiated_on_every_gpu(tmp_path, template):
    """run-smoke shards over every visible GPU by default: each free factor runs once per shard."""
    if visible_gpus() < 2:
        pytest.skip("needs two or more GPUs (the nvidia-h200-x2 machine)")
    project = new_cuda_project(tmp_path, "op", template)
    smoke = xlacc("run-smoke", "--json", "--sizes", "1,1000003", cwd=project)
    report = json.loads(smoke.stdout)
    by_name = {c["name"]: c for c in report["checks"]}
    assert smoke.returncode == 0, json.dumps(report, indent=1)
    sharded = [c for name, c in by_name.items() if name.startswith("sharded along")]
    assert sharded and all(c["ok"] for c in sharded) and all("no collective" in c["detail"] for c in sharded)
    assert by_name["vmap"]["ok"] is True and "one launch" in by_name["vmap"]["detail"]
    assert by_name["grad"]["ok"] is (None if template == "paged-attention" else True), by_name["grad"]


WRAP_KERNELS = REPO / "tests" / "artifacts" / "wrap"
NOTE_000 = REPO / "tests" / "artifacts" / "doctor" / "sources" / "seed000_minimal_xla_custom_call.cu"


@pytest.mark.parametrize(
    "source, flags, reference",
    [
        ("minimal_xla_custom_call.cu", [], "a + b"),
        ("elementwise.cu", ["--kernel", "axpy", "--dtype", "f32,bf16", "--attr", "alpha:f32=0.5"], "alpha * x + y"),
        (
            "decode_params.cu",
            ["--size", "num_seqs=query.size", "--size", "num_heads=1", "--size", "head_size=1", "--attr", "scale:f32=0.25"],
            "xp.asarray(query, dtype=xp.float32) * xp.asarray(key_cache, dtype=xp.float32) * scale",
        ),
    ],
)
def test_a_wrapped_kernel_passes_run_smoke_on_the_gpu(tmp_path, source, flags, reference):
    """xlacc new --from: the note-000 kernel, a template of a multi-kernel file, a struct-of-parameters kernel."""
    import shutil

    shutil.copy(WRAP_KERNELS / source if (WRAP_KERNELS / source).is_file() else NOTE_000, tmp_path / source)
    out = xlacc("new", "wrapped", "--from", source, "--framework", "jax", *flags, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    path = tmp_path / "wrapped" / "wrapped" / "reference.py"
    text = path.read_text()
    stub = next(line for line in text.splitlines() if "raise NotImplementedError" in line)
    path.write_text(text.replace(stub, f"    return {reference}"))
    smoke = xlacc("run-smoke", "--json", cwd=tmp_path / "wrapped")
    report = json.loads(smoke.stdout)
    assert smoke.returncode == 0, json.dumps(report, indent=1)
    assert any(c["name"].startswith("numerics") and c["ok"] for c in report["checks"])
