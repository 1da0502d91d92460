// Modelled on nshepperd/flash_attn_jax csrc/flash_attn/flash_api.cpp and mha_fwd.cpp (BSD-3-Clause);
// rewritten, not copied: see SOURCE.md. Typed handlers (XLA_FFI_DEFINE_HANDLER, no symbol) wrapped
// into capsules by a pybind11 module; scratch memory from XLA's allocator.
#include <cuda_runtime.h>
#include <pybind11/pybind11.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#define FFI_CUDA_CHECK(expr)                                                         \
  do {                                                                               \
    cudaError_t err_ = (expr);                                                       \
    if (err_ != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err_));  \
  } while (0)

void run_mha_fwd(cudaStream_t stream, const void* q, const void* k, const void* v, void* out, float* lse,
                 int64_t rows, double scale, bool causal);

ffi::Error mha_fwd_impl(cudaStream_t stream, ffi::ScratchAllocator scratch, int32_t device, ffi::AnyBuffer q,
                        ffi::AnyBuffer k, ffi::AnyBuffer v, ffi::Result<ffi::AnyBuffer> out,
                        ffi::Result<ffi::Buffer<ffi::F32>> lse, double softmax_scale, bool is_causal) {
  auto rng_state = scratch.Allocate(2 * sizeof(uint64_t), 8);
  if (!rng_state.has_value()) return ffi::Error::Internal("no scratch memory");
  const int64_t rows = q.dimensions()[0];
  if (rows == 0) {
    FFI_CUDA_CHECK(cudaMemsetAsync(out->untyped_data(), 0, out->size_bytes(), stream));
    return ffi::Error::Success();
  }
  run_mha_fwd(stream, q.untyped_data(), k.untyped_data(), v.untyped_data(), out->untyped_data(),
              lse->typed_data(), rows, softmax_scale, is_causal);
  FFI_CUDA_CHECK(cudaGetLastError());
  return ffi::Error::Success();
}

namespace {

template <typename T>
pybind11::capsule EncapsulateFfiCall(T* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, T, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return pybind11::capsule(reinterpret_cast<void*>(fn));
}

XLA_FFI_DEFINE_HANDLER(mha_fwd, mha_fwd_impl,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<cudaStream_t>>()
                           .Ctx<ffi::ScratchAllocator>()
                           .Ctx<ffi::DeviceOrdinal>()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::AnyBuffer>()
                           .Arg<ffi::AnyBuffer>()
                           .Ret<ffi::AnyBuffer>()
                           .Ret<ffi::Buffer<ffi::F32>>()
                           .Attr<double>("softmax_scale")
                           .Attr<bool>("is_causal"));

pybind11::dict FFIRegistrations() {
  pybind11::dict dict;
  dict["flash_mha_fwd"] = EncapsulateFfiCall(mha_fwd);
  return dict;
}

}  // namespace

PYBIND11_MODULE(flash_api, m) { m.def("get_ffi_registrations", &FFIRegistrations); }
