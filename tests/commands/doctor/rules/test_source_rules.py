"""Source checks: kernels, Python registrations and calls, scripts, and the checks across files."""

from __future__ import annotations

from pathlib import Path

import pytest
from locations import ARTIFACTS_DIR

from xlacc.commands.doctor import analysis, inputs, program
from xlacc.commands.doctor.inputs import SourceFile
from xlacc.commands.doctor.rules import python as pyrules
from xlacc.readers import cxx
from xlacc.readers import python as python_facts

ARTIFACTS = ARTIFACTS_DIR / "doctor"
SOURCES = ARTIFACTS / "sources"
SEEDS = ARTIFACTS_DIR / "seeds"  # the user's notes, kept unchanged


def analyze(*paths: Path):
    files = []
    for path in paths:
        kind = inputs.kind_of(path)
        text = path.read_text(encoding="utf-8")
        if kind == "text":
            files += inputs.code_blocks(path.name, text)
        else:
            files.append(SourceFile(path.name, kind, text, path.name))
    return analysis.analyze(files)


def all_findings(report):
    return [f for fs in report.by_group.values() for f in fs] + report.cross


def codes(report) -> list[str]:
    return sorted(f.code for f in all_findings(report))


# -- entry points -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "declaration, kind",
    [
        ("void f(cudaStream_t s, void** b, const char* o, size_t n)", "gpu-original"),
        ("void f(cudaStream_t s, void** b, const char* o, size_t n, XlaCustomCallStatus* st)", "gpu-status"),
        ("void f(void* out, const void** in)", "cpu-original"),
        ("void f(void* out, const void** in, XlaCustomCallStatus* st)", "cpu-status"),
        ("void f(void* out, const void** in, const char* o, size_t n, XlaCustomCallStatus* st)", "cpu-opaque-status"),
        ("XLA_FFI_Error* f(XLA_FFI_CallFrame* frame)", "typed-ffi"),
    ],
)
def test_entry_point_signatures(declaration, kind):
    src = cxx.parse("k.cu", f'extern "C" {declaration} {{ }}')
    (entry,) = program.entry_points([src])
    assert entry.signature.kind == kind and entry.symbol == "f" and entry.exported


def test_a_helper_with_other_parameters_is_not_an_entry_point():
    src = cxx.parse("k.cu", "void launch(cudaStream_t s, const float* x, float* y, long n) { }")
    assert program.entry_points([src]) == []


# -- reading Python -----------------------------------------------------------------------------


def test_names_are_followed_to_constants_and_capsules():
    facts = python_facts.read("ops.py", """
import ctypes
import torch_xla
STATUS_RETURNING = 2
API_VERSION = STATUS_RETURNING
TARGET = "my_add"
ENTRY = "my_add_legacy"
lib = ctypes.CDLL("./libop.so")
address = ctypes.cast(getattr(lib, ENTRY), ctypes.c_void_p).value
new_capsule = ctypes.pythonapi.PyCapsule_New
torch_xla._XLAC._xla_register_custom_call_target(TARGET, new_capsule(address, None, None), "CUDA")
out = torch_xla._XLAC._xla_custom_call([x], TARGET, [[3]], [x.dtype], False, "", API_VERSION, {})
""")
    (reg,) = facts.registrations
    (call,) = facts.calls
    assert (reg.target, reg.platform, reg.capsule, reg.symbols) == ("my_add", "CUDA", "capsule", frozenset({"my_add_legacy"}))
    assert (call.target, call.api, call.api_source, call.dtype_problem) == ("my_add", 2, "given", None)
    assert facts.symbol_refs == {"my_add_legacy": 9}


@pytest.mark.parametrize(
    "capsule, kind",
    [
        ("ctypes.cast(lib.f, ctypes.c_void_p).value", "int-address"),
        ("lib.f", "ctypes-function"),
        ("ctypes.cast(lib.f, ctypes.c_void_p)", "ctypes-pointer"),
        ("140000000", "int-address"),
        ("jax.ffi.pycapsule(lib.f)", "capsule"),
        ("some_function()", "unknown"),
    ],
)
def test_capsule_kinds(capsule, kind):
    facts = python_facts.read("ops.py", f"import ctypes, jax\nlib = ctypes.CDLL('x.so')\njax.ffi.register_ffi_target('f', {capsule}, platform='CUDA')\n")
    assert facts.registrations[0].capsule == kind


def test_ffi_call_attributes_through_a_bound_name_and_defaults():
    facts = python_facts.read("ops.py", """
import jax
call = jax.ffi.ffi_call("op", out_type)
y = call(x, eps=1e-6, n=3)
z = jax.ffi.ffi_call("op2", out_type, custom_call_api_version=2, legacy_backend_config="n=3")(x)
""")
    first, second = facts.calls
    assert (first.api, first.api_source, first.attrs) == (4, "default", ("eps", "n"))
    assert (second.api, second.legacy_config, second.attrs) == (2, True, ())


def test_notes_with_elided_parameters_still_parse():
    facts = python_facts.read("note.md", "@impl(lib, 'op', 'XLA')\ndef op_xla(q, k, ...):\n    return torch.zeros_like(q)\n")
    assert facts.syntax_error is None and facts.constant_impls[0][1] == "op_xla"


