"""The ragged-paged-attention template: rendered, compiled (g++ for the CPU, nvcc for the GPU) and run through JAX.

The CPU twin runs in CI against the float64 reference over every ragged case (decode-only,
prefill-only, mixed, chunked prefill onto a cached context, zero-length and padding sequences,
padding tokens), with a sliding window and a soft-cap; the torch op runs under torchax in one
jitted step after the paged-kv-write op. The CUDA project's numerics run where a GPU is visible
(tests marked gpu); RAGGED_PREBUILT names a folder with a prebuilt CUDA project (the GPU runner).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import GXX, NVCC, needs_gxx, needs_nvcc

from xlacc import spec as specmod
from xlacc.commands.build.plan import XLACC_INCLUDE
from xlacc.commands.new import transform_plan as transforms
from xlacc.commands.new.project import NewRequest, create, spec_for

jax = pytest.importorskip("jax", reason="the ragged-paged-attention tests run the kernel through jax")
NAME, WRITE = "ragged", "kv_write"
CASES = ["decode", "prefill", "mixed", "chunked", "zero_length"]


def _render(root: Path, name: str, template: str, platform: str, frameworks: list[str]) -> specmod.Spec:
    create(NewRequest(name=name, template=template, platform=platform, api="ffi", frameworks=frameworks, directory=root / name))
    return specmod.load(root / name)


def _compile_command(spec: specmod.Spec) -> list[str]:
    include = [f"-I{jax.ffi.include_dir()}", f"-I{XLACC_INCLUDE}", f"-I{spec.root}"]
    entry = str(spec.root / spec.entry_file)
    if spec.platform == "cpu":
        return [GXX, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", *include, "-o", str(spec.library), entry]
    gencode = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    return [NVCC, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", *gencode, *include, "-o", str(spec.library), entry]


def _compile(specs: list[specmod.Spec]) -> None:
    jobs = []
    for spec in specs:
        spec.library.parent.mkdir(parents=True, exist_ok=True)
        jobs.append((spec, subprocess.Popen(_compile_command(spec), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for spec, job in jobs:
        output, _ = job.communicate()
        assert job.returncode == 0, f"{spec.name} failed to compile:\n{output[-4000:]}"


def _import(root: Path, name: str):
    sys.path.insert(0, str(root))
    try:
        reference = importlib.import_module(f"{name}.reference")
        ops = importlib.import_module(f"{name}.jax")
    finally:
        sys.path.pop(0)
    ops.register()
    return reference, getattr(ops, name)


@pytest.fixture(scope="module")
def cpu_projects(tmp_path_factory) -> dict[str, specmod.Spec]:
    """The ragged op (jax and torchax) and the paged-kv-write op, cpu, compiled side by side."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("ragged_paged_attention")
    specs = {NAME: _render(root, NAME, "ragged-paged-attention", "cpu", ["jax", "torchax"]), WRITE: _render(root, WRITE, "paged-kv-write", "cpu", ["jax", "torchax"])}
    _compile(list(specs.values()))
    return specs


@pytest.fixture(scope="module")
def cpu_op(cpu_projects):
    return _import(cpu_projects[NAME].root, NAME)


def _widened(operands):
    return [a.astype(np.float64) if a.dtype.kind == "f" else a for a in operands]


def _check(op, reference, operands, attrs, device):
    from xlacc.commands.smoke import numerics

    with jax.default_device(device):
        got = np.asarray(op(*[jax.numpy.asarray(a) for a in operands], **attrs))
    want = reference.reference(*_widened(operands), **attrs)
    result = numerics.compare("out", got, want)
    assert result.ok, result.detail
    return got


def _cpu():
    return jax.devices("cpu")[0]


# -- the template -------------------------------------------------------------------------------


def test_template_signature_is_the_fixed_interface():
    spec, meta = spec_for(NewRequest(name=NAME, template="ragged-paged-attention"))
    assert [t.name for t in spec.inputs] == ["query", "key_cache", "value_cache", "cu_q_lens", "kv_lens", "block_tables", "num_seqs"]
    assert all(t.dtypes == ("i32",) for t in spec.inputs[3:]) and spec.op_dtypes == ("bf16", "f16", "f32")
    assert [t.name for t in spec.outputs] == ["out", "partials"] and spec.outputs[1].scratch and spec.outputs[0].like == "query"
    assert [(a.name, a.type, a.default) for a in spec.attrs] == [("scale", "f32", None), ("sliding_window", "i32", 0), ("soft_cap", "f32", 0.0)]
    assert meta["platforms"] == ["cuda", "cpu"]


