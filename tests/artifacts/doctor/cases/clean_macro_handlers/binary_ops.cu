// Elementwise binary ops, one typed FFI handler each, all made by one project macro.
#include <cuda_runtime.h>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

template <typename Op>
__global__ void binary_kernel(const float* a, const float* b, float* out, int64_t n, Op op) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = op(a[i], b[i]);
}

template <typename Op>
static ffi::Error launch_binary(cudaStream_t stream, ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> b,
                                ffi::ResultBuffer<ffi::F32> out, Op op) {
  const int64_t n = a.element_count();
  binary_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a.typed_data(), b.typed_data(), out->typed_data(), n, op);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

#define DEFINE_BINARY_OP(NAME, EXPR)                                                              \
  struct NAME##_op { __device__ float operator()(float x, float y) const { return EXPR; } };      \
  static ffi::Error NAME##_impl(cudaStream_t stream, ffi::Buffer<ffi::F32> a,                     \
                                ffi::Buffer<ffi::F32> b, ffi::ResultBuffer<ffi::F32> out) {       \
    return launch_binary(stream, a, b, out, NAME##_op{});                                         \
  }                                                                                                \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, NAME##_impl,                                                \
                                ffi::Ffi::Bind()                                                   \
                                    .Ctx<ffi::PlatformStream<cudaStream_t>>()                      \
                                    .Arg<ffi::Buffer<ffi::F32>>()                                  \
                                    .Arg<ffi::Buffer<ffi::F32>>()                                  \
                                    .Ret<ffi::Buffer<ffi::F32>>(),                                 \
                                {ffi::Traits::kCmdBufferCompatible});

DEFINE_BINARY_OP(my_add, x + y)
DEFINE_BINARY_OP(my_mul, x * y)
DEFINE_BINARY_OP(my_max, fmaxf(x, y))
