"""`xlacc new --from` on PyTorch extensions: a launcher taking torch::Tensor wraps unchanged over
xlacc's compatibility headers, every question comes at once, headers and includes are read, and
a header on no include path is named with its fix."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from locations import ARTIFACTS_DIR
from needs import needs_ffi_headers, needs_gxx

from xlacc import spec as specmod
from xlacc.commands.build import builder, plan
from xlacc.commands.doctor.rules.compiler import include_findings
from xlacc.commands.doctor.rules.error_text import diagnose_text
from xlacc.commands.new import project as scaffold
from xlacc.commands.new import wrap
from xlacc.commands.new.questions import QuestionsError
from xlacc.ground import resources
from xlacc.ground.errors import UsageError

ARTIFACTS = ARTIFACTS_DIR / "wrap" / "torch"
COMPAT = resources.templates_root() / "_torch_compat"
SCALE_REFERENCE = "(x.astype(xp.float32) * factor).astype(x.dtype)"
CACHE_REFERENCE = '''import numpy as np

from .testing import DEFAULT_DTYPE, numpy_dtype


def reference(rows, cache, slot_mapping, *, xp=np):
    valid = slot_mapping >= 0
    slots = xp.where(valid, slot_mapping, cache.shape[0])  # padding: past the end, dropped
    if xp is np:
        out = cache.copy()
        out[slots[valid]] = rows[valid]
        return out
    return cache.at[slots].set(rows, mode="drop")


def example_inputs(size, rng, dtype=None):
    dt = numpy_dtype(dtype or DEFAULT_DTYPE)
    num_tokens, num_slots, row = max(1, min(size // 64, 64)), 128, 64
    rows = rng.standard_normal((num_tokens, row), dtype=np.float32).astype(dt)
    cache = rng.standard_normal((num_slots, row), dtype=np.float32).astype(dt)
    slots = rng.permutation(num_slots)[:num_tokens].astype(np.int32)
    slots[::3] = -1
    return [rows, cache, slots], {}


def bytes_moved(operands, outputs):
    return sum(a.nbytes for a in operands)
'''


@pytest.fixture
def csrc(tmp_path):
    """The torch-style launchers beside the projects, as in a user's repository."""
    folder = tmp_path / "csrc"
    shutil.copytree(ARTIFACTS, folder)
    return folder


def request(tmp_path, name, source, **kwargs):
    return scaffold.NewRequest(name=name, from_file=source, frameworks=["jax"], directory=tmp_path / name, **kwargs)


def new(tmp_path, name, source, **kwargs):
    scaffold.create(request(tmp_path, name, source, **kwargs))
    return specmod.load(tmp_path / name)


