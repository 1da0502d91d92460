"""xlacc run-smoke end to end on the CPU: generated projects pass; projects broken on purpose fail
with the right diagnosis, and xlacc itself never crashes.

Every run goes through the command line in a subprocess (`python -m xlacc run-smoke --json`).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from xlacc.commands.new import project as scaffold
from xlacc.ground.report import EXIT_NEEDS_GPU, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE

pytest.importorskip("jax", reason="run-smoke's JAX harness needs jax (pip install -e '.[jax]')")
if shutil.which("g++") is None:
    pytest.skip("cpu projects build with g++, which is not on PATH", allow_module_level=True)

from smoke_support import (  # noqa: E402
    append,
    checks,
    codes,
    new_project,
    numerics_checks,
    run_smoke,
)

pytestmark = pytest.mark.slow
CPU_TEMPLATES = sorted(name for name, meta in scaffold.available_templates().items() if "cpu" in meta.get("platforms", ("cpu",)))
SMALL_SIZES = "1,1001,65536"


# -- generated projects pass ----------------------------------------------------------------------


# Every template with the typed FFI (xlacc's default); the legacy path of run-smoke's harness is
# the same for every template, so one template takes it (test_templates checks every template's
# legacy library through jax). add with the typed FFI passes in the bench test's run.
@pytest.mark.parametrize("template, api", [(template, "ffi") for template in CPU_TEMPLATES if template != "add"] + [("add", "legacy")])
def test_generated_cpu_project_passes_through_jax(tmp_path, template, api):
    project = new_project(tmp_path, f"{template.replace('-', '_')}_{api}", template=template, api=api)
    code, payload, _ = run_smoke(project, "--framework", "jax")
    assert code == EXIT_OK, payload
    assert_passes_through_jax(payload, template, api)
    assert payload["bench"] == {}


def assert_passes_through_jax(payload: dict, template: str, api: str) -> None:
    """Every check of a run at the default sizes passes (grad: where the template has [backward])."""
    by_name = checks(payload)
    assert by_name["build"]["ok"] is True
    assert by_name["registration"]["ok"] is True
    kind = "typed FFI" if api == "ffi" else "legacy"
    assert kind in by_name["registration"]["detail"]
    version = "API_VERSION_TYPED_FFI" if api == "ffi" else "API_VERSION_STATUS_RETURNING_UNIFIED"
    assert by_name["lowering"]["ok"] is True and version in by_name["lowering"]["detail"]
    assert payload["sizes"] == [1, 10_007, 1 << 20]
    sizes_run = {int(re.match(r"numerics n=(\d+)", c["name"])[1]) for c in numerics_checks(payload)}
    assert sizes_run == {1, 10_007, 1 << 20}
    # Templates without [backward] say that grad is not defined (ok None); every other check passes.
    grad = by_name.pop("grad")
    assert all(c["ok"] is True for c in by_name.values()), payload["checks"]
    assert grad["ok"] is (True if template in ("add", "rms-norm") else None), grad
    assert by_name["vmap"]["ok"] is True and "one launch" in by_name["vmap"]["detail"]
    assert all("max abs err" in c["detail"] for c in numerics_checks(payload))
    assert payload["seed"] == 0 and payload["diagnosis"] == []


def test_every_dtype_of_a_generic_op_passes_with_its_tolerance(tmp_path):
    project = new_project(tmp_path, "generic", dtypes=("f16", "bf16", "f32", "f64", "i32", "i64"))
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1,1001", "--seed", "7")
    assert code == EXIT_OK, payload
    details = {c["name"]: c["detail"] for c in numerics_checks(payload)}
    assert set(details) == {f"numerics n={n} {d}" for n in (1, 1001) for d in ("f16", "bf16", "f32", "f64", "i32", "i64")}
    assert "rtol=0.005" in details["numerics n=1001 f16"] and "rtol=0 atol=0" in details["numerics n=1001 i32"]
    assert all(d.startswith("seed 7:") for d in details.values())


def test_bench_times_custom_call_and_xla_in_one_run(tmp_path):
    """The default project (add, typed FFI) passes every check, and --bench runs `xlacc bench` at
    the largest size: the op, the op under vmap and XLA's add in turns in one process, so the
    unbatched call has one time, which the vmap line is measured against."""
    project = new_project(tmp_path, "add_ffi")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--bench")
    assert code == EXIT_OK, payload
    bench_check = checks(payload).pop("bench")
    assert_passes_through_jax({**payload, "checks": [c for c in payload["checks"] if c["name"] != "bench"]}, "add", "ffi")
    problem = payload["bench"]["problems"][0]
    assert problem["label"] == "n=1048576 f32"
    assert problem["bytes"] == 3 * 4 * (1 << 20)  # reference.bytes_moved: two operands and the result
    rows = {r["name"]: r for r in problem["rows"]}
    assert set(rows) == {"add_ffi", "vmap x8", "xla"}
    assert all(r["time_us"]["n"] >= 5 and r["time_us"]["median"] > 0 for r in rows.values())
    op_us = rows["add_ffi"]["time_us"]["median"]
    assert rows["xla"]["versus_op"]["ratio"] == pytest.approx(rows["xla"]["time_us"]["median"] / op_us)
    assert rows["vmap x8"]["versus_op"]["ratio"] == pytest.approx(rows["vmap x8"]["time_us"]["median"] / op_us)
    assert rows["add_ffi"]["gbps"] == pytest.approx(problem["bytes"] / op_us / 1e3)
    detail = bench_check["detail"]
    assert detail.count(f"add_ffi {op_us:.1f} us") == 1 and "vmap x8" in detail and "its time" in detail
    assert "all timed in turns in one process" in detail


# -- sharded over host devices (XLA_FLAGS=--xla_force_host_platform_device_count, as on several GPUs) --


def test_add_sharded_over_two_host_devices_runs_once_per_shard_and_benches(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--devices", "2", "--sizes", "1,65536", "--bench")
    assert code == EXIT_OK, payload
    by_name = checks(payload)
    sharded = by_name["sharded along leading dims over 2 devices"]
    assert sharded["ok"] is True and "no collective" in sharded["detail"] and "x[65536], y[65536]" in sharded["detail"]
    assert by_name["grad"]["ok"] is True and "check_grads" in by_name["grad"]["detail"]
    assert payload["bench_sharded"]["devices"] == 2 and payload["bench_sharded"]["custom_us"] > 0
    assert payload["bench_sharded"]["ratio"] == pytest.approx(payload["bench_sharded"]["native_us"] / payload["bench_sharded"]["custom_us"])
    assert {r["name"] for r in payload["bench"]["problems"][0]["rows"]} == {"add_ffi", "vmap x8", "xla"}


@pytest.mark.parametrize("template, checked", [
    ("rms-norm", ["sharded along leading dims over 2 devices", "split x dim 1 (c)"]),
    ("paged-attention", ["sharded along s over 2 devices", "sharded along k over 2 devices", "split query dim 2 (d)"]),
])
def test_each_free_factor_splits_and_a_whole_one_is_refused(tmp_path, template, checked):
    project = new_project(tmp_path, f"{template.replace('-', '_')}_ffi", template=template)
    code, payload, _ = run_smoke(project, "--framework", "jax", "--devices", "2", "--sizes", "1,20000")
    assert code == EXIT_OK, payload
    by_name = checks(payload)
    for name in checked:
        assert by_name[name]["ok"] is True, by_name[name]
    assert "refused" in by_name[checked[-1]]["detail"] and "needs factor" in by_name[checked[-1]]["detail"]


def test_op_without_a_sharding_rule_is_gathered_and_diagnosed(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    spec_file = project / "xlacc.toml"
    spec_file.write_text(re.sub(r"# How the op may be split.*?\nwhole = \[[^\]]*\]\n", "", spec_file.read_text(), flags=re.DOTALL))
    from xlacc.commands.new import update

    assert not update.run(update.UpdateRequest(project)).failed
    code, payload, _ = run_smoke(project, "--framework", "jax", "--devices", "2", "--sizes", "1,4096")
    assert code == EXIT_PROBLEM
    sharded = checks(payload)["sharded along dim 0 over 2 devices"]
    assert sharded["ok"] is False and "all-gather" in sharded["detail"]
    assert "custom-call-replicated" in codes(payload)


# -- broken on purpose ----------------------------------------------------------------------------


def test_legacy_entry_point_registered_as_typed_ffi_fails_at_registration(tmp_path):
    """XLA calls the function as a typed handler to read its metadata: the process dies (SIGSEGV)
    or XLA reports garbage (`Fetching XLA FFI metadata failed`), depending on what the function
    does with arguments it never got. Either way the registration is named before XLA sees it."""
    project = new_project(tmp_path, "add_legacy", api="legacy")
    append(project / project.name / "jax.py", "REGISTER_API_VERSION = 1  # typed FFI registry, legacy function")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    mismatch = next(f for f in payload["diagnosis"] if f["code"] == "api-version-mismatch")
    assert "api_version=1" in mismatch["evidence"] and "legacy" in mismatch["evidence"]
    by_name = checks(payload)
    if "child process" in by_name:
        assert "during registration" in by_name["child process"]["detail"]
        assert "kernel-crash" in codes(payload)
    else:
        assert by_name["registration"]["ok"] is False
    assert not any(c["ok"] is True for c in numerics_checks(payload))


def edit_element_loop(project: Path, replacement: str) -> None:
    """Replace the add template's per-element statement (``outp[i] = ... + ...;``)."""
    kernel = project / "kernel.cc"
    source, count = re.subn(r"(\w+\[i\]\s*=\s*)([^;]*\+[^;]*);", replacement, kernel.read_text())
    assert count >= 1, "the add template's element loop changed: update this edit"
    kernel.write_text(source)