def test_a_filled_buffer_is_not_a_constant():
    facts = python_facts.read("ops.py", """
@torch.library.impl(lib, "op", "XLA")
def op_xla(q):
    out = torch.empty_like(q)
    kernel(out, q)
    return out


@op.register_kernel("xla")
def op_other(q):
    return torch.ones_like(q)
""")
    assert [name for _, name, _ in facts.constant_impls] == ["op_other"]


# -- kernel rules -------------------------------------------------------------------------------


def test_seed000_hardcoded_size_points_at_the_constant_and_the_launch():
    report = analyze(SOURCES / "seed000_minimal_xla_custom_call.cu")
    (size,) = [f for f in all_findings(report) if f.code == "hardcoded-size"]
    assert "`const int size = 3;`" in size.evidence and "(seed000_minimal_xla_custom_call.cu:26)" in size.evidence
    assert "XlaGpuSimpleAdd (seed000_minimal_xla_custom_call.cu:12)" in size.evidence
    assert "`opaque`) is never read" in size.evidence


def test_a_size_read_from_opaque_is_not_hardcoded():
    report = analyze(SOURCES / "clean" / "add_status.cu")
    assert codes(report) == []


def test_default_stream_launch_in_a_typed_handler_without_a_stream():
    src = """
#include "xla/ffi/api/ffi.h"
static ffi::Error Impl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  const long n = x.element_count();
  k<<<(n + 255) / 256, 256, 0, 0>>>(x.typed_data(), y->typed_data(), n);
  cudaError_t e = cudaGetLastError();
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(my_op, Impl, ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
"""
    report = analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])
    (finding,) = all_findings(report)
    assert finding.code == "stream-ignored" and "binds no stream" in finding.evidence
    assert "PlatformStream" in finding.fix


def test_a_launch_checked_through_a_helper_counts_as_checked():
    src = """
static int check(const char* what) { return cudaGetLastError() == cudaSuccess; }
void run(cudaStream_t s, float* x, long n) {
  k<<<1, 256, 0, s>>>(x, n);
  check("k");
}
void run_unchecked(cudaStream_t s, float* x, long n) {
  k<<<1, 256, 0, s>>>(x, n);
}
"""
    report = analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])
    (finding,) = all_findings(report)
    assert finding.code == "unchecked-launch" and finding.evidence.startswith("run_unchecked ")


def test_stream_ignored_on_every_launch_form_of_an_xlacc_launch_function():
    found = all_findings(analyze(SOURCES / "stream_ignored_xlacc.cu"))
    assert [f.code for f in found] == ["stream-ignored"] * 3
    assert [f.evidence.split("(line ")[1].split(")")[0] for f in found] == ["24", "27", "32"]
    assert all("receives the stream `stream`" in f.evidence for f in found)
    assert "`nullptr`" in found[1].evidence and "xlacc::launch(kernel, grid, block, shared_bytes, stream" in found[1].fix


@pytest.mark.parametrize(
    "stream_type",
    ["xlacc::Stream", "const xlacc::Stream&", "::xlacc::Stream", "cudaStream_t", "const cudaStream_t&", "CUstream", "S"],
)
def test_stream_ignored_for_every_alias_of_cudastream_t(stream_type):
    src = f"""
using S = xlacc::Stream;
template <typename T>
xlacc::Status op_launch({stream_type} stream, const xlacc::Tensor& x) {{
  k<<<1, 256>>>(x.data<T>(), x.numel());
  return xlacc::launch_status("k");
}}
"""
    (finding,) = all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")]))
    assert finding.code == "stream-ignored" and "on the default stream" in finding.evidence


def test_a_launch_config_struct_without_a_stream_in_sight_is_not_judged():
    src = """
void run(cudaStream_t stream, const cudaLaunchConfig_t& config, float* x, long n) {
  cudaError_t err = cudaLaunchKernelEx(&config, k, x, n);
  cudaLaunchConfig_t mine = {};
  mine.gridDim = 1; mine.blockDim = 256; mine.dynamicSmemBytes = 0; mine.stream = 0;
  err = cudaLaunchKernelEx(&mine, k, x, n);
}
"""
    (finding,) = all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")]))
    assert finding.code == "stream-ignored" and "(line 6)" in finding.evidence


def test_xlacc_launch_status_and_the_error_xlacc_launch_returns_check_a_launch():
    src = """
template <typename T>
xlacc::Status checked(xlacc::Stream stream, const xlacc::Tensor& x) {
  k<T><<<1, 256, 0, stream>>>(x.data<T>(), x.numel());
  return xlacc::launch_status("k");
}
template <typename T>
xlacc::Status returned(xlacc::Stream stream, const xlacc::Tensor& x) {
  cudaError_t err = xlacc::launch(k<T>, 1, 256, 0, stream, x.data<T>(), x.numel());
  return xlacc::launch_status("k", err);
}
template <typename T>
xlacc::Status dropped(xlacc::Stream stream, const xlacc::Tensor& x) {
  xlacc::launch(k<T>, 1, 256, 0, stream, x.data<T>(), x.numel());
  return xlacc::Status::Ok();
}
"""
    (finding,) = all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")]))
    assert finding.code == "unchecked-launch" and finding.evidence.startswith("dropped (k.cu:13) launches `k` (line 14)")
    assert 'return xlacc::launch_status("kernel");' in finding.fix and "ffi::Error::Internal" in finding.fix
    assert "XlaCustomCallStatusSetFailure" in finding.fix


