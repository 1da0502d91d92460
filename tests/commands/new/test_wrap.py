"""`xlacc new NAME --from FILE`: a kernel the user already has becomes a project, left unchanged."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from locations import ARTIFACTS_DIR
from needs import needs_ffi_headers, needs_gxx, needs_nvcc

from xlacc import spec as specmod
from xlacc.commands.build import builder
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import update, wrap
from xlacc.ground import resources
from xlacc.ground.errors import UsageError

ARTIFACTS = ARTIFACTS_DIR
KERNELS = ARTIFACTS / "wrap"
NOTE_000 = ARTIFACTS / "doctor" / "sources" / "seed000_minimal_xla_custom_call.cu"  # the user's kernel, as written
RMS_SIZES = ["num_tokens=input.shape[0]", "hidden_size=input.shape[1]"]
# A CPU kernel written as vLLM writes its CUDA ones: casts to and from the element type.
RMS_NORM_CPU = """#include <cmath>

template <typename scalar_t>
void rms_norm_cpu(scalar_t* out, const scalar_t* input, const scalar_t* weight, float epsilon, int num_tokens, int hidden_size) {
  for (int t = 0; t < num_tokens; ++t) {
    float variance = 0.0f;
    for (int i = 0; i < hidden_size; ++i) {
      const float x = (float)input[t * hidden_size + i];
      variance += x * x;
    }
    const float scale = 1.0f / std::sqrt(variance / hidden_size + epsilon);
    for (int i = 0; i < hidden_size; ++i) {
      out[t * hidden_size + i] = (scalar_t)((float)input[t * hidden_size + i] * scale * (float)weight[i]);
    }
  }
}
"""
# A one-block-per-row kernel and the launcher that knows its grid.
RMS_NORM_ROWS = """#include <cuda_runtime.h>

template <typename scalar_t>
__global__ void rms_norm_kernel(scalar_t* out, const scalar_t* input, const scalar_t* weight, float epsilon, int cols) {
  const scalar_t* row = input + blockIdx.x * cols;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) out[blockIdx.x * cols + i] = row[i] * weight[i];
}

template <typename scalar_t>
void rms_norm(scalar_t* out, const scalar_t* input, const scalar_t* weight, float epsilon, int rows, int cols, cudaStream_t stream) {
  rms_norm_kernel<scalar_t><<<rows, 256, 0, stream>>>(out, input, weight, epsilon, cols);
}
"""


@pytest.fixture
def kernels(tmp_path):
    """The artifact kernels copied beside the projects, as a user's repository would hold them."""
    folder = tmp_path / "csrc"
    shutil.copytree(KERNELS, folder)
    shutil.copy(NOTE_000, folder / "minimal_xla_custom_call.cu")
    return folder


def new(tmp_path, name, source, **kwargs):
    request = scaffold.NewRequest(name=name, from_file=source, frameworks=["jax"], directory=tmp_path / name, **kwargs)
    scaffold.create(request)
    return specmod.load(tmp_path / name)


def user_kernel(tmp_path, name, text):
    """A kernel file of the user's, beside the projects."""
    path = tmp_path / "csrc" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def write_reference(spec, body):
    path = spec.root / spec.package / "reference.py"
    text = path.read_text()
    stub = next(line for line in text.splitlines() if "raise NotImplementedError" in line)
    path.write_text(text.replace(stub, f"    return {body}"))


def run_smoke(project):
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "run-smoke", str(project), "--framework", "jax", "--sizes", "1,1000,4099"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


# -- reading the kernel -------------------------------------------------------------------------


def test_the_note_000_kernel_becomes_inputs_an_output_and_a_size():
    wrapped = wrap.read(NOTE_000, None, {})
    assert wrapped.function == "SimpleAddKernel" and wrapped.is_kernel and not wrapped.template
    assert [(a.name, a.kind, a.dtype) for a in wrapped.arguments] == [
        ("a", "input", "f32"), ("b", "input", "f32"), ("out", "output", "f32"), ("size", "size", ""),
    ]  # fmt: skip
    assert wrapped.arguments[3].expression == "static_cast<int>(a.numel())"