def test_kernel_that_crashes_is_diagnosed_not_raised(tmp_path):
    project = new_project(tmp_path, "segfaults")
    edit_element_loop(project, r"*(volatile int*)nullptr = 0;")
    code, payload, stderr = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    by_name = checks(payload)
    assert by_name["registration"]["ok"] is True and by_name["lowering"]["ok"] is True
    assert by_name["child process"]["ok"] is False
    assert "killed by SIGSEGV during numerics n=1" in by_name["child process"]["detail"]
    crash = next(f for f in payload["diagnosis"] if f["code"] == "kernel-crash")
    assert crash["severity"] == "error" and crash["fix"]
    assert crash["fix"].splitlines()[1].startswith("1. out-of-bounds reads or writes in the kernel")  # an execution cause first
    ruled_out = "Ruled out (lowering, registration passed): a legacy function registered as typed FFI (`jax.ffi.register_ffi_target(...)` without api_version=0); a typed FFI handler registered as legacy"
    assert ruled_out in crash["fix"]  # registration checked the kind: both mismatches are out


def test_a_child_killed_by_sigkill_is_said_to_be_out_of_memory_not_a_crash_of_the_kernel():
    from xlacc.commands.smoke import run_smoke as smoke
    from xlacc.commands.smoke.runner import ChildResult

    killed = ChildResult(returncode=-9, signal_name="SIGKILL", timed_out=False, output="", records=[{"type": "step", "name": "numerics n=1"}])
    [finding] = smoke.diagnosis(killed, "the jax harness was killed by SIGKILL during numerics n=1", set())
    assert finding.code == "kernel-crash" and finding.evidence.endswith("most likely out of memory")
    assert "out-of-memory killer" in finding.fix and "--sizes" in finding.fix


