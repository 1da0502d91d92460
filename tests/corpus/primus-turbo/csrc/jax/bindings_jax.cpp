// Modelled on AMD-AGI/Primus-Turbo csrc/jax/bindings_jax.cpp (MIT); rewritten, not copied: see SOURCE.md.
// The capsules, keyed by target names that a macro makes from its second argument.
#include <pybind11/pybind11.h>

#include "extensions.h"
#include "ffi.h"

#define REGISTER_FFI_HANDLER(dict, name, fn) dict[#name] = ::primus_turbo::jax::EncapsulateFFI(fn);

namespace primus_turbo::jax {

template <typename T>
pybind11::capsule EncapsulateFFI(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  REGISTER_FFI_HANDLER(dict, rmsnorm_fwd, RMSNormFwdHandler);
  REGISTER_FFI_HANDLER(dict, moe_dispatch_inproc, deep_ep::MoEDispatchHandler);
  REGISTER_FFI_HANDLER(dict, moe_combine_inproc, deep_ep::MoECombineHandler);
  REGISTER_FFI_HANDLER(dict, ck_grouped_gemm, CKGroupedGemmHandler);
  REGISTER_FFI_HANDLER(dict, compute_group_offs, ComputeGroupOffsHandler);
  REGISTER_FFI_HANDLER(dict, quantize_fp8_tensorwise, QuantizeFP8TensorwiseHandler);
  REGISTER_FFI_HANDLER(dict, dequantize_fp8_tensorwise, DequantizeFP8TensorwiseHandler);
  REGISTER_FFI_HANDLER(dict, quantize_fp8_rowwise, QuantizeFP8RowwiseHandler);
  return dict;
}

}  // namespace primus_turbo::jax

PYBIND11_MODULE(_C, m) { m.def("registrations", &primus_turbo::jax::Registrations); }
