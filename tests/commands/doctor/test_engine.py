"""`xlacc doctor` end to end: every artifact names its codes in --json, exit codes, flags, commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from locations import ARTIFACTS_DIR, REPO_DIR
from needs import needs_ffi_headers
from typer.testing import CliRunner

from xlacc.cli import app
from xlacc.commands.doctor import engine
from xlacc.ground.catalogue import CODES
from xlacc.ground.errors import UsageError

ROOT = REPO_DIR
ARTIFACTS = ARTIFACTS_DIR / "doctor"
EXPECTED = {k: v for k, v in json.loads((ARTIFACTS / "expected.json").read_text()).items() if not k.startswith("_")}
runner = CliRunner()


def doctor_json(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["doctor", "--json", *args], obj={"command": []})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xlacc", *args], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=timeout
    )


def args_for(artifact: str) -> list[str]:
    path = str(ARTIFACTS / artifact)
    return ["--log", path] if artifact.startswith("logs/") else [path]


@pytest.mark.parametrize("artifact", sorted(EXPECTED))
def test_json_names_the_expected_codes(artifact):
    expected = EXPECTED[artifact]
    exit_code, report = doctor_json(*args_for(artifact))
    codes = [f["code"] for f in report["findings"]]
    for code in expected["codes"]:
        assert code in codes, f"{artifact}: {code} not in {codes}"
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert exit_code == report["exit_code"] == (1 if errors else 0)
    if not expected["codes"]:
        assert errors == [], f"clean artifact {artifact} raised {errors}"
    if expected.get("first"):
        assert codes[0] == expected["first"]
    if expected.get("target"):
        first = report["findings"][0]
        assert expected["target"] in first["evidence"] and expected["target"] in first["title"]
    for finding in report["findings"]:
        assert set(finding) == {"code", "severity", "title", "evidence", "fix"}
        assert finding["code"] in CODES and finding["evidence"] and finding["fix"]


def test_several_causes_are_ranked_and_each_says_how_to_tell():
    _, report = doctor_json("--log", str(ARTIFACTS / "logs/target-not-registered-cuda-glog.log"))
    codes = [f["code"] for f in report["findings"]]
    assert codes[:3] == ["target-not-registered", "api-version-mismatch", "platform-name"]
    assert codes[-1] == "ld-preload"
    tells = [f["evidence"].splitlines()[-1] for f in report["findings"]]
    assert len(set(tells)) == len(tells)
    assert all("XlaGpuSimpleAdd" in f["evidence"] for f in report["findings"])


def test_check_filter_keeps_only_the_named_codes():
    artifact = str(ARTIFACTS / "sources/seed000_minimal_xla_custom_call.cu")
    exit_code, report = doctor_json("--check", "unchecked-launch", artifact)
    assert [f["code"] for f in report["findings"]] == ["unchecked-launch"]
    assert exit_code == 0  # a warning only: the hardcoded-size error was filtered out
    exit_code, report = doctor_json("--check", "hardcoded-size,unchecked-launch", artifact)
    assert {f["code"] for f in report["findings"]} == {"hardcoded-size", "unchecked-launch"} and exit_code == 1


def test_list_checks_puts_the_catalogue_in_checks_and_data():
    exit_code, report = doctor_json("--list-checks")
    assert exit_code == 0
    assert [c["name"] for c in report["checks"]] == list(CODES)
    assert {e["code"] for e in report["catalogue"]} == set(CODES)
    assert all(set(e) >= {"code", "severity", "title", "explanation", "fix", "example"} for e in report["catalogue"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["doctor", "--check", "no-such-code", "x.cu"], "unknown finding code 'no-such-code'"),
        (["doctor", "does/not/exist.cu"], "no such file or directory"),
        (["doctor", "--log", "does/not/exist.log"], "cannot read"),
        (["doctor", "--so", "does/not/exist.so"], "no such file"),
        (["doctor", "--arch", "sm_nine", "--so", "x.so"], "--arch sm_nine"),
        (["doctor", "pyproject.toml"], "not a kernel, script, note, log or library"),
        (["doctor", "--", "no-such-program-xlacc"], "no such program"),
        (["doctor", "--", ""], "the command after -- is empty"),
        (["doctor", "--log", ""], "--log names nothing"),
        (["doctor", "--check", " ", "x.cu"], "--check names nothing"),
        (["doctor", "--symbol", "my_entry"], "--symbol names entry points of a shared object"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, message):
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_unknown_code_is_a_usage_error_in_the_api_too():
    with pytest.raises(UsageError):
        engine.run(engine.DoctorRequest([], None, [], None, None, False, ["nope"], []))


def test_log_from_stdin():
    text = (ARTIFACTS / "logs/wrong-number-of-arguments.log").read_text()
    done = cli("doctor", "--json", "--log", "-", stdin=text)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["checks"][0]["name"] == "log stdin"
    assert [f["code"] for f in report["findings"]] == ["operand-mismatch"]


def test_text_output_in_the_style_of_flutter_doctor():
    done = cli("doctor", str(ARTIFACTS / "sources/seed000_minimal_xla_custom_call.cu"))
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    assert any(line.startswith("✗ source ") for line in lines)
    assert any(line.startswith("✗ hardcoded-size:") for line in lines)
    assert any(line.startswith("! unchecked-launch:") for line in lines)
    assert any(line.startswith("! legacy-api-deprecated:") for line in lines)  # the 4-parameter signature
    assert sum(1 for line in lines if line.strip().startswith("fix:")) == 3


# -- commands -----------------------------------------------------------------------------------


def test_command_killed_by_a_signal_is_a_kernel_crash():
    done = cli("doctor", "--json", "--", sys.executable, "-c", "import ctypes; ctypes.string_at(0)")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["command"]["signal"] == "SIGSEGV" and report["command"]["returncode"] == -11
    crash = next(f for f in report["findings"] if f["code"] == "kernel-crash")
    assert "SIGSEGV" in crash["evidence"] and "registered as typed FFI" in crash["fix"]


def test_command_crash_reported_by_a_shell_as_128_plus_signal():
    script = f'"{sys.executable}" -c "import os, signal; os.kill(os.getpid(), signal.SIGABRT)"; exit $?'
    done = cli("doctor", "--json", "--", "sh", "-c", script)
    report = json.loads(done.stdout)
    assert report["command"]["returncode"] == 134 and report["command"]["signal"] == "SIGABRT"
    assert "kernel-crash" in [f["code"] for f in report["findings"]]


def test_command_output_goes_through_the_text_rules():
    code = "import sys; print('jax.errors.JaxRuntimeError: UNIMPLEMENTED: No registered implementation for custom call to my_op for platform CUDA'); sys.exit(1)"
    done = cli("doctor", "--json", "--", sys.executable, "-c", code)
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["findings"][0]["code"] == "target-not-registered" and "my_op" in report["findings"][0]["evidence"]
    assert "kernel-crash" not in [f["code"] for f in report["findings"]]


def test_successful_command_is_clean_and_a_failing_one_without_known_text_still_fails():
    ok = cli("doctor", "--json", "--", sys.executable, "-c", "print('ok')")
    assert ok.returncode == 0 and json.loads(ok.stdout)["findings"] == []
    bad = cli("doctor", "--", sys.executable, "-c", "import sys; print('something odd'); sys.exit(3)")
    assert bad.returncode == 1
    assert "exit 3" in bad.stdout and "something odd" in bad.stdout  # the output's tail is shown


# -- a project written by `xlacc new` is clean ----------------------------------------------------


@pytest.mark.parametrize("platform, api", [("cuda", "ffi"), ("cuda", "legacy"), ("cpu", "ffi"), ("cpu", "legacy")])
def test_generated_project_raises_no_error(tmp_path, platform, api):
    pytest.importorskip("xlacc.commands.new.project")
    project = tmp_path / "myop"
    made = runner.invoke(app, ["new", "myop", "--platform", platform, "--api", api, "--dir", str(project)], obj={"command": []})
    assert made.exit_code == 0, made.output
    exit_code, report = doctor_json(str(project))
    assert exit_code == 0, report["findings"]
    assert [f for f in report["findings"] if f["severity"] != "info"] == []
    names = [c["name"] for c in report["checks"]]
    assert any(n.endswith("kernel.cu") or n.endswith("kernel.cc") for n in names)
    assert any(n.startswith("shared object") for n in names)  # not built yet: skipped, named


def test_a_project_is_read_with_the_kernel_it_wraps_from_outside_its_folder(tmp_path):
    """`xlacc new --from` leaves the user's kernel where it is: doctor on the project reads it too."""
    kernels = tmp_path / "csrc"
    kernels.mkdir()
    (kernels / "scale.cu").write_text(
        "__global__ void scale_kernel(float* out, const float* x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = 2.0f * x[i];\n}\n"
        "void run_scale(cudaStream_t stream, float* out, const float* x, int n) {\n"
        "  scale_kernel<<<(n + 255) / 256, 256>>>(out, x, n);\n}\n"
    )
    made = runner.invoke(app, ["new", "scale", "--from", str(kernels / "scale.cu"), "--dir", str(tmp_path / "scale")], obj={"command": []})
    assert made.exit_code == 0, made.output
    exit_code, report = doctor_json(str(tmp_path / "scale"))
    assert exit_code == 1
    [finding] = [f for f in report["findings"] if f["code"] == "stream-ignored"]
    assert "run_scale" in finding["evidence"] and "scale.cu:5" in finding["evidence"]


