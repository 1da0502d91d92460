"""run-smoke --framework torchax on the CPU: every template's torch op runs from a jitted torch
program under torchax, inside one XLA program with torch's own ops, and matches the reference; ops
broken on purpose are named.

Every run goes through the command line in a subprocess (`python -m xlacc run-smoke --json`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from xlacc.commands.new import project as scaffold
from xlacc.ground.report import EXIT_OK, EXIT_PROBLEM

for module in ("torchax", "torch", "jax"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"run-smoke's torchax harness needs {module} (pip install 'xlacc[torchax]')", allow_module_level=True)
if shutil.which("g++") is None:
    pytest.skip("cpu projects build with g++, which is not on PATH", allow_module_level=True)

from locations import REPO_DIR  # noqa: E402
from smoke_support import (  # noqa: E402
    append,
    checks,
    codes,
    new_project,
    numerics_checks,
    run_smoke,
)

pytestmark = [pytest.mark.slow, pytest.mark.torchax]
REPO = REPO_DIR
TEMPLATES = scaffold.available_templates()
CPU_TEMPLATES = sorted(name for name, meta in TEMPLATES.items() if "cpu" in meta.get("platforms", ("cpu",)))
SMALL_SIZES = "1,1001,65536"
# Every template with typed FFI (add's run is the bench test's); legacy where attributes travel in
# backend_config (rms-norm) and where the most operands do (paged-attention).
CASES = [(template, "ffi") for template in CPU_TEMPLATES if template != "add"] + [("rms-norm", "legacy"), ("paged-attention", "legacy")]


def torchax_project(root, name, template="add", api="ffi"):
    return new_project(root, name, template=template, api=api, frameworks=("jax", "torchax"))


@pytest.mark.parametrize("template,api", CASES)
def test_generated_cpu_project_runs_from_torch_under_torchax(tmp_path, template, api):
    project = torchax_project(tmp_path, f"{template.replace('-', '_')}_{api}", template, api)
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES)
    assert code == EXIT_OK, payload
    assert_passes_under_torchax(project, payload, template, api)


def assert_passes_under_torchax(project, payload: dict, template: str, api: str) -> None:
    by_name = checks(payload)
    assert by_name["torch op"]["ok"] is True and f"xlacc::{project.name} lowers to" in by_name["torch op"]["detail"]
    version = "API_VERSION_TYPED_FFI" if api == "ffi" else "API_VERSION_STATUS_RETURNING_UNIFIED"
    assert by_name["lowering"]["ok"] is True and version in by_name["lowering"]["detail"]
    assert by_name["one program"]["ok"] is True and "stablehlo.multiply" in by_name["one program"]["detail"]
    numerics = numerics_checks(payload)
    assert len(numerics) == 3 * len(TEMPLATES[template]["dtypes"]), numerics
    assert all(c["ok"] is True and "max abs err" in c["detail"] for c in numerics), numerics
    assert {int(re.match(r"numerics n=(\d+)", c["name"])[1]) for c in numerics} == {1, 1001, 65536}
    assert payload["diagnosis"] == []
    assert set(payload["versions"]) == {"torch", "torchax", "jax", "jaxlib"}


def test_bench_times_torchax_plain_torch_eager_and_jax(tmp_path):
    project = torchax_project(tmp_path, "add_ffi")
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES, "--bench")
    assert code == EXIT_OK, payload
    assert_passes_under_torchax(project, payload, "add", "ffi")
    bench = payload["bench"]
    assert bench["size"] == 65536 and bench["bytes"] == 3 * 4 * 65536 and bench["eager_device"] == "cpu"
    for key in ("torchax_us", "jax_us", "plain_torchax_us", "eager_us"):
        assert bench[key] > 0, key
    assert bench["torchax_over_jax"] == pytest.approx(bench["torchax_us"] / bench["jax_us"])
    detail = checks(payload)["bench"]["detail"]
    assert "under torchax" in detail and "plain torch under torchax" in detail and "torch eager cpu" in detail


def test_an_op_decomposed_into_torch_ops_is_not_the_custom_call(tmp_path):
    project = torchax_project(tmp_path, "add_ffi")
    append(project / project.name / "torch.py", f"def {project.name}(x, y):\n    return x + y  # torch's add, not the kernel")
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    assert checks(payload)["lowering"]["ok"] is False
    assert "op-optimized-away" in codes(payload)


def test_an_op_without_its_torchax_lowering_is_named(tmp_path):
    project = torchax_project(tmp_path, "add_ffi")
    ops = project / project.name / "torch.py"
    source, count = re.subn(r"env\.override_op_definition\(.*\)", "pass  # forgot the lowering", ops.read_text())
    assert count == 1, "torch.py's register_torchax changed: update this edit"
    ops.write_text(source)
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    by_name = checks(payload)
    assert by_name["torch op"]["ok"] is False and "no lowering in torchax's environment" in by_name["torch op"]["detail"]
    assert not any(c["ok"] is True for c in numerics_checks(payload))
    assert "torchax-no-lowering" in codes(payload)


def test_an_op_that_leaves_registration_to_jax_and_returns_a_tuple_fails_as_a_model_would(tmp_path):
    """What a model calls first, NAME.torch.NAME on torchax tensors, must register its target itself
    and return one tensor for one result: run-smoke calls it before registering anything."""
    project = torchax_project(tmp_path, "add_ffi")
    ops = project / project.name / "torch.py"
    source = ops.read_text()
    assert "    jax_ops.register()\n" in source and "return outputs[0]" in source, "torch.py's torchax lowering changed: update this edit"
    ops.write_text(source.replace("    jax_ops.register()\n", "").replace("return outputs[0]", "return outputs"))
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    by_name = checks(payload)
    assert by_name["torch op"]["ok"] is False and "No FFI handler registered for add_ffi" in by_name["torch op"]["detail"]
    assert by_name["lowering"]["ok"] is False and "returned tuple; with one result it returns a tensor" in by_name["lowering"]["detail"]


def test_the_readmes_torchax_model_runs_as_printed(tmp_path):
    readme = (REPO / "README.md").read_text()
    snippet = re.search(r"```python\n(import torch, torchax\nfrom add_op\.torch import add_op.*?)```", readme, re.S)
    assert snippet, "the README's torchax example moved: update this test"
    project = torchax_project(tmp_path, "add_op")
    build = subprocess.run([sys.executable, "-m", "xlacc", "build", str(project)], capture_output=True, text=True, timeout=240)
    assert build.returncode == 0, build.stdout
    check = "\nwith torchax.default_env():\n    assert float((out - torch.relu(x + y) * 2).abs().max()) == 0\n"
    run = subprocess.run([sys.executable, "-c", snippet[1] + check], capture_output=True, text=True, timeout=240,
                         cwd=project, env=dict(os.environ, PYTHONPATH=str(project)))
    assert run.returncode == 0, run.stderr[-2000:]


def test_default_cpu_project_passes_every_framework(tmp_path):
    """`xlacc new demo --platform cpu && xlacc build demo && xlacc run-smoke demo` with jax,
    torchax and torch_xla installed: exit 0."""
    if importlib.util.find_spec("torch_xla") is None:
        pytest.skip("torch_xla is not installed: this is about a machine with every framework")
    report = scaffold.create(scaffold.NewRequest(name="demo", platform="cpu", directory=tmp_path / "demo"))
    assert report.code() == EXIT_OK
    code, payload, _ = run_smoke(tmp_path / "demo", "--sizes", SMALL_SIZES)
    assert code == EXIT_OK, [c for c in payload["checks"] if c["ok"] is not True]
    prefixes = {c["name"].split(":")[0] for c in payload["checks"] if ":" in c["name"]}
    assert prefixes == {"jax", "torchax", "torch-xla"}
    lowering = checks(payload)["torch-xla: lowering"]
    assert lowering["ok"] is True and 'custom_call_target="demo"' in lowering["detail"], lowering
    assert codes(payload) == ["torch-xla-no-cuda"]


def test_a_host_bound_bench_says_the_time_is_torchaxs_dispatch():
    from xlacc.commands.smoke.harness_torchax import bench_detail

    result = {"torchax_us": 142.7, "torchax_gbps": 1410.8, "torchax_over_jax": 1.918, "jax_us": 74.4, "torchax_latency_us": 277.7, "jax_latency_us": 242.3}
    assert "host-bound" not in bench_detail("n=16", result)
    detail = bench_detail("n=16", {**result, "torchax_host_bound": True, "torchax_queue_us": 140.1})
    assert "host-bound: torch queued a call every 140.1 us" in detail and "torchax's dispatch, not the kernel" in detail


def test_warnings_as_errors_fail_only_on_the_users_warnings(tmp_path, monkeypatch):
    """torch's warning about torchax's read-only views of jax arrays failed numerics under -W error."""
    project = torchax_project(tmp_path, "add_ffi")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    code, payload, _ = run_smoke(project, "--framework", "torchax", "--sizes", SMALL_SIZES)
    assert code == EXIT_OK, payload
