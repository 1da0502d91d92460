// Modelled on AMD-AGI/Primus-Turbo csrc/jax/deep_ep/handler.cpp and deep_ep.cpp (MIT); rewritten, not copied: see SOURCE.md.
// Expert-parallel dispatch and combine (a port of DeepEP). The dispatch learns how many tokens it will
// receive by spinning on a host-mapped counter the GPU writes, and gives up after a timeout.
#include <chrono>
#include <optional>

#include "jax/deep_ep/deep_ep.h"
#include "jax/extensions.h"
#include "primus_turbo/common.h"

namespace primus_turbo::jax::deep_ep {

int Buffer::WaitForReceiveCount() {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const int received = static_cast<int>(*moe_recv_counter_);
    if (received >= 0) return received;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(cpu_timeout_secs_)) {
      throw std::runtime_error("dispatch: timed out waiting for the receive count");
    }
  }
}

void Buffer::IntranodeDispatch(hipStream_t stream, ffi::AnyBuffer x, ffi::Buffer<ffi::S32> topk_idx,
                               ffi::Result<ffi::AnyBuffer> recv_x) {
  notify_dispatch(stream, topk_idx.typed_data(), moe_recv_counter_mapped_);
  const int received = WaitForReceiveCount();
  PRIMUS_TURBO_CHECK(received <= recv_x->dimensions()[0], "more tokens than the receive buffer holds");
  launch_dispatch(stream, x.untyped_data(), recv_x->untyped_data(), received);
}

ffi::Error MoEDispatchFFI(hipStream_t stream, ffi::AnyBuffer x, ffi::Buffer<ffi::S32> topk_idx, int64_t num_experts,
                          int64_t ep_size, ffi::Result<ffi::AnyBuffer> recv_x) {
  int rank = -1;
  int ranks = -1;
  PRIMUS_TURBO_CHECK_HIP(hipGetDevice(&rank));
  PRIMUS_TURBO_CHECK_HIP(hipGetDeviceCount(&ranks));
  if (ranks != ep_size) return ffi::Error(ffi::ErrorCode::kInvalidArgument, "world size differs from ep_size");
  get_buffer(rank, ranks)->IntranodeDispatch(stream, x, topk_idx, recv_x);
  return ffi::Error::Success();
}

ffi::Error MoECombineFFI(hipStream_t stream, ffi::AnyBuffer x, ffi::Buffer<ffi::S32> src_idx, int64_t ep_size,
                         ffi::Result<ffi::AnyBuffer> combined_x) {
  int rank = -1;
  int ranks = -1;
  PRIMUS_TURBO_CHECK_HIP(hipGetDevice(&rank));
  PRIMUS_TURBO_CHECK_HIP(hipGetDeviceCount(&ranks));
  if (ranks != ep_size) return ffi::Error(ffi::ErrorCode::kInvalidArgument, "world size differs from ep_size");
  get_buffer(rank, ranks)->IntranodeCombine(stream, x, src_idx, combined_x);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(MoEDispatchHandler, MoEDispatchFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<hipStream_t>>()
                                  .Arg<ffi::AnyBuffer>()         // x
                                  .Arg<ffi::Buffer<ffi::S32>>()  // topk_idx
                                  .Attr<int64_t>("num_experts")
                                  .Attr<int64_t>("ep_size")
                                  .Ret<ffi::AnyBuffer>());       // recv_x

XLA_FFI_DEFINE_HANDLER_SYMBOL(MoECombineHandler, MoECombineFFI,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<hipStream_t>>()
                                  .Arg<ffi::AnyBuffer>()         // x
                                  .Arg<ffi::Buffer<ffi::S32>>()  // src_idx
                                  .Attr<int64_t>("ep_size")
                                  .Ret<ffi::AnyBuffer>());       // combined_x

}  // namespace primus_turbo::jax::deep_ep
