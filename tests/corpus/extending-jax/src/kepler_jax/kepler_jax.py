# Modelled on dfm/extending-jax src/kepler_jax/kepler_jax.py (MIT); rewritten, not copied: see SOURCE.md.
__all__ = ["kepler"]

from functools import partial

import numpy as np
from jax import core, dtypes
from jax.interpreters import mlir, xla
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call

from . import cpu_ops

for _name, _value in cpu_ops.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="cpu")

try:
    from . import gpu_ops
except ImportError:
    gpu_ops = None
else:
    for _name, _value in gpu_ops.registrations().items():
        xla_client.register_custom_call_target(_name, _value, platform="gpu")


def _kepler_lowering(ctx, mean_anom, ecc, *, platform="cpu"):
    aval, _ = ctx.avals_in
    dtype = mlir.ir.RankedTensorType(mean_anom.type)
    layout = tuple(range(len(dtype.shape) - 1, -1, -1))
    size = np.prod(dtype.shape).astype(np.int64)
    if np.dtype(aval.dtype) == np.float32:
        op_name = platform + "_kepler_f32"
    else:
        op_name = platform + "_kepler_f64"
    if platform == "cpu":
        return custom_call(
            op_name,
            result_types=[dtype, dtype],
            operands=[mlir.ir_constant(size), mean_anom, ecc],
            operand_layouts=[(), layout, layout],
            result_layouts=[layout, layout],
        ).results
    opaque = gpu_ops.build_kepler_descriptor(size)
    return custom_call(
        op_name,
        result_types=[dtype, dtype],
        operands=[mean_anom, ecc],
        operand_layouts=[layout, layout],
        result_layouts=[layout, layout],
        backend_config=opaque,
    ).results


_kepler_prim = core.Primitive("kepler")
_kepler_prim.multiple_results = True
_kepler_prim.def_impl(partial(xla.apply_primitive, _kepler_prim))
for platform in ["cpu", "gpu"]:
    mlir.register_lowering(_kepler_prim, partial(_kepler_lowering, platform=platform), platform=platform)
