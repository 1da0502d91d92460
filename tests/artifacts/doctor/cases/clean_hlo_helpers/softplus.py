from functools import partial

import jax
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import mlir
from jaxlib.hlo_helpers import custom_call

from . import gpu_ops

for _name, _value in gpu_ops.registrations().items():
    jax.ffi.register_ffi_target(_name, _value, platform="gpu", api_version=0)

softplus_p = Primitive("softplus")


def _softplus_lowering(ctx, x, *, platform="gpu"):
    aval = ctx.avals_in[0]
    name = "gpu_softplus_f32" if aval.dtype == np.float32 else "gpu_softplus_f64"
    opaque = gpu_ops.build_descriptor(int(np.prod(aval.shape)))
    return custom_call(
        name,
        result_types=[mlir.aval_to_ir_type(aval)],
        operands=[x],
        backend_config=opaque,
        api_version=2,  # status-returning; the helper's default is 2 as well, said here on purpose
    ).results


mlir.register_lowering(softplus_p, partial(_softplus_lowering, platform="gpu"), platform="cuda")