USER_CODE_FAILURES = {
    "example_inputs without attrs": (
        "def example_inputs(size, rng, dtype=None):\n    return [np.ones(size, np.float32), np.ones(size, np.float32)]",
        "lowering", "ExampleInputsError: example_inputs(10007) in add_ffi/reference.py returned list; it returns (operands, attrs)",
    ),
    "example_inputs giving a list for an array": (
        "def example_inputs(size, rng, dtype=None):\n    return [[1.0] * size, np.ones(size, np.float32)], {}",
        "lowering", "ExampleInputsError: example_inputs(10007) in add_ffi/reference.py: x is list, not an array",
    ),
    "example_inputs giving float64 to a float32 op": (
        "def example_inputs(size, rng, dtype=None):\n    return [np.ones(size), np.ones(size, np.float32)], {}",
        "lowering", "ExampleInputsError: example_inputs(10007) in add_ffi/reference.py: x is f64; the op takes f32",
    ),
    "KeyboardInterrupt in the reference": (
        "def reference(x, y, *, xp=np):\n    raise KeyboardInterrupt",
        "numerics n=1", "KeyboardInterrupt",
    ),
}


@pytest.mark.parametrize("code, check, detail", USER_CODE_FAILURES.values(), ids=USER_CODE_FAILURES)
def test_failures_in_the_users_python_are_named_in_their_step(tmp_path, code, check, detail):
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "reference.py", code)
    exit_code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
    assert exit_code == EXIT_PROBLEM and "child process" not in checks(payload)
    assert checks(payload)[check]["ok"] is False and checks(payload)[check]["detail"].startswith(detail)
    assert "kernel-crash" not in codes(payload)


