# api_version 4 wants an MLIR dictionary backend_config; "n=3" is not one.
import torch
import torch_xla


def simple_add(a, b):
    return torch_xla._XLAC._xla_custom_call([a, b], "my_add", [list(a.shape)], [a.dtype], False, "n=3", 4, {})[0]
