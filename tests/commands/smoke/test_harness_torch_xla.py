"""run-smoke --framework torch-xla: every template's torch op lowers to the right custom call on
torch_xla's CPU device, and the program torch_xla emits runs through jaxlib's XLA (cpu projects);
ops broken on purpose are caught from the HLO alone.

torch_xla 2.9 (PyPI) cannot register or run a custom call: a cpu project's run passes (exit 0)
with the torch-xla-no-cuda note, a cuda project's stops after the lowering and exits 3
(EXIT_NEEDS_GPU) where jax sees no GPU.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlacc.commands.new import project as scaffold
from xlacc.ground.report import EXIT_NEEDS_GPU, EXIT_OK, EXIT_PROBLEM

if importlib.util.find_spec("torch_xla") is None:
    pytest.skip("torch_xla is not installed (pip install -e '.[torch-xla]')", allow_module_level=True)
if importlib.util.find_spec("torch_xla_cuda_plugin") is not None:
    pytest.skip("this torch_xla has a CUDA plugin: these tests expect the CPU-only PyPI build", allow_module_level=True)

from smoke_support import append, checks, codes, new_project, run_smoke  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.torch_xla]
TEMPLATES = scaffold.available_templates()
HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
# A template's torch op is the same code on both platforms but for its API_VERSION, so every
# template lowers on cpu and one shows the cuda project's version and its stop (an nvcc build each).
# add's cpu run is the default project's (test_smoke_torchax.py, every framework in one run-smoke).
CUDA_TEMPLATE = "add"
CASES = [pytest.param(name, "cpu") for name, meta in sorted(TEMPLATES.items()) if "cpu" in meta.get("platforms", ("cpu", "cuda")) and name != "add"]
CASES.append(pytest.param(CUDA_TEMPLATE, "cuda", marks=[] if HAS_NVCC else pytest.mark.skip(reason="needs nvcc to build")))
API_VERSIONS = {"cpu": "API_VERSION_STATUS_RETURNING_UNIFIED", "cuda": "API_VERSION_STATUS_RETURNING"}
LOWERING_CHECKS = ("lowering", "backend_config", "operands", "results")
SMALL_SIZES = "1,1001,65536"


def torch_xla_project(root: Path, name: str, template: str = "add", platform: str = "cpu") -> Path:
    return new_project(root, name, template=template, platform=platform, api="legacy", frameworks=("torch-xla",))


@pytest.mark.parametrize("template,platform", CASES)
def test_every_template_lowers_to_its_custom_call(tmp_path, template, platform):
    project = torch_xla_project(tmp_path, f"{template.replace('-', '_')}_{'legacy' if platform == 'cpu' else platform}", template, platform)
    code, payload, _ = run_smoke(project, "--framework", "torch-xla", *(["--sizes", SMALL_SIZES] if platform == "cpu" else []))
    by_name = checks(payload)
    for name in LOWERING_CHECKS:
        assert by_name[name]["ok"] is True, by_name[name]
    assert f'custom_call_target="{project.name}"' in by_name["lowering"]["detail"]
    assert API_VERSIONS[platform] in by_name["lowering"]["detail"]
    assert "follows the operands' shapes" in by_name["backend_config"]["detail"]
    assert by_name["registration"]["ok"] is None and "RegisterCustomCall not implemented" in by_name["registration"]["detail"]
    assert codes(payload) == ["torch-xla-no-cuda"]
    assert payload["diagnosis"][0]["severity"] == "info"
    if platform == "cuda":  # no GPU for jax here: the emitted program cannot run
        assert code == EXIT_NEEDS_GPU, payload
        assert by_name["numerics"]["ok"] is None
        return
    assert code == EXIT_OK, payload
    execution = by_name["execution"]["detail"]
    assert "XLA:CPU" in execution and "torch_xla's own runtime is not used" in execution and "api_version 3" in execution
    numerics = [c for c in payload["checks"] if c["name"].startswith("numerics")]
    assert len(numerics) == 3 * len(TEMPLATES[template]["dtypes"])
    assert all(c["ok"] is True and c["detail"].startswith("run by jaxlib, not torch_xla: seed 0:") for c in numerics), numerics


def test_swapped_operands_are_caught(tmp_path):
    project = torch_xla_project(tmp_path, "add_legacy")
    ops = project / project.name / "torch.py"
    source, count = re.subn(r"\[x, y\],(\s*#)", r"[y, x],\1", ops.read_text())
    assert count == 1, "the add template's _xla_custom_call operand list changed: update this edit"
    ops.write_text(source)
    code, payload, _ = run_smoke(project, "--framework", "torch-xla")
    assert code == EXIT_PROBLEM
    assert checks(payload)["operands"]["ok"] is False
    assert "operand 0 is y, expected x" in checks(payload)["operands"]["detail"]
    assert "operand-mismatch" in codes(payload)


def test_constant_backend_config_is_a_hardcoded_size(tmp_path):
    project = torch_xla_project(tmp_path, "add_legacy")
    append(project / project.name / "torch.py", 'def backend_config(*tensors, **attrs):\n    return "n=3"')
    code, payload, _ = run_smoke(project, "--framework", "torch-xla")
    assert code == EXIT_PROBLEM
    assert checks(payload)["backend_config"]["ok"] is False
    assert "hardcoded-size" in codes(payload)


def test_typed_ffi_api_version_is_refused(tmp_path):
    project = torch_xla_project(tmp_path, "add_legacy")
    append(project / project.name / "torch.py", "API_VERSION = 4  # torch_xla can only call legacy targets")
    code, payload, _ = run_smoke(project, "--framework", "torch-xla")
    assert code == EXIT_PROBLEM
    assert "API_VERSION_TYPED_FFI" in checks(payload)["lowering"]["detail"]
    assert "api-version-mismatch" in codes(payload)


def test_op_returning_a_constant_is_optimized_away(tmp_path):
    project = torch_xla_project(tmp_path, "add_legacy")
    append(project / project.name / "torch.py", f"def {project.name}(x, y):\n    return torch.zeros_like(x)")
    code, payload, _ = run_smoke(project, "--framework", "torch-xla")
    assert code == EXIT_PROBLEM
    assert checks(payload)["lowering"]["ok"] is False
    assert "op-optimized-away" in codes(payload)
    assert checks(payload)["operands"]["ok"] is None
    assert checks(payload)["execution"]["ok"] is None  # nothing lowered: nothing is said to run


AUTOGRAD_SCRIPT = """
import torch, torch_xla
import {name}.torch as ops
x = torch.randn(4, 8, device=torch_xla.device(), requires_grad=True)
w = torch.randn(8, device=torch_xla.device(), requires_grad=True)
grad_x, grad_w = torch.autograd.grad(ops.{name}(x, w, eps=1e-6).sum(), (x, w))
print(torch_xla._XLAC._get_xla_tensors_hlo([grad_x, grad_w]))
"""


def test_a_backward_kernel_is_the_torch_ops_autograd(tmp_path):
    """torch.library.register_autograd: the gradient lowers to the backward target, fed the saved rstd."""
    project = torch_xla_project(tmp_path, "rms_grad", template="rms-norm")
    done = subprocess.run([sys.executable, "-c", AUTOGRAD_SCRIPT.format(name="rms_grad")], cwd=project,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PJRT_DEVICE": "CPU"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    forward = re.search(r"%(custom-call\.\d+) = \(f32\[4,8\]\{1,0\}, f32\[4\]\{0\}\) custom-call\(.*custom_call_target=\"rms_grad\"", done.stdout)
    backward = re.search(r"= \(f32\[4,8\]\{1,0\}, f32\[8\]\{0\}\) custom-call\((.*)\), custom_call_target=\"rms_grad_backward\"", done.stdout)
    assert forward and backward, done.stdout[-3000:]
    assert len(re.findall(r"%[\w.\-]+", backward.group(1))) == 4  # x, weight, rstd, grad_out
