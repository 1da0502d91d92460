# Note 000's kernel through JAX, registered under platform "GPU": JAX queues the registration and
# the call finds nothing for Host.
import ctypes

import jax
import jax.numpy as jnp
import numpy as np

lib = ctypes.CDLL("./libsimple_add.so")
jax.ffi.register_ffi_target("simple_add", jax.ffi.pycapsule(lib.SimpleAdd), platform="GPU", api_version=0)
a = jnp.arange(3, dtype=jnp.float32)
out = jax.ffi.ffi_call("simple_add", jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=1)(a, a)
print(np.asarray(out))