def test_sharding_is_free_over_kv_heads_and_vmap_never_folds_into_packed_tokens():
    spec, _ = spec_for(NewRequest(name=NAME, template="ragged-paged-attention"))
    assert spec.sharding.parsed.splittable(spec.sharding.whole) == ("k",)
    assert transforms.folding_inputs(spec) is None
    assert "one launch per example" in transforms.describe_vmap(spec)


def test_flops_and_bytes_count_the_causal_work(cpu_op):
    reference, _ = cpu_op
    operands, _ = reference.make_inputs(np.random.default_rng(0), "bf16", [2, 0, 1], [5, 3, 4], num_heads=4, num_kv_heads=2, head_size=64, padding_seqs=1)
    # Sequence 0: tokens at positions 3 and 4 see 4 and 5 positions; sequence 2's token sees 4.
    assert reference.flops(operands) == 4 * (4 + 5 + 4) * 4 * 64
    assert reference.flops(operands, sliding_window=2) == 4 * (2 + 2 + 2) * 4 * 64
    query = operands[0]
    assert reference.flops(operands, [query]) == reference.flops(operands)  # as `xlacc bench` calls it: the outputs second
    assert reference.bytes_moved(operands, [query]) == 2 * (5 + 3 + 4) * 2 * 64 * 2 + 2 * query.nbytes


@pytest.mark.parametrize(("shape", "new", "context"), [((3, 40), 1, 40), ((2, 48, 48), 48, 48), ((2, 80, 16), 16, 80)])
def test_bench_shapes_are_uniform_batches_cudnn_can_take(cpu_op, shape, new, context):
    from xlacc.commands.bench.attention_peers import uniform_batch

    reference, _ = cpu_op
    operands, attrs = reference.bench_inputs(shape, np.random.default_rng(0), "bf16")
    query, key_cache, _, cu_q_lens, kv_lens, tables, num_seqs = operands
    heads = reference.BENCH_HEADS
    assert query.shape == (shape[0] * new, heads["num_heads"], heads["head_size"])
    assert key_cache.shape[1:] == (heads["block_size"], heads["num_kv_heads"], heads["head_size"])
    assert key_cache.shape[0] == tables.size == shape[0] * -(-context // heads["block_size"])  # exactly the blocks in use
    assert uniform_batch(cu_q_lens, kv_lens, int(num_seqs[0])) == (new, context, shape[0])
    assert attrs == {"scale": pytest.approx(128**-0.5), "sliding_window": 0, "soft_cap": 0.0}


@pytest.mark.parametrize(("shape", "says"), [((4,), "SEQSxCONTEXT or SEQSxCONTEXTxNEW"), ((4, 8, 16), "16 new tokens do not fit a context of 8")])
def test_a_bench_shape_the_op_cannot_take_says_why(cpu_op, shape, says):
    reference, _ = cpu_op
    with pytest.raises(ValueError, match=says):
        reference.bench_inputs(shape, np.random.default_rng(0))


# -- CPU: the twin against float64 ------------------------------------------------------------------


@needs_gxx
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("head_size,block_size", [(64, 16), (64, 32), (128, 16), (128, 32)])
@pytest.mark.parametrize("case", CASES)
def test_every_ragged_case_matches_float64(cpu_op, case, dtype, head_size, block_size):
    reference, op = cpu_op
    q_lens, kv_lens = reference.CASES[case]
    operands, attrs = reference.make_inputs(np.random.default_rng(head_size + block_size), dtype, q_lens, kv_lens, num_heads=8, num_kv_heads=2,
                                            head_size=head_size, block_size=block_size, padding_seqs=2, padding_tokens=3)  # fmt: skip
    got = _check(op, reference, operands, attrs, _cpu())
    assert not np.any(got[-3:]), "padding tokens give zeros"


@needs_gxx
@pytest.mark.parametrize("sliding_window,soft_cap,heads", [(13, 0.0, (8, 2)), (0, 5.0, (8, 2)), (40, 3.0, (12, 4)), (0, 0.0, (4, 4))])
def test_window_cap_and_groups_match_float64(cpu_op, sliding_window, soft_cap, heads):
    reference, op = cpu_op
    for case in CASES:
        operands, attrs = reference.make_inputs(np.random.default_rng(3), "f32", *reference.CASES[case], num_heads=heads[0], num_kv_heads=heads[1],
                                                head_size=64, padding_seqs=1, sliding_window=sliding_window, soft_cap=soft_cap)  # fmt: skip
        _check(op, reference, operands, attrs, _cpu())


@needs_gxx
def test_the_jnp_reference_matches_float64(cpu_op):
    reference, _ = cpu_op
    operands, attrs = reference.make_inputs(np.random.default_rng(4), "f32", [1, 20, 0, 5], [30, 20, 9, 70], num_heads=8, num_kv_heads=2,
                                            head_size=64, padding_seqs=1, padding_tokens=2, sliding_window=16, soft_cap=4.0)  # fmt: skip
    with jax.default_device(_cpu()):
        got = np.asarray(jax.jit(lambda *a: reference.reference(*a, xp=jax.numpy, **attrs))(*operands))
    np.testing.assert_allclose(got, reference.reference(*_widened(operands), **attrs), rtol=1e-5, atol=1e-6)


@needs_gxx
def test_bad_metadata_is_clamped_and_matches_the_reference(cpu_op):
    reference, op = cpu_op
    operands, attrs = reference.make_inputs(np.random.default_rng(5), "f32", [3, 1], [20, 7], num_heads=4, num_kv_heads=2, head_size=64)
    operands[4] = np.array([1000, 7], np.int32)  # more context than two blocks hold: read 32
    operands[6] = np.array([9], np.int32)  # more sequences in use than there are: 2
    operands[5] = operands[5].copy()
    operands[5][1, 1] = 1 << 30  # never read: past sequence 1's context
    _check(op, reference, operands, attrs, _cpu())


@needs_gxx
@pytest.mark.parametrize(
    "change,message",
    [
        (lambda ops: ops.__setitem__(0, ops[0][:, :3]), "must be a multiple of num_kv_heads"),
        (lambda ops: [ops.__setitem__(i, ops[i][..., :32]) for i in range(3)], "head_size 32 is not supported"),
        (lambda ops: [ops.__setitem__(i, ops[i][:, :8]) for i in (1, 2)], "block_size 8 is not supported"),
        (lambda ops: ops.__setitem__(3, ops[3][:2]), "cu_q_lens must be [max_num_seqs + 1=3]"),
        (lambda ops: ops.__setitem__(6, np.array([1, 1], np.int32)), "num_seqs must be [1]"),
    ],
    ids=["group", "head_size", "block_size", "cu_q_lens", "num_seqs"],
)
def test_unsupported_shapes_fail_with_a_message(cpu_op, change, message):
    reference, op = cpu_op
    operands, attrs = reference.make_inputs(np.random.default_rng(2), "f32", [1, 3], [3, 9], num_heads=4, num_kv_heads=2, head_size=64)
    change(operands)
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]").replace("+", r"\+")), jax.default_device(_cpu()):
        jax.block_until_ready(op(*[jax.numpy.asarray(a) for a in operands], **attrs))


