# A typed FFI handler registered for "CUDA" and called with api 4 and an attribute.
import ctypes

import jax
import numpy as np

lib = ctypes.CDLL("./build/libop.so")
jax.ffi.register_ffi_target("my_add", jax.ffi.pycapsule(lib.my_add_ffi), platform="CUDA")


def my_add(x, y):
    call = jax.ffi.ffi_call("my_add", jax.ShapeDtypeStruct(x.shape, x.dtype))
    return call(x, y)


def my_scale(x, factor):
    return jax.ffi.ffi_call("my_scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, factor=np.float32(factor))
