# register_ffi_target's default api_version=1 means typed FFI: XLA reads handler metadata from a legacy function and crashes.
import ctypes

import jax
import jax.numpy as jnp

lib = ctypes.CDLL("./libadd.so")
jax.ffi.register_ffi_target("add_f32x4", jax.ffi.pycapsule(lib.add_f32x4), platform="cpu")


def add(a, b):
    return jax.ffi.ffi_call("add_f32x4", jax.ShapeDtypeStruct((4,), jnp.float32), custom_call_api_version=2)(a, b)
