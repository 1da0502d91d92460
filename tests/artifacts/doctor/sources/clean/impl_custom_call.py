# The XLA implementation emits the custom call; the CUDA one fills a buffer it allocates.
import torch
import torch_xla
from torch.library import Library, impl

lib = Library("xla_gpu", "DEF")
lib.define("simple_add(Tensor a, Tensor b) -> Tensor")


@impl(lib, "simple_add", "XLA")
def simple_add_xla(a, b):
    return torch_xla._XLAC._xla_custom_call([a, b], "XlaGpuSimpleAdd", [list(a.shape)], [a.dtype], False, str(a.numel()), 2, {})[0]


@impl(lib, "simple_add", "CUDA")
def simple_add_cuda(a, b):
    out = torch.empty_like(a)
    torch.add(a, b, out=out)
    return out
