# Modelled on jax-ml/jax examples/ffi/src/jax_ffi_example/rms_norm.py (Apache-2.0); rewritten, not
# copied: see SOURCE.md.
from functools import partial

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np

from jax_ffi_example import _rms_norm

for name, target in _rms_norm.registrations().items():
    jex.ffi.register_ffi_target(name, target)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def rms_norm(x, eps=1e-5):
    if x.dtype != jnp.float32:
        raise ValueError("Only the float32 dtype is implemented by rms_norm")
    out_type = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jex.ffi.ffi_call("rms_norm", out_type, vmap_method="broadcast_all")(x, eps=np.float32(eps))


def rms_norm_fwd(x, eps=1e-5):
    y, res = jex.ffi.ffi_call(
        "rms_norm_fwd",
        (jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)),
        vmap_method="broadcast_all",
    )(x, eps=np.float32(eps))
    return y, (res, x)
