"""The paged-attention template: rendered, compiled (g++ for the CPU, nvcc for the GPU) and run through JAX.

The CPU projects run everywhere (on jax's CPU device even where a GPU is visible); the CUDA
project is compiled, and its generated tests run, where a GPU is visible (tests/test_templates.py
compiles every template's CUDA library wherever nvcc is).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import GXX, NVCC, needs_gxx

from xlacc import spec as specmod
from xlacc.commands.build.plan import XLACC_INCLUDE
from xlacc.commands.new.project import NewRequest, create, spec_for

jax = pytest.importorskip("jax", reason="the paged-attention tests run the kernel through jax")
NAME = "decode"


def _render(root: Path, platform: str, api: str, frameworks: list[str]) -> specmod.Spec:
    directory = root / f"{platform}_{api}"
    create(NewRequest(name=NAME, template="paged-attention", platform=platform, api=api, frameworks=frameworks, directory=directory))
    return specmod.load(directory)


def _compile_command(spec: specmod.Spec) -> list[str]:
    include = [f"-I{jax.ffi.include_dir()}", f"-I{XLACC_INCLUDE}", f"-I{spec.root}"]
    entry = str(spec.root / spec.entry_file)
    if spec.platform == "cpu":
        return [GXX, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", *include, "-o", str(spec.library), entry]
    gencode = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    return [NVCC, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", *gencode, *include, "-o", str(spec.library), entry]


def _compile(specs: dict[str, specmod.Spec]) -> None:
    """Side by side; a compile error fails the caller with the compiler's output."""
    jobs = {}
    for label, spec in specs.items():
        spec.library.parent.mkdir(parents=True, exist_ok=True)
        jobs[label] = subprocess.Popen(_compile_command(spec), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for label, job in jobs.items():
        output, _ = job.communicate()
        assert job.returncode == 0, f"{label} failed to compile:\n{output[-4000:]}"


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict[str, specmod.Spec]:
    """cpu ffi and cpu legacy (jax only), compiled side by side."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("paged_attention")
    specs = {"cpu-ffi": _render(root, "cpu", "ffi", ["jax"]), "cpu-legacy": _render(root, "cpu", "legacy", ["jax"])}
    _compile(specs)
    return specs


@pytest.fixture(scope="module")
def cuda_project(tmp_path_factory) -> specmod.Spec:
    """The cuda project with both entry points, compiled for sm_90 (only where a GPU test asks:
    tests/test_templates.py checks every template's CUDA library)."""
    spec = _render(tmp_path_factory.mktemp("paged_attention_cuda"), "cuda", "ffi", ["jax", "torch-xla"])
    _compile({"cuda": spec})
    return spec


@pytest.fixture(scope="module")
def cpu_op(projects):
    """The cpu ffi project's reference module and its op, imported into this process."""
    sys.path.insert(0, str(projects["cpu-ffi"].root))
    try:
        reference = importlib.import_module(f"{NAME}.reference")
        ops = importlib.import_module(f"{NAME}.jax")
    finally:
        sys.path.pop(0)
    ops.register()
    return reference, getattr(ops, NAME)


def _on_cpu(op, operands, attrs):
    with jax.default_device(jax.devices("cpu")[0]):
        return np.asarray(op(*[jax.numpy.asarray(a) for a in operands], **attrs))


def _check(op, reference, operands, attrs):
    from xlacc.commands.smoke import numerics

    got = _on_cpu(op, operands, attrs)
    want = reference.reference(*[numerics.widen(a) for a in operands], **attrs)
    result = numerics.compare("out", got, want)
    assert result.ok, result.detail
    return got


# -- the template -----------------------------------------------------------------------------


def test_template_signature():
    spec, meta = spec_for(NewRequest(name=NAME, template="paged-attention"))
    assert [t.name for t in spec.inputs] == ["query", "key_cache", "value_cache", "block_tables", "seq_lens"]
    assert [t.dtypes for t in spec.inputs[3:]] == [("i32",), ("i32",)]
    assert spec.op_dtypes == ("bf16", "f16", "f32") and spec.outputs[0].like == "query"
    assert [(a.name, a.type) for a in spec.attrs] == [("scale", "f32")]
    assert meta["platforms"] == ["cuda", "cpu"]


def test_example_inputs_cover_the_grid(cpu_op):
    reference, _ = cpu_op
    # The sizes run-smoke uses by default on the CPU and on the GPU reach every head size.
    assert {reference.shape_for(n)[0] for n in (1, 10_007, 1 << 20)} == set(reference.HEAD_SIZES)
    assert {reference.shape_for(n)[0] for n in (1, 1_000_003, 1 << 24)} == set(reference.HEAD_SIZES)
    lens = reference.ragged_seq_lens(16384, 16, np.random.default_rng(0))
    assert lens.min() == 1 and lens.max() == reference.MAX_SEQ_LEN and any(n % 16 not in (0, 1) for n in lens)
    (query, key_cache, _, tables, seq_lens), attrs = reference.example_inputs(1, np.random.default_rng(0))
    assert seq_lens.tolist() == [1] and attrs["scale"] == pytest.approx(1 / np.sqrt(query.shape[-1]))
    assert 0 <= tables.min() and tables.max() < key_cache.shape[0]


def test_bytes_moved_counts_the_cached_rows(cpu_op):
    reference, _ = cpu_op
    operands, _ = reference.make_inputs(np.random.default_rng(0), "bf16", [5, 0, 40], num_heads=4, num_kv_heads=2, head_size=64, block_size=16)
    query = operands[0]
    assert reference.bytes_moved(operands, [query]) == 45 * 2 * 64 * 2 * 2 + 2 * query.nbytes


# -- CPU: through JAX ---------------------------------------------------------------------------


def _run_generated_tests(spec: specmod.Spec, env: dict[str, str]) -> None:
    """3 dtypes x 3 sizes, the lowering, sharded by sequences and by KV heads, vmap, grad's error:
    all pass, but for the sharded ones where one device is all there is."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(spec.root)],
        cwd=spec.root, capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|skipped)", run.stdout)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) == 14, run.stdout[-2000:]
    one_device = sum(int(n) for n in re.findall(r"SKIPPED \[(\d+)\] [^\n]*one device", run.stdout))
    assert counts.get("skipped", 0) == one_device, run.stdout[-2000:]


@needs_gxx
@pytest.mark.parametrize("label", ["cpu-ffi", "cpu-legacy"])
def test_generated_tests_pass(projects, label):
    _run_generated_tests(projects[label], {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"})


@needs_gxx
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("head_size,block_size,num_heads,num_kv_heads", [(64, 16, 4, 4), (64, 32, 8, 1), (128, 16, 12, 4), (128, 32, 8, 2)])
def test_ragged_lengths_match_the_reference(cpu_op, dtype, head_size, block_size, num_heads, num_kv_heads):
    reference, op = cpu_op
    rng = np.random.default_rng(head_size + block_size + num_heads)
    lens = [1, 300, 0, block_size + 3, block_size, *rng.integers(1, 301, size=3)]
    operands, attrs = reference.make_inputs(rng, dtype, lens, num_heads=num_heads, num_kv_heads=num_kv_heads, head_size=head_size, block_size=block_size)
    got = _check(op, reference, operands, attrs)
    assert not np.any(got[2]), "a sequence of length 0 gives zeros"
    np.testing.assert_array_equal(got[0].astype(np.float32), operands[2][operands[3][0, 0], 0, np.arange(num_heads) // (num_heads // num_kv_heads)].astype(np.float32))


@needs_gxx
def test_lengths_past_the_table_and_bad_block_ids_are_clamped(cpu_op):
    reference, op = cpu_op
    operands, attrs = reference.make_inputs(np.random.default_rng(1), "f32", [20, 7], num_heads=4, num_kv_heads=2, head_size=64, block_size=16)
    operands[4] = np.array([1000, 7], np.int32)  # more tokens than two blocks hold: read 32
    operands[3] = operands[3].copy()
    operands[3][1, 1] = 1 << 30  # never read: past seq 1's length
    _check(op, reference, operands, attrs)


@needs_gxx
@pytest.mark.parametrize(
    "change,message",
    [
        (lambda ops: ops.__setitem__(0, ops[0][:, :3]), "must be a multiple of num_kv_heads"),
        (lambda ops: [ops.__setitem__(i, ops[i][..., :32]) for i in range(3)], "head_size 32 is not supported"),
        (lambda ops: [ops.__setitem__(i, ops[i][:, :8]) for i in (1, 2)], "block_size 8 is not supported"),
        (lambda ops: ops.__setitem__(4, ops[4][:1]), "seq_lens must be [num_seqs=2]"),
    ],
    ids=["group", "head_size", "block_size", "seq_lens"],
)
def test_unsupported_shapes_fail_with_a_message(cpu_op, change, message):
    reference, op = cpu_op
    operands, attrs = reference.make_inputs(np.random.default_rng(2), "f32", [3, 9], num_heads=4, num_kv_heads=2, head_size=64, block_size=16)
    change(operands)
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        _on_cpu(op, operands, attrs)


# -- CUDA: the generated tests on the GPU ------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_cuda_generated_tests_pass_on_the_gpu(cuda_project):
    _run_generated_tests(cuda_project, {})
