# Modelled on nshepperd/flash_attn_jax src/flash_attn_jax/flash_hlo.py (BSD-3-Clause); rewritten, not
# copied: see SOURCE.md.
import jax
import numpy as np

import flash_attn_jax_lib.flash_api as flash_api

for _name, _value in flash_api.get_ffi_registrations().items():
    jax.ffi.register_ffi_target(_name, _value, platform="CUDA")


def _flash_mha_fwd_hlo(q, k, v, softmax_scale, is_causal):
    out_types = (jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct(q.shape[:-1], np.float32))
    o, lse = jax.ffi.ffi_call("flash_mha_fwd", out_types)(
        q, k, v, softmax_scale=np.float64(softmax_scale), is_causal=bool(is_causal)
    )
    return o, lse
