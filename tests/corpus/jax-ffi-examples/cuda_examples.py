# Modelled on jax-ml/jax examples/ffi/src/jax_ffi_example/cuda_examples.py (Apache-2.0); rewritten,
# not copied: see SOURCE.md.
import ctypes
import os

import jax
import jax.numpy as jnp
import numpy as np

SHARED_LIBRARY = os.path.join(os.path.dirname(__file__), "lib_cuda_examples.so")
library = ctypes.cdll.LoadLibrary(SHARED_LIBRARY)

jax.ffi.register_ffi_target("foo-fwd", jax.ffi.pycapsule(library.FooFwd), platform="CUDA")


def foo_fwd(a, b):
    assert a.dtype == jnp.float32 and a.shape == b.shape
    n = np.prod(a.shape).astype(np.uint64)
    out_type = jax.ShapeDtypeStruct.like(a)
    c, b_plus_1 = jax.ffi.ffi_call("foo-fwd", (out_type, out_type))(a, b, n=n)
    return c, (a, b_plus_1)
