// Modelled on AMD-AGI/Primus-Turbo csrc/jax/grouped_gemm/ck_grouped_gemm.cpp (MIT); rewritten, not copied: see SOURCE.md.
#include "../extensions.h"
#include "primus_turbo/arch.h"
#include "primus_turbo/grouped_gemm.h"

namespace primus_turbo::jax {

// The compute units to use: the device's own count unless the caller asks for fewer.
inline uint32_t grouped_gemm_num_cu(cudaStream_t stream, int64_t requested) {
  int device = 0;
  PRIMUS_TURBO_CHECK_HIP(hipStreamGetDevice(stream, &device));
  const int32_t available = get_multi_processor_count(device);
  return requested <= 0 ? uint32_t(available) : uint32_t(std::min<int64_t>(requested, available));
}

ffi::Error CKGroupedGemmFFI(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer group_lens,
                            ffi::AnyBuffer group_offs, ffi::Result<ffi::AnyBuffer> c,
                            ffi::Result<ffi::AnyBuffer> workspace, bool transA, bool transB, int64_t num_cu) {
  if (a.element_type() != b.element_type()) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "a and b differ in dtype");
  }
  const int32_t groups = static_cast<int32_t>(b.dimensions()[0]);
  const int32_t m = transA ? a.dimensions()[1] : a.dimensions()[0];
  const int32_t n = transB ? b.dimensions()[1] : b.dimensions()[2];
  const int32_t k = transA ? a.dimensions()[0] : a.dimensions()[1];
  const uint32_t cus = grouped_gemm_num_cu(stream, num_cu);
  if (a.element_type() == ffi::F16) {
    ck_grouped_gemm<ck_tile::half_t>(workspace->untyped_data(), a, b, c, group_lens, group_offs, transA, transB, groups,
                                     m, n, k, stream, cus);
  } else if (a.element_type() == ffi::BF16) {
    ck_grouped_gemm<ck_tile::bf16_t>(workspace->untyped_data(), a, b, c, group_lens, group_offs, transA, transB, groups,
                                     m, n, k, stream, cus);
  } else {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "grouped GEMM takes float16 or bfloat16");
  }
  return ffi::Error::Success();
}

ffi::Error ComputeGroupOffsFFI(cudaStream_t stream, ffi::AnyBuffer group_lens, ffi::Result<ffi::AnyBuffer> group_offs) {
  if (group_lens.element_type() != ffi::S64) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "group lengths must be int64");
  }
  compute_group_offs<int64_t>(group_lens.typed_data<int64_t>(), group_offs->typed_data<int64_t>(),
                              group_lens.element_count(), stream);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(CKGroupedGemmHandler, CKGroupedGemmFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // a
                                  .Arg<ffi::AnyBuffer>()  // b
                                  .Arg<ffi::AnyBuffer>()  // group_lens
                                  .Arg<ffi::AnyBuffer>()  // group_offs
                                  .Ret<ffi::AnyBuffer>()  // c
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<bool>("transA")
                                  .Attr<bool>("transB")
                                  .Attr<int64_t>("num_cu"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(ComputeGroupOffsHandler, ComputeGroupOffsFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()   // group_lens
                                  .Ret<ffi::AnyBuffer>());  // group_offs

}  // namespace primus_turbo::jax
