"""NumPy arrays to torch tensors and back, bf16 included (NumPy's bf16 comes from ml_dtypes).

Imported only in child processes that have torch.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

READ_ONLY_WARNING = "The given NumPy array is not writable"


def to_torch(array: Any):
    """A NumPy array (bf16 from ml_dtypes included) as a CPU torch tensor of the same dtype."""
    import torch

    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(array.astype(np.float32))).to(torch.bfloat16)
    array = np.ascontiguousarray(array)
    return torch.from_numpy(array if array.flags.writeable else array.copy())  # a jax array's view is read-only


@contextmanager
def read_only_views_allowed() -> Iterator[None]:
    """torchax hands jax arrays to torch as read-only NumPy views, and torch warns each time: an
    error under PYTHONWARNINGS=error, from code that is not the user's. Nothing writes to them."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=READ_ONLY_WARNING)
        yield


def from_torch(tensor: Any) -> np.ndarray:
    """A CPU copy of a torch tensor as a NumPy array of the same dtype."""
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes

        return tensor.float().numpy().astype(ml_dtypes.bfloat16)
    return tensor.numpy()