@needs_ffi_headers
def test_a_library_older_than_its_kernel_is_named_by_doctor_and_by_the_package(tmp_path):
    """An edit without `xlacc build` leaves the old library in place: doctor fails its line, and the
    generated package warns when it loads it (so the generated tests say it too)."""
    project = tmp_path / "stale_op"
    assert runner.invoke(app, ["new", "stale_op", "--platform", "cpu", "--framework", "jax", "--dir", str(project)], obj={"command": []}).exit_code == 0
    assert runner.invoke(app, ["build", str(project)], obj={"command": []}).exit_code == 0
    later = (project / "stale_op" / "libstale_op.so").stat().st_mtime + 1
    os.utime(project / "kernel.cc", (later, later))
    exit_code, report = doctor_json(str(project))
    [library] = [c for c in report["checks"] if c["name"].startswith("shared object")]
    assert exit_code == 1 and library["ok"] is False and "older than kernel.cc" in library["detail"]
    loaded = subprocess.run([sys.executable, "-W", "error", "-c", "import stale_op; stale_op.library()"], cwd=project, capture_output=True, text=True)
    assert loaded.returncode == 1 and "libstale_op.so is older than kernel.cc: run `xlacc build`" in loaded.stderr


def test_a_directory_with_nothing_to_read_says_so(tmp_path):
    (tmp_path / "picture.png").write_bytes(b"\x89PNG")
    code, report = doctor_json(str(tmp_path))
    assert code == 0 and not report["findings"]
    assert report["checks"][0]["ok"] is None and "no kernels, scripts, notes, logs" in report["checks"][0]["detail"]


