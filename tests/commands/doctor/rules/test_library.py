"""Shared-library checks on libraries built here with g++ and nvcc, through `xlacc doctor --so`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from needs import GXX, needs_gxx
from typer.testing import CliRunner

from xlacc.cli import app
from xlacc.commands.doctor.rules import library

runner = CliRunner()
ENTRIES = r"""
#include <cstddef>
extern "C" void good_entry(void* stream, void** buffers, const char* opaque, size_t opaque_len) {}
void cxx_entry(void* stream, void** buffers, const char* opaque, size_t opaque_len) {}
extern "C" __attribute__((visibility("hidden"))) void hidden_entry(void* stream, void** buffers) {}
"""
TINY_KERNEL = r"""
__global__ void bump(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" void launch_bump(float* x, cudaStream_t stream) {
  bump<<<1, 32, 0, stream>>>(x);
  cudaGetLastError();
}
"""


def compile_gxx(out: Path, source: str, *flags: str) -> Path:
    src = out.with_suffix(".cc")
    src.write_text(source)
    # Libraries after the source: with --as-needed (Ubuntu's default) an earlier -l is dropped.
    subprocess.run([GXX, "-shared", "-fPIC", str(src), *flags, "-o", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, Path]:
    """One compile per library: entries (exported, mangled, hidden), a missing dependency, broken files."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    d = tmp_path_factory.mktemp("libs")
    entries = compile_gxx(d / "libentries.so", ENTRIES)
    compile_gxx(d / "libxlaccdep.so", 'extern "C" int xlacc_dep_value() { return 1; }')
    uses = compile_gxx(d / "libuses.so", 'extern "C" int xlacc_dep_value();\nextern "C" int uses() { return xlacc_dep_value(); }', f"-L{d}", "-lxlaccdep")
    (d / "libxlaccdep.so").unlink()
    obj = d / "entries.o"
    subprocess.run([GXX, "-c", "-fPIC", str(d / "libentries.cc"), "-o", str(obj)], check=True, capture_output=True)
    data = entries.read_bytes()
    (d / "truncated.so").write_bytes(data[:200])
    (d / "text.so").write_text("not a library\n")
    foreign = bytearray(data)
    foreign[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    (d / "aarch64.so").write_bytes(bytes(foreign))
    return {"entries": entries, "uses": uses, "object": obj, "truncated": d / "truncated.so", "text": d / "text.so", "aarch64": d / "aarch64.so"}


@pytest.fixture(scope="module")
def sm80_lib(tmp_path_factory) -> Path:
    """A CUDA library holding SASS for sm_80 only (no PTX)."""
    from xlacc.ground import toolchain
    from xlacc.ground.errors import XlaccError

    try:
        nvcc = toolchain.find_nvcc()
    except XlaccError:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("cuda")
    (d / "tiny.cu").write_text(TINY_KERNEL)
    out = d / "libtiny80.so"
    subprocess.run(
        [str(nvcc.path), "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80", str(d / "tiny.cu"), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def doctor_json(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["doctor", "--json", *args], obj={"command": []})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def findings(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


# -- symbols ------------------------------------------------------------------------------------


def test_exported_symbol_is_clean(libs):
    exit_code, report = doctor_json("--so", str(libs["entries"]), "--symbol", "good_entry")
    assert exit_code == 0 and report["findings"] == []
    assert {"name": "symbol good_entry", "ok": True, "detail": "exported (--symbol)"} in report["checks"]


def test_mangled_symbol_shows_the_signature_and_the_extern_c_fix(libs):
    exit_code, report = doctor_json("--so", str(libs["entries"]), "--symbol", "cxx_entry")
    (finding,) = findings(report, "symbol-mangled")
    assert exit_code == 1
    assert "_Z9cxx_entryPvPS_PKcm" in finding["evidence"]
    assert "cxx_entry(void*, void**, char const*, unsigned long)" in finding["evidence"]
    assert 'extern "C" void cxx_entry(void*, void**, char const*, unsigned long)' in finding["fix"]


def test_hidden_symbol(libs):
    _, report = doctor_json("--so", str(libs["entries"]), "--symbol", "hidden_entry")
    (finding,) = findings(report, "symbol-hidden")
    assert "not in its dynamic symbol table: local binding" in finding["evidence"]


def test_missing_symbol_lists_the_closest_exported_names(libs):
    _, report = doctor_json("--so", str(libs["entries"]), "--symbol", "good_entyr")
    (finding,) = findings(report, "symbol-missing")
    assert "closest exported: good_entry" in finding["evidence"]


def test_several_symbols_in_one_call(libs):
    _, report = doctor_json("--so", str(libs["entries"]), "--symbol", "good_entry,cxx_entry", "--symbol", "nothing_like_it")
    assert sorted(f["code"] for f in report["findings"]) == ["symbol-mangled", "symbol-missing"]
    assert [c["ok"] for c in report["checks"] if c["name"].startswith("symbol ")] == [True, False, False]


def test_no_symbols_named_skips_that_check(libs):
    exit_code, report = doctor_json("--so", str(libs["entries"]))
    assert exit_code == 0
    assert {"name": "entry points", "ok": None, "detail": "none named: pass --symbol NAME (or a project with xlacc.toml)"} in report["checks"]


# -- loading ------------------------------------------------------------------------------------


def test_missing_dependency(libs):
    exit_code, report = doctor_json("--so", str(libs["uses"]))
    (finding,) = findings(report, "dependency-missing")
    assert exit_code == 1 and "libxlaccdep.so" in finding["evidence"]


def test_dependencies_found_are_clean(libs):
    _, report = doctor_json("--so", str(libs["entries"]))
    assert findings(report, "dependency-missing") == []


@pytest.mark.parametrize(
    "name, words",
    [
        ("text", "not an ELF file"),
        ("truncated", "cut short"),
        ("object", "object file (ET_REL)"),
        ("aarch64", "built for AArch64"),
    ],
)
def test_invalid_libraries(libs, name, words):
    exit_code, report = doctor_json("--so", str(libs[name]))
    (finding,) = findings(report, "library-invalid")
    assert exit_code == 1 and words in finding["evidence"]
    assert len(report["findings"]) == 1  # nothing else is checked on a file that is not a library


def test_a_library_given_as_path_is_checked_as_with_so(libs):
    _, report = doctor_json(str(libs["entries"]), "--symbol", "cxx_entry")
    assert [f["code"] for f in report["findings"]] == ["symbol-mangled"]


def test_not_found_comes_from_the_elf_reader(tmp_path):
    (section,) = library.check_library(tmp_path / "nope.so", [], None)
    assert [f.code for f in section.findings] == ["library-not-found"]


# -- GPU code -----------------------------------------------------------------------------------


def test_host_only_library_skips_the_arch_check(libs):
    _, report = doctor_json("--so", str(libs["entries"]), "--arch", "sm_90")
    gpu = next(c for c in report["checks"] if c["name"] == "GPU code")
    assert gpu["ok"] is None and "host-only" in gpu["detail"]


def test_arch_mismatch_names_what_is_there_and_what_is_needed(sm80_lib):
    exit_code, report = doctor_json("--so", str(sm80_lib), "--symbol", "launch_bump", "--arch", "sm_90")
    (finding,) = findings(report, "arch-mismatch")
    assert exit_code == 1
    assert "holds sm_80 (SASS)" in finding["evidence"] and "sm_90 (--arch)" in finding["evidence"]
    assert "arch=compute_90,code=[sm_90,compute_90]" in finding["fix"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_86"])
def test_arch_covered_by_sass(sm80_lib, arch):
    exit_code, report = doctor_json("--so", str(sm80_lib), "--symbol", "launch_bump", "--arch", arch)
    assert exit_code == 0 and report["findings"] == []


def test_visible_gpu_is_the_default_arch(sm80_lib, monkeypatch):
    from xlacc.ground import toolchain

    monkeypatch.setattr(toolchain, "visible_gpu_archs", lambda: ["sm_90"])
    _, report = doctor_json("--so", str(sm80_lib))
    (finding,) = findings(report, "arch-mismatch")
    assert "sm_90 (the visible GPU)" in finding["evidence"]
    monkeypatch.setattr(toolchain, "visible_gpu_archs", lambda: [])
    exit_code, report = doctor_json("--so", str(sm80_lib))
    gpu = next(c for c in report["checks"] if c["name"] == "GPU code")
    assert exit_code == 0 and gpu["ok"] is None and "arch check skipped" in gpu["detail"]


# -- a project: the spec names the entry points and the library ---------------------------------

SPEC = """
[op]
name = "demo"
platform = "cpu"
api = "ffi"
frameworks = ["jax"]

[[inputs]]
name = "x"
dtype = "f32"

[[outputs]]
name = "out"
dtype = "f32"
shape = "x"

[build]
output = "build/libdemo.so"
"""


@needs_gxx
@pytest.mark.parametrize("defined, code", [("xlacc_demo_ffi", None), ("xlacc_demo_ffj", "symbol-missing")])
def test_project_library_is_checked_for_the_spec_entry_points(tmp_path, defined, code):
    project = tmp_path / "demo"
    (project / "build").mkdir(parents=True)
    (project / "xlacc.toml").write_text(SPEC)
    compile_gxx(tmp_path / "libdemo.so", f'extern "C" void* {defined}(void* frame) {{ return frame; }}')
    shutil.copy(tmp_path / "libdemo.so", project / "build" / "libdemo.so")
    exit_code, report = doctor_json(str(project))
    check = next(c for c in report["checks"] if c["name"] == "symbol xlacc_demo_ffi")
    assert check["detail"].split(";")[0] == ("exported (xlacc.toml)" if code is None else "missing (xlacc.toml)")
    assert [f["code"] for f in report["findings"]] == ([] if code is None else [code])
    assert exit_code == (0 if code is None else 1)


GUARDED_KERNEL = TINY_KERNEL.replace("{ x[threadIdx.x] += 1.0f; }", "{\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n  x[threadIdx.x] += 1.0f;\n#endif\n}")


@pytest.mark.parametrize("arch, said", [("sm_90", True), ("sm_90a", False)])
def test_a_projects_sm_90a_code_in_a_library_without_sm_90a_is_said(tmp_path, arch, said):
    """The kernel's body exists for sm_90a only; a library with sm_90 SASS alone runs an empty kernel."""
    from xlacc.ground import toolchain
    from xlacc.ground.errors import XlaccError

    try:
        nvcc = toolchain.find_nvcc()
    except XlaccError:
        pytest.skip("nvcc is not installed")
    project = tmp_path / "demo"
    (project / "build").mkdir(parents=True)
    (project / "xlacc.toml").write_text(SPEC.replace('platform = "cpu"', 'platform = "cuda"'))
    (project / "kernel.cu").write_text(GUARDED_KERNEL)
    number = arch.removeprefix("sm_")
    subprocess.run([str(nvcc.path), "-shared", "-Xcompiler", "-fPIC", "-gencode", f"arch=compute_{number},code={arch}", str(project / "kernel.cu"),
                    "-o", str(project / "build" / "libdemo.so")], check=True, capture_output=True)  # fmt: skip
    _, report = doctor_json(str(project), "--arch", "sm_90")
    left_out = findings(report, "arch-specific-code-left-out")
    assert bool(left_out) is said
    if said:
        assert left_out[0]["evidence"].startswith("kernel.cu guards code with __CUDA_ARCH_FEAT_SM90_ALL") and "arch_specific = true" in left_out[0]["fix"]