@pytest.mark.parametrize("platforms", ["cuda", "tpu"])
def test_jax_platforms_without_the_projects_platform_is_named(tmp_path, monkeypatch, platforms):
    """jax says a bare AssertionError (cuda here), or that libtpu.so is missing (which read as this
    project's own missing library)."""
    project = new_project(tmp_path, "add_ffi")
    monkeypatch.setenv("JAX_PLATFORMS", platforms)
    exit_code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
    assert exit_code == EXIT_PROBLEM and codes(payload) == []
    assert f"JAX_PLATFORMS={platforms!r} names" in checks(payload)["jax"]["detail"]
    assert "a cpu project needs cpu among them" in checks(payload)["jax"]["detail"]


def test_a_signal_raised_in_the_reference_is_placed_in_it_not_in_the_kernel(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "reference.py", "def reference(x, y, *, xp=np):\n    import os\n    os.abort()")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
    assert code == EXIT_PROBLEM
    [crash] = [f for f in payload["diagnosis"] if f["code"] == "kernel-crash"]
    assert crash["title"] == "the process was killed by SIGABRT while your Python code ran"
    assert re.search(r"in your Python code at \S+/add_ffi/reference\.py:\d+ \(in reference\)", crash["evidence"])


def test_platform_string_jax_queues_silently(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "jax.py", 'PLATFORM = "GPU"  # queued by jax, never applied')
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    registration = checks(payload)["registration"]
    assert registration["ok"] is False and "'GPU'" in registration["detail"]
    assert codes(payload) == ["platform-name"]  # the text rules' guesses at the same failure are left out
    assert checks(payload)["compile"]["ok"] is False
    assert not numerics_checks(payload) or all(c["ok"] is not True for c in numerics_checks(payload))


@pytest.mark.parametrize("version, code", [(4, "api-version-invalid"), (0, "api-version-mismatch")])
def test_a_wrong_register_api_version_is_one_finding(tmp_path, version, code):
    """4 is the HLO number of a typed FFI call, not jax's register scale; 0 puts a typed handler in
    the legacy registry. The harness measured it: one finding, no guesses beside it."""
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "jax.py", f"REGISTER_API_VERSION = {version}")
    exit_code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
    assert exit_code == EXIT_PROBLEM and checks(payload)["registration"]["ok"] is False
    assert codes(payload) == [code]
    assert f"api_version={version}" in payload["diagnosis"][0]["evidence"]


def test_kernel_that_writes_zeros_fails_numerics(tmp_path):
    project = new_project(tmp_path, "zeros")
    edit_element_loop(project, r"\g<1>\g<2> * 0;")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    failed = [c for c in numerics_checks(payload) if c["ok"] is False]
    assert failed and all("every output is zero" in c["detail"] for c in failed)
    assert checks(payload)["registration"]["ok"] is True and checks(payload)["lowering"]["ok"] is True


