# Modelled on flatironinstitute/jax-finufft src/jax_finufft/lowering.py (Apache-2.0); rewritten, not
# copied: see SOURCE.md.
import jax
import numpy as np

from . import jax_finufft_cpu

try:
    from . import jax_finufft_gpu

    for _name, _value in jax_finufft_gpu.registrations().items():
        jax.ffi.register_ffi_target(_name, _value, platform="CUDA")
except ImportError:
    jax_finufft_gpu = None

for _name, _value in jax_finufft_cpu.registrations().items():
    jax.ffi.register_ffi_target(_name, _value, platform="cpu")


def lowering(ctx, source, points, *, eps, iflag):
    name = "nufft1d1f" if ctx.avals_in[0].dtype == np.complex64 else "nufft1d1"
    return jax.ffi.ffi_lowering(name)(ctx, source, points, eps=np.float64(eps), iflag=np.int64(iflag))
