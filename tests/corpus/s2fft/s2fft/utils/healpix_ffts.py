# Modelled on astro-informatics/s2fft s2fft/utils/healpix_ffts.py (MIT); rewritten, not copied: see SOURCE.md.
# The CUDA HEALPix FFT as a JAX primitive: the legacy registration through jax.lib.xla_client and a
# lowering through jaxlib.hlo_helpers.custom_call that leaves api_version at its default.
from functools import partial

import jaxlib.mlir.ir as ir
import numpy as np
from jax import jit
from jax.lib import xla_client
from jaxlib.hlo_helpers import custom_call
from s2fft_lib import _s2fft

from s2fft.utils.jax_primitive import register_primitive


def _healpix_fft_cuda_abstract(f, *, L, nside, reality, fft_type, norm):
    return f.update(shape=(4 * nside - 1, 2 * L), dtype=f.dtype)


def _healpix_fft_cuda_lowering(ctx, f, *, L, nside, reality, fft_type, norm):
    (aval_out,) = ctx.avals_out
    if aval_out.dtype == np.complex64:
        element, is_double = ir.ComplexType.get(ir.F32Type.get()), False
    elif aval_out.dtype == np.complex128:
        element, is_double = ir.ComplexType.get(ir.F64Type.get()), True
    else:
        raise ValueError(f"unsupported output dtype {aval_out.dtype}")
    out_type = ir.RankedTensorType.get(aval_out.shape, element)
    forward = fft_type == "forward"
    normalize = (forward and norm == "forward") or (not forward and norm == "backward")
    descriptor = _s2fft.build_healpix_fft_descriptor(nside, L, reality, forward, normalize, is_double)
    in_rank = len(ir.RankedTensorType(f.type).shape)
    return custom_call(
        "healpix_fft_cuda",
        result_types=[out_type],
        operands=[f],
        operand_layouts=[tuple(range(in_rank - 1, -1, -1))],
        result_layouts=[tuple(range(len(aval_out.shape) - 1, -1, -1))],
        has_side_effect=True,
        backend_config=descriptor,
    ).results


for _name, _fn in _s2fft.registration().items():
    xla_client.register_custom_call_target(_name, _fn, platform="gpu")

_healpix_fft_cuda_primitive = register_primitive(
    "healpix_fft_cuda",
    multiple_results=False,
    abstract_evaluation=_healpix_fft_cuda_abstract,
    lowering_per_platform={None: _healpix_fft_cuda_lowering},
)


@partial(jit, static_argnums=(1, 2, 3, 4))
def healpix_fft_cuda(f, L, nside, reality, norm="backward"):
    return _healpix_fft_cuda_primitive.bind(f, L=L, nside=nside, reality=reality, fft_type="forward", norm=norm)