def test_a_launch_status_the_program_defines_itself_is_read_as_written():
    src = """
xlacc::Status launch_status(const char* name) { return xlacc::Status::Ok(); }
xlacc::Status run(xlacc::Stream stream, const xlacc::Tensor& x) {
  k<<<1, 256, 0, stream>>>(x.data<float>(), x.numel());
  return launch_status("k");
}
"""
    assert codes(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])) == ["unchecked-launch"]


def test_hardcoded_size_in_an_xlacc_launch_function_points_at_the_constant():
    (finding,) = all_findings(analyze(SOURCES / "hardcoded_size_tensors.cc"))
    assert finding.code == "hardcoded-size" and finding.title == "size fixed in the launch function"
    assert finding.evidence.startswith("hardcoded_size_tensors.cc:25: `const int num_tokens = 7;` is passed to `rms_norm_cpu<T>(")
    assert "rms_norm_launch (hardcoded_size_tensors.cc:23)" in finding.evidence
    assert "also `const int hidden_size = 128;` (hardcoded_size_tensors.cc:26)" in finding.evidence
    assert "`input.numel()`" in finding.fix and "`input.dim(i)`" in finding.fix
    assert "backend_config" not in finding.fix and "element_count" not in finding.fix


@pytest.mark.parametrize(
    "body",
    [
        "  int64_t n = 1;\n  n = std::max<int64_t>(x.numel(), n);\n  run(x.data<float>(), n);",  # a variable, not a constant
        "  const int block_size = 256;\n  run(x.data<float>(), x.numel(), block_size);",  # a tuning constant
        "  const int num_rows = 8;\n  if (x.dim(0) != num_rows) return xlacc::Status::Invalid(\"8 rows\");\n  run(x.data<float>(), num_rows);",
        (  # compared with a size read from the tensors
            "  const int64_t cols = x.dim(-1);\n  const int hidden = 64;\n  if (cols != hidden) return xlacc::Status::Invalid(\"64\");\n"
            "  run(x.data<float>(), x.numel() / hidden, hidden);"
        ),
    ],
)
def test_constants_that_are_no_fixed_size_of_a_launch_function(body):
    src = f"void run(float* x, long n, int size = 0);\nxlacc::Status op_launch(xlacc::Stream, const xlacc::Tensor& x) {{\n{body}\n  return xlacc::Status::Ok();\n}}\n"
    assert codes(analysis.analyze([SourceFile("k.cc", "c", src, "k.cc")])) == []


def _new_project(tmp_path: Path, template: str, platform: str) -> Path:
    from xlacc.commands.new import project as scaffold

    directory = tmp_path / "proj"
    scaffold.create(scaffold.NewRequest(name="proj", template=template, platform=platform, directory=directory))
    return directory


def _project_sources(directory: Path) -> list[Path]:
    found = directory.rglob("*")
    return sorted(p for p in found if p.suffix in (".cu", ".cc", ".py") and ".xlacc" not in p.parts and p.is_file())


def test_hardcoded_size_in_a_generated_cuda_project_names_the_users_file(tmp_path):
    project = _new_project(tmp_path, "add", "cuda")
    kernel = project / "kernel.cu"
    text = kernel.read_text()
    start = text.index("template <typename T>\nxlacc::Status proj_launch(")
    kernel.write_text(text[:start] + """template <typename T>
xlacc::Status proj_launch(xlacc::Stream stream, const xlacc::Tensor& x, const xlacc::Tensor& y, const xlacc::Tensor& out) {
  const int num_elements = 4096;
  proj_scalar_kernel<T><<<num_elements / kThreads, kThreads, 0, stream>>>(x.data<T>(), y.data<T>(), out.data<T>(), num_elements);
  return xlacc::launch_status("proj_scalar_kernel");
}

}  // namespace
""")
    line = kernel.read_text().splitlines().index("  const int num_elements = 4096;") + 1
    (finding,) = all_findings(analyze(*_project_sources(project)))
    assert finding.code == "hardcoded-size" and finding.evidence.startswith(f"kernel.cu:{line}: `const int num_elements = 4096;`")
    assert "_entry_points" not in finding.evidence and "`x.numel()`" in finding.fix


@pytest.mark.parametrize("platform", ["cuda", "cpu"])
@pytest.mark.parametrize("template", ["add", "rms-norm", "blank", "paged-attention", "paged-kv-write", "ragged-paged-attention"])
def test_generated_projects_of_every_template_raise_nothing(tmp_path, template, platform):
    assert all_findings(analyze(*_project_sources(_new_project(tmp_path, template, platform)))) == []


@pytest.mark.parametrize(
    "name, platform, kernel",
    [
        ("k.cu", "cuda", "__global__ void k(float* out, const float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = 2 * x[i];\n}\n"),
        ("k.cc", "cpu", "void k(float* out, const float* x, int n) {\n  for (int i = 0; i < n; ++i) out[i] = 2 * x[i];\n}\n"),
    ],
)
def test_a_project_wrapping_a_kernel_file_raises_nothing(tmp_path, name, platform, kernel):
    from xlacc.commands.new import project as scaffold

    (tmp_path / name).write_text(kernel)
    project = tmp_path / "w"
    scaffold.create(scaffold.NewRequest(name="w", platform=platform, from_file=tmp_path / name, directory=project))
    assert all_findings(analyze(*_project_sources(project))) == []


