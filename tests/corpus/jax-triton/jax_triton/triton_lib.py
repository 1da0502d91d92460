# Modelled on jax-ml/jax-triton jax_triton/triton_lib.py (Apache-2.0); rewritten, not copied: see
# SOURCE.md. The target is jaxlib's own (registered by jaxlib's GPU plugin), so nothing here
# registers it.
from typing import Final

import jax
from jax._src.lib import gpu_triton as triton_kernel_call_lib

CUSTOM_CALL_TARGET_NAME: Final[str] = "triton_kernel_call"


def triton_kernel_call_lowering(ctx, *array_args, kernel_call, out_shapes):
    call_proto = triton_kernel_call_lib.TritonKernelCall(kernel_call).to_proto("kernel", b"")
    return jax.ffi.ffi_call(
        CUSTOM_CALL_TARGET_NAME,
        out_shapes,
        custom_call_api_version=2,
        legacy_backend_config=call_proto,
    )(*array_args)