def test_notes_logs_and_notebooks_in_a_folder_are_read(tmp_path):
    (tmp_path / "notes.md").write_text("```python\nimport torch_xla\ntorch_xla._XLAC._xla_custom_call([q], 'op', [list(q.shape)], [str(q.dtype)], False, '', 2, {})\n```\n")
    (tmp_path / "run.log").write_text("E0101 00:00:00.000 1 custom_call.cc:88] No registered implementation for custom call to my_op for platform CUDA\n")
    notebook = {"cells": [{"cell_type": "code", "source": ["import jax\n", "jax.ffi.register_ffi_target('op', cap, platform='GPU')\n"], "outputs": []}]}
    (tmp_path / "try.ipynb").write_text(json.dumps(notebook))
    code, report = doctor_json(str(tmp_path))
    found = {(f["code"], f["evidence"].split(":")[0]) for f in report["findings"]}
    assert code == 1
    assert ("output-dtype-type", str(tmp_path / "notes.md")) in found
    assert any(c == "target-not-registered" for c, _ in found)
    assert ("platform-name", str(tmp_path / "try.ipynb")) in found


@needs_ffi_headers
def test_so_inside_a_project_is_checked_for_the_projects_entry_points(tmp_path):
    from xlacc import spec
    from xlacc.commands.build import builder
    from xlacc.commands.new import project as scaffold

    scaffold.create(scaffold.NewRequest(name="owned", platform="cpu", frameworks=["jax"], directory=tmp_path / "owned"))
    assert builder.build_spec(spec.load(tmp_path / "owned")).ok
    code, report = doctor_json("--so", str(tmp_path / "owned" / "owned" / "libowned.so"))
    names = [c["name"] for c in report["checks"]]
    assert code == 0 and "symbol xlacc_owned_ffi" in names


def test_findings_alike_but_for_their_lines_are_shown_three_times_then_counted():
    from xlacc.ground.catalogue import make

    launches = [make("stream-ignored", f"f (k.cu:3) launches `k<<<1, 1>>>(x)` (line {n}) on the default stream") for n in range(4, 9)]
    other = make("stream-ignored", "g (k.cu:30) launches `k<<<1, 1>>>(y)` (line 31) on the default stream")
    folded = engine._fold_alike([launches[0], other, *launches[1:], launches[0]])
    assert [f.evidence for f in folded] == [
        launches[0].evidence,
        other.evidence,
        launches[1].evidence,
        launches[2].evidence + " (and 2 more like it)",
    ]
    assert engine._fold_alike(launches[:3]) == launches[:3]


@pytest.mark.parametrize(
    "seconds, text", [(1e-9, "less than 0.01 s"), (0.004, "less than 0.01 s"), (0.5, "0.5 s"), (2.013, "2.01 s"), (3.0, "3 s"), (600.0, "600 s")]
)
def test_durations_are_printed_to_two_decimals_at_most(seconds, text):
    assert engine._duration(seconds) == text