def test_host_sync_is_an_error_in_a_graph_capturable_handler_and_a_warning_elsewhere():
    ffi = [f for f in all_findings(analyze(SOURCES / "host_sync_ffi.cu")) if f.code == "host-sync-in-handler"]
    assert {f.severity for f in ffi} == {"error"}
    assert sorted(f.evidence.split("`")[1] for f in ffi) == ["cudaFree", "cudaMalloc", "cudaStreamSynchronize"]
    (legacy,) = all_findings(analyze(SOURCES / "host_sync_legacy.cu"))
    assert legacy.severity == "warning" and "in launch_negate, which it runs" in legacy.evidence


def test_symbol_exposure_from_source():
    (mangled,) = [f for f in all_findings(analyze(SOURCES / "mangled_entry.cu")) if f.code.startswith("symbol-")]
    assert mangled.code == "symbol-mangled" and 'extern "C" void XlaGpuSimpleAdd' in mangled.fix
    (hidden,) = [f for f in all_findings(analyze(SOURCES / "hidden_entry.cu")) if f.code.startswith("symbol-")]
    assert hidden.code == "symbol-hidden"
    (build,) = [f for f in all_findings(analyze(*(ARTIFACTS / "cases/hidden_build").iterdir())) if f.code.startswith("symbol-")]
    assert build.code == "symbol-hidden" and "-fvisibility=hidden" in build.evidence
    assert all_findings(analyze(*(ARTIFACTS / "cases/clean_hidden_build").iterdir())) == []


def test_an_internal_function_called_by_the_entry_point_is_not_flagged():
    src = """
static void impl(cudaStream_t s, void** b, const char* o, size_t n, XlaCustomCallStatus* st) { }
extern "C" void entry(cudaStream_t s, void** b, const char* o, size_t n, XlaCustomCallStatus* st) { impl(s, b, o, n, st); }
"""
    assert all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])) == []


def test_static_registration_macros_and_their_platform():
    src = 'XLA_REGISTER_CUSTOM_CALL_TARGET_WITH_SYM("my_op", my_op, "GPU");\n'
    found = all_findings(analysis.analyze([SourceFile("k.cc", "c", src, "k.cc")]))
    assert sorted(f.code for f in found) == ["ld-preload", "platform-name"]
    assert "exactly \"CUDA\" or \"Host\"" in next(f for f in found if f.code == "platform-name").evidence


# -- Python rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "artifact, code, detail",
    [
        ("capsule_int_address.py", "capsule-required", "passes an int address (`func_addr`)"),
        ("jax_platform_gpu.py", "platform-name", 'registers for "GPU"'),
        ("torch_xla_platform_lower.py", "platform-name", 'registers for "cuda"; torch_xla accepts exactly "CUDA"'),
        ("stablehlo_default_api.py", "api-version-invalid", "stablehlo_custom_call's default"),
        ("jax_register_api2.py", "api-version-invalid", "takes 0 (legacy) or 1 (typed FFI)"),
        ("ffi_call_attrs_legacy.py", "backend-config-invalid", "attributes factor are passed with custom_call_api_version=2"),
        ("torch_xla_api4_config.py", "backend-config-invalid", 'backend_config "n=3" with api_version 4'),
        ("gpu_custom_call.py", "fixed-target-api", "_xla_gpu_custom_call"),
        ("old_jax_registration.py", "jax-legacy-api-removed", "from jax.lib import xla_client"),
        ("seed004_zeros_like.py", "op-optimized-away", "returns `torch.zeros_like(query)`"),
        ("seed004_xla_custom_call.py", "output-dtype-type", "`str(query.dtype)`"),
        ("seed000_register_and_call.py", "legacy-api-deprecated", "api_version 1"),
        ("fork_after_cuda.py", "cuda-init-before-fork", "`torch.zeros(1, device=\"cuda\")` initialises the device"),
        ("seed002_build_and_test.sh", "ld-preload", "LD_PRELOAD=./xla_gpu_custom_ops.so"),
    ],
)
def test_python_and_script_rules(artifact, code, detail):
    found = [f for f in all_findings(analyze(SOURCES / artifact)) if f.code == code]
    assert found and any(detail in f.evidence for f in found), [f.evidence for f in found]


@pytest.mark.parametrize("artifact", sorted(p.name for p in (SOURCES / "clean").iterdir()))
def test_clean_sources_raise_nothing(artifact):
    assert all_findings(analyze(SOURCES / "clean" / artifact)) == []


def test_preloading_a_system_allocator_is_fine():
    script = SourceFile("run.sh", "sh", "LD_PRELOAD=/usr/lib/libtcmalloc.so.4 python train.py\n", "run.sh")
    assert pyrules.ld_preload_findings(script) == []
    env = SourceFile("run.py", "py", 'subprocess.run(cmd, env={"LD_PRELOAD": "./build/libop.so"})\n', "run.py")
    assert [f.code for f in pyrules.ld_preload_findings(env)] == ["ld-preload"]


