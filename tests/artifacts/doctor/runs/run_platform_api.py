# Note 000's kernel through JAX, registered under platform "GPU" and called with api_version 2 (it takes
# no status): the lookup for Host fails before the api_version could matter. The library is an argument.
import ctypes
import sys

import jax
import jax.numpy as jnp
import numpy as np

lib = ctypes.CDLL(sys.argv[1])
jax.ffi.register_ffi_target("simple_add", jax.ffi.pycapsule(lib.SimpleAdd), platform="GPU", api_version=0)
a = jnp.arange(3, dtype=jnp.float32)
out = jax.ffi.ffi_call("simple_add", jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=2)(a, a)
print(np.asarray(out))
