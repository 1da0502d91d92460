# Attributes are typed-FFI only; this call uses the legacy api_version 2.
import jax
import numpy as np

RESULT = jax.ShapeDtypeStruct((8,), np.float32)


def scale(x, factor):
    call = jax.ffi.ffi_call("my_scale", RESULT, custom_call_api_version=2)
    return call(x, factor=np.float32(factor))
