import ctypes
import struct
from functools import partial

import jax
from jax.extend.core import Primitive
from jax.interpreters import mlir

lib = ctypes.CDLL("./liblayer_norm.so")
jax.ffi.register_ffi_target("layer_norm_gpu", jax.ffi.pycapsule(lib.layer_norm_gpu), platform="CUDA", api_version=0)

layer_norm_p = Primitive("layer_norm")


def _layer_norm_lowering(ctx, x, *, eps):
    rows, cols = ctx.avals_in[0].shape
    # rows and cols as int32, eps as float32: 12 bytes
    opaque = struct.pack("<iif", rows, cols, eps)
    return mlir.custom_call(
        "layer_norm_gpu",
        result_types=[mlir.aval_to_ir_type(ctx.avals_out[0])],
        operands=[x],
        backend_config=opaque,
        api_version=2,
    ).results


mlir.register_lowering(layer_norm_p, _layer_norm_lowering, platform="cuda")