def test_a_file_with_several_kernels_asks_which_and_a_template_takes_the_op_type():
    with pytest.raises(UsageError, match=r"3 functions it could wrap \(scale, axpy, relu\); pick one with --kernel"):
        wrap.read(KERNELS / "elementwise.cu", None, {})
    wrapped = wrap.read(KERNELS / "elementwise.cu", "axpy", {})
    assert wrapped.template and [(a.name, a.kind, a.dtype) for a in wrapped.arguments] == [
        ("x", "input", "T"), ("y", "input", "T"), ("out", "output", "T"), ("alpha", "attr", "f32"), ("n", "size", ""),
    ]  # fmt: skip


def test_a_struct_of_parameters_is_filled_field_by_field_and_unknown_integers_are_asked_about():
    with pytest.raises(UsageError, match=r"3 parameters xlacc cannot place(.|\n)*num_seqs .*--size num_seqs=query.shape\[0\](.|\n)*head_size .*--size head_size=query.shape\[2\]"):
        wrap.read(KERNELS / "decode_params.cu", None, {})
    sizes = {"num_seqs": "query.shape[0]", "num_heads": "query.shape[1]", "head_size": "query.shape[2]"}
    wrapped = wrap.read(KERNELS / "decode_params.cu", None, sizes)
    (params,) = wrapped.arguments
    assert params.kind == "struct" and params.c_type == "DecodeParams"
    assert [(f.name, f.kind, f.expression) for f in params.fields] == [
        ("query", "input", "query.data<const half>()"),
        ("key_cache", "input", "key_cache.data<const half>()"),
        ("scores", "output", "scores.data<float>()"),
        ("num_seqs", "size", "static_cast<int>(query.dim(0))"),
        ("num_heads", "size", "static_cast<int>(query.dim(1))"),
        ("head_size", "size", "static_cast<int>(query.dim(2))"),
        ("scale", "attr", "static_cast<float>(scale)"),
    ]


@pytest.mark.parametrize(
    "kernel, sizes, message",
    [
        ("nope", {}, r"--kernel nope: no function of that name .* \(functions it could wrap: scale, axpy, relu\)"),
        ("relu", {"m": "x.size"}, r"--size m: relu has no integer parameter of that name"),
        ("relu", {"n": "z.size"}, r"--size n=z.size: 'z' is not a tensor of relu"),
    ],
)
def test_what_cannot_be_wrapped_is_a_one_line_error(kernel, sizes, message):
    with pytest.raises(UsageError, match=message) as info:
        wrap.read(KERNELS / "elementwise.cu", kernel, sizes)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["n=x.size; rm", "n=x.shape[one]", "n", "1n=x.size"])
def test_size_flags_are_checked_before_they_reach_cxx(text):
    with pytest.raises(UsageError, match="--size"):
        wrap.parse_sizes([text])


def test_a_kernel_with_code_for_sm_90a_only_gets_an_arch_specific_build(tmp_path):
    """Its `#if __CUDA_ARCH_FEAT_SM90_ALL` branch (wgmma and the like) is compiled only for sm_90a:
    auto archs must build that, not sm_90."""
    plain = user_kernel(tmp_path, "scale.cu", "__global__ void scale(const float* x, float* y, int n) { y[threadIdx.x] = 2.f * x[threadIdx.x]; }\n")
    hopper = user_kernel(tmp_path, "scale_wgmma.cu", plain.read_text().replace("{ y", "{\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n  y").replace("; }", ";\n#endif\n}"))
    assert new(tmp_path, "plain", plain).build.arch_specific is False
    spec = new(tmp_path, "hopper", hopper)
    assert spec.build.arch_specific is True and "\narch_specific = true " in (spec.root / "xlacc.toml").read_text()