def run_smoke(project):
    done = subprocess.run(
        [sys.executable, "-m", "xlacc", "run-smoke", str(project), "--framework", "jax", "--sizes", "1,1000,4099"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


# -- the compatibility headers --------------------------------------------------------------------


@needs_gxx
def test_the_compat_headers_give_views_checks_dispatch_and_the_stream_over_xla_buffers(tmp_path):
    binary = tmp_path / "compat_check"
    subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{plan.XLACC_INCLUDE}", f"-I{COMPAT}", str(ARTIFACTS / "compat_check.cc"), "-o", str(binary)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    lines = subprocess.run([str(binary)], check=True, capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert lines[:4] == [
        "dims 3 numel 24 sizes 2,3,4 strides 12,4,1 last 4",
        "dtype Float float 1 element 4 contiguous 1 cuda 0",
        "select 12 flatten 12 view 6",
        "dispatch 32-bit 16-bit",
    ]
    assert lines[4].startswith("check 0 1 op: want 2 dims, got 3 (") and "compat_check.cc:" in lines[4]
    assert lines[5].startswith("check_eq op: Check failed: t.size(0) == 3 (2 vs. 3)")
    assert lines[6:] == [
        "unsupported op: \"dispatch\" not implemented for 'Int'",
        "data_ptr op: expected scalar type Int but found Float",
        "item 1",
        "stream 1 after 1",
        "current 1",
    ]


# -- wrapping a launcher that takes torch::Tensor ------------------------------------------------


def test_a_torch_launcher_maps_tensors_scalars_and_a_size_from_its_shape_comment(csrc):
    wrapped = wrap.read(csrc / "scale_ext.cc", None, {}, questions_ok=True)
    assert wrapped.torch and wrapped.function == "scale"
    assert [(a.name, a.kind, a.dtype) for a in wrapped.arguments] == [
        ("out", "output", "T"), ("x", "input", "T"), ("hidden_size", "size", ""), ("factor", "attr", "f64"),
    ]  # fmt: skip
    assert wrapped.sizes == {"hidden_size": "x.shape[1]"} and wrapped.likes == {"out": "x"}
    assert [(q.name, q.flag) for q in wrapped.questions] == [("hidden_size", "--size hidden_size=x.shape[1]")]


def test_a_tensor_the_launcher_writes_through_a_function_is_in_place_and_dtypes_come_from_data_ptr(csrc):
    wrapped = wrap.read(csrc / "cache_write.cc", None, {"num_tokens": "rows.shape[0]"})
    assert [(a.name, a.kind, a.dtype) for a in wrapped.arguments] == [
        ("rows", "input", "T"), ("cache", "inplace", "T"), ("slot_mapping", "input", "i32"), ("num_tokens", "size", ""),
    ]  # fmt: skip
    assert [a.name for a in wrapped.tensors("input")] == ["rows", "cache", "slot_mapping"]
    assert [a.name for a in wrapped.in_place()] == ["cache"]


@needs_ffi_headers
@needs_gxx
def test_a_torch_launcher_with_check_dispatch_and_stream_builds_and_passes_run_smoke_on_xla_cpu(tmp_path, csrc):
    spec = new(tmp_path, "scale", csrc / "scale_ext.cc", dtypes=["f32", "bf16"], attrs=["factor:f64=2.0"], accept_guesses=True)
    assert dict(spec.origin.sizes) == {"hidden_size": "x.shape[1]"}
    assert [(o.name, o.like) for o in spec.outputs] == [("out", "x")]
    assert str(csrc) in str((spec.root / spec.build.include_dirs[0]).resolve())
    reference = spec.root / spec.package / "reference.py"
    reference.write_text(reference.read_text().replace('raise NotImplementedError("write what scale computes in scale/reference.py")', f"return {SCALE_REFERENCE}"))
    code, output = run_smoke(spec.root)
    assert code == 0, output
    assert "✓ numerics n=4099 bf16" in output and "✗" not in output
    # A failed TORCH_CHECK is the call's error, in XLA's own exception, not a crash.
    script = (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from scale.jax import scale\n"
        "try:\n    scale(np.ones((2, 3, 4), np.float32), factor=2.0).block_until_ready()\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(spec.root)], capture_output=True, text=True, timeout=300)
    assert "x must be 2-D, got 3 dims" in done.stdout, done.stdout + done.stderr


@needs_ffi_headers
@needs_gxx
def test_a_cache_written_in_place_is_an_aliased_result_and_passes_run_smoke(tmp_path, csrc):
    spec = new(tmp_path, "cache", csrc / "cache_write.cc", accept_guesses=True)
    assert [(o.name, o.alias) for o in spec.outputs] == [("cache_out", "cache")]
    assert spec.aliases == {1: 0}
    launch = (spec.root / spec.kernel_file).read_text()
    assert "xlacc::torch_compat::in_place(stream, cache, cache_out)" in launch
    (spec.root / spec.package / "reference.py").write_text(CACHE_REFERENCE)
    code, output = run_smoke(spec.root)
    assert code == 0, output
    assert "✓ numerics n=1000 f32" in output


def test_calls_outside_the_compat_headers_are_refused_with_their_lines_and_what_to_do(csrc):
    with pytest.raises(UsageError) as info:
        wrap.read(csrc / "refused.cc", None, {})
    message = str(info.value)
    assert "normalize uses what xlacc's PyTorch compatibility headers do not give" in message
    assert "line 6: `torch::Tensor total = torch::empty({1}, x.options());`: allocates a tensor" in message
    assert "scratch" in message
    assert "line 7: `const float scale = total.item<float>();`: reads a device value on the host" in message
    assert "attribute" in message


def test_a_helper_the_launcher_reaches_through_a_macro_is_checked_too(tmp_path):
    source = tmp_path / "helper.cc"
    source.write_text(
        "#include <torch/all.h>\n"
        "void grow(torch::Tensor& out, const torch::Tensor& x) {\n"
        "  torch::Tensor scratch = torch::empty_like(x);\n"
        "}\n"
        "#define CALL_GROW(OUT, X) grow(OUT, X)\n"
        "void entry(torch::Tensor& out, const torch::Tensor& x) { CALL_GROW(out, x); }\n"
        "void unrelated(torch::Tensor& out, const torch::Tensor& x) { float v = x.item<float>(); }\n"
    )
    with pytest.raises(UsageError) as info:
        wrap.read(source, "entry", {})
    assert "line 3 (in grow): `torch::Tensor scratch = torch::empty_like(x);`: allocates a tensor" in str(info.value)
    assert "item" not in str(info.value)  # a function the launcher never calls is not its concern


# -- every question at once -------------------------------------------------------------------------


def test_every_question_comes_at_once_with_guesses_and_a_command_that_answers_them(tmp_path, csrc, monkeypatch):
    source = csrc / "decode_launcher.cu"
    with pytest.raises(QuestionsError) as info:
        scaffold.create(request(tmp_path, "dec", source))
    message = str(info.value)
    assert [(q.name, q.flag) for q in info.value.questions] == [
        ("num_seqs", "--size num_seqs=query.shape[0]"),
        ("num_heads", "--size num_heads=query.shape[1]"),
        ("head_size", "--size head_size=query.shape[2]"),
        ("block_size", "--size block_size=key_cache.shape[1]"),
        ("window", "--attr window:i32"),
    ]
    assert "the comment on key_cache: [num_blocks, block_size, num_kv_heads, head_size]" in message
    assert not (tmp_path / "dec").exists()
    command = next(line.strip() for line in message.splitlines() if line.strip().startswith("xlacc new"))
    words = shlex.split(command)
    sizes = [words[i + 1] for i, w in enumerate(words) if w == "--size"]
    attrs = [words[i + 1] for i, w in enumerate(words) if w == "--attr"]
    answered = new(tmp_path, "dec", Path(words[4]), sizes=sizes, attrs=attrs)
    guessed = new(tmp_path, "dec2", source, accept_guesses=True)
    assert dict(answered.origin.sizes) == dict(guessed.origin.sizes) == {
        "num_seqs": "query.shape[0]", "num_heads": "query.shape[1]", "head_size": "query.shape[2]", "block_size": "key_cache.shape[1]",
    }  # fmt: skip
    assert [(a.name, a.type) for a in guessed.attrs] == [("window", "i32")]


def test_one_question_is_one_line_and_a_given_answer_is_not_asked_again(csrc):
    with pytest.raises(QuestionsError) as info:
        wrap.read(csrc / "scale_ext.cc", None, {})
    assert "\n" not in str(info.value)
    assert "--size hidden_size=x.shape[1]" in str(info.value)
    assert wrap.read(csrc / "scale_ext.cc", None, {"hidden_size": "x.shape[-1]"}).questions == []


def test_a_text_parameter_takes_a_word_and_a_size_is_never_a_text(tmp_path):
    source = tmp_path / "cache.cc"
    source.write_text(
        "#include <torch/all.h>\n"
        "void store(torch::Tensor& out, const torch::Tensor& x, const std::string& kv_cache_dtype, int64_t n) {}\n"
    )
    with pytest.raises(QuestionsError) as info:
        wrap.read(source, None, {"n": "x.size"})
    assert [(q.name, q.flag) for q in info.value.questions] == [("kv_cache_dtype", "--size kv_cache_dtype=auto"), ("out", "--output out:like=x")]
    wrapped = wrap.read(source, None, {"n": "x.size", "kv_cache_dtype": "fp8_e4m3"}, likes={"out": "x"})
    assert next(a.setup for a in wrapped.arguments if a.name == "kv_cache_dtype") == 'std::string kv_cache_dtype_arg = "fp8_e4m3";'
    with pytest.raises(UsageError, match=r"`n` is a number, and --size n=auto is a text"):
        wrap.read(source, None, {"n": "auto", "kv_cache_dtype": "auto"}, likes={"out": "x"})
    with pytest.raises(UsageError, match=r"`kv_cache_dtype` is a text, and --size kv_cache_dtype=x.size is a size"):
        wrap.read(source, None, {"n": "x.size", "kv_cache_dtype": "x.size"}, likes={"out": "x"})


# -- what the user points at -------------------------------------------------------------------------


def test_from_a_header_wraps_its_kernel_and_builds_for_cuda(tmp_path, csrc):
    spec = new(tmp_path, "hdr", csrc / "kernels" / "scale_kernels.cuh", attrs=["factor:f32=2"], accept_guesses=True)
    assert spec.platform == "cuda" and spec.origin.function == "scale_kernel"
    assert '#include "scale_kernels.cuh"' in (spec.root / spec.kernel_file).read_text()


def test_kernel_names_a_kernel_in_an_included_file(csrc):
    wrapped = wrap.read(csrc / "host_only.cu", "scale_kernel", {}, questions_ok=True)
    assert wrapped.is_kernel and wrapped.template and wrapped.function == "scale_kernel"


def test_nothing_to_wrap_lists_what_it_saw_and_the_kernels_of_included_files(csrc):
    with pytest.raises(UsageError) as info:
        wrap.read(csrc / "host_only.cu", None, {})
    message = str(info.value)
    assert "nothing to wrap" in message
    assert "blocks_for (line 5): takes no pointer and no tensor" in message
    assert "kernel scale_kernel in scale_kernels.cuh (line 5): --kernel scale_kernel wraps it" in message


def test_include_folders_are_searched_and_recorded(tmp_path, csrc):
    launcher = tmp_path / "elsewhere" / "launch_scale.cu"
    launcher.parent.mkdir()
    launcher.write_text('#include "scale_kernels.cuh"\n')
    with pytest.raises(UsageError, match="it saw no function at all"):  # the header is in no folder it searches
        scaffold.create(request(tmp_path, "nope", launcher))
    spec = new(tmp_path, "inc", launcher, kernel="scale_kernel", include_dirs=[csrc / "kernels"], attrs=["factor:f32=2"], accept_guesses=True)
    assert [(spec.root / d).resolve() for d in spec.build.include_dirs] == [launcher.parent.resolve(), (csrc / "kernels").resolve()]
    with pytest.raises(UsageError, match="--include .*: no such folder"):
        scaffold.create(request(tmp_path, "bad", launcher, include_dirs=[tmp_path / "missing"]))


# -- build: a header on no include path, and staleness ------------------------------------------------


def test_a_missing_header_is_named_with_the_folders_searched_and_the_fix():
    output = (
        "launch.cu:6:10: fatal error: cuda_utils.h: No such file or directory\n"
        "kernel.cu(1): catastrophic error: cannot open source file \"torch/all.h\"\n"
    )
    findings = include_findings(output, (Path("/x/include"), Path("/src")))
    assert [f.code for f in findings] == ["include-missing", "include-missing"]
    assert findings[0].title == "`cuda_utils.h` is on no include path"
    assert "is in none of: ., /x/include, /src" in findings[0].evidence and "[build] include_dirs" in findings[0].fix
    assert "xlacc new NAME --from FILE" in findings[1].fix
    doctor = [f for f in diagnose_text(output) if f.code == "include-missing"]
    assert sorted(f.title for f in doctor) == ["`cuda_utils.h` is on no include path", "`torch/all.h` is on no include path (a PyTorch header)"]


@needs_ffi_headers
@needs_gxx
def test_build_reports_include_missing_for_a_launcher_that_needs_a_folder(tmp_path, csrc):
    launcher = csrc / "needs_helper.cc"
    launcher.write_text('#include <torch/all.h>\n#include "helper_defs.h"\nvoid twice(torch::Tensor& out, const torch::Tensor& x) {\n'
                        "  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = FACTOR * x.data_ptr<float>()[i];\n}\n")
    spec = new(tmp_path, "helper", launcher, accept_guesses=True)
    result = builder.build_spec(spec)
    assert not result.ok
    (finding,) = [f for f in result.findings if f.code == "include-missing"]
    assert finding.title == "`helper_defs.h` is on no include path" and str(COMPAT) in finding.evidence
    (csrc / "defs").mkdir()
    (csrc / "defs" / "helper_defs.h").write_text("#define FACTOR 2.0f\n")
    fixed = new(tmp_path, "helper2", launcher, include_dirs=[csrc / "defs"], accept_guesses=True)
    assert builder.build_spec(fixed).ok and not builder.is_stale(fixed)
    (csrc / "defs" / "helper_defs.h").write_text("#define FACTOR 3.0f\n")  # a header in an include folder: the library is stale
    assert builder.is_stale(fixed)


def test_the_package_calls_its_library_stale_when_a_file_under_an_include_folder_changes(tmp_path, csrc):
    spec = new(tmp_path, "stale", csrc / "cache_write.cc", include_dirs=[csrc / "kernels"], accept_guesses=True)
    spec.library.write_bytes(b"")  # only its time matters here
    old = time.time() - 100
    for path in [p for p in (tmp_path / "csrc").rglob("*") if p.is_file()] + [spec.root / n for n in spec.code_files if (spec.root / n).is_file()]:
        os.utime(path, (old, old))
    os.utime(spec.library, (old + 50, old + 50))
    sys.path.insert(0, str(spec.root))
    try:
        import importlib

        package = importlib.import_module(spec.package)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            package.library()  # nothing newer
        os.utime(csrc / "kernels" / "scale_kernels.cuh")
        with pytest.warns(UserWarning, match=r"older than .*scale_kernels.cuh"):
            package.library()
    finally:
        sys.path.remove(str(spec.root))
        sys.modules.pop(spec.package, None)


# -- on the GPU ----------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_cuda_torch_launcher_runs_on_xlas_stream_and_passes_run_smoke_on_the_gpu(tmp_path, csrc):
    spec = new(tmp_path, "scale", csrc / "scale_ext_cuda.cu", dtypes=["f32", "bf16", "f16"], attrs=["factor:f64=2.0"], accept_guesses=True)
    reference = spec.root / spec.package / "reference.py"
    reference.write_text(reference.read_text().replace('raise NotImplementedError("write what scale computes in scale/reference.py")', f"return {SCALE_REFERENCE}"))
    code, output = run_smoke(spec.root)
    assert code == 0, output
    assert "✓ numerics n=4099 f16" in output and "✗" not in output
    script = (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from scale.jax import scale\n"
        "try:\n    scale(np.ones((2, 3, 4), np.float32), factor=2.0).block_until_ready()\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(spec.root)], capture_output=True, text=True, timeout=300)
    assert "x must be 2-D, got 3 dims" in done.stdout, done.stdout + done.stderr