# A hang guard for one nvcc run on a busy 2-core machine (about 15 s when quiet).
PTX_TIMEOUT = 600


@needs_nvcc
def test_an_sm90a_build_runs_prefills_on_wgmma_in_a_persistent_grid(tmp_path):
    """Built for sm_90a, the prefill kernel's products are wgmma, fed by a producer warpgroup through
    mbarriers with the registers moved to the product warpgroups; its CTAs take items from a counter
    (an atomic add), the producer warpgroup searching each item's sequence on its own barrier; an
    item's rows go out through shared memory (stmatrix) in 16-byte stores; warning-free like every
    template. (The generic sm_90 build, mma.sync, is compiled in test_templates.py.)"""
    spec = _render(tmp_path, NAME, "ragged-paged-attention", "cuda", ["jax"])
    ptx = tmp_path / "ragged.ptx"
    include = [f"-I{XLACC_INCLUDE}", f"-I{spec.root}", "-isystem", str(jax.ffi.include_dir())]
    command = [NVCC, "-O1", "-std=c++17", "-ptx", "-Werror", "all-warnings", "-gencode", "arch=compute_90a,code=compute_90a", *include, "-o", str(ptx)]
    result = subprocess.run([*command, str(spec.root / spec.entry_file)], capture_output=True, text=True, timeout=PTX_TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    text = ptx.read_text()
    for instruction in ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "cp.async.mbarrier.arrive.noinc", "setmaxnreg.inc", "setmaxnreg.dec",
                        "atom.global.add.u32", "bar.red.popc.u32", "stmatrix.sync.aligned.m8n8.x4.shared.b16", "st.global.v4.b32"):
        assert instruction in text, instruction


@needs_gxx
def test_generated_tests_pass(cpu_projects):
    """The project's own tests: 3 dtypes x 3 sizes, the lowering, sharded by kv heads, vmap, grad's error."""
    spec = cpu_projects[NAME]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(spec.root / f"test_{NAME}.py")],
                         cwd=spec.root, capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]


