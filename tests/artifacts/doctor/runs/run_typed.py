# Note 000's kernel through JAX, registered as typed FFI (no api_version=0): XLA calls the legacy
# function for handler metadata and the process dies during registration.
import ctypes

import jax
import jax.numpy as jnp
import numpy as np

lib = ctypes.CDLL("./libsimple_add.so")
jax.ffi.register_ffi_target("simple_add", jax.ffi.pycapsule(lib.SimpleAdd), platform="cpu")
a = jnp.arange(3, dtype=jnp.float32)
out = jax.ffi.ffi_call("simple_add", jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=1)(a, a)
print(np.asarray(out))