def test_a_launcher_that_takes_a_stream_is_wrapped_rather_than_the_kernel_it_launches(tmp_path):
    source = user_kernel(tmp_path, "rms_norm_rows.cu", RMS_NORM_ROWS)
    wrapped = wrap.read(source, None, {"rows": "input.shape[0]", "cols": "input.shape[1]"})
    assert wrapped.function == "rms_norm" and not wrapped.is_kernel and wrapped.template
    assert wrapped.arguments[-1].expression == "stream"
    assert wrap.read(source, "rms_norm_kernel", {"cols": "input.shape[1]"}).is_kernel  # --kernel still picks
    # The launcher of a legacy XLA handler's kernel; the handler itself (void** buffers) is no launcher.
    assert wrap.read(ARTIFACTS / "doctor" / "sources" / "host_sync_legacy.cu", None, {}).function == "launch_negate"
    assert wrap.read(NOTE_000, None, {}).function == "SimpleAddKernel"


def test_two_launchers_are_asked_about_with_the_kernels(tmp_path):
    second = RMS_NORM_ROWS.replace("void rms_norm(", "void rms_norm_again(")
    source = user_kernel(tmp_path, "two.cu", RMS_NORM_ROWS + second[second.index("template <typename scalar_t>\nvoid"):])
    with pytest.raises(UsageError, match=r"3 functions it could wrap \(rms_norm, rms_norm_again, rms_norm_kernel\); pick one with --kernel"):
        wrap.read(source, None, {})


def test_sizes_read_from_dims_give_example_inputs_that_many_dims():
    wrapped = wrap.read(KERNELS / "decode_params.cu", None, {"num_seqs": "query.shape[0]", "num_heads": "query.shape[1]", "head_size": "query.shape[-1]"})
    assert wrapped.rank_checks() == [("query", 2, "num_heads is query.shape[1]")]
    spec = SimpleNamespace(inputs=[SimpleNamespace(name="query"), SimpleNamespace(name="key_cache")], outputs=[SimpleNamespace(name="scores", like="query")])
    assert wrapped.example_shapes(spec) == {
        "query": ("(max(1, size // 128), 128)", "query: num_seqs = shape[0], num_heads = shape[1], head_size = shape[-1]"),
        "key_cache": ("(max(1, size // 128), 128)", "key_cache: shaped like query (xlacc cannot tell its shape)"),
    }
    assert wrap.example_shape(3) == "(max(1, size // 512), 4, 128)"
    elementwise = wrap.read(NOTE_000, None, {})
    assert elementwise.rank_checks() == [] and set(elementwise.example_shapes(SimpleNamespace(inputs=[SimpleNamespace(name="a"), SimpleNamespace(name="b")], outputs=[])).values()) == {("(size,)", "a"), ("(size,)", "b")}


NAMESPACED_CPU = """namespace my {
struct Copy { const float* a; float* b; int n; };
namespace inner {
void copy(Copy params) { for (int i = 0; i < params.n; ++i) params.b[i] = params.a[i]; }
}
inline namespace v1 { namespace { } void twice(const float* a, float* b, int n) { for (int i = 0; i < n; ++i) b[i] = 2 * a[i]; } }
}
"""


def test_a_function_in_a_namespace_is_called_by_its_qualified_name_and_so_is_its_struct(tmp_path):
    """A kernel inside a namespace was once called unqualified: `identifier "nk" is undefined`."""
    source = user_kernel(tmp_path, "namespaced.cc", NAMESPACED_CPU)
    copy = wrap.read(source, "copy", {})
    assert (copy.function, copy.callee) == ("copy", "my::inner::copy") and copy.arguments[0].c_type == "my::Copy"
    assert wrap.read(source, "twice", {}).callee == "my::v1::twice"
    assert wrap.read(NOTE_000, None, {}).callee == "SimpleAddKernel"


