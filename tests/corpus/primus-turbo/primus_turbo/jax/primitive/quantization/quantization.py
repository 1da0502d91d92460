# Modelled on AMD-AGI/Primus-Turbo primus_turbo/jax/primitive/quantization/quantization.py (MIT); rewritten, not copied: see SOURCE.md.
import jax
from jax.extend.core import Primitive

from primus_turbo.jax.primitive import LOWERING_TABLE

quantize_fp8_tensorwise_p = Primitive("quantize_fp8_tensorwise")
quantize_fp8_tensorwise_p.multiple_results = True
dequantize_fp8_tensorwise_p = Primitive("dequantize_fp8_tensorwise")
quantize_fp8_rowwise_p = Primitive("quantize_fp8_rowwise")
quantize_fp8_rowwise_p.multiple_results = True


def _quantize_fp8_tensorwise_lowering(ctx, x, scale, *, out_dtype):
    return jax.ffi.ffi_lowering("quantize_fp8_tensorwise")(ctx, x, scale)


def _dequantize_fp8_tensorwise_lowering(ctx, x, scale_inv, *, out_dtype):
    return jax.ffi.ffi_lowering("dequantize_fp8_tensorwise")(ctx, x, scale_inv)


def _quantize_fp8_rowwise_lowering(ctx, x, scale, *, out_dtype, axis):
    return jax.ffi.ffi_lowering("quantize_fp8_rowwise")(ctx, x, scale, axis=axis)


LOWERING_TABLE[quantize_fp8_tensorwise_p] = _quantize_fp8_tensorwise_lowering
LOWERING_TABLE[dequantize_fp8_tensorwise_p] = _dequantize_fp8_tensorwise_lowering
LOWERING_TABLE[quantize_fp8_rowwise_p] = _quantize_fp8_rowwise_lowering
