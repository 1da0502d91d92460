import ctypes

import jax

lib = ctypes.CDLL("./librms.so")
jax.ffi.register_ffi_target("rms_norm_fwd", jax.ffi.pycapsule(lib.RmsNormFwd), platform="CUDA")


def rms_norm(x, eps=1e-6):
    return jax.ffi.ffi_call("rms_norm_fw", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=eps)
