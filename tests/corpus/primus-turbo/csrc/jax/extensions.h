// Modelled on AMD-AGI/Primus-Turbo csrc/jax/extensions.h (MIT); rewritten, not copied: see SOURCE.md.
#pragma once

#include <xla/ffi/api/ffi.h>

#include "ffi.h"
#include "primus_turbo/common.h"

namespace ffi = xla::ffi;

namespace primus_turbo::jax {

XLA_FFI_DECLARE_HANDLER_SYMBOL(RMSNormFwdHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(CKGroupedGemmHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(ComputeGroupOffsHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(QuantizeFP8TensorwiseHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(DequantizeFP8TensorwiseHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(QuantizeFP8RowwiseHandler);

namespace deep_ep {
XLA_FFI_DECLARE_HANDLER_SYMBOL(MoEDispatchHandler);
XLA_FFI_DECLARE_HANDLER_SYMBOL(MoECombineHandler);
}  // namespace deep_ep

}  // namespace primus_turbo::jax