@needs_ffi_headers
@needs_gxx
def test_a_project_wrapping_a_namespaced_function_builds(tmp_path):
    spec = new(tmp_path, "copy_op", user_kernel(tmp_path, "namespaced.cc", NAMESPACED_CPU), kernel="copy")
    launch = (spec.root / "launch.cc").read_text()
    assert "  my::Copy params{};" in launch and "  my::inner::copy(params);" in launch
    result = builder.build_spec(spec)
    assert result.ok, [c for c in result.checks if not c.ok] + result.findings


@pytest.mark.parametrize(
    "function, suffix, op_named",
    [
        ("kern_launch", ".cu", True), ("xlacc_kern_ffi", ".cu", True), ("kern_ffi_impl", ".cu", True), ("kern_dispatch", ".cc", True),
        ("blocks", ".cu", False), ("stream", ".cc", False), ("xlacc", ".cc", False),
    ],
)  # fmt: skip
def test_a_function_named_like_the_generated_code_is_refused_before_anything_is_written(tmp_path, function, suffix, op_named):
    """Such a kernel once gave a project whose build failed on xlacc's own code."""
    qualifier = "__global__ " if suffix == ".cu" else ""
    source = user_kernel(tmp_path, f"k{suffix}", f"{qualifier}void {function}(const float* a, float* b, int n) {{ }}\n")
    with pytest.raises(UsageError, match=rf"`{function}` is a name the code xlacc generates for op 'kern' uses too: give the op another name, or wrap another function of yours with --kernel; nothing was written"):
        new(tmp_path, "kern", source)
    assert not (tmp_path / "kern").exists()
    if op_named:  # a name made from the op's: another op name is free of it
        assert new(tmp_path, "other", source).origin.function == function


def test_the_file_to_wrap_may_not_be_one_that_new_writes(tmp_path):
    """`--from launch.cu` in the project folder was once replaced by a launch.cu that included itself."""
    project = tmp_path / "selfop"
    source = project / "launch.cu"
    project.mkdir()
    source.write_text("__global__ void nk(const float* a, float* b, int n) { }\n")
    with pytest.raises(UsageError, match=r"--from .*launch.cu: xlacc new writes launch.cu in .*selfop, and would replace it: .*nothing was written"):
        scaffold.create(scaffold.NewRequest(name="selfop", from_file=source, frameworks=["jax"], directory=project, force=True))
    assert sorted(p.name for p in project.iterdir()) == ["launch.cu"]


# -- projects -----------------------------------------------------------------------------------


@needs_ffi_headers
@needs_nvcc
def test_the_note_000_kernel_builds_into_a_project_that_includes_it_unchanged(tmp_path, kernels):
    before = (kernels / "minimal_xla_custom_call.cu").read_text()
    spec = new(tmp_path, "seed_add", kernels / "minimal_xla_custom_call.cu")
    launch = (spec.root / "launch.cu").read_text()
    assert '#include "minimal_xla_custom_call.cu"' in launch
    assert "SimpleAddKernel<<<blocks, 256, 0, stream>>>(a.data<const float>(), b.data<const float>(), out.data<float>(), static_cast<int>(a.numel()));" in launch
    assert spec.origin == specmod.Origin("../csrc/minimal_xla_custom_call.cu", "SimpleAddKernel")
    assert (kernels / "minimal_xla_custom_call.cu").read_text() == before
    result = builder.build_spec(spec, archs=("sm_90",))
    assert result.ok, [c for c in result.checks if not c.ok] + result.findings
    assert set(update.run(update.UpdateRequest(spec.root)).data["files"].values()) == {"up to date"}


@needs_nvcc
@pytest.mark.parametrize(
    "source, extra",
    [
        ("elementwise.cu", {"kernel": "axpy", "dtypes": ["f32", "bf16"], "attrs": ["alpha:f32=0.5"]}),
        ("decode_params.cu", {"sizes": ["num_seqs=query.shape[0]", "num_heads=query.shape[1]", "head_size=query.shape[2]"]}),
    ],
)
@needs_ffi_headers
def test_a_template_kernel_and_a_struct_kernel_build(tmp_path, kernels, source, extra):
    spec = new(tmp_path, "wrapped", kernels / source, **extra)
    result = builder.build_spec(spec, archs=("sm_90",))
    assert result.ok, [c for c in result.checks if not c.ok] + result.findings


