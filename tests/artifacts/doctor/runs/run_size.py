# Note 000's kernel through JAX, registered and called correctly: 1000 elements in, and the kernel
# adds only the first 3.
import ctypes
import sys

import jax
import jax.numpy as jnp
import numpy as np

lib = ctypes.CDLL("./libsimple_add.so")
jax.ffi.register_ffi_target("simple_add", jax.ffi.pycapsule(lib.SimpleAdd), platform="cpu", api_version=0)
a = jnp.arange(1000, dtype=jnp.float32)
out = np.asarray(jax.ffi.ffi_call("simple_add", jax.ShapeDtypeStruct(a.shape, a.dtype), custom_call_api_version=1)(a, a))
wrong = int(np.sum(out != 2 * np.asarray(a)))
print(f"{wrong} of {a.size} results wrong")
sys.exit(1 if wrong else 0)
