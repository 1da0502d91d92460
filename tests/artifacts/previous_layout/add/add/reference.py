"""What `add` computes (yours; from xlacc template "add"): the truth its custom call is checked against.

`reference(..., xp=numpy)` is the truth run-smoke compares against; with `xp=jax.numpy` it is
XLA's own implementation, the baseline `run-smoke --bench` times the custom call against;
`torch_reference` is the op in plain torch ops, the baseline of the torchax bench.
"""

import numpy as np

from .testing import DEFAULT_DTYPE, random_array


def reference(x, y, *, xp=np):
    return x + y


def torch_reference(x, y):
    """The same op in plain torch ops: what `run-smoke --bench` times under torchax and in torch eager."""
    return x + y


def example_inputs(size, rng, dtype=None):
    """Operands and attributes for a problem of `size` elements."""
    dtype = dtype or DEFAULT_DTYPE
    return [random_array(rng, (size,), dtype), random_array(rng, (size,), dtype)], {}


def bytes_moved(operands, outputs):
    """Bytes a perfect kernel reads and writes: both operands once, the result once."""
    return sum(a.nbytes for a in operands) + sum(o.nbytes for o in outputs)
