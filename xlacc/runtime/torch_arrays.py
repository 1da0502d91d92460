"""NumPy arrays to torch tensors and back, bf16 included (NumPy's bf16 comes from ml_dtypes).

Imported only in child processes that have torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def to_torch(array: Any):
    """A NumPy array (bf16 from ml_dtypes included) as a CPU torch tensor of the same dtype."""
    import torch

    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(array.astype(np.float32))).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def from_torch(tensor: Any) -> np.ndarray:
    """A CPU copy of a torch tensor as a NumPy array of the same dtype."""
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes

        return tensor.float().numpy().astype(ml_dtypes.bfloat16)
    return tensor.numpy()