def test_reference_that_disagrees_fails_numerics_with_the_error(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    append(
        project / project.name / "reference.py",
        """
_agreed_reference = reference


def reference(*operands, xp=np, **attrs):
    return _agreed_reference(*operands, xp=xp, **attrs) + 1
""",
    )
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    numerics = numerics_checks(payload)
    assert len(numerics) == 3 and all(c["ok"] is False for c in numerics)
    assert all(re.search(r"max abs err 1 at \[\d+\]", c["detail"]) for c in numerics)
    assert "65536 of 65536 elements outside tolerance" in checks(payload)["numerics n=65536 f32"]["detail"]


def test_example_inputs_that_ignore_the_size_are_named_with_the_sizes_asked(tmp_path):
    """The numerics checks pass, but they all ran one problem: a warning says so, and why."""
    project = new_project(tmp_path, "add_ffi")
    append(
        project / project.name / "reference.py",
        """
_sized_inputs = example_inputs


def example_inputs(size, rng, dtype=None):
    return _sized_inputs(1001, rng, dtype)
""",
    )
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_OK and all(c["ok"] for c in numerics_checks(payload))
    [warning] = [f for f in payload["diagnosis"] if f["code"] == "example-inputs-ignore-size"]
    assert warning["severity"] == "warning"
    assert "same operands for n=1, n=1001, n=65536: x f32[1001], y f32[1001]" in warning["evidence"]


def test_op_that_never_calls_the_kernel_is_optimized_away(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "jax.py", f"def {project.name}(x, y):\n    return jax.numpy.zeros_like(x)")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", SMALL_SIZES)
    assert code == EXIT_PROBLEM
    assert checks(payload)["lowering"]["ok"] is False
    assert "op-optimized-away" in codes(payload)


def test_hang_is_cut_by_the_timeout(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "jax.py", "import time\ntime.sleep(600)")
    code, payload, _ = run_smoke(project, "--framework", "jax", "--timeout", "6")
    assert code == EXIT_PROBLEM
    child = checks(payload)["child process"]
    assert child["ok"] is False and "timed out after" in child["detail"] and "during registration" in child["detail"]


def test_a_compiler_that_hangs_is_stopped_at_run_smokes_timeout(tmp_path, monkeypatch):
    project = new_project(tmp_path, "hung_compiler")
    append(project / "kernel.cc", "// not in the shared cache")
    compiler = tmp_path / "g++"
    compiler.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "g++ (fake) 12.2.0"; exit 0; fi\nexec sleep 600\n')
    compiler.chmod(0o755)
    monkeypatch.setenv("CXX", str(compiler))
    started = time.monotonic()
    code, payload, _ = run_smoke(project, "--framework", "jax", "--timeout", "3")
    assert code == EXIT_PROBLEM and time.monotonic() - started < 30
    assert "did not finish in 3 s" in checks(payload)["compile"]["detail"]


def test_usage_errors_are_one_line(tmp_path):
    project = new_project(tmp_path, "add_ffi")
    for flags, message in ((["--framework", "torch-xla"], "not generated for torch-xla"),
                           (["--framework", "tf"], "unknown framework"),
                           (["--sizes", "0"], "--sizes"),
                           (["--timeout", "0"], "--timeout"),
                           (["--devices", "0"], "--devices")):
        code, payload, stderr = run_smoke(project, *flags)
        assert code == EXIT_USAGE and payload == {"exit_code": EXIT_USAGE, "error": stderr.strip().removeprefix("error: ")}
        assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_build_failure_stops_before_any_child(tmp_path):
    project = new_project(tmp_path, "nobuild")
    append(project / "kernel.cc", "this is not C++;")
    code, payload, _ = run_smoke(project, "--framework", "jax")
    assert code == EXIT_PROBLEM
    assert checks(payload)["build"]["ok"] is False
    assert not any(name in checks(payload) for name in ("registration", "lowering"))


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="needs nvcc to build a cuda project")
def test_cuda_project_without_a_gpu_checks_what_it_can_and_exits_3(tmp_path):
    import jax

    try:
        has_gpu = bool(jax.devices("gpu"))
    except RuntimeError:
        has_gpu = False
    if has_gpu:
        pytest.skip("a GPU is visible: this test is about machines without one")
    project = new_project(tmp_path, "on_gpu", platform="cuda", arch="sm_80")  # the next test's library
    code, payload, _ = run_smoke(project, "--framework", "jax")
    assert code == EXIT_NEEDS_GPU, payload
    by_name = checks(payload)
    assert by_name["registration"]["ok"] is None and "queued for CUDA" in by_name["registration"]["detail"]
    assert by_name["lowering"]["ok"] is True and "jax.export" in by_name["lowering"]["detail"]
    assert by_name["numerics"]["ok"] is None
    assert "no-gpu" in codes(payload)


