// A typed handler whose error check prints and aborts: a failed launch ends the whole process,
// where the handler could return the error to XLA.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#define CUDA_OR_DIE(expr)                                                  \
  do {                                                                     \
    cudaError_t err_ = (expr);                                             \
    if (err_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

__global__ void negate_kernel(const float* x, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = -x[i];
}

static ffi::Error NegateImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> out) {
  const long n = static_cast<long>(x.element_count());
  if (n == 0) return ffi::Error::Success();
  negate_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.typed_data(), out->typed_data(), n);
  CUDA_OR_DIE(cudaGetLastError());
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    xla_negate, NegateImpl,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>(),
    {ffi::Traits::kCmdBufferCompatible});
