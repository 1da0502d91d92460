"""Tests of `demo` against its reference (yours to extend): `xlacc build`, then `pytest`."""

import numpy as np
import pytest

import demo
from demo import reference
from demo.testing import TOLERANCES

jax = pytest.importorskip("jax", reason="the tests call the op through JAX: pip install jax")


@pytest.fixture(scope="module")
def op():
    if not demo.LIBRARY.is_file():
        pytest.skip(f"{demo.LIBRARY} is not built: run `xlacc build`")
    return demo.jax.demo


def as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


@pytest.mark.parametrize("dtype", demo.DTYPES)
@pytest.mark.parametrize("size", [1, 1000, 4099])
def test_matches_reference(op, size, dtype):
    operands, attrs = reference.example_inputs(size, np.random.default_rng(size), dtype)
    got = as_tuple(op(*[jax.numpy.asarray(a) for a in operands], **attrs))
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in operands]
    want = as_tuple(reference.reference(*wide, **attrs))
    rtol, atol = TOLERANCES[dtype]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol)


def test_lowers_to_the_custom_call():
    op = demo.jax.demo
    operands, attrs = reference.example_inputs(8, np.random.default_rng(0))
    traced = jax.jit(lambda *a: op(*a, **attrs)).trace(*[jax.numpy.asarray(a) for a in operands])
    assert "demo" in traced.lower(lowering_platforms=("cpu",)).as_text()
