import ctypes

import jax

_lib = ctypes.CDLL("./libbinary_ops.so")
for _name in ("my_add", "my_mul", "my_max"):
    jax.ffi.register_ffi_target(_name, jax.ffi.pycapsule(getattr(_lib, _name)), platform="CUDA")


def _call(name, a, b, api_version=4):
    return jax.ffi.ffi_call(name, jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=api_version)(a, b)


def add(a, b):
    return _call("my_add", a, b)


def mul(a, b):
    return jax.ffi.ffi_call("my_mul", jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=4)(a, b)
