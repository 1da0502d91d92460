# "GPU" is not a platform name JAX applies: the registration is queued and never used.
import ctypes

import jax

lib = ctypes.CDLL("./build/libop.so")
jax.ffi.register_ffi_target("my_add", jax.ffi.pycapsule(lib.my_add_ffi), platform="GPU")