def _replicated_module(path: Path, padding_lines: int) -> Path:
    """An HLO module whose custom call is fed by all-gathers, after ``padding_lines`` adds."""
    head = "HloModule jit_f\n\nENTRY %main (p0: f32[8], p1: f32[8]) -> f32[16] {\n  %p0 = f32[8]{0} parameter(0)\n  %p1 = f32[8]{0} parameter(1)\n  %a0 = f32[8]{0} add(%p0, %p1)\n"
    body = "".join(f"  %a{i} = f32[8]{{0}} add(%a{i - 1}, %a{i - 1})\n" for i in range(1, padding_lines))
    gathers = "".join(
        f"  %all-gather.{i} = f32[16]{{0}} all-gather({operand}), channel_id={i + 1}, replica_groups=[1,2]<=[2], dimensions={{0}}, use_global_device_ids=true\n"
        for i, operand in enumerate([f"%a{padding_lines - 1}", "%p1"])
    )
    call = '  ROOT %custom-call = f32[16]{0} custom-call(%all-gather.0, %all-gather.1), custom_call_target="add", api_version=API_VERSION_TYPED_FFI\n}\n'
    path.write_text(head + body + gathers + call)
    return path


@pytest.mark.parametrize("name", ["big.hlo", "module_0001.jit_f.sm_9.0_gpu_after_optimizations.txt"])
def test_an_hlo_module_past_the_source_limit_is_read_whole(tmp_path, name):
    """A 2.6 MB module was cut at 2 MB: doctor said it held no custom call, and exited 0 (and so for
    the .txt file --xla_dump_to writes)."""
    module = _replicated_module(tmp_path / name, 60_000)
    assert module.stat().st_size > 2_000_000
    code, payload = doctor_json(str(module))
    assert code == 1 and [f["code"] for f in payload["findings"]] == ["custom-call-replicated"]


def test_an_hlo_module_too_large_to_read_whole_is_refused_in_one_line(tmp_path, monkeypatch):
    from xlacc.commands.doctor import inputs

    monkeypatch.setattr(inputs, "MAX_MODULE_BYTES", 1_000_000)
    module = _replicated_module(tmp_path / "big.hlo", 30_000)
    with pytest.raises(UsageError, match=r"big.hlo is \d MB; doctor reads an HLO module up to 1 MB whole"):
        engine.run(engine.DoctorRequest([module], None, [], None, None, False, [], []))


def test_a_launch_function_the_entry_points_no_longer_match_fails_the_project_line(tmp_path):
    """build failed to compile it while doctor said the spec matched its generated code."""
    from xlacc.commands.new import project as scaffold
    from xlacc.commands.new import update

    project = tmp_path / "op"
    scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    spec_file = project / "xlacc.toml"
    spec_file.write_text(spec_file.read_text().replace("[[outputs]]", '[[attrs]]\nname = "alpha"\ntype = "f32"\ndefault = 1.0\n\n[[outputs]]', 1))
    assert update.run(update.UpdateRequest(project)).code() == 1  # the launch function is the user's to change
    code, payload = doctor_json(str(project))
    line = next(c for c in payload["checks"] if c["name"] == "project op")
    assert code == 1 and line["ok"] is False and re.search(r"kernel\.cc:\d+: op_launch<T>\(\) takes \(.*\) and is called with", line["detail"])


def test_python_about_custom_calls_that_does_not_parse_fails_its_line(tmp_path):
    """A missing comma hid two errors behind a ticked line (a real repository's fused_ce_loss.py)."""
    (tmp_path / "op.py").write_text('import jax\nout = jax.ffi.ffi_call("op", x\n  y)(z)\n')
    (tmp_path / "other.py").write_text("def f(:\n    pass\n")  # no custom call in it: not doctor's to fail
    code, payload = doctor_json(str(tmp_path))
    lines = {c["name"].rsplit("/", 1)[-1]: c for c in payload["checks"]}
    assert code == 1 and lines["op.py"]["ok"] is False and "cannot be checked until it parses" in lines["op.py"]["detail"]
    assert lines["other.py"]["ok"] is True


def test_a_launch_function_that_still_takes_the_call_is_not_failed(tmp_path):
    """An old signature in a comment or under #if 0, or an extra parameter with a default, failed a
    project that builds and runs."""
    from xlacc.commands.new import project as scaffold

    project = tmp_path / "op"
    scaffold.create(scaffold.NewRequest(name="op", template="add", platform="cpu", frameworks=["jax"], directory=project))
    kernel = project / "kernel.cc"
    text = kernel.read_text()
    old = "// was: op_launch(xlacc::Stream stream, const xlacc::Tensor& x)\n#if 0\nvoid op_launch(int a, int b) {}\n#endif\n"
    defaulted = text.replace("const xlacc::Tensor& out)", "const xlacc::Tensor& out, int unroll = 4)")
    assert defaulted != text, "the template's launch function changed: update this test"
    kernel.write_text(old + defaulted)
    code, payload = doctor_json(str(project))
    line = next(c for c in payload["checks"] if c["name"] == "project op")
    assert line["ok"] is True, line
