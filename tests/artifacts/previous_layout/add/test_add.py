"""Tests of `add` against its reference (yours to extend): `xlacc build`, then `pytest`."""

import re

import numpy as np
import pytest

import add
from add import reference
from add.testing import TOLERANCES

jax = pytest.importorskip("jax", reason="the tests call the op through JAX: pip install jax")
check_grads = pytest.importorskip("jax.test_util").check_grads


@pytest.fixture(scope="module")
def built():
    if not add.LIBRARY.is_file():
        pytest.skip(f"{add.LIBRARY} is not built: run `xlacc build`")


@pytest.fixture(scope="module")
def custom_call(built):
    return add.jax.add


def as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


@pytest.mark.parametrize("dtype", add.DTYPES)
@pytest.mark.parametrize("size", [1, 1000, 4099])
def test_matches_reference(custom_call, size, dtype):
    operands, attrs = reference.example_inputs(size, np.random.default_rng(size), dtype)
    got = as_tuple(custom_call(*[jax.numpy.asarray(a) for a in operands], **attrs))
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in operands]
    want = as_tuple(reference.reference(*wide, **attrs))
    rtol, atol = TOLERANCES[dtype]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol)


def test_lowers_to_the_custom_call(built):
    custom_call = add.jax.add
    operands, attrs = reference.example_inputs(8, np.random.default_rng(0))
    traced = jax.jit(lambda *a: custom_call(*a, **attrs)).trace(*[jax.numpy.asarray(a) for a in operands])
    assert "add" in traced.lower(lowering_platforms=("cpu",)).as_text()


# -- under jax.jit over sharded inputs, jax.vmap and jax.grad (the top of add/jax.py says how) --

INPUTS = ['x', 'y']
# Each factor [sharding] lets the op be split along: the dim of each input, then of each output, it
# splits (None: that tensor is not split).
SPLITS = {'...': ((0, 0), (0,))}
# The inputs a vmap batch folds into (one launch); the test keeps the others unbatched.
BATCHED = ('x', 'y')
GRADS = ('x', 'y')  # [backward] grads; None: no [backward]
COLLECTIVES = re.compile(r"\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)(-start)?\(")


def devices():
    platform = "cpu"
    return [d for d in jax.devices() if d.platform == platform]


def even(array, dim, parts):
    """`array` cut along `dim` to a multiple of `parts`, so that it splits evenly."""
    if dim is None:
        return array
    return np.take(array, np.arange(array.shape[dim] - array.shape[dim] % parts), axis=dim)


def is_float(array):
    return jax.numpy.issubdtype(array.dtype, jax.numpy.floating)


def split_along(dim, rank):
    return jax.sharding.PartitionSpec(*[("d" if i == dim else None) for i in range(rank)])


@pytest.mark.parametrize("factor", list(SPLITS))
def test_sharded_call_runs_once_per_shard_without_collectives(custom_call, factor):
    if len(devices()) < 2:
        pytest.skip("one device: XLA_FLAGS=--xla_force_host_platform_device_count=2 tests sharding on the CPU")
    mesh = jax.sharding.Mesh(np.array(devices()[:2]), ("d",))
    input_dims, output_dims = SPLITS[factor]
    operands, attrs = reference.example_inputs(4099, np.random.default_rng(1), add.DTYPES[0])
    operands = [even(a, dim, 2) for a, dim in zip(operands, input_dims)]
    sharded = [jax.device_put(a, jax.sharding.NamedSharding(mesh, split_along(dim, a.ndim))) for a, dim in zip(operands, input_dims)]
    call = jax.jit(lambda *a: custom_call(*a, **attrs))
    compiled = call.lower(*sharded).compile().as_text()
    assert not COLLECTIVES.search(compiled), COLLECTIVES.search(compiled).group(0)
    got, want = as_tuple(call(*sharded)), as_tuple(custom_call(*operands, **attrs))
    for g, w, dim in zip(got, want, output_dims):
        assert g.sharding.is_equivalent_to(jax.sharding.NamedSharding(mesh, split_along(dim, g.ndim)), g.ndim), g.sharding
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_vmap_matches_each_example_in_one_launch_where_the_batch_folds(custom_call):
    operands, attrs = reference.example_inputs(1000, np.random.default_rng(2), add.DTYPES[0])
    batched = BATCHED or INPUTS[:1]  # where no batch folds, one of the first input runs one launch per example
    in_axes = [0 if name in batched else None for name in INPUTS]
    examples = [[a * (i + 1) if is_float(a) and axis == 0 else a for a, axis in zip(operands, in_axes)] for i in range(3)]
    stacked = [np.stack([e[k] for e in examples]) if axis == 0 else a for k, (a, axis) in enumerate(zip(operands, in_axes))]
    call = jax.jit(jax.vmap(lambda *a: custom_call(*a, **attrs), in_axes=in_axes))
    if BATCHED:
        compiled = call.lower(*stacked).compile().as_text()
        assert compiled.count('custom_call_target="add"') == 1 and not re.search(r"\bwhile\(", compiled)
    got = as_tuple(call(*stacked))
    for i, example in enumerate(examples):
        for g, w in zip(got, as_tuple(custom_call(*example, **attrs))):
            np.testing.assert_array_equal(np.asarray(g[i]), np.asarray(w))


def test_gradients_match_finite_differences_and_the_reference(custom_call):
    if "f32" not in add.DTYPES:
        pytest.skip("the gradient check runs in f32")
    operands, attrs = reference.example_inputs(300, np.random.default_rng(3), "f32")
    positions = [INPUTS.index(name) for name in GRADS]

    def with_inputs(function):
        def call(*grad_inputs):
            args = list(operands)
            for position, value in zip(positions, grad_inputs):
                args[position] = value
            return function(*args)

        return call

    primals = [jax.numpy.asarray(operands[p]) for p in positions]
    check_grads(with_inputs(lambda *a: custom_call(*a, **attrs)), primals, order=1, modes=("rev",), eps=1e-3)
    out, pullback = jax.vjp(with_inputs(lambda *a: custom_call(*a, **attrs)), *primals)
    _, reference_pullback = jax.vjp(with_inputs(lambda *a: reference.reference(*a, xp=jax.numpy, **attrs)), *primals)
    cotangent = jax.tree.map(lambda o: jax.numpy.asarray(np.random.default_rng(4).standard_normal(o.shape), o.dtype), out)
    for got, want in zip(pullback(cotangent), reference_pullback(cotangent)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
