"""`xlacc new NAME --from FILE`: a kernel the user already has becomes a project, left unchanged."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlacc import builder, scaffold, update, wrap
from xlacc import spec as specmod
from xlacc.errors import UsageError

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
KERNELS = ARTIFACTS / "wrap"
NOTE_000 = ARTIFACTS / "doctor" / "sources" / "seed000_minimal_xla_custom_call.cu"  # the user's kernel, as written
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


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
    with pytest.raises(UsageError, match=r"`num_seqs` is an integer xlacc cannot place: pass --size num_seqs=INPUT.size"):
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


# -- projects -----------------------------------------------------------------------------------


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
