// A typed handler declared kCmdBufferCompatible that synchronises and allocates.
#include <cuda_runtime.h>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void square_kernel(const float* x, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * x[i];
}

static ffi::Error SquareImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> out) {
  const long n = static_cast<long>(x.element_count());
  float* scratch = nullptr;
  cudaMalloc(&scratch, n * sizeof(float));
  square_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.typed_data(), out->typed_data(), n);
  cudaError_t err = cudaGetLastError();
  cudaStreamSynchronize(stream);
  cudaFree(scratch);
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    xla_square, SquareImpl,
    ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>(),
    {ffi::Traits::kCmdBufferCompatible});