# -- across files -------------------------------------------------------------------------------


def test_seed001_api4_on_the_legacy_4_argument_function():
    report = analyze(*(ARTIFACTS / "cases/seed001_api4_on_legacy").iterdir())
    (mismatch,) = [f for f in report.cross if f.code == "api-version-mismatch"]
    assert "with api_version 4" in mismatch.evidence
    assert "torch_xla registers targets only in the legacy registry" in mismatch.evidence
    assert "minimal_xla_custom_call.cu:12) is `void f(cudaStream_t, void** buffers, const char* opaque, size_t opaque_len)`, which takes api_version 1, not 4" in mismatch.evidence


def test_seed000_claim_that_2_and_3_fit_the_4_argument_function():
    report = analyze(*(ARTIFACTS / "cases/seed000_api2_on_4arg").iterdir())
    (mismatch,) = [f for f in report.cross if f.code == "api-version-mismatch"]
    assert "takes api_version 1, not 2" in mismatch.evidence and "one more argument, XlaCustomCallStatus*" in mismatch.evidence


def test_legacy_function_registered_as_typed_ffi():
    report = analyze(*(ARTIFACTS / "cases/jax_legacy_as_typed").iterdir())
    evidence = [f.evidence for f in report.cross if f.code == "api-version-mismatch"]
    assert any("crashes during registration" in e for e in evidence)
    assert any("registers it as typed FFI (api_version=1), but api 2 looks in the legacy registry" in e for e in evidence)


def test_gpu_handler_registered_for_the_default_cpu_platform():
    report = analyze(*(ARTIFACTS / "cases/jax_gpu_kernel_on_cpu").iterdir())
    (finding,) = report.cross
    assert finding.code == "platform-name" and 'platform defaults to "cpu"' in finding.evidence


def test_a_status_returning_helper_is_no_legacy_entry_point():
    """jaxlib's `static absl::Status X_(gpuStream_t, void**, const char*, size_t)`, wrapped in a typed
    handler, read as the deprecated legacy API and quoted as `void f(...)`."""
    helper = cxx.parse("sparse.cc", "static absl::Status CsrToDense_(gpuStream_t stream, void** buffers, const char* opaque, size_t opaque_len) { return absl::OkStatus(); }\n")
    legacy = cxx.parse("legacy.cc", "void CsrToDense(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}\n")
    assert program.signature_of(helper.functions[0], helper) is None
    assert program.signature_of(legacy.functions[0], legacy).kind == "gpu-original"


def test_a_prepare_stage_is_neither_a_cpu_handler_nor_one_that_syncs():
    """TransformerEngine's cuBLAS handle set-up: `Bind<FFI_Prepare>()` in a file that names no stream."""
    kernel = SourceFile("init.cpp", "c", """
#include "xla/ffi/api/ffi.h"
static xla::ffi::Error CublasHandleInitFFI(xla::ffi::RemainingArgs args) { cudaDeviceSynchronize(); return xla::ffi::Error::Success(); }
XLA_FFI_DEFINE_HANDLER_SYMBOL(CublasHandleInitHandler, CublasHandleInitFFI, xla::ffi::Ffi::Bind<xla::ffi::ExecutionStage::kPrepare>().RemainingArgs());
""", "init.cpp")
    py = SourceFile("r.py", "py", "import ctypes, jax\nlib = ctypes.CDLL('x')\njax.ffi.register_ffi_target('init', jax.ffi.pycapsule(lib.CublasHandleInitHandler), platform='CUDA')\n", "r.py")
    report = analysis.analyze([kernel, py])
    assert [f.code for f in all_findings(report) if f.code in ("platform-name", "host-sync-in-handler")] == []


@pytest.mark.parametrize("case", ["clean_legacy", "clean_ffi", "clean_hidden_build"])
def test_clean_cases(case):
    assert all_findings(analyze(*(ARTIFACTS / "cases" / case).iterdir())) == []


def test_jax_and_torch_xla_registries_are_kept_apart():
    kernel = SourceFile("k.cu", "c", (SOURCES / "clean/add_ffi.cu").read_text() + (SOURCES / "clean/add_status.cu").read_text(), "k.cu")
    jax_py = SourceFile("j.py", "py", "import ctypes, jax\nlib = ctypes.CDLL('x')\njax.ffi.register_ffi_target('op', jax.ffi.pycapsule(lib.my_add_ffi), platform='CUDA')\ny = jax.ffi.ffi_call('op', t)(x, x)\n", "j.py")
    torch_py = SourceFile("t.py", "py", "import ctypes, torch_xla\nlib = ctypes.CDLL('x')\ncap = ctypes.pythonapi.PyCapsule_New(ctypes.cast(lib.XlaGpuSimpleAdd, ctypes.c_void_p).value, None, None)\ntorch_xla._XLAC._xla_register_custom_call_target('op', cap, 'CUDA')\ny = torch_xla._XLAC._xla_custom_call([x, x], 'op', [[3]], [x.dtype], False, '3', 2, {})\n", "t.py")
    assert analysis.analyze([kernel, jax_py, torch_py]).cross == []


