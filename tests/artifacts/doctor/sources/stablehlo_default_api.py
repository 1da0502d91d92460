# stablehlo_custom_call's api_version defaults to 0, which XLA rejects.
import torch
from torch_xla.experimental.stablehlo_custom_call import stablehlo_custom_call


def simple_add(a, b):
    return stablehlo_custom_call([a, b], "XlaGpuSimpleAdd", [list(a.shape)], [torch.float32])
