"""The paged-kv-write template: the cache written in place, on the CPU through JAX (ffi and legacy),
and the decode step of examples/decode_step.py with the paged-attention template beside it.

The CUDA kernel is compiled by tests/test_templates.py (every template) and run on the GPU by
benchmarks/bench_decode_step.py (figures in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest
from locations import REPO_DIR
from needs import GXX, needs_gxx

from xlacc import spec as specmod
from xlacc.commands.build.plan import XLACC_INCLUDE
from xlacc.commands.new.project import NewRequest, create, spec_for

jax = pytest.importorskip("jax", reason="the template's tests run the kernel through jax")
REPO = REPO_DIR
NAMES = {"ffi": "kv_write_ffi", "legacy": "kv_write_legacy"}


def test_template_signature_writes_both_caches_in_place():
    spec, meta = spec_for(NewRequest(name="kv_write", template="paged-kv-write"))
    assert [t.name for t in spec.inputs] == ["key", "value", "key_cache", "value_cache", "slot_mapping"]
    assert [(t.name, t.alias) for t in spec.outputs] == [("key_cache_out", "key_cache"), ("value_cache_out", "value_cache")]
    assert spec.aliases == {2: 0, 3: 1} and spec.op_dtypes == ("bf16", "f16", "f32")
    assert meta["platforms"] == ["cuda", "cpu"]


def _compile(spec: specmod.Spec) -> subprocess.Popen:
    include = [f"-I{jax.ffi.include_dir()}", f"-I{XLACC_INCLUDE}", f"-I{spec.root}"]
    spec.library.parent.mkdir(parents=True, exist_ok=True)
    command = [GXX, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", *include, "-o", str(spec.library), str(spec.root / spec.entry_file)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    """The cpu project with each api, compiled with g++, imported side by side: api -> (reference, op)."""
    if GXX is None:
        pytest.skip("g++ is not installed")
    root = tmp_path_factory.mktemp("paged_kv_write")
    specs = {}
    for api, name in NAMES.items():
        create(NewRequest(name=name, template="paged-kv-write", platform="cpu", api=api, frameworks=["jax"], directory=root / name))
        specs[api] = specmod.load(root / name)
    jobs = {api: _compile(spec) for api, spec in specs.items()}
    for api, job in jobs.items():
        output, _ = job.communicate()
        assert job.returncode == 0, f"{api} failed to compile:\n{output[-3000:]}"
    loaded = {}
    for api, spec in specs.items():
        sys.path.insert(0, str(spec.root))
        loaded[api] = (importlib.import_module(f"{spec.name}.reference"), getattr(importlib.import_module(f"{spec.name}.jax"), spec.name))
    return loaded


def _cpu():
    return jax.default_device(jax.devices("cpu")[0])


def _widened(operands):
    return [a.astype(np.float64) if a.dtype.kind == "f" else a for a in operands]


@needs_gxx
@pytest.mark.parametrize("api", list(NAMES))
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("num_kv_heads,head_size,block_size", [(1, 64, 16), (4, 128, 32), (2, 80, 16)])
def test_new_rows_land_in_their_slots_and_padding_writes_nothing(ops, api, dtype, num_kv_heads, head_size, block_size):
    reference, op = ops[api]
    rng = np.random.default_rng(num_kv_heads + head_size)
    operands, _ = reference.make_inputs(rng, dtype, 9, 3, num_kv_heads=num_kv_heads, head_size=head_size, block_size=block_size, padding=2)
    operands[4][3] = 3 * block_size  # one past the cache: skipped as well
    with _cpu():
        got = [np.asarray(a) for a in op(*[jax.numpy.asarray(a) for a in operands])]
    want = reference.reference(*_widened(operands))
    for out, expected in zip(got, want):
        np.testing.assert_array_equal(out.astype(np.float64), expected)
    written = operands[4][(operands[4] >= 0) & (operands[4] < 3 * block_size)]
    assert len(written) == 6
    untouched = np.setdiff1d(np.arange(3 * block_size), written)
    rows = got[0].reshape(-1, num_kv_heads, head_size)
    np.testing.assert_array_equal(rows[untouched], operands[2].reshape(-1, num_kv_heads, head_size)[untouched])


@needs_gxx
@pytest.mark.parametrize("api", list(NAMES))
def test_donated_caches_are_written_in_their_own_buffers(ops, api):
    reference, op = ops[api]
    operands, _ = reference.make_inputs(np.random.default_rng(0), "f32", 5, 4)
    want = reference.reference(*_widened(operands))
    with _cpu():
        args = [jax.numpy.asarray(a) for a in operands]
        write = jax.jit(op, donate_argnums=(2, 3))
        compiled = write.lower(*args).compile().as_text()
        pointers = [a.unsafe_buffer_pointer() for a in args[2:4]]
        got = write(*args)
        assert [o.unsafe_buffer_pointer() for o in got] == pointers
        assert args[2].is_deleted() and args[3].is_deleted()
    assert "output_to_operand_aliasing={{0}: (2, {}), {1}: (3, {})}" in compiled and " copy(" not in compiled
    np.testing.assert_array_equal(np.asarray(got[1]).astype(np.float64), want[1])


@needs_gxx
def test_without_donation_the_callers_cache_is_left_as_it_was(ops):
    reference, op = ops["ffi"]
    operands, _ = reference.make_inputs(np.random.default_rng(1), "f32", 4, 2)
    with _cpu():
        cache = jax.numpy.asarray(operands[2])
        op(*[jax.numpy.asarray(a) for a in operands[:2]], cache, jax.numpy.asarray(operands[3]), jax.numpy.asarray(operands[4]))
        np.testing.assert_array_equal(np.asarray(cache), operands[2])


@needs_gxx
@pytest.mark.parametrize(
    "change, message",
    [
        (lambda ops: ops.__setitem__(1, ops[1][:, :, :8]), "value must have key's shape"),
        (lambda ops: ops.__setitem__(4, ops[4][:2]), "slot_mapping must be [num_tokens=3]"),
        (lambda ops: [ops.__setitem__(i, ops[i][..., :8]) for i in (2, 3)], "key_cache must be [num_blocks, block_size, num_kv_heads=2, head_size=64]"),
    ],
    ids=["value", "slots", "cache"],
)
def test_mismatched_shapes_fail_with_a_message(ops, change, message):
    reference, op = ops["ffi"]
    operands, _ = reference.make_inputs(np.random.default_rng(2), "f32", 3, 2)
    change(operands)
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")), _cpu():
        jax.block_until_ready(op(*[jax.numpy.asarray(a) for a in operands]))


# -- the decode step: both templates' packages side by side -------------------------------------


@needs_gxx
@pytest.mark.slow
def test_the_decode_step_example_matches_jax_numpy_and_copies_no_cache(tmp_path):
    sys.path.insert(0, str(REPO / "examples"))
    try:
        example = importlib.import_module("decode_step")
    finally:
        sys.path.pop(0)
    example.build_projects(tmp_path, "cpu")
    model = example.Model()
    differences = example.run_steps(tmp_path, 3, model, "cpu")
    assert max(differences) < 1e-5, differences
    write, attend, _, _ = example.load_ops(tmp_path)
    batch = example.Batch(model, np.random.default_rng(0), np.float32)
    queries, keys, values = batch.new_tokens(np.random.default_rng(1))
    with _cpu():
        caches = tuple(tuple(jax.numpy.asarray(c) for c in layer) for layer in batch.caches)
        step = example.make_step(write, attend, scale=0.125)
        compiled = step.lower(queries, keys, values, caches, batch.tables, batch.lens + 1, batch.slots()).compile().as_text()
    cache_dims = ",".join(map(str, batch.caches[0][0].shape))
    assert compiled.count("output_to_operand_aliasing") == model.layers
    assert not [line for line in compiled.splitlines() if " copy(" in line and f"[{cache_dims}]" in line]


def test_the_decode_step_example_writes_its_projects_where_git_ignores_them():
    """It left decode_step_projects/ in the checkout (or wherever it was run)."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        example = importlib.import_module("decode_step")
    finally:
        sys.path.pop(0)
    for platform in ("cpu", "cuda"):
        folder = example.default_dir(platform)
        assert folder.is_absolute() and REPO in folder.parents
        ignored = subprocess.run(["git", "check-ignore", "-q", str(folder / "paged_attend" / "xlacc.toml")], cwd=REPO, timeout=30)
        assert ignored.returncode == 0, f"{folder} is not ignored by git"