def test_symbol_looked_up_but_defined_nowhere_names_the_closest():
    kernel = SourceFile("k.cu", "c", (SOURCES / "clean/add_status.cu").read_text(), "k.cu")
    py = SourceFile("o.py", "py", "import ctypes\nlib = ctypes.CDLL('x')\nf = lib.XlaGpuSimpleAd\n", "o.py")
    (finding,) = analysis.analyze([kernel, py]).cross
    assert finding.code == "symbol-missing" and "closest: XlaGpuSimpleAdd" in finding.evidence


# -- documents: the user's notes ----------------------------------------------------------------


def test_code_blocks_keep_document_line_numbers():
    note = "# title\n\n```cuda\n__global__ void k() {}\n```\n\ntext\n```\nimport torch\n```\n```python\nx = 1\n```\n"
    blocks = inputs.code_blocks("note.md", note)
    assert [(b.kind, b.line_offset, b.name) for b in blocks] == [("c", 3, "note.md:4"), ("py", 8, "note.md:9"), ("py", 11, "note.md:12")]


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the user's notes are not on this machine")
@pytest.mark.parametrize(
    "seed, expected",
    [
        ("000_1f72cf5165e43ece.txt", {"hardcoded-size", "unchecked-launch", "legacy-api-deprecated"}),
        ("001_76b69c63fd5d40c2.txt", {"api-version-mismatch"}),
        ("002_a449ccd67ce534b5.txt", {"ld-preload", "api-version-mismatch"}),
        ("003_fccc1d2e7e62f3fa.txt", {"ld-preload"}),
        ("004_f157b4041f9dd39a.txt", {"output-dtype-type", "api-version-invalid"}),
    ],
)
def test_the_users_notes(seed, expected):
    assert expected <= set(codes(analyze(SEEDS / seed)))


def test_line_numbers_count_from_the_opening_brace_of_a_long_signature():
    src = "void f(\n    cudaStream_t s,\n    void** b,\n    const char* o,\n    size_t n) {\n  int x = 0;\n  cudaDeviceSynchronize();\n}\n"
    (function,) = cxx.parse("k.cu", src).functions
    assert (function.line, function.body_line) == (1, 5)
    (finding,) = [f for f in all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])) if f.code == "host-sync-in-handler"]
    assert "at k.cu:7" in finding.evidence


def test_a_blocking_fill_or_a_wait_for_a_host_copy_gets_its_own_fix():
    """"Drop the synchronisation" was wrong for both: a cudaMemset races XLA's stream, and a wait
    after a copy to the host is what lets the handler read it."""
    src = (
        "void f(cudaStream_t s, void** b, const char* o, size_t n) {\n"
        "  cudaMemset(b[0], 0, n);\n"
        "  int host = 0;\n"
        "  cudaMemcpyAsync(&host, b[1], sizeof(int), cudaMemcpyDeviceToHost, s);\n"
        "  cudaStreamSynchronize(s);\n"
        "  cudaDeviceSynchronize();\n"
        "}\n"
    )
    findings = [f for f in all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])) if f.code == "host-sync-in-handler"]
    fixes = {f.evidence.split("`")[1]: f.fix for f in findings}
    assert "use `cudaMemsetAsync(ptr, value, bytes, stream)` on the handler's stream" in fixes["cudaMemset"]
    assert fixes["cudaStreamSynchronize"].startswith("The wait lets the handler read what it copied to the host")
    assert fixes["cudaDeviceSynchronize"].startswith("The wait lets the handler read")  # after the copy too


def test_a_wait_in_a_helper_many_handlers_share_is_one_finding():
    """mpi4jax: 23 near-identical warnings for two lines of one helper."""
    src = "static void drain(cudaStream_t s) { cudaStreamSynchronize(s); }\n" + "".join(
        f"void op{i}(cudaStream_t s, void** b, const char* o, size_t n) {{ drain(s); }}\n" for i in range(5)
    )
    (finding,) = [f for f in all_findings(analysis.analyze([SourceFile("k.cu", "c", src, "k.cu")])) if f.code == "host-sync-in-handler"]
    assert "op0 (" in finding.evidence and "and 4 other handlers (op1, op2, op3, ...) call `cudaStreamSynchronize` at k.cu:1" in finding.evidence


def test_api_2_on_an_xla_cpu_entry_point_is_deprecated():
    kernel = SourceFile("k.cc", "c", (ARTIFACTS / "cases/jax_legacy_as_typed/kernel.cc").read_text(), "k.cc")
    py = SourceFile("o.py", "py", (
        "import ctypes, jax\nlib = ctypes.CDLL('x')\n"
        "jax.ffi.register_ffi_target('add_f32x4', jax.ffi.pycapsule(lib.add_f32x4), platform='cpu', api_version=0)\n"
        "y = jax.ffi.ffi_call('add_f32x4', t, custom_call_api_version=2)(a, b)\n"
    ), "o.py")
    (finding,) = analysis.analyze([kernel, py]).cross
    assert (finding.code, finding.severity) == ("legacy-api-deprecated", "warning")
    assert "api_version 3" in finding.fix


def test_a_method_with_an_entry_point_signature_is_not_an_entry_point():
    src = "struct Handler : Base {\n  XLA_FFI_Error* Call(XLA_FFI_CallFrame* frame) const override { return nullptr; }\n};\n"
    parsed = cxx.parse("api.h", src)
    assert parsed.functions[0].member and program.entry_points([parsed]) == []


