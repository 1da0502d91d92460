# From the user's note 004: the first XLA implementation returned zeros_like, which XLA folded away.
import torch
from torch.library import Library, impl

xla_gpu_lib = Library("xla_gpu", "DEF")
xla_gpu_lib.define("paged_attention(Tensor query, Tensor kv_cache, Tensor context_lens) -> Tensor")


@impl(xla_gpu_lib, "paged_attention", "XLA")
def paged_attention_xla(query, kv_cache, context_lens):
    return torch.zeros_like(query)