def test_library_without_code_for_the_visible_gpu_is_arch_mismatch(tmp_path, monkeypatch):
    """What a Hopper GPU meets with an sm_80-only build: stopped before any launch, with the reason."""
    from xlacc import spec
    from xlacc.commands.build import builder
    from xlacc.commands.smoke import run_smoke as smoke
    from xlacc.ground import toolchain
    from xlacc.ground.report import Report

    project = spec.load(new_project(tmp_path, "on_gpu", platform="cuda", arch="sm_80"))
    assert builder.build_spec(project).ok
    monkeypatch.setattr(toolchain, "visible_gpu_archs", lambda: ["sm_90"])
    report = Report("t")
    assert smoke.runs_on_visible_gpus(project, report) is False
    assert [f.code for f in report.findings] == ["arch-mismatch"] and "sm_90" in report.findings[0].evidence
    monkeypatch.setattr(toolchain, "visible_gpu_archs", lambda: ["sm_86"])  # sm_80 SASS runs on sm_86
    assert smoke.runs_on_visible_gpus(project, Report("t")) is True


def test_a_framework_that_is_not_installed_is_skipped_with_its_install(tmp_path, monkeypatch):
    """The README's first install has jax only: the torch-xla side says how to install it, and the
    run still passes; with no framework installed at all nothing could be proved, and it fails."""
    from xlacc.commands.smoke import run_smoke as smoke

    project = new_project(tmp_path, "add_ffi", frameworks=("jax", "torch-xla"))
    request = smoke.SmokeRequest(project, None, [1, 1001], 0, None, None, 120.0, False)
    monkeypatch.setitem(smoke.FRAMEWORK_PACKAGES, "torch-xla", (("torch", "no_torch_xla_here"), "pip install -e '.[torch-xla]'"))
    report = smoke.run(request)
    assert report.code() == EXIT_OK, report.to_json()
    by_name = {c.name: c for c in report.checks}
    assert by_name["torch-xla"].ok is None
    assert by_name["torch-xla"].detail == "not run: no_torch_xla_here not installed here (pip install -e '.[torch-xla]' in a checkout of xlacc)"
    assert by_name["jax: registration"].ok is True
    monkeypatch.setitem(smoke.FRAMEWORK_PACKAGES, "jax", (("no_jax_here",), "pip install -e '.[jax]'"))
    report = smoke.run(request)
    assert report.code() == EXIT_PROBLEM
    assert [c.ok for c in report.checks if c.name in ("jax", "torch-xla")] == [False, False]


def test_a_call_the_host_queues_slower_than_it_runs_is_timed_as_host_bound(monkeypatch):
    """torchax's dispatch can take longer than a 16M-element add on an H100: the time it gives is
    then the dispatch's, and the bench must say so rather than compare kernels."""
    from xlacc.commands.smoke import timing

    monkeypatch.setattr(timing, "BENCH_SECONDS", 0.0)
    slow_to_queue = timing.time_call(lambda: time.sleep(0.002), [], wait=lambda _: None, sample_seconds=0.01)
    slow_to_run = timing.time_call(lambda: None, [], wait=lambda _: time.sleep(0.01), sample_seconds=0.01)
    assert slow_to_queue.host_bound and slow_to_queue.queued >= 0.002
    assert not slow_to_run.host_bound and slow_to_run.seconds > 5 * slow_to_run.queued


def test_a_thread_the_reference_leaves_running_does_not_hold_run_smoke(tmp_path):
    """The harness waited for the user's non-daemon thread after its last check, until --timeout."""
    project = new_project(tmp_path, "add_ffi")
    append(project / project.name / "reference.py", "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()")
    started = time.perf_counter()
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1", "--timeout", "300", timeout=400)
    assert code == EXIT_OK, payload
    assert time.perf_counter() - started < 200  # not --timeout's 300 s


def test_a_library_built_before_runs_where_no_compiler_is(tmp_path, monkeypatch):
    """A runtime image without g++ refused a project whose library was up to date."""
    project = new_project(tmp_path, "add_ffi")
    assert run_smoke(project, "--framework", "jax", "--sizes", "1")[0] == EXIT_OK  # builds it
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    monkeypatch.delenv("CXX", raising=False)
    code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
    assert code == EXIT_OK, payload
    assert checks(payload)["build"]["ok"] is None and "taken as built: no source is newer than it" in checks(payload)["build"]["detail"]
    for edited in ("kernel.cc", "xlacc.toml", "helpers.h"):  # a source, the spec's defines, a header
        (project / edited).touch()
        code, payload, _ = run_smoke(project, "--framework", "jax", "--sizes", "1")
        assert code == EXIT_USAGE and "no C++ compiler found" in payload["error"], edited
        os.utime(project / edited, (0, 0))