def test_fork_and_device_init_must_share_a_scope():
    different = python_facts.read("p.py", (
        "import os, torch\n"
        "def setup():\n    torch.zeros(1, device='cuda')\n"
        "def launch():\n    os.fork()\n"
    ))
    assert different.gpu_inits and different.forks
    assert pyrules.python_findings(different) == []
    own_context = python_facts.read("p.py", (
        "import torch, concurrent.futures as cf, multiprocessing as mp\n"
        "x = torch.zeros(1, device='cuda')\n"
        "pool = cf.ProcessPoolExecutor(2, mp_context=mp.get_context(method))\n"
    ))
    assert own_context.forks == [] and pyrules.python_findings(own_context) == []


def test_jax_internal_xla_client_is_not_the_removed_api():
    internal = python_facts.read("ffi.py", "from jax._src.lib import xla_client\nxla_client.register_custom_call_target(name, fn, platform, 1)\n")
    assert internal.legacy_jax_api == [] and internal.registrations[0].api_version == 1
    removed = python_facts.read("old.py", "import jax.lib.xla_client as xc\nxc.register_custom_call_target(b'f', fn, platform='gpu')\n")
    assert [line for line, _ in removed.legacy_jax_api] == [1, 2]


# -- rules by meaning: guarded fallbacks, callbacks, names built at run time ---------------------


def source_files(**files: str) -> list[SourceFile]:
    return [SourceFile(name, inputs.kind_of(Path(name)), text, name) for name, text in files.items()]


def test_a_legacy_registration_in_an_attributeerror_fallback_is_an_info_that_names_the_guard():
    guarded = python_facts.read("compat.py", (
        "import jax\n"
        "try:\n"
        "    from jax.lib import xla_client\n"
        "    register = xla_client.register_custom_call_target\n"
        "except (ImportError, AttributeError):\n"
        "    register = jax.ffi.register_ffi_target\n"
    ))
    [finding] = [f for f in pyrules.python_findings(guarded) if f.code == "jax-legacy-api-removed"]
    assert finding.severity == "info"
    assert "compat.py:3" in finding.evidence and "`try:` (line 2) with `except ImportError, AttributeError:`" in finding.evidence


def test_a_legacy_use_outside_any_guard_stays_an_error_even_beside_a_guarded_one():
    mixed = python_facts.read("compat.py", (
        "from jax.lib import xla_client\n"
        "if hasattr(xla_client, 'register_custom_call_target'):\n"
        "    xla_client.register_custom_call_target('a', fn, platform='gpu')\n"
    ))
    [finding] = [f for f in pyrules.python_findings(mixed) if f.code == "jax-legacy-api-removed"]
    assert finding.severity == "error" and finding.evidence.startswith("compat.py:1:") and "line 3" not in finding.evidence


CPU_CALLBACK = (
    "import ctypes, jax\n"
    "from ctypes import c_void_p, POINTER\n"
    "CPU_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(c_void_p))\n"
    "@CPU_FN\n"
    "def add(out, ins):\n"
    "    pass\n"
    "capsule = ctypes.pythonapi.PyCapsule_New(ctypes.cast(add, c_void_p).value, b'xla._CUSTOM_CALL_TARGET', None)\n"
    "for platform in ('CUDA', 'ROCM'):\n"
    "    jax.ffi.register_ffi_target('add', capsule, platform=platform, api_version=0)\n"
)


def test_a_cpu_signature_callback_registered_for_the_gpu_is_an_error_with_a_fix():
    report = analysis.analyze(source_files(**{"ops.py": CPU_CALLBACK}))
    [finding] = [f for f in report.cross if f.code == "platform-name"]
    assert finding.severity == "error" and '"CUDA", "ROCM"' in finding.evidence
    assert "`add` (out, ins) (ops.py:3:" in finding.evidence and "device pointers" in finding.evidence
    assert 'platform="cpu"' in finding.fix and "cudaStream_t" in finding.fix


def test_the_same_callback_registered_for_the_cpu_is_fine():
    report = analysis.analyze(source_files(**{"ops.py": CPU_CALLBACK.replace("('CUDA', 'ROCM')", "('cpu',)")}))
    assert [f for f in report.cross if f.code == "platform-name"] == []


GPU_CALLBACK = (
    "import ctypes, jax\n"
    "from jax.interpreters import mlir\n"
    "from ctypes import CFUNCTYPE, c_void_p, c_char_p, c_size_t\n"
    "def kernel(stream, buffers, opaque, opaque_len):\n"
    "    pass\n"
    "GPU_FN = CFUNCTYPE(None, c_void_p, c_void_p, c_char_p, c_size_t)\n"
    "keep = GPU_FN(kernel)\n"
    "jax.ffi.register_ffi_target('k', jax.ffi.pycapsule(keep), platform='gpu', api_version=0)\n"
    "def lower(ctx, x):\n"
    "    return mlir.custom_call('k', result_types=[], operands=[x]).results\n"
)


