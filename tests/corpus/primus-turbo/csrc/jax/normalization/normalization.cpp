// Modelled on AMD-AGI/Primus-Turbo csrc/jax/normalization/normalization.cpp (MIT); rewritten, not copied: see SOURCE.md.
#include "../extensions.h"

namespace primus_turbo::jax {

ffi::Error RMSNormFwdFFI(cudaStream_t stream, ffi::AnyBuffer input, ffi::AnyBuffer gamma,
                         ffi::Result<ffi::AnyBuffer> output, double eps) {
  const int64_t inner = static_cast<int64_t>(gamma.element_count());
  const int64_t outer = static_cast<int64_t>(input.element_count() / inner);
  rmsnorm_fwd_impl<float>(input.typed_data<float>(), gamma.typed_data<float>(), output->typed_data<float>(), inner,
                          outer, static_cast<float>(eps), stream);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RMSNormFwdHandler, RMSNormFwdFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // input
                                  .Arg<ffi::AnyBuffer>()  // gamma
                                  .Ret<ffi::AnyBuffer>()  // output
                                  .Attr<double>("eps"));

}  // namespace primus_turbo::jax
