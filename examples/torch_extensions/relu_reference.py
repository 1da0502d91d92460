"""What `relu` computes: Hugging Face kernels-community's relu: max(x, 0), row by row."""

import numpy as np

from .testing import random_array


def reference(input, *, xp=np):
    return xp.maximum(input, xp.zeros_like(input))


def example_inputs(size, rng, dtype=None):
    """Rows of 1024 (the kernel's block is one row)."""
    return [random_array(rng, (max(1, size // 1024), 1024), "f32")], {}


def bytes_moved(operands, outputs):
    return sum(a.nbytes for a in operands) + sum(a.nbytes for a in outputs)