def test_a_legacy_call_at_its_default_api_version_against_a_four_parameter_callback():
    report = analysis.analyze(source_files(**{"ops.py": GPU_CALLBACK}))
    [finding] = [f for f in report.cross if f.code == "api-version-mismatch"]
    assert finding.evidence.startswith("ops.py:10: `mlir.custom_call('k', ")
    assert "ops.py:6: the ctypes callback `kernel` registered at line 8 takes 4 parameters" in finding.evidence
    assert "which is api_version 1 on the GPU; api 2 passes 5; custom_call passes api_version 2 when none is given" in finding.evidence


def test_a_four_parameter_callback_called_with_api_1_fits():
    fitted = GPU_CALLBACK.replace("operands=[x])", "operands=[x], api_version=1)")
    report = analysis.analyze(source_files(**{"ops.py": fitted}))
    assert [f for f in report.cross if f.code == "api-version-mismatch"] == []


TPU_BESIDE_GPU = (
    "import jax\n"
    "from . import gpu_ops\n"
    "jax.ffi.register_ffi_target('op', gpu_ops.op(), platform='CUDA')\n"
    "jax.ffi.register_ffi_target('op', gpu_ops.op(), platform='tpu')\n"
)


def test_a_tpu_registration_in_a_gpu_build_is_a_warning():
    report = analysis.analyze(source_files(**{"ops.py": TPU_BESIDE_GPU}))
    [finding] = [f for f in report.cross if f.code == "platform-name"]
    assert finding.severity == "warning" and finding.evidence.startswith("ops.py:4:") and "never applies here" in finding.evidence
    alone = analysis.analyze(source_files(**{"ops.py": TPU_BESIDE_GPU.replace("platform='CUDA'", "platform='tpu'")}))
    assert [f for f in alone.cross if f.code == "platform-name"] == []


REVERSED_BUFFERS = """
#include <cuda_runtime.h>
#include "xla/service/custom_call_status.h"
__global__ void scale(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
template <typename T>
void launch(cudaStream_t stream, void** buffers, const char* opaque, size_t len, XlaCustomCallStatus* status) {
  float* out = reinterpret_cast<float*>(buffers[0]);
  const float* in = reinterpret_cast<const float*>(buffers[1]);
  scale<<<1, 256, 0, stream>>>(in, out, 256);
}
extern "C" void gpu_scale_f32(cudaStream_t s, void** b, const char* o, size_t n, XlaCustomCallStatus* st) {
  float* out = reinterpret_cast<float*>(b[0]);
  const float* in = reinterpret_cast<const float*>(b[1]);
  scale<<<1, 256, 0, s>>>(in, out, 256);
}
extern "C" void gpu_scale_f64(cudaStream_t s, void** b, const char* o, size_t n, XlaCustomCallStatus* st) {
  float* out = reinterpret_cast<float*>(b[0]);
  const float* in = reinterpret_cast<const float*>(b[1]);
  scale<<<1, 256, 0, s>>>(in, out, 256);
}
"""


@pytest.mark.parametrize(
    "target",
    ['f"gpu_scale_{dtype}"', '"gpu_scale_{}".format(dtype)', '"gpu_scale_%s" % dtype'],
    ids=["f-string", "format", "percent"],
)
def test_a_target_name_built_at_run_time_meets_its_entry_points_and_their_buffer_order(target):
    python = (
        "from jax.interpreters import mlir\n"
        "def lower(ctx, x, dtype):\n"
        f"    return mlir.custom_call({target}, result_types=[], operands=[x], api_version=2).results\n"
    )
    report = analysis.analyze(source_files(**{"kernels.cu": REVERSED_BUFFERS, "ops.py": python}))
    found = [f for f in report.cross if f.code == "buffer-order"]
    assert sorted(f.evidence.split(" ", 1)[0] for f in found) == ["gpu_scale_f32", "gpu_scale_f64"]
    assert all("writes `out` = buffers[0], operand 0" in f.evidence and "ops.py:3 passes 1 operand(s)" in f.evidence for f in found)


def test_a_call_and_a_registration_both_naming_by_dtype_meet():
    python = (
        "import jax\n"
        "from . import _ops\n"
        "for dtype in ('f32', 'f64'):\n"
        "    jax.ffi.register_ffi_target(f'solve_{dtype}', _ops.capsules[dtype], platform='CUDA', api_version=0)\n"
        "def solve(x):\n"
        "    return jax.ffi.ffi_call('solve_{}'.format(x.dtype.name), jax.ShapeDtypeStruct(x.shape, x.dtype))(x)\n"
    )
    report = analysis.analyze(source_files(**{"ops.py": python}))
    [finding] = [f for f in report.cross if f.code == "api-version-mismatch"]
    assert finding.evidence.startswith("ops.py:6:")
    assert "ops.py:4 registers it as legacy (api_version=0), but api 4 looks in the typed FFI registry" in finding.evidence


def test_a_project_written_for_python_3_12_is_read_and_judged_not_called_unparsed():
    python = (
        "import jax\n"
        "type Platform = str\n"
        "def register[T](capsule: T) -> None:\n"
        "    jax.ffi.register_ffi_target('op', capsule, platform='GPU')\n"
    )
    report = analysis.analyze(source_files(**{"ops.py": python}))
    assert report.unreadable == set() and "unparsed" not in report.summaries.get("ops.py", "")
    assert [f.code for f in report.by_group["ops.py"]] == ["platform-name"]
