# Modelled on pytorch/xla torch_xla/experimental/triton.py (BSD-3-Clause); rewritten, not copied: see
# SOURCE.md. jaxlib's Triton target, registered for torch_xla under its own name.
import zlib

import torch_xla
from jax._src.lib import gpu_triton as lib_triton

torch_xla._XLAC._xla_register_custom_call_target("triton_kernel_call", lib_triton._cuda_triton.get_custom_call(), "CUDA")


def triton_call(*args, kernel, grid, **metaparams):
    compiled = kernel.run(*args, grid=grid, warmup=True, **metaparams)
    call = lib_triton.TritonKernelCall(compiled.kernel, grid[0], 1, 1, [])
    return zlib.compress(call.to_proto("triton_kernel", b""))