# -- torchax: the KV write and the attention in one jitted step ------------------------------------------


@needs_gxx
def test_torchax_step_writes_the_cache_then_attends(cpu_projects):
    """A torch program under torchax: paged-kv-write puts the new tokens' keys and values into the
    cache, then the ragged op attends over it, in one jitted step; the result matches float64 on
    the cache written by numpy."""
    torchax = pytest.importorskip("torchax")
    torch = pytest.importorskip("torch")
    from torchax import interop

    reference, _ = _import(cpu_projects[NAME].root, NAME)
    _import(cpu_projects[WRITE].root, WRITE)
    sys.path[:0] = [str(cpu_projects[NAME].root), str(cpu_projects[WRITE].root)]
    try:
        attend = importlib.import_module(f"{NAME}.torch").ragged
        write = importlib.import_module(f"{WRITE}.torch").kv_write
    finally:
        del sys.path[:2]
    rng = np.random.default_rng(6)
    q_lens, kv_lens = [1, 6, 0, 4], [9, 6, 5, 20]
    operands, attrs = reference.make_inputs(rng, "f32", q_lens, kv_lens, num_heads=8, num_kv_heads=2, head_size=64, padding_seqs=1, padding_tokens=1)
    query, key_cache, value_cache, cu_q_lens, kv_lens_all, tables, num_seqs = operands
    num_tokens, block = query.shape[0], key_cache.shape[1]
    slots = np.full(num_tokens, -1, np.int32)  # the new tokens' slots; the padding token writes nothing
    for s, (q_len, kv_len) in enumerate(zip(q_lens, kv_lens)):
        positions = np.arange(kv_len - q_len, kv_len)
        slots[cu_q_lens[s] : cu_q_lens[s] + q_len] = tables[s, positions // block] * block + positions % block
    new_keys, new_values = (rng.standard_normal((num_tokens, 2, 64)).astype(np.float32) for _ in range(2))

    def step(q, k, v, kc, vc, cu, lens, table, n, slot):
        kc, vc = write(k, v, kc, vc, slot)
        return attend(q, kc, vc, cu, lens, table, n, **attrs), kc, vc

    env = torchax.default_env()
    with env, jax.default_device(_cpu()):
        tensors = [torch.from_numpy(np.ascontiguousarray(a)).to("jax") for a in (query, new_keys, new_values, key_cache, value_cache, cu_q_lens, kv_lens_all, tables, num_seqs, slots)]
        out, _, _ = interop.jax_jit(step)(*tensors)
        got = np.asarray(out.jax())
    written_k, written_v = key_cache.copy().reshape(-1, 2, 64), value_cache.copy().reshape(-1, 2, 64)
    written_k[slots[slots >= 0]], written_v[slots[slots >= 0]] = new_keys[slots >= 0], new_values[slots >= 0]
    wide = _widened([query, written_k.reshape(key_cache.shape), written_v.reshape(value_cache.shape), cu_q_lens, kv_lens_all, tables, num_seqs])
    np.testing.assert_allclose(got, reference.reference(*wide, **attrs), rtol=1e-5, atol=1e-6)


@needs_gxx
def test_jitted_step_writes_the_donated_cache_in_place_then_attends(cpu_projects):
    """jax: paged-kv-write then the ragged op in one jit with the caches donated: the HLO aliases
    the caches (no copy), and the attention reads the rows just written."""
    reference, attend = _import(cpu_projects[NAME].root, NAME)
    _, write = _import(cpu_projects[WRITE].root, WRITE)
    rng = np.random.default_rng(8)
    operands, attrs = reference.make_inputs(rng, "f32", [1, 3], [4, 3], num_heads=4, num_kv_heads=2, head_size=64)
    query, key_cache, value_cache, cu_q_lens, kv_lens, tables, num_seqs = operands
    slots = np.array([tables[0, 0] * 16 + 3, tables[1, 0] * 16, tables[1, 0] * 16 + 1, tables[1, 0] * 16 + 2], np.int32)
    new_keys, new_values = (rng.standard_normal((4, 2, 64)).astype(np.float32) for _ in range(2))

    def step(q, k, v, kc, vc, slot):
        kc, vc = write(k, v, kc, vc, slot)
        return attend(q, kc, vc, cu_q_lens, kv_lens, tables, num_seqs, **attrs), kc, vc

    with jax.default_device(_cpu()):
        args = [jax.numpy.asarray(a) for a in (query, new_keys, new_values, key_cache, value_cache, slots)]
        jitted = jax.jit(step, donate_argnums=(3, 4))
        compiled = jitted.lower(*args).compile().as_text()
        out, written_k, _ = jitted(*args)
    assert "output_to_operand_aliasing" in compiled and " copy(" not in compiled
    np.testing.assert_array_equal(np.asarray(written_k).reshape(-1, 2, 64)[slots], new_keys)
    written_v = value_cache.reshape(-1, 2, 64).copy()
    written_v[slots] = new_values
    wide = _widened([query, np.asarray(written_k), written_v.reshape(value_cache.shape), cu_q_lens, kv_lens, tables, num_seqs])
    np.testing.assert_allclose(np.asarray(out), reference.reference(*wide, **attrs), rtol=1e-5, atol=1e-6)


# -- CUDA: the same numerics on the GPU ------------------------------------------------------------------


def _gpu():
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("jax sees no GPU")
    return gpus[0]


@pytest.fixture(scope="module")
def cuda_op(tmp_path_factory):
    """The cuda project: RAGGED_PREBUILT's, or rendered and compiled for sm_90 here."""
    device = _gpu()
    prebuilt = os.environ.get("RAGGED_PREBUILT")
    if prebuilt:
        root = Path(prebuilt)
    else:
        if NVCC is None:
            pytest.skip("nvcc is not installed")
        spec = _render(tmp_path_factory.mktemp("ragged_cuda"), NAME, "ragged-paged-attention", "cuda", ["jax"])
        _compile([spec])
        root = spec.root
    reference, op = _import(root, NAME)
    return reference, op, device


# Beyond reference.CASES: contexts long enough to split, and a decode-shaped call (too few tokens
# beyond one a sequence for the prefill kernel) with a sequence longer than a query tile.
EXTRA = {
    "long_decode": ([1, 1], [5000, 70]),
    "long_chunk": ([300, 1], [3000, 1]),
    "one_long": ([1], [9000]),
    "decode_with_a_chunk": ([1, 20, 1, 0], [300, 40, 20, 5]),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("head_size", [64, 128, 256])
@pytest.mark.parametrize("block_size", [16, 32])
def test_cuda_every_ragged_case_matches_float64(cuda_op, dtype, head_size, block_size):
    """Every ragged case, whole and split over the context (one long sequence), GQA 4 and 4:1 at 32 heads."""
    reference, op, device = cuda_op
    for case, (q_lens, kv_lens) in {**reference.CASES, **EXTRA}.items():
        for heads, kv_heads in [(8, 2), (32, 8)]:
            operands, attrs = reference.make_inputs(np.random.default_rng(head_size), dtype, q_lens, kv_lens, num_heads=heads, num_kv_heads=kv_heads,
                                                    head_size=head_size, block_size=block_size, padding_seqs=2, padding_tokens=3)  # fmt: skip
            got = _check(op, reference, operands, attrs, device)
            assert not np.any(got[-3:].astype(np.float32)), f"{case}: padding tokens give zeros"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("sliding_window,soft_cap,heads", [(13, 0.0, (8, 2)), (0, 5.0, (8, 2)), (40, 3.0, (12, 4)), (0, 0.0, (64, 1)), (0, 0.0, (80, 1))])
def test_cuda_window_cap_and_groups_match_float64(cuda_op, dtype, sliding_window, soft_cap, heads):
    reference, op, device = cuda_op
    for case, (q_lens, kv_lens) in {**reference.CASES, **EXTRA}.items():
        operands, attrs = reference.make_inputs(np.random.default_rng(7), dtype, q_lens, kv_lens, num_heads=heads[0], num_kv_heads=heads[1],
                                                head_size=128, padding_seqs=1, padding_tokens=2, sliding_window=sliding_window, soft_cap=soft_cap)  # fmt: skip
        _check(op, reference, operands, attrs, device)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("scale_factor", [16.0, -1.0])
def test_cuda_sharp_and_negative_scales_match_float64(cuda_op, dtype, scale_factor):
    """Scores of a wide range (a row's maximum moves by far more between tiles than the kernels let a
    base lag) and a negative scale (the largest scaled score is the smallest raw one)."""
    reference, op, device = cuda_op
    for case, (q_lens, kv_lens) in {**reference.CASES, **EXTRA}.items():
        operands, attrs = reference.make_inputs(np.random.default_rng(11), dtype, q_lens, kv_lens, num_heads=8, num_kv_heads=2,
                                                head_size=128, padding_seqs=1, padding_tokens=2)  # fmt: skip
        attrs["scale"] *= scale_factor
        _check(op, reference, operands, attrs, device)