def test_cpu_twin_of_the_note_000_kernel_passes_run_smoke_once_the_reference_is_written(tmp_path, kernels):
    pytest.importorskip("jax")
    spec = new(tmp_path, "seed_add_cpu", kernels / "simple_add_cpu.cc")
    assert spec.platform == "cpu" and [t.name for t in spec.inputs] == ["a", "b"]
    code, output = run_smoke(spec.root)
    assert code == 1 and "write what SimpleAdd computes in seed_add_cpu/reference.py" in output
    write_reference(spec, "a + b")
    code, output = run_smoke(spec.root)
    assert code == 0, output


def test_a_template_function_of_a_multi_function_file_passes_run_smoke(tmp_path, kernels):
    pytest.importorskip("jax")
    spec = new(tmp_path, "axpy_cpu", kernels / "elementwise_cpu.cc", kernel="axpy", dtypes=["f32", "f64"], attrs=["alpha:f32=0.5"])
    assert spec.op_dtypes == ("f32", "f64") and [(a.name, a.default) for a in spec.attrs] == [("alpha", 0.5)]
    write_reference(spec, "alpha * x + y")
    code, output = run_smoke(spec.root)
    assert code == 0, output


def test_an_input_whose_dims_sizes_read_is_that_rank_in_example_inputs_and_in_the_launch_check(tmp_path, monkeypatch):
    np = pytest.importorskip("numpy")
    spec = new(tmp_path, "rms_rows", user_kernel(tmp_path, "rms_norm_cpu.cc", RMS_NORM_CPU), sizes=RMS_SIZES)
    launch = (spec.root / "launch.cc").read_text()
    check = (
        "  if (input.rank < 2) {\n"
        '    return xlacc::Status::Invalid("input needs at least 2 dims (hidden_size is input.shape[1]), got " + xlacc::shape_text(input));\n'
    )
    assert check in launch and launch.index(check) < launch.index("rms_norm_cpu<T>(")
    monkeypatch.syspath_prepend(str(spec.root))
    reference = importlib.import_module(f"{spec.package}.reference")
    for size in (1, 1000, 1 << 20):
        (x, weight), _ = reference.example_inputs(size, np.random.default_rng(0))
        assert x.shape == (max(1, size // 128), 128) and weight.shape == x.shape  # weight: as many elements as the kernel reads


@pytest.mark.parametrize(
    "old, new_text, message",
    [
        ("const scalar_t* weight,", "const scalar_t* weight, const scalar_t* residual,",
         r'it takes an input `residual`: add a \[\[inputs\]\] table with name = "residual" and dtype = "f32"'),
        ("float epsilon, ", "", r"it takes no scalar `epsilon` any more: remove its \[\[attrs\]\] table"),
        ("const scalar_t* weight", "const double* weight", r'its input `weight` holds f64 now: set dtype = "f64" in its \[\[inputs\]\] table'),
        ("int hidden_size)", "int hidden_size, int groups)", r'`groups` is an integer xlacc cannot place from the source alone: add groups = "INPUT.size" .* to \[from\] sizes in xlacc.toml.*then run `xlacc update` again'),
    ],
)  # fmt: skip
def test_update_refuses_a_kernel_whose_parameters_changed_and_says_what_to_change_in_xlacc_toml(tmp_path, old, new_text, message):
    source = user_kernel(tmp_path, "rms_norm_cpu.cc", RMS_NORM_CPU)
    spec = new(tmp_path, "rms", source, sizes=RMS_SIZES)
    before = {path: path.read_bytes() for path in spec.root.rglob("*") if path.is_file()}
    source.write_text(RMS_NORM_CPU.replace(old, new_text))
    with pytest.raises(UsageError, match=message) as info:
        update.run(update.UpdateRequest(spec.root))
    assert "\n" not in str(info.value)
    assert {path: path.read_bytes() for path in spec.root.rglob("*") if path.is_file()} == before


@needs_ffi_headers
@needs_gxx
def test_a_build_that_fails_after_the_kernel_gained_a_parameter_says_what_changed(tmp_path):
    source = user_kernel(tmp_path, "rms_norm_cpu.cc", RMS_NORM_CPU)
    spec = new(tmp_path, "rms_drift", source, sizes=RMS_SIZES)
    source.write_text(RMS_NORM_CPU.replace("const scalar_t* weight,", "const scalar_t* weight, const scalar_t* residual,"))
    result = builder.build_spec(spec)
    assert [f.code for f in result.findings] == ["compile-error"]
    [drift] = [c for c in result.checks if c.name == "wrapped kernel"]
    assert drift.ok is False and "it takes an input `residual`: add a [[inputs]] table" in drift.detail


def test_update_carries_a_new_kernel_parameter_through_once_xlacc_toml_has_it(tmp_path):
    source = user_kernel(tmp_path, "rms_norm_cpu.cc", RMS_NORM_CPU)
    spec = new(tmp_path, "rms", source, sizes=RMS_SIZES)
    source.write_text(RMS_NORM_CPU.replace("const scalar_t* weight,", "const scalar_t* weight, const scalar_t* residual,"))
    toml = spec.root / "xlacc.toml"
    toml.write_text(toml.read_text().replace("[[outputs]]", '[[inputs]]\nname = "residual"\ndtype = "f32"\n\n[[outputs]]', 1))
    report = update.run(update.UpdateRequest(spec.root))
    assert not report.failed, report.checks
    launch = (spec.root / "launch.cc").read_text()
    assert "const xlacc::Tensor& residual" in launch and "weight.data<const T>(), residual.data<const T>()," in launch


@needs_ffi_headers
@needs_gxx
def test_a_cpu_kernel_casting_as_cuda_code_does_builds_for_bf16(tmp_path):
    spec = new(tmp_path, "rms_bf16", user_kernel(tmp_path, "rms_norm_cpu.cc", RMS_NORM_CPU), sizes=RMS_SIZES, dtypes=["f32", "bf16"])
    result = builder.build_spec(spec)
    assert result.ok, [c for c in result.checks if not c.ok] + result.findings


@needs_gxx
def test_the_cpu_16_bit_types_convert_to_and_from_float_rounding_to_nearest_even(tmp_path):
    program = tmp_path / "convert.cc"
    program.write_text(
        """#include <xlacc/kernel.h>
int main() {
  using xlacc::bf16_t; using xlacc::f16_t;
  const bf16_t b = 1.00390625f;  // halfway between 1 and the next bfloat16: rounds to even, 1
  const f16_t h = (f16_t)(0.1f);
  float sum = b;
  sum += (float)h;
  return (b.bits == 0x3f80 && h.bits == 0x2e66 && (float)bf16_t(-2.5f) == -2.5f && sum == 1.0f + 0.0999755859375f
          && xlacc::from_acc<bf16_t>(3.0f).bits == bf16_t(3.0f).bits && xlacc::to_acc(h) == (float)h) ? 0 : 1;
}
"""
    )
    include = resources.INCLUDE_DIR
    built = subprocess.run(["g++", "-std=c++17", "-I", str(include), str(program), "-o", str(tmp_path / "convert")], check=False, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert subprocess.run([str(tmp_path / "convert")], check=False).returncode == 0


@pytest.mark.parametrize("parameter", ["α", "EOF"])
def test_a_kernel_parameter_that_cannot_name_an_operand_is_named_as_the_kernels(tmp_path, parameter):
    """No --input was given: the message speaks of the kernel's parameter, not of a flag."""
    source = user_kernel(tmp_path, "k.cu", f"__global__ void k(const float* {parameter}, float* out, int n) {{}}\n")
    with pytest.raises(UsageError, match=rf"^--from {re.escape(str(source))}: a parameter of k: invalid"):
        new(tmp_path, "op", source)
