# Modelled on DifferentiableUniverseInitiative/jaxDecomp src/jaxdecomp/_src/cudecomp/fft.py (MIT); rewritten, not copied: see SOURCE.md.
# The lowering of the distributed FFT: the target is picked by precision, a zeroed workspace of the
# size cuDecomp asks for is passed after the input, and the grid comes as attributes.
import jax
import numpy as np
from jax._src.interpreters import mlir
from jax.core import ShapedArray

import jaxdecomp
from jaxdecomp._src import _jaxdecomp


def pfft_lowering(ctx, x, *, fft_type, adjoint, pdims, global_shape):
    (aval_out,) = ctx.avals_out
    is_double = np.finfo(aval_out.dtype).dtype == np.float64
    ffi_name = "pfft_C128" if is_double else "pfft_C64"
    forward = fft_type in ("fft", "rfft")
    workspace_size = _jaxdecomp.get_fft_workspace_size(
        gdims=global_shape,
        pdims=pdims,
        transpose_comm_backend=int(jaxdecomp.config.transpose_comm_backend.value),
        halo_comm_backend=int(jaxdecomp.config.halo_comm_backend.value),
        double_precision=is_double,
    )
    workspace = mlir.full_like_aval(ctx, 0, ShapedArray(shape=[workspace_size], dtype=np.byte))
    layout = tuple(range(len(aval_out.shape) - 1, -1, -1))
    rule = jax.ffi.ffi_lowering(
        ffi_name,
        operand_layouts=(layout, (0,)),
        result_layouts=(layout,),
        skip_ffi_layout_processing=True,
    )
    return rule(
        ctx,
        x,
        workspace,
        gdims=np.array(global_shape, dtype=np.int64),
        pdims=np.array(pdims, dtype=np.int64),
        transpose_comm_backend=np.int64(jaxdecomp.config.transpose_comm_backend.value),
        halo_comm_backend=np.int64(jaxdecomp.config.halo_comm_backend.value),
        forward=forward,
        adjoint=adjoint,
        contiguous=jaxdecomp.config.transpose_axis_contiguous,
        decomposition=np.int64(0),
    )
